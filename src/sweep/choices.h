// The sweep's enumerated values, each with its one spelling table (config/choices.h's
// ChoiceNames, so name_of / parse_choice / choice_names work on them): whether a sweep trains or
// probes (the sweep file's "mode", manifest.json "mode"), which executor runs it (--executor,
// manifest.json and task.json "executor", sweep.lock) and what it does with a changed run
// (--on-change). Parsed once where the file or flag is read;
// compared as enums everywhere after.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/choices.h"
#include "util/error.h"

namespace sl {

enum class SweepMode { Train, Probe };
enum class Executor { Local, Slurm };
// What `stacklab sweep --on-change` does with a run whose directory holds another config's result:
// refuse the sweep (fail), move it aside and train anew (rerun), or, when the one difference is a
// longer train.max_iters (and optim.lr_decay_iters), continue it there with `train --resume`
// (extend); any other change is still refused.
enum class OnChange { Fail, Rerun, Extend };

template <>
struct ChoiceNames<SweepMode> {
  static constexpr std::pair<SweepMode, std::string_view> table[] = {{SweepMode::Train, "train"},
                                                                     {SweepMode::Probe, "probe"}};
};
template <>
struct ChoiceNames<Executor> {
  static constexpr std::pair<Executor, std::string_view> table[] = {{Executor::Local, "local"},
                                                                    {Executor::Slurm, "slurm"}};
};
template <>
struct ChoiceNames<OnChange> {
  static constexpr std::pair<OnChange, std::string_view> table[] = {
      {OnChange::Fail, "fail"}, {OnChange::Rerun, "rerun"}, {OnChange::Extend, "extend"}};
};

// The spellings for a message: "\"local\" or \"slurm\"" ("\"a\", \"b\" or \"c\"" for three).
template <class E>
std::string quoted_choices() {
  const std::vector<std::string> names = choice_names<E>();
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("\"" + names[i] + "\"");
  return s;
}

// The value spelled `text`; else an sl::Error "WHERE: expected "a" or "b", got "text"", where
// `where` names the flag (--executor) or the file and key (sweep.json: mode).
template <class E>
E parse_named(std::string_view text, const std::string& where) {
  if (const std::optional<E> v = parse_choice<E>(text)) return *v;
  throw Error(where + ": expected " + quoted_choices<E>() + ", got \"" + std::string(text) + "\"");
}

}  // namespace sl
