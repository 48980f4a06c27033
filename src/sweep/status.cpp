// `stacklab sweep --status SWEEP_DIR|SWEEP.json [...]`: where each run of a sweep stands, from its
// run directories, the manifest, squeue for a Slurm job, and the comparison with the config the
// sweep gives now (the same collect_items decision as a real run), and what its runs hold on disk
// (train/keep.h). Not here: running anything.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "config/loader.h"
#include "sweep/exec.h"
#include "train/keep.h"
#include "train/milestones.h"
#include "util/error.h"
#include "util/exit_codes.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// What --status reports on. Given a sweep file: its expansion, as `stacklab sweep` would make it
// here. Given an out_dir: the expansion of the sweep file its manifest.json names (sweep_file,
// an absolute path), with the runs placed in that out_dir (the file's own out_dir is relative to
// where the sweep was started). Either way each run is compared with the config the sweep gives
// now (collect_items), as a real run would. When the named sweep file is gone or no longer
// expands, the manifest's run list is used, its runs are not compared, and `note` says why.
struct StatusPlan {
  SweepPlan plan;
  nlohmann::json manifest = nlohmann::json::object();
  bool compare = true;
  std::string note;
  bool refused = false;  // the sweep file no longer expands: stacklab sweep would refuse it
};

std::vector<SweepRun> manifest_runs(const std::string& out_dir, const nlohmann::json& manifest,
                                    const std::string& m) {
  std::vector<SweepRun> runs;
  try {
    for (const auto& r : manifest.at("runs")) {
      SweepRun run;
      run.id = r.at("id").get<std::string>();
      run.dir = out_dir + "/" + r.at("dir").get<std::string>();
      runs.push_back(run);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(m + ": not a stacklab sweep manifest: " + e.what());
  }
  return runs;
}

StatusPlan status_plan(const std::string& path) {
  StatusPlan s;
  if (fs::is_regular_file(path)) {
    s.plan = expand_sweep(path);
    const std::string m = s.plan.out_dir + "/manifest.json";
    if (fs::exists(m)) s.manifest = read_json_file(m);
    return s;
  }
  const std::string m = path + "/manifest.json";
  if (!fs::exists(m))
    throw Error(path + ": not a sweep directory (no manifest.json); give the sweep's out_dir");
  s.manifest = read_json_file(m);
  std::vector<SweepRun> listed = manifest_runs(path, s.manifest, m);
  const nlohmann::json file =
      s.manifest.is_object() ? s.manifest.value("sweep_file", nlohmann::json()) : nlohmann::json();
  const std::string sweep_file = file.is_string() ? file.get<std::string>() : "";
  try {
    if (sweep_file.empty()) throw Error(m + " names no sweep_file");
    if (!fs::is_regular_file(sweep_file))
      throw Error("its sweep file " + sweep_file + " (manifest.json: sweep_file) is gone");
    s.refused = true;  // from here on, an error is one `stacklab sweep` would refuse the file with
    s.plan = expand_sweep(sweep_file);
    s.refused = false;
    s.plan.out_dir = path;
    for (auto& r : s.plan.runs) r.dir = path + "/" + r.id;
    size_t dropped = 0;
    for (const auto& l : listed)
      dropped += std::none_of(s.plan.runs.begin(), s.plan.runs.end(),
                              [&](const SweepRun& r) { return r.id == l.id; });
    if (dropped > 0)
      s.note = std::to_string(dropped) + " run(s) of manifest.json are no longer in " + sweep_file +
               " (not counted)";
    return s;
  } catch (const Error& e) {
    s.note =
        std::string(s.refused ? "stacklab sweep would refuse its sweep file: " : "") + e.what() +
        "; the states below are the run directories' alone, not compared with the sweep's config";
  }
  s.compare = false;
  s.plan = SweepPlan{};
  try {
    s.plan.name = s.manifest.at("name").get<std::string>();
    s.plan.mode = parse_named<SweepMode>(s.manifest.at("mode").get<std::string>(), m + ": mode");
  } catch (const nlohmann::json::exception& e) {
    throw Error(m + ": not a stacklab sweep manifest: " + e.what());
  }
  s.plan.out_dir = path;
  s.plan.runs = std::move(listed);
  return s;
}

// One line: what the manifest's executor did with the runs ("Slurm job 123", "local executor",
// "slurm executor, not submitted: ..."), refining the items' states with squeue for a Slurm job.
std::string status_where(const std::string& dir, const nlohmann::json& manifest,
                         std::vector<SweepItem>& items) {
  std::map<std::string, std::string> jobs;  // run id -> "<job>_<task>" from the manifest
  std::string job, executor = name_of(Executor::Local), error;
  try {  // a manifest edited by hand or by another version: a field of the wrong type names the
         // file
    if (manifest.contains("runs"))
      for (const auto& r : manifest["runs"])
        if (r.contains("job") && r.contains("id"))
          jobs[r["id"].get<std::string>()] = r["job"].get<std::string>();
    if (manifest.contains("slurm")) {
      job = manifest["slurm"].value("job", "");
      error = manifest["slurm"].value("error", "");
    }
    if (manifest.is_object()) executor = manifest.value("executor", executor);
  } catch (const nlohmann::json::exception& e) {
    throw Error(dir + "/manifest.json: not a stacklab sweep manifest: " + e.what());
  }
  std::vector<SweepItem*> refs;
  for (auto& it : items) {
    it.job = jobs.count(it.run->id) ? jobs[it.run->id] : "";
    refs.push_back(&it);
  }
  if (!job.empty())
    return refine_with_squeue(job, refs) ? "Slurm job " + job
                                         : "Slurm job " + job + ", squeue did not answer";
  const Executor ex = parse_named<Executor>(executor, dir + "/manifest.json: executor");
  if (ex == Executor::Slurm)
    return name_of(ex) + " executor, not submitted" + (error.empty() ? "" : ": " + error);
  return name_of(ex) + " executor";
}

// What runs' folders hold on disk (train/keep.h run_disk), summed.
struct Disk {
  uint64_t total = 0, checkpoints = 0;
  int full = 0, weights = 0;  // runs whose checkpoints hold the optimizer state / the weights alone
  void add(const Disk& d) {
    total += d.total, checkpoints += d.checkpoints, full += d.full, weights += d.weights;
  }
};

Disk items_disk(const std::vector<SweepItem>& items) {
  Disk d;
  std::error_code ec;
  for (const auto& it : items) {
    if (!fs::is_directory(it.run->dir, ec)) continue;
    const RunDisk r = run_disk(it.run->dir);
    d.total += r.total;
    d.checkpoints += r.checkpoints;
    d.full += r.holds == KeepKind::Full;
    d.weights += r.holds == KeepKind::Weights;
  }
  return d;
}

// "  on disk: 61.2 MB, checkpoints 60.1 MB: 20 runs with their optimizer state (...), 4 with the
// weights alone"; what a study holds, and what `stacklab prune` could drop.
void print_disk(const std::string& lead, const Disk& d) {
  std::printf("%son disk: %s", lead.c_str(), disk_size(d.total).c_str());
  if (d.full + d.weights == 0) {
    std::printf(" (no checkpoints)\n");
    return;
  }
  std::printf(
      ", checkpoints %s: %d run%s with the optimizer state (resumable, extendable), %d "
      "with the weights alone (train.keep_final, stacklab prune)\n",
      disk_size(d.checkpoints).c_str(), d.full, d.full == 1 ? "" : "s", d.weights);
}

// "  milestones reached: m1 12, m2 3, m3 0 (of 20 runs that record them)": how far the runs have
// learned (summary.json's milestones, train/milestones.h); "" when no run records them.
std::string milestones_line(const std::vector<SweepItem>& items) {
  std::vector<int> reached(milestone_kinds().size(), 0);
  int recording = 0;
  std::error_code ec;
  for (const auto& it : items) {
    const std::string path = it.run->dir + "/summary.json";
    if (!fs::exists(path, ec)) continue;
    const nlohmann::json s = nlohmann::json::parse(read_file(path), nullptr, false);
    if (!s.is_object() || !s.contains("milestones") || !s["milestones"].is_object()) continue;
    ++recording;
    for (size_t i = 0; i < milestone_kinds().size(); ++i) {
      const nlohmann::json m = s["milestones"].value(milestone_kinds()[i].name, nlohmann::json());
      reached[i] += m.is_object() && m.value("step", nlohmann::json()).is_number_integer();
    }
  }
  if (recording == 0) return "";
  std::string line = "  milestones reached:";
  for (size_t i = 0; i < reached.size(); ++i)
    line +=
        std::string(i ? ", " : " ") + milestone_kinds()[i].name + " " + std::to_string(reached[i]);
  return line + " (of " + std::to_string(recording) + " run" + (recording == 1 ? "" : "s") +
         " that record them)\n";
}

}  // namespace

