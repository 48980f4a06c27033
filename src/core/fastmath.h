// Branch-free float exp and erf that the compiler can vectorise (libm's expf/erff are scalar
// calls, and data-dependent branches mispredict on random signs). fast_exp: Cody-Waite range
// reduction x = n ln2 + r with n rounded by the 1.5 * 2^23 trick (its low mantissa bits are n),
// a degree-6 polynomial for e^r, scaled by 2^n through the exponent bits; relative error ~3e-7
// on [-87, 88] (inputs are clamped to it); one template for a float and for a vector of floats
// (core/simd.h), so each lane computes what the scalar does. erf_poly: the polynomial of
// Abramowitz & Stegun 7.1.26, erf(a) = 1 - erf_poly(a) e^(-a^2) for a >= 0, absolute error
// <= 6e-7 in float (exact GELU, core/ops/elementwise.cpp). Written with ternaries and
// builtins (no std:: calls) so that a TU compiled with -fno-trapping-math (see elementwise.cpp)
// vectorises them. Not here: double precision.
#pragma once
#include <cstdint>

// SL_SIMD_CLONES on a hot loop function: GCC compiles it three times, for x86-64-v4 (AVX-512,
// 16 floats a vector), x86-64-v3 (AVX2 + FMA, 8) and the baseline (SSE2, 4), and picks the clone
// once at load time from the CPU (an ifunc). The default build so stays runnable on any x86-64
// while using the widest units that exist. Each clone is deterministic, but clones may differ in
// the last bits: the kernel files that allow FMA contraction (attention, elementwise, norm) fuse
// a * b + c in the two FMA clones and not in the baseline one, and an `omp simd` reduction sums
// its lanes in an order fixed by the vector width. The same binary on the same CPU so always
// runs the same clone and gives the same bits. Empty where it does not apply: clang, non-x86, or
// a build that already targets AVX2 (STACKLAB_NATIVE). Give it to small non-inline loop functions
// (a chunk of a kernel), not to the OpenMP lambdas: a clone is not inlined into its callers.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__AVX2__) && \
    !defined(STACKLAB_NO_SIMD_CLONES)
#define SL_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), noinline))
#else
#define SL_SIMD_CLONES
#endif

namespace sl {

// What fast_exp needs of its argument type F beyond + - * < > and ?: : the integers of F's
// width (for the exponent bits) and a constant in every lane. float here; the 16-float vector
// in core/simd.h, whose lanes then get the scalar's bits.
template <class F>
struct Lanes;
template <>
struct Lanes<float> {
  using Int = int32_t;
  static constexpr float splat(float c) { return c; }
};

// For core/simd.h's v16, F by value is a vector register in a kernel the call is inlined into:
// no ABI note applies. Plain inline, as the scalar was: forcing it reorders the scalar users' code.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
template <class F>
inline F fast_exp(F x) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  using Int = typename Lanes<F>::Int;
  const F lo = Lanes<F>::splat(-87.0f), hi = Lanes<F>::splat(88.0f);
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const F shifted = x * 1.44269504f + kRound;
  const F n = shifted - kRound;
  const Int ni = __builtin_bit_cast(Int, shifted) - __builtin_bit_cast(int32_t, kRound);
  const F r = (x - n * 0.693145752f) - n * 1.42860677e-6f;  // ln2 split into hi + lo
  F p = Lanes<F>::splat(1.0f / 720.0f);
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * __builtin_bit_cast(F, (ni + 127) << 23);
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

// The polynomial factor of A&S 7.1.26 at a = |x| >= 0: erf(a) = 1 - erf_poly(a) e^(-a^2).
inline float erf_poly(float a) {
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  return t * (0.254829592f +
              t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
}

}  // namespace sl
