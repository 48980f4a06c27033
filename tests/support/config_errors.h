// What the config tests ask of an error: the message of the ConfigError a call throws, the one
// config_from_json (parse, then validate) gives for a JSON document, and a "message contains"
// expectation. One copy for tests/config/ (config, validate and loader tests).
#pragma once
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/config.h"

namespace sl::testing {

// The message of the ConfigError that `f` throws; a test failure if it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

// What config_from_json (parse, then validate) says of j.
inline std::string parse_error(const nlohmann::json& j) {
  return error_of([&] { config_from_json(j, "cfg.json"); });
}

}  // namespace sl::testing

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "message: " << (text)
