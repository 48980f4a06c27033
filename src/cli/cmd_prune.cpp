// `stacklab prune PATH... [--keep weights|none] [--dry-run]`: drops what finished runs need not
// keep of their checkpoints (train/keep.h). PATH is a run directory, a sweep's out_dir or a study
// folder (run directories up to two levels below it). Each completed or diverged run keeps what
// its train.keep_final says, or --keep's choice: a run whose config keeps its optimizer state for
// an extension (train.keep_final "full", the default) loses it only to --keep, and the listing
// says so for each. Unfinished runs, and runs another process holds, are left as they are.
// --dry-run lists the same and changes nothing. Not here: the choice's meaning (train/keep.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/suggest.h"
#include "sweep/choices.h"
#include "train/keep.h"
#include "train/run_lock.h"
#include "train/run_state.h"
#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

bool is_run_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / "config.json", ec);
}

// The run directories of PATH: itself, or those one or two levels below it (a sweep's runs, a
// study's sweeps' runs), sorted; folders starting with '.' (a copy in progress) are skipped.
std::vector<std::string> run_dirs_of(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    throw Error(path +
                ": no such directory (give run directories, sweep out_dirs or a study folder)");
  if (is_run_dir(path)) return {path};
  std::vector<std::string> runs;
  auto hidden = [](const fs::path& p) { return p.filename().string().rfind('.', 0) == 0; };
  for (const auto& a : fs::directory_iterator(path, ec)) {
    if (!a.is_directory(ec) || hidden(a.path())) continue;
    if (is_run_dir(a.path())) {
      runs.push_back(a.path().string());
      continue;
    }
    for (const auto& b : fs::directory_iterator(a.path(), ec))
      if (b.is_directory(ec) && !hidden(b.path()) && is_run_dir(b.path()))
        runs.push_back(b.path().string());
  }
  std::sort(runs.begin(), runs.end());
  if (runs.empty())
    throw Error(path +
                ": holds no run directory (a folder with config.json) at it or up to two "
                "levels below it");
  return runs;
}

// summary.json's status, or "" when there is none (or it is torn).
std::string summary_status(const std::string& run_dir) {
  std::error_code ec;
  const std::string path = run_dir + "/summary.json";
  if (!fs::is_regular_file(path, ec)) return "";
  const nlohmann::json s = nlohmann::json::parse(read_file(path), nullptr, false);
  return s.is_object() && s.value("status", nlohmann::json()).is_string()
             ? s.value("status", std::string())
             : "";
}

// A run that will not change any more: completed or diverged.
bool finished(const std::string& status) {
  const std::optional<RunState> st = parse_choice<RunState>(status);
  return st == RunState::Completed || st == RunState::Diverged;
}

// config.json's train.keep_final; "full" when the run was made before the key existed.
KeepKind own_keep(const std::string& run_dir) {
  const std::string path = run_dir + "/config.json";
  const nlohmann::json c = nlohmann::json::parse(read_file(path), nullptr, false);
  const nlohmann::json train =
      c.is_object() ? c.value("train", nlohmann::json()) : nlohmann::json();
  const nlohmann::json k =
      train.is_object() ? train.value("keep_final", nlohmann::json()) : nlohmann::json();
  if (k.is_null()) return KeepKind::Full;
  if (!k.is_string()) throw Error(path + ": train.keep_final is not a string");
  return parse_named<KeepKind>(k.get<std::string>(), path + ": train.keep_final");
}

struct Totals {
  int runs = 0, changed = 0, unfinished = 0, busy = 0, failed = 0, whole_for_extension = 0;
  int extension_dropped = 0;
  uint64_t freed = 0;
};

std::string step_text(const std::vector<KeepStep>& steps) {
  std::string s;
  for (const KeepStep& st : steps)
    s += (s.empty() ? "" : ", ") + fs::path(st.file).filename().string() +
         (st.to == KeepKind::None ? " removed" : " without its optimizer state");
  return s;
}

