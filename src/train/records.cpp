// The declared keys of metrics.jsonl, summary.json and probe output (see records.h).
#include "train/records.h"

#include <set>

#include "train/layer_stats.h"
#include "util/error.h"
#include "util/markdown.h"

namespace sl {
namespace {

using T = FieldType;

std::vector<RecordField> with_step_and_kind(std::vector<RecordField> fields) {
  fields.insert(fields.begin(), {{"step", T::kInt, "the step the record belongs to (0-based)"},
                                 {"kind", T::kString, "the record kind"}});
  return fields;
}

std::vector<RecordField> layers_fields() {
  std::vector<RecordField> f = with_step_and_kind(
      {{"loss", T::kNumberOrNull, "the step's training loss (mean over its micro-batches)"},
       {"params", T::kObject, "gradient norm of every parameter by name, when log.params is true",
        true}});
  for (const LayerMetric& m : layer_metrics())
    f.push_back(
        {m.name, T::kArrayOrNull, std::string("per ") + axis_name(m.axis) + ": " + m.description});
  return f;
}

nlohmann::json fields_json(const std::vector<RecordField>& fields) {
  nlohmann::json a = nlohmann::json::array();
  for (const RecordField& f : fields)
    a.push_back({{"key", f.key},
                 {"type", type_name(f.type)},
                 {"meaning", f.meaning},
                 {"optional", f.optional}});
  return a;
}

}  // namespace

const std::vector<RecordKind>& metrics_record_kinds() {
  static const std::vector<RecordKind> kinds = {
      {{"start", "resume"},
       "first line of a run, and at every resume",
       with_step_and_kind(
           {{"n_layer", T::kInt, "number of blocks"},
            {"n_params", T::kInt, "number of trainable parameters"},
            {"wiring", T::kString, "the wiring id (config.json derived.wiring)"},
            {"formula", T::kString, "the block's formula, as printed at the start"},
            {"reference_losses", T::kObject,
             "uniform, unigram and optimal (null when unknown) losses of the data source; a "
             "training run adds unigram_on_val, bigram_on_val and optimum_on_val, the unigram "
             "predictor's, the bigram predictor's (the next symbol from the current one alone) "
             "and the source's own probabilities' loss on its validation batches (those of "
             "val_loss; null when infinite or unknown, text: optimum_on_val null and "
             "optimum_on_val_note saying why)"},
            {"tokens_per_step", T::kInt, "batch_size x block_size x grad_accum_steps"},
            {"numeric_path", T::kObject,
             "matmul, openblas_core, vector_loops, threads, flush_subnormals"},
            {"layer_metrics", T::kArray, "the descriptors of the layers records' metric keys"},
            {"data_check", T::kObjectOrNull,
             "text data at a known data set's place (data/datasets.json): dataset, ok, bytes, "
             "expected_bytes, sha256, expected_sha256 of the file now; null otherwise"}})},
      {{"train"},
       "every log.log_interval steps and at the last step",
       with_step_and_kind(
           {{"loss", T::kNumber, "training loss (mean over the micro-batches)"},
            {"lr", T::kNumber, "the learning rate of this step"},
            {"grad_norm", T::kNumber, "global gradient norm before clipping"},
            {"tokens_per_sec", T::kNumber, "throughput since the last train record"},
            {"ms_per_step", T::kNumber, "mean step time since the last train record"}})},
      {{"eval"},
       "every train.eval_interval steps and at the end",
       with_step_and_kind(
           {{"val_loss", T::kNumberOrNull, "mean loss on the fixed validation batches"},
            {"train_loss", T::kNumberOrNull, "mean loss on the fixed training batches"}})},
      {{"layers"},
       "at step 0, every log.layer_interval steps, at the last step, and at a divergence",
       layers_fields()},
      {{"diverged"},
       "once, when the divergence rule ends the run",
       with_step_and_kind(
           {{"reason", T::kString, "what went out of range, with the limit"},
            {"blocks", T::kArray, "the blocks whose gradients are non-finite (0-based)"},
            {"loss", T::kString, "the key of the judged loss: loss, val_loss or train_loss"},
            {"value", T::kNumberOrNull, "the judged loss (null when non-finite)"},
            {"limit", T::kNumber, "10 x ln(vocab_size)"}})},
  };
  return kinds;
}

const RecordKind& metrics_record_kind(const std::string& kind) {
  for (const RecordKind& k : metrics_record_kinds())
    for (const std::string& name : k.kinds)
      if (name == kind) return k;
  throw InternalError("metrics.jsonl record kind '" + kind + "' is not declared (train/records)");
}

const std::vector<RecordField>& summary_fields() {
  static const std::vector<RecordField> fields = {
      {"status", T::kString, "running, completed, diverged, interrupted or failed"},
      {"final_train_loss", T::kNumberOrNull, "train_loss of the last eval"},
      {"final_val_loss", T::kNumberOrNull,
       "val_loss of the last eval, at final_eval_step (diverged: the last before it, no result)"},
      {"final_eval_step", T::kIntOrNull,
       "the step of the last eval, which the final losses are from (null before any)"},
      {"best_val_loss", T::kNumberOrNull, "the lowest val_loss so far"},
      {"last_batch_loss", T::kNumberOrNull, "the loss of the last training batch"},
      {"reference_losses", T::kObject, "as in the start record"},
      {"steps", T::kInt, "steps done"},
      {"max_iters", T::kInt, "train.max_iters of the run"},
      {"wall_seconds", T::kNumber, "training time, summed over resumes"},
      {"tokens_per_sec", T::kNumber, "throughput of this process's steps"},
      {"diverged", T::kBool, "whether the divergence rule ended the run"},
      {"divergence", T::kObjectOrNull, "the diverged record's fields but kind, or null"},
      {"stopped", T::kObjectOrNull,
       "a run ended by its stop rule, at the eval that met it (step, = steps): by "
       "train.stop_below_unigram reason \"escaped\", step, val_loss, unigram_on_val, margin; by "
       "train.stop_at reason \"milestone\", milestone (m1, m2, m3), step, val_loss, line, "
       "reference, margin; else null"},
      {"milestones", T::kObject,
       "m1 (leaves the plateau: unigram_on_val - train.milestone_margin), m2 (learns beyond "
       "symbol pairs: bigram_on_val - train.milestone_margin), m3 (near the optimum: "
       "optimum_on_val + train.near_optimum), each {line (null: no reference), reference, margin, "
       "step, val_loss}: the first eval at or below the line, or null step and val_loss"},
      {"error", T::kStringOrNull, "the message of a failed run, or null"},
      {"wiring", T::kString, "the wiring id"},
      {"n_layer", T::kInt, "number of blocks"},
      {"version", T::kString, "the stacklab version that wrote it"},
      {"command", T::kString, "the command line"},
      {"data_check", T::kObjectOrNull,
       "as in the start record (of this process); ok = false: the file fails the data set's "
       "size or SHA-256 check"},
  };
  return fields;
}

const std::vector<RecordField>& probe_fields() {
  static const std::vector<RecordField> fields = {
      {"config", T::kObject, "the resolved config"},
      {"derived", T::kObject, "its derived values (wiring, final_norm)"},
      {"n_params", T::kInt, "number of trainable parameters"},
      {"reference_losses", T::kObject, "as in the start record"},
      {"seeds", T::kArray, "per seed: seed, loss, layers (a layers record's metrics and params)"},
      {"mean", T::kObject, "each metric's entry-wise mean over seeds (null where any is null)"},
      {"layer_metrics", T::kArray, "the descriptors of the metric keys"},
      {"mean_loss", T::kNumberOrNull, "the loss averaged over seeds"},
      {"ratio_first_last", T::kNumberOrNull, "mean grad_norm of block 0 over that of the last"},
  };
  return fields;
}

const char* type_name(FieldType t) {
  switch (t) {
    case T::kInt:
      return "int";
    case T::kNumber:
      return "number";
    case T::kNumberOrNull:
      return "number|null";
    case T::kString:
      return "string";
    case T::kBool:
      return "bool";
    case T::kObject:
      return "object";
    case T::kObjectOrNull:
      return "object|null";
    case T::kArray:
      return "array";
    case T::kArrayOrNull:
      return "array|null";
    case T::kStringOrNull:
      return "string|null";
    case T::kIntOrNull:
      return "int|null";
  }
  return "?";
}

bool type_matches(FieldType t, const nlohmann::json& v) {
  switch (t) {
    case T::kInt:
      return v.is_number_integer();
    case T::kNumber:
      return v.is_number();
    case T::kNumberOrNull:
      return v.is_number() || v.is_null();
    case T::kString:
      return v.is_string();
    case T::kBool:
      return v.is_boolean();
    case T::kObject:
      return v.is_object();
    case T::kObjectOrNull:
      return v.is_object() || v.is_null();
    case T::kArray:
      return v.is_array();
    case T::kArrayOrNull:
      return v.is_array() || v.is_null();
    case T::kStringOrNull:
      return v.is_string() || v.is_null();
    case T::kIntOrNull:
      return v.is_number_integer() || v.is_null();
  }
  return false;
}

nlohmann::json checked_fields(nlohmann::json j, const std::vector<RecordField>& fields,
                              const std::string& what) {
  SL_CHECK(j.is_object(), what + " is not an object");
  std::set<std::string> declared;
  for (const RecordField& f : fields) {
    declared.insert(f.key);
    const auto it = j.find(f.key);
    SL_CHECK(it != j.end() || f.optional, what + " lacks the declared key '" + f.key + "'");
    SL_CHECK(it == j.end() || type_matches(f.type, *it),
             what + " key '" + f.key + "' is not " + type_name(f.type));
  }
  for (const auto& [key, v] : j.items())
    SL_CHECK(declared.count(key) != 0, what + " has the undeclared key '" + key + "'");
  return j;
}

nlohmann::json checked_record(nlohmann::json j) {
  SL_CHECK(j.is_object() && j.contains("kind") && j["kind"].is_string(),
           "metrics.jsonl record without a kind");
  const std::string kind = j["kind"].get<std::string>();
  return checked_fields(std::move(j), metrics_record_kind(kind).fields,
                        "metrics.jsonl " + kind + " record");
}

nlohmann::json records_json() {
  nlohmann::json kinds = nlohmann::json::array();
  for (const RecordKind& k : metrics_record_kinds())
    kinds.push_back({{"kinds", k.kinds}, {"when", k.when}, {"fields", fields_json(k.fields)}});
  return {{"metrics.jsonl", kinds},
          {"summary.json", {{"fields", fields_json(summary_fields())}}},
          {"probe", {{"fields", fields_json(probe_fields())}}}};
}

std::string records_markdown() {
  std::string md = "| file | record | key | type | what it holds |\n|---|---|---|---|---|\n";
  auto rows = [&](const std::string& file, const std::string& record,
                  const std::vector<RecordField>& fields) {
    for (const RecordField& f : fields)
      md += "| " + file + " | " + record + " | `" + f.key + "` | " +
            markdown_cell(type_name(f.type)) + " | " + markdown_cell(f.meaning) +
            (f.optional ? " (optional)" : "") + " |\n";
  };
  for (const RecordKind& k : metrics_record_kinds()) {
    std::string record;
    for (const std::string& name : k.kinds) record += (record.empty() ? "`" : ", `") + name + "`";
    rows("`metrics.jsonl`", record, k.fields);
  }
  rows("`summary.json`", "", summary_fields());
  rows("probe output", "", probe_fields());
  return md;
}

}  // namespace sl
