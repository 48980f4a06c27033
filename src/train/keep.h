// What a finished run keeps of its checkpoints (train.keep_final, `stacklab prune`): full (the
// weights and the optimizer state: a resume or an extension continues from it), weights (the
// optimizer state dropped: `stacklab sample`, `gradients --checkpoint` and load_run still read
// it; about a third of the bytes with AdamW), or none. The trainer applies its config's choice
// once the run has completed or diverged; `stacklab prune` applies one to finished runs later.
// Whatever is dropped is recorded in checkpoints/kept.json, so that a resume is refused with that
// reason rather than as a lost file, and `sweep --status` says what a sweep holds on disk.
// Not here: writing and reading checkpoint files (checkpoint.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/choices.h"

namespace sl {

inline constexpr const char* kKeptFile = "checkpoints/kept.json";

// What a run directory holds on disk.
struct RunDisk {
  uint64_t total = 0;        // every file below the run directory
  uint64_t checkpoints = 0;  // checkpoints/*.safetensors
  // Full while a checkpoint holds its optimizer state; Weights when kept.json says it was
  // dropped; None when there is no checkpoint file.
  KeepKind holds = KeepKind::None;
};
RunDisk run_disk(const std::string& run_dir);

// One change applying a choice makes: a checkpoint file (its path below the run directory) loses
// its optimizer state (to Weights) or is removed (to None), freeing about `frees` bytes.
struct KeepStep {
  std::string file;
  KeepKind to = KeepKind::Full;
  uint64_t frees = 0;
};

// What applying `keep` to the run in `run_dir` would change (nothing for Full, or when it holds
// no more than `keep` already). Reads each checkpoint file to count its optimizer state.
std::vector<KeepStep> keep_steps(const std::string& run_dir, KeepKind keep);

// Makes keep_steps' changes and records them in kept.json (`by`: "train.keep_final" or
// "stacklab prune"); returns the bytes freed. Each file is rewritten or removed on its own, and
// kept.json is written first, so a kill midway leaves a run that says what it may have lost.
uint64_t apply_keep(const std::string& run_dir, KeepKind keep, const std::string& by);

// "" when nothing of the run's checkpoints was dropped; else why it cannot be resumed or
// extended (kept.json's record), the reason a resume or the sweep's extension is refused with
// ("its checkpoints were pruned to ...", naming kept.json and what to do instead).
std::string not_kept_reason(const std::string& run_dir);

// "1.4 GB", "23.1 MB", "512 bytes": a size on disk as the listings print it (powers of 1000).
std::string disk_size(uint64_t bytes);

}  // namespace sl
