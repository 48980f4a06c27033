// The array script, written to be read: every #SBATCH line says why it is there.
#include "sweep/slurm_script.h"

#include <cctype>
#include <sstream>

#include "util/error.h"

namespace sl {
namespace {

// The part of the script after the task table: identical for every sweep.
constexpr const char* kTaskBody = R"BASH(
if [[ -z "${RUN:-}" ]]; then
  echo "stacklab array task ${SLURM_ARRAY_TASK_ID:-?}: no such task in this script" >&2
  exit 1
fi
mkdir -p "$RUN"
export OMP_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"  # = train.threads: no OpenMP team beyond it
TASK="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"

# <run>/task.json: what `stacklab sweep --status` reads (written atomically: temp file, rename).
record() {
  printf '{"executor": "slurm", "state": "%s", "exit": %s, "job": "%s", "host": "%s", "pid": %s}\n' \
    "$1" "$2" "$TASK" "$(hostname)" "$$" >"$RUN/task.json.tmp.$$" && mv -f "$RUN/task.json.tmp.$$" "$RUN/task.json"
}

record running null
echo "== $(date -u +%FT%TZ) slurm task $TASK (restart ${SLURM_RESTART_COUNT:-0}) on $(hostname): stacklab ${ARGS[*]}" >>"$RUN/log.txt"
CHILD=
# USR1 (the time limit is near): the task requeues itself, and Slurm then stops it as it stops
# any requeued, cancelled or preempted task: SIGTERM to every process of the task, stacklab
# included, which finishes its step, checkpoints and exits 143; the requeued task resumes from
# that checkpoint. (If scontrol cannot requeue, stacklab is stopped here and the run is
# interrupted: submitting the sweep again resumes it.) On SIGTERM the script only waits.
# (scontrol killed by that very SIGTERM exits >= 128: the requeue went through.)
requeue_self() {
  scontrol requeue "$SLURM_JOB_ID"
  local rc=$?
  if ((rc != 0 && rc < 128)) && [[ -n "$CHILD" ]]; then kill -TERM "$CHILD" 2>/dev/null; fi
}
# The traps are set before stacklab starts: an early USR1 must not kill this shell.
trap requeue_self USR1
trap ':' TERM
"$STACKLAB" "${ARGS[@]}" >>"$RUN/log.txt" 2>&1 &
CHILD=$!
while kill -0 "$CHILD" 2>/dev/null; do wait "$CHILD"; done
wait "$CHILD"
RC=$?
record exited "$RC"
echo "$(date -u +%FT%TZ) slurm task $TASK ($RUN): exit $RC"  # to %A_%a.out: the log ends with stacklab's last word
exit "$RC"
)BASH";

}  // namespace

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

namespace {

// Text for a comment line: a newline would end the comment and start a command.
std::string one_line(std::string t) {
  for (char& c : t)
    if (c == '\n' || c == '\r') c = ' ';
  return t;
}

// A Slurm job name: sbatch ends an #SBATCH value at a space or '#'.
std::string job_name(const std::string& name) {
  std::string n = name;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return n;
}

}  // namespace

std::string slurm_array_script(const std::string& sweep_name, const std::string& sweep_file,
                               const std::vector<SlurmTask>& tasks, const SlurmOptions& opt,
                               const std::string& binary, const std::string& log_dir) {
  if (tasks.empty()) throw Error("slurm_array_script: no tasks");
  if (log_dir.find_first_of(" \t\n\r#") != std::string::npos)
    throw Error("out_dir '" + log_dir +
                "': an #SBATCH --output path cannot hold spaces or '#'; choose an out_dir "
                "without them for --executor slurm");
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# stacklab sweep \"" << one_line(sweep_name) << "\": " << tasks.size() << " run(s) of "
    << one_line(sweep_file) << "\n"
    << "# as one Slurm job array, written by `stacklab sweep ... --executor slurm`. Running that "
       "command\n"
    << "# again rewrites this file with the runs still missing, failed or interrupted and submits "
       "it.\n"
    << "#SBATCH --job-name=stacklab-" << job_name(sweep_name) << "\n"
    << "#SBATCH --array=0-" << tasks.size() - 1;
  if (opt.max_parallel > 0) s << "%" << opt.max_parallel;
  s << "  # one task per run (table below)"
    << (opt.max_parallel > 0 ? "; %K: at most K at once" : "") << "\n";
  if (!opt.partition.empty()) s << "#SBATCH --partition=" << opt.partition << "\n";
  if (!opt.time.empty()) s << "#SBATCH --time=" << opt.time << "  # per task (per run)\n";
  s << "#SBATCH --cpus-per-task=" << opt.cpus_per_task << "  # each run's train.threads\n";
  if (!opt.mem.empty()) s << "#SBATCH --mem=" << opt.mem << "  # per task\n";
  s << "#SBATCH --requeue  # a preempted task (or one on a failed node) goes back in the queue and "
       "resumes\n"
    << "#SBATCH --signal=B:USR1@" << opt.warn_seconds << "  # " << opt.warn_seconds
    << " s before the time limit: checkpoint, requeue\n"
    << "#SBATCH --open-mode=append  # a requeued task appends to its output file\n"
    << "#SBATCH --output=" << log_dir
    << "/%A_%a.out  # this script's own messages; stacklab's go to <run>/log.txt\n";
  if (!opt.extra.empty()) {
    s << "# passed on sbatch's command line (--slurm-extra):";
    for (const auto& e : opt.extra) s << " " << e;
    s << "\n";
  }
  s << "set -u\n\nSTACKLAB=" << shell_quote(binary) << "\n\n"
    << "# task index -> run directory and stacklab command\n"
    << "case \"${SLURM_ARRAY_TASK_ID:-}\" in\n";
  for (size_t i = 0; i < tasks.size(); ++i) {
    s << "  " << i << ")  # " << one_line(tasks[i].label) << "\n"
      << "    RUN=" << shell_quote(tasks[i].dir) << "\n    ARGS=(";
    for (size_t k = 0; k < tasks[i].args.size(); ++k)
      s << (k ? " " : "") << shell_quote(tasks[i].args[k]);
    s << ") ;;\n";
  }
  s << "esac\n" << kTaskBody;
  return s.str();
}

std::string parse_sbatch_job_id(const std::string& output) {
  std::string id = output.substr(0, output.find_first_of(";\n"));
  while (!id.empty() && (id.back() == ' ' || id.back() == '\r')) id.pop_back();
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw Error("sbatch --parsable printed no job id: '" + output + "'");
  return id;
}

std::map<int, std::string> parse_squeue_tasks(const std::string& job, const std::string& output) {
  std::map<int, std::string> tasks;
  std::istringstream in(output);
  std::string id, state;
  while (in >> id >> state) {
    if (id.rfind(job + "_", 0) != 0) continue;
    const std::string index = id.substr(job.size() + 1);
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) continue;
    tasks[std::stoi(index)] = state;
  }
  return tasks;
}

}  // namespace sl