int sweep_status(const std::vector<std::string>& dirs) {
  if (dirs.empty())
    throw Error("--status: expected one or more sweep directories (the sweeps' out_dir)");
  bool any_bad = false;
  Disk all;
  for (const auto& dir : dirs) {
    // A folder that is not a sweep's (no manifest, a damaged one) is named, and the others are
    // still reported: one bad argument does not hide the status of the rest.
    StatusPlan s;
    try {
      s = status_plan(dir);
    } catch (const Error& e) {
      std::fprintf(stderr, "stacklab sweep --status: %s\n", e.what());
      any_bad = true;
      continue;
    }
    std::vector<SweepPlan> plans = {std::move(s.plan)};
    std::vector<SweepItem> items = collect_items(plans, s.compare);
    const std::string where = status_where(dir, s.manifest, items);
    // A run whose one change is a longer horizon (a copy awaiting its extension, or one whose
    // extension was stopped) is resumable by --on-change extend, not a changed result.
    std::vector<std::string> to_extend, not_extendable;
    for (auto& it : items) {
      // Not a run still queued or running (squeue's word), nor one that diverged: its result
      // stands under the old horizon, and an extension would only repeat the divergence.
      if (it.changes.empty() || it.state == RunState::Running || it.state == RunState::Queued ||
          run_state(*it.plan, *it.run) == RunState::Diverged)
        continue;
      const Extension ext = sweep_run_extension(*it.plan, *it.run);
      if (ext.overrides.empty()) {
        // Its one change is the horizon, but its optimizer state was not kept: it stays changed.
        if (!ext.why_not.empty() && ext.why_not == not_kept_reason(it.run->dir))
          not_extendable.push_back(it.label + ": its checkpoints were pruned (" + it.run->dir +
                                   "/" + kKeptFile + "), so train --resume cannot extend it");
        continue;
      }
      to_extend.push_back(it.label + ": " + ext.what + " (in " + it.run->dir + ")");
      it.changes.clear();
      if (it.state != RunState::Failed) it.state = RunState::Resumable;  // a failed one says why
    }
    std::map<RunState, int> count;
    for (const auto& it : items) ++count[it.state];
    std::printf("sweep %s: %zu run%s in %s (%s):", plans[0].name.c_str(), items.size(),
                items.size() == 1 ? "" : "s", plans[0].out_dir.c_str(), where.c_str());
    for (const RunState st : kSweepRunStates)
      std::printf(" %s %d%s", spell(st).c_str(), count[st],
                  st == std::end(kSweepRunStates)[-1] ? "" : ",");
    // Only --status says resumable (a run awaiting its longer horizon), so only when there is one.
    if (count[RunState::Resumable] > 0)
      std::printf(", %s %d", spell(RunState::Resumable).c_str(), count[RunState::Resumable]);
    std::printf("\n");
    const Disk disk = items_disk(items);
    print_disk("  ", disk);
    all.add(disk);
    std::printf("%s", milestones_line(items).c_str());
    if (!s.note.empty()) std::printf("  note: %s\n", s.note.c_str());
    for (const auto& e : to_extend) std::printf("  to extend %s\n", e.c_str());
    for (const auto& e : not_extendable) std::printf("  cannot extend %s\n", e.c_str());
    if (!to_extend.empty())
      std::printf(
          "  %zu run%s await%s a longer horizon or a later stop rule: stacklab sweep %s "
          "--on-change extend continues "
          "%s from %s checkpoint%s\n",
          to_extend.size(), to_extend.size() == 1 ? "" : "s", to_extend.size() == 1 ? "s" : "",
          plans[0].source.empty() ? "SWEEP.json" : plans[0].source.c_str(),
          to_extend.size() == 1 ? "it" : "them", to_extend.size() == 1 ? "its" : "their",
          to_extend.size() == 1 ? "" : "s");
    size_t changed = 0;
    for (const auto& it : items) {
      if (it.state == RunState::Failed)
        std::printf("  failed %s: %s (log: %s/log.txt)\n", it.label.c_str(),
                    last_line(it.run->dir + "/log.txt").c_str(), it.run->dir.c_str());
      if (it.changes.empty()) continue;  // also a failed one, or one squeue shows queued or running
      std::string what;
      for (const auto& c : it.changes) what += (what.empty() ? "" : "; ") + c;
      std::printf("  changed %s: %s (in %s)\n", it.label.c_str(), what.c_str(),
                  it.run->dir.c_str());
      ++changed;
    }
    if (changed > 0)
      std::printf(
          "  stacklab sweep would refuse to run: %zu run%s hold%s the result of a different config "
          "or data than "
          "the sweep now gives (stored -> now); --on-change rerun moves %s to <dir>.changed-N and "
          "runs %s again\n",
          changed, changed == 1 ? "" : "s", changed == 1 ? "s" : "", changed == 1 ? "it" : "them",
          changed == 1 ? "it" : "them");
    any_bad = any_bad || count[RunState::Failed] > 0 || changed > 0 || s.refused;
  }
  if (dirs.size() > 1) print_disk(std::to_string(dirs.size()) + " sweeps together ", all);
  return any_bad ? kExitError : kExitOk;
}

}  // namespace sl
