// The sweep's enumerated values: each spelling round-trips, an unknown one is refused naming
// where it came from and the allowed values.
#include "sweep/choices.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace sl {
namespace {

template <class E>
void expect_round_trips() {
  for (const auto& [value, name] : ChoiceNames<E>::table) {
    EXPECT_EQ(parse_named<E>(name, "here"), value) << name;
    EXPECT_EQ(name_of(value), name);
  }
}

TEST(SweepMode, EachSpellingRoundTrips) {
  expect_round_trips<SweepMode>();
  EXPECT_EQ(choice_names<SweepMode>(), (std::vector<std::string>{"train", "probe"}));
}

TEST(Executor, EachSpellingRoundTrips) {
  expect_round_trips<Executor>();
  EXPECT_EQ(choice_names<Executor>(), (std::vector<std::string>{"local", "slurm"}));
}

TEST(Executor, AnUnknownOneIsRefusedNamingTheFlagAndTheAllowedValues) {
  try {
    parse_named<Executor>("slrum", "--executor");
    FAIL() << "\"slrum\" was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--executor: expected \"local\" or \"slurm\", got \"slrum\"");
  }
}

}  // namespace
}  // namespace sl
