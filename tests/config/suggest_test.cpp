// Tests for src/config/suggest.cpp: the "did you mean" of an unknown key.
#include "config/suggest.h"

#include <gtest/gtest.h>

namespace sl {
namespace {

TEST(Suggest, ClosestKeyIgnoresFarCandidates) {
  EXPECT_EQ(closest_key("n_layers", {"n_layer", "n_head"}), "n_layer");
  EXPECT_EQ(closest_key("banana", {"n_layer", "n_head"}), "");
}

TEST(Suggest, AnUnknownKeyGetsTheNearestOrTheListOfValidKeys) {
  EXPECT_EQ(unknown_key_message("n_layers", {"n_layer", "n_head"}),
            "unknown key; did you mean 'n_layer'?");
  EXPECT_EQ(unknown_key_message("banana", {"n_layer", "n_head"}),
            "unknown key; valid keys: n_layer, n_head");
}

}  // namespace
}  // namespace sl
