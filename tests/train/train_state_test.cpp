// Tests for train/train_state: the saved state round-trips through JSON exactly (RNG words as
// decimal strings), and a state missing a field or holding a bad one is refused naming the file
// and the field.
#include "train/train_state.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "util/error.h"

namespace sl {
namespace {

TrainState a_state() {
  TrainState s;
  s.step = 40;
  s.optimizer_steps = 40;
  s.rng = {1, 2, 3, 18446744073709551615ULL};
  s.dropout_rng = {5, 6, 7, 8};
  s.best_val_loss = 2.5;
  s.wall_seconds = 1.25;
  s.last_update_norms = {0.1, 0.2};
  return s;
}

std::string error_of(const nlohmann::json& j) {
  try {
    train_state_from_json(j, "ckpt.safetensors", 100, 2);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TrainState, RoundTripsThroughJsonExactly) {
  const TrainState back = train_state_from_json(to_json(a_state()), "ckpt", 100, 2);
  EXPECT_EQ(back.step, 40);
  EXPECT_EQ(back.rng, a_state().rng) << "64-bit words survive as strings";
  EXPECT_EQ(back.dropout_rng, a_state().dropout_rng);
  EXPECT_EQ(back.best_val_loss, 2.5);
  EXPECT_EQ(back.wall_seconds, 1.25);
  EXPECT_EQ(back.last_update_norms, a_state().last_update_norms);
}

TEST(TrainState, AnInfiniteBestLossIsWrittenAsNullAndReadBack) {
  TrainState s = a_state();
  s.best_val_loss = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(to_json(s).at("best_val_loss").is_null());
  EXPECT_TRUE(std::isinf(train_state_from_json(to_json(s), "ckpt", 100, 2).best_val_loss));
}

TEST(TrainState, AStateWithoutTheDropoutRngIsRefusedNamingTheField) {
  nlohmann::json j = to_json(a_state());
  j.erase("dropout_rng");
  const std::string e = error_of(j);
  EXPECT_NE(e.find("ckpt.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("dropout_rng"), std::string::npos) << e;
}

TEST(TrainState, AStepPastMaxItersOrAWrongNumberOfUpdateNormsIsRefused) {
  nlohmann::json j = to_json(a_state());
  j["step"] = 101;
  EXPECT_NE(error_of(j).find("step"), std::string::npos);
  j = to_json(a_state());
  j["last_update_norms"] = {1.0, 2.0, 3.0};
  EXPECT_NE(error_of(j).find("has 3 entries, the model has 2 parameters"), std::string::npos)
      << error_of(j);
  j = to_json(a_state());
  j["rng"][0] = "12x";
  EXPECT_NE(error_of(j).find("train_state.rng[0]' must be a decimal string"), std::string::npos)
      << error_of(j);
}

}  // namespace
}  // namespace sl
