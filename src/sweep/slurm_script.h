// The Slurm job-array script of a sweep (<out_dir>/slurm/array.sbatch) and the parsing of what
// sbatch and squeue print. One array task per pending run; each task runs one stacklab command
// in its run directory (log appended to <run>/log.txt, <run>/task.json recorded at start and
// exit), and on the time-limit warning (USR1) requeues itself: Slurm then sends SIGTERM, stacklab
// checkpoints, and the requeued task resumes. Submitting and polling: sweep/slurm.cpp.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace sl {

struct SlurmOptions {
  std::string partition, time, mem;  // empty: the cluster's default
  int cpus_per_task = 1;             // also each run's train.threads
  int max_parallel = 0;              // the array's %K throttle; 0: no throttle
  std::vector<std::string> extra;    // --slurm-extra, split on whitespace, given to sbatch as is
  int warn_seconds = 120;  // --signal=B:USR1@N: the checkpoint warning before the time limit
};

struct SlurmTask {
  std::string label;              // the run id
  std::string dir;                // absolute run directory
  std::vector<std::string> args;  // the stacklab arguments (after the binary)
};

// The whole script; `binary` and every path in `tasks` absolute, `log_dir` for Slurm's own
// per-task output (%A_%a.out: the script's messages, before its redirect to the run's log).
std::string slurm_array_script(const std::string& sweep_name, const std::string& sweep_file,
                               const std::vector<SlurmTask>& tasks, const SlurmOptions& opt,
                               const std::string& binary, const std::string& log_dir);

// 'it'\''s' quoting for bash.
std::string shell_quote(const std::string& s);

// The job id from `sbatch --parsable` ("1234" or "1234;cluster"); throws sl::Error if it is none.
std::string parse_sbatch_job_id(const std::string& output);

// `squeue -h -r -j JOB -o '%i %T'` lines ("1234_5 PENDING") -> task index -> Slurm state.
// Lines of other jobs or without a task index are ignored.
std::map<int, std::string> parse_squeue_tasks(const std::string& job, const std::string& output);

}  // namespace sl
