// Branch-free float exp and erf that the compiler can vectorise (libm's expf/erff are scalar
// calls). fast_exp: Cody-Waite range reduction x = n ln2 + r, a degree-6 polynomial for e^r,
// scaled by 2^n through the exponent bits; relative error ~2e-7 on [-87, 88], 0 below.
// fast_erf: Abramowitz & Stegun 7.1.26 on |x|, absolute error <= 6e-7 in float, odd-symmetric.
// Not here: double precision, denormal outputs.
#pragma once
#include <bit>
#include <cstdint>

namespace sl {

inline float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = static_cast<float>(static_cast<int32_t>(x * 1.44269504f + (x >= 0.0f ? 0.5f : -0.5f)));
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln2 split into hi + lo
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const auto bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

inline float fast_erf(float x) {
  const float a = x < 0.0f ? -x : x;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float y = 1.0f - poly * fast_exp(-a * a);
  return x < 0.0f ? -y : y;
}

}  // namespace sl
