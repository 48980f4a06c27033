// The one vocabulary of where a run stands, with its on-disk spelling defined once: the trainer
// writes it as summary.json "status" (running, completed, diverged, interrupted, failed), the
// run-directory check (train/provenance.h check_run) answers with it (new, resumable, completed,
// diverged, changed), and a sweep counts its runs with it (src/sweep/state.h: adds queued).
// Everything after reading a spelling compares the enum; an unknown spelling is an Error naming
// it, or, where a torn or foreign file counts as absent, parse_choice's nullopt.
#pragma once
#include <string>
#include <string_view>

#include "config/choices.h"

namespace sl {

enum class RunState {
  New,          // nothing has run in the directory yet
  Resumable,    // a training run with this config that has no result yet (check_run)
  Queued,       // waiting in the Slurm queue
  Running,      // a process is training or probing it (summary.json while training)
  Completed,    // its result is there
  Failed,       // it stopped on an error (summary.json with the message, or its exit code)
  Diverged,     // training stopped by the divergence rule: a result, like Completed
  Interrupted,  // stopped by a signal or a lost process; resumed by running it again
  Changed,      // the directory holds the result of another config or data
};

template <>
struct ChoiceNames<RunState> {
  static constexpr std::pair<RunState, std::string_view> table[] = {
      {RunState::New, "new"},
      {RunState::Resumable, "resumable"},
      {RunState::Queued, "queued"},
      {RunState::Running, "running"},
      {RunState::Completed, "completed"},
      {RunState::Failed, "failed"},
      {RunState::Diverged, "diverged"},
      {RunState::Interrupted, "interrupted"},
      {RunState::Changed, "changed"},
  };
};

// The on-disk spelling ("completed").
std::string spell(RunState state);

// The state spelled `text`; throws sl::Error naming `text` and the known spellings, prefixed with
// `where` (a file and field, e.g. "RUN/summary.json: status") when given.
RunState parse_run_state(std::string_view text, const std::string& where = "");

}  // namespace sl
