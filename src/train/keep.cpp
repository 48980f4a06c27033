// What a finished run keeps of its checkpoints: the sizes, the changes, kept.json (see keep.h).
#include "train/keep.h"

#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// The checkpoint files the trainer writes, the ones a choice keeps or drops.
const char* const kCheckpointFiles[] = {"latest.safetensors", "best.safetensors"};

// The fewer bytes a choice keeps, the lower its rank: a run never gains back what it dropped.
int rank(KeepKind k) {
  switch (k) {
    case KeepKind::Full:
      return 2;
    case KeepKind::Weights:
      return 1;
    case KeepKind::None:
      return 0;
  }
  return 2;
}

// checkpoints/kept.json, or an empty object when there is none (or it cannot be read: then
// nothing is known to have been dropped).
nlohmann::json read_kept(const std::string& run_dir) {
  const std::string path = run_dir + "/" + kKeptFile;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

// kept.json's "kept" as a KeepKind; Full when it says nothing.
KeepKind recorded(const nlohmann::json& kept) {
  const nlohmann::json k = kept.value("kept", nlohmann::json());
  const std::optional<KeepKind> v =
      k.is_string() ? parse_choice<KeepKind>(k.get<std::string>()) : std::nullopt;
  return v.value_or(KeepKind::Full);
}

}  // namespace

std::string disk_size(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= 1000000000ull)
    std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  else if (bytes >= 1000000ull)
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else if (bytes >= 1000ull)
    std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  return buf;
}

RunDisk run_disk(const std::string& run_dir) {
  RunDisk d;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(run_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const uint64_t size = it->file_size(ec);
    if (ec) continue;
    d.total += size;
    if (it->path().parent_path().filename() == "checkpoints" &&
        it->path().extension() == ".safetensors")
      d.checkpoints += size;
  }
  bool any = false;
  for (const char* f : kCheckpointFiles) any = any || fs::exists(run_dir + "/checkpoints/" + f, ec);
  d.holds =
      !any ? KeepKind::None
           : (recorded(read_kept(run_dir)) == KeepKind::Full ? KeepKind::Full : KeepKind::Weights);
  return d;
}

std::vector<KeepStep> keep_steps(const std::string& run_dir, KeepKind keep) {
  std::vector<KeepStep> steps;
  if (keep == KeepKind::Full) return steps;
  for (const char* f : kCheckpointFiles) {
    const std::string rel = std::string("checkpoints/") + f, path = run_dir + "/" + rel;
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    if (keep == KeepKind::None) {
      const uintmax_t size = fs::file_size(path, ec);
      steps.push_back({rel, KeepKind::None, ec ? 0 : static_cast<uint64_t>(size)});
      continue;
    }
    const TensorFile file = read_checkpoint_file(path);
    if (!holds_optimizer_state(file)) continue;
    uint64_t optim = 0;
    for (const auto& [name, t] : file.tensors)
      if (name.rfind("optim.", 0) == 0) optim += static_cast<uint64_t>(t.numel()) * sizeof(float);
    steps.push_back({rel, KeepKind::Weights, optim});
  }
  return steps;
}

uint64_t apply_keep(const std::string& run_dir, KeepKind keep, const std::string& by) {
  const std::vector<KeepStep> steps = keep_steps(run_dir, keep);
  if (steps.empty()) return 0;
  nlohmann::json kept = read_kept(run_dir);
  if (rank(keep) < rank(recorded(kept))) kept["kept"] = name_of(keep);
  kept["by"] = by;
  nlohmann::json files = kept.value("files", nlohmann::json::object());
  if (!files.is_object()) files = nlohmann::json::object();
  for (const KeepStep& s : steps)
    files[fs::path(s.file).filename().string()] =
        s.to == KeepKind::None ? "removed" : "optimizer state dropped";
  kept["files"] = files;
  const nlohmann::json before = kept.value("freed_bytes", nlohmann::json());
  const uint64_t freed_before = before.is_number_unsigned() ? before.get<uint64_t>() : 0;
  kept["freed_bytes"] = freed_before;
  kept["why"] =
      "a finished run keeps what train.keep_final (or stacklab prune --keep) allows; a resume or "
      "an extension needs the optimizer state";
  // First the record, then the files: a kill in between leaves a run that says what it may have
  // lost, never one whose missing optimizer state reads as a lost file.
  write_file_atomic(run_dir + "/" + kKeptFile, kept.dump(2) + "\n");
  uint64_t freed = 0;
  for (const KeepStep& s : steps) {
    const std::string path = run_dir + "/" + s.file;
    if (s.to == KeepKind::None) {
      std::error_code ec;
      const uintmax_t size = fs::file_size(path, ec);
      if (fs::remove(path, ec) && !ec) freed += static_cast<uint64_t>(size);
      if (ec) throw Error(path + ": cannot remove (" + ec.message() + ")");
    } else {
      freed += drop_optimizer_state(path);
    }
  }
  kept["freed_bytes"] = freed_before + freed;  // what the files lost, measured
  write_file_atomic(run_dir + "/" + kKeptFile, kept.dump(2) + "\n");
  return freed;
}

std::string not_kept_reason(const std::string& run_dir) {
  const nlohmann::json kept = read_kept(run_dir);
  const KeepKind k = recorded(kept);
  if (k == KeepKind::Full) return "";
  const std::string by = kept.value("by", nlohmann::json("?")).is_string()
                             ? kept.value("by", std::string("?"))
                             : std::string("?");
  return "its checkpoints were pruned to " +
         (k == KeepKind::Weights ? std::string("the weights alone (the optimizer state dropped)")
                                 : std::string("nothing (no checkpoint kept)")) +
         " by " + by + " once it finished (" + run_dir + "/" + kKeptFile +
         "): a run resumes or extends only from a checkpoint with its optimizer state, so this "
         "one cannot. Train its config again (stacklab train " +
         run_dir +
         "/config.json --out DIR), with train.keep_final \"full\" where an extension "
         "will follow";
}

}  // namespace sl