void prune_run(const std::string& dir, const std::optional<KeepKind>& flag, bool dry_run,
               Totals& t) {
  ++t.runs;
  const std::string status = summary_status(dir);
  if (!finished(status)) {
    ++t.unfinished;
    std::printf("  left %s: not finished (%s)\n", dir.c_str(),
                status.empty() ? "no summary.json" : ("summary.json says " + status).c_str());
    return;
  }
  const KeepKind own = own_keep(dir);
  const KeepKind keep = flag.value_or(own);
  // Dropping the optimizer state a run's own config keeps (for a resume or an extension) is said.
  const bool for_extension =
      own == KeepKind::Full && keep != KeepKind::Full && run_disk(dir).holds == KeepKind::Full;
  std::optional<RunLock> lock;
  if (!dry_run) {
    try {
      lock.emplace(RunLock::acquire(dir, "stacklab prune", false));
    } catch (const Error& e) {
      ++t.busy;
      std::printf("  left %s: %s\n", dir.c_str(), e.what());
      return;
    }
  }
  const std::vector<KeepStep> steps = keep_steps(dir, keep);
  if (steps.empty()) {
    if (own == KeepKind::Full && !flag) ++t.whole_for_extension;
    return;
  }
  uint64_t frees = 0;
  for (const KeepStep& s : steps) frees += s.frees;
  const uint64_t freed = dry_run ? frees : apply_keep(dir, keep, "stacklab prune");
  t.freed += freed;
  ++t.changed;
  if (for_extension) ++t.extension_dropped;
  std::printf("  %s %s: %s, %s%s\n", dry_run ? "would prune" : "pruned", dir.c_str(),
              step_text(steps).c_str(), disk_size(freed).c_str(),
              for_extension ? "; its config keeps the optimizer state for a resume or an extension "
                              "(train.keep_final \"full\"): dropped by --keep, it can no longer "
                              "be resumed or extended"
                            : "");
}

}  // namespace

int cmd_prune(const ArgList& argv) {
  Args a = parse_args("prune", argv, {"keep"}, {"dry-run"}, false);
  if (a.positional.empty())
    throw Error("expected one or more paths: run directories, sweep out_dirs or a study folder");
  std::optional<KeepKind> keep;
  if (a.has("keep")) {
    const std::string text = a.get("keep", "");
    if (!parse_choice<KeepKind>(text)) {
      const std::string near = closest_key(text, choice_names<KeepKind>());
      throw Error("--keep: expected \"weights\" or \"none\", got \"" + text + "\"" +
                  (near.empty() ? "" : "; did you mean '" + near + "'?"));
    }
    keep = parse_choice<KeepKind>(text);
    if (*keep == KeepKind::Full)
      throw Error(
          "--keep full drops nothing; give --keep weights (drop the optimizer state) or "
          "--keep none (drop the checkpoints), or leave --keep out to apply each run's "
          "train.keep_final");
  }
  const bool dry_run = a.has("dry-run");
  Totals t;
  for (const std::string& path : a.positional) {
    const std::vector<std::string> runs = run_dirs_of(path);
    std::printf("prune %s: %zu run%s%s\n", path.c_str(), runs.size(), runs.size() == 1 ? "" : "s",
                dry_run ? " (--dry-run: nothing changes)" : "");
    for (const std::string& dir : runs) {
      try {
        prune_run(dir, keep, dry_run, t);
      } catch (const Error& e) {
        ++t.failed;
        std::printf("  failed %s: %s\n", dir.c_str(), e.what());
      }
    }
  }
  std::printf("prune: %d run%s %s, %s %s", t.changed, t.changed == 1 ? "" : "s",
              dry_run ? "would be pruned" : "pruned", disk_size(t.freed).c_str(),
              dry_run ? "would be freed" : "freed");
  if (t.extension_dropped > 0)
    std::printf("; %d of them lose%s the optimizer state their config keeps for an extension",
                t.extension_dropped, t.extension_dropped == 1 ? "s" : "");
  std::printf("\n");
  if (t.whole_for_extension > 0)
    std::printf(
        "  %d finished run%s keep%s the optimizer state (train.keep_final \"full\", the default: "
        "what a resume or an extension needs); --keep weights drops it, --keep none every "
        "checkpoint\n",
        t.whole_for_extension, t.whole_for_extension == 1 ? "" : "s",
        t.whole_for_extension == 1 ? "s" : "");
  if (t.unfinished + t.busy > 0)
    std::printf("  %d run%s left as %s: not finished, or held by another process\n",
                t.unfinished + t.busy, t.unfinished + t.busy == 1 ? "" : "s",
                t.unfinished + t.busy == 1 ? "it is" : "they are");
  if (t.failed > 0) throw Error(std::to_string(t.failed) + " run(s) could not be pruned (above)");
  return kExitOk;
}

}  // namespace sl
