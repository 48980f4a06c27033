// The lock of a run directory: <run>/train.lock, held by `stacklab train` (a new run, --force
// or --resume) for its whole life, so that two processes never write one run. The file records
// the holder (pid, host, command) to name it when another train is refused. The lock itself is a
// flock (util/fsutil.h FileLock): a holder killed by SIGKILL (or a lost node) leaves the file but
// not the lock, and the next train takes it over with a note. Not here: the sweep's lock on its
// out_dir (sweep.lock, sweep/state.h), a different file, held while its runs hold theirs.
#pragma once
#include <string>
#include <vector>

#include "util/fsutil.h"

namespace sl {

inline constexpr const char* kRunLockFile = "train.lock";

class RunLock {
 public:
  // Takes <run_dir>/train.lock, creating run_dir (and missing parents) when `create` is set, or
  // throws sl::Error naming run_dir and the holder's pid and host. A lock left by a process that
  // is gone is taken over with a note on stdout.
  static RunLock acquire(const std::string& run_dir, const std::string& command, bool create);
  RunLock(RunLock&& other) noexcept = default;
  RunLock& operator=(RunLock&&) = delete;
  ~RunLock();  // removes train.lock, and the directories acquire created if nothing else is in them

 private:
  RunLock(FileLock file, std::vector<std::string> created);
  FileLock file_;
  std::vector<std::string> created_;  // deepest first
};

}  // namespace sl
