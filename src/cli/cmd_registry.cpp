// `stacklab registry [--json] [--records] [--markdown]`: what the registries declare.
//   (no flag)       every wiring choice (nn/wiring.h) with its formula and the parameters it adds
//   --json          the same as JSON, an object keyed by model axis (tests/parity/torch_parity.py
//                   builds its variants from it)
//   --records       the record schema (train/records.h): every key of metrics.jsonl's record
//                   kinds, summary.json and probe output, with type and meaning; JSON with --json
//   --markdown      the documentation tables, each between <!-- registry:NAME --> and
//                   <!-- /registry:NAME --> lines (wirings, layer_metrics, records), so a doc can
//                   paste the whole block; tests/cli/docs_tables_test.cpp checks the docs hold
//                   the current blocks
#include <cstdio>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "nn/wiring.h"
#include "train/layer_stats.h"
#include "train/records.h"

namespace sl {
namespace {

void print_block(const char* name, const std::string& table) {
  std::printf("<!-- registry:%s -->\n%s<!-- /registry:%s -->\n", name, table.c_str(), name);
}

void print_records() {
  for (const RecordKind& k : metrics_record_kinds()) {
    std::string kinds;
    for (const std::string& n : k.kinds) kinds += (kinds.empty() ? "" : ", ") + n;
    std::printf("metrics.jsonl %s (%s):\n", kinds.c_str(), k.when.c_str());
    for (const RecordField& f : k.fields)
      std::printf("  %-18s %-12s %s%s\n", f.key.c_str(), type_name(f.type), f.meaning.c_str(),
                  f.optional ? " (optional)" : "");
  }
  for (const auto& [file, fields] :
       {std::pair{"summary.json", &summary_fields()}, std::pair{"probe output", &probe_fields()}}) {
    std::printf("%s:\n", file);
    for (const RecordField& f : *fields)
      std::printf("  %-18s %-12s %s\n", f.key.c_str(), type_name(f.type), f.meaning.c_str());
  }
}

}  // namespace

int cmd_registry(const ArgList& argv) {
  Args a = parse_args("registry", argv, {}, {"json", "records", "markdown"}, false);
  if (!a.positional.empty())
    throw Error("registry takes no positional arguments, got '" + a.positional[0] + "'");
  if (a.has("markdown") && (a.has("json") || a.has("records")))
    throw Error("registry: --markdown prints every table; it takes neither --json nor --records");
  if (a.has("markdown")) {
    print_block("wirings", registry_markdown());
    std::printf("\n");
    print_block("layer_metrics", layer_metrics_markdown());
    std::printf("\n");
    print_block("records", records_markdown());
    return kExitOk;
  }
  if (a.has("records")) {
    if (a.has("json"))
      std::printf("%s\n", records_json().dump(2).c_str());
    else
      print_records();
    return kExitOk;
  }
  const nlohmann::json r = registry_json();
  if (a.has("json")) {
    std::printf("%s\n", r.dump(2).c_str());
    return kExitOk;
  }
  for (const auto& [axis, entries] : r.items()) {
    std::printf("model.%s:\n", axis.c_str());
    for (const auto& e : entries) {
      std::string params;
      if (e.contains("params"))
        for (const auto& p : e["params"])
          params += (params.empty() ? "" : ", ") + p["name"].get<std::string>();
      std::printf("  %-16s %s%s\n", e["name"].get<std::string>().c_str(),
                  e["formula"].get<std::string>().c_str(),
                  params.empty() ? "" : ("   [params: " + params + "]").c_str());
    }
  }
  return kExitOk;
}

}  // namespace sl
