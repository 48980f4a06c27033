// Durations: wall seconds since a time point, and a duration for progress lines (the training
// ETA and a sweep's elapsed and remaining time).
#pragma once
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace sl {

// Wall seconds from t0 to now, on the monotonic clock.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds as "H:MM:SS" (rounded to the second); "?" when unknown (non-finite or negative).
inline std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const long t = std::lround(s);
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

}  // namespace sl
