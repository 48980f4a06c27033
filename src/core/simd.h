// 16-float vectors (GCC's vector extension) for the hand-vectorised kernels: load, store,
// broadcast, the lane reductions in one fixed order, a 16 x 16 transpose in registers, and what
// fast_exp (core/fastmath.h) needs to run on 16 lanes with each lane's bits those of the scalar.
// Every helper is always inlined, so an SL_SIMD_CLONES kernel compiles it at its own width.
// Not here: a kernel's layout (padding, tiles: core/ops/attention.cpp); double precision.
#pragma once
#include <cstdint>
#include <utility>

#include "core/fastmath.h"

// No v16 crosses a call (every function here is always inlined into the kernels), so the note
// that passing one by value changes the ABI without AVX-512 does not apply. GCC reports it at
// each call, so the includer (a file of such kernels) gets the pragma too.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// Always inlined: a helper of an SL_SIMD_CLONES kernel then compiles at the clone's width.
#define SL_VINLINE inline __attribute__((always_inline))

namespace sl {

// 16 floats: one AVX-512 register, two AVX2 or four SSE ones in the other clones. Unaligned.
typedef float v16 __attribute__((vector_size(64), aligned(4)));
// v16 as a template argument sees it (GCC drops the alignment there; values live in registers).
typedef float v16_value __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64), aligned(4)));
constexpr int64_t kLanes = 16;

SL_VINLINE v16 vload(const float* p) {
  v16 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
SL_VINLINE void vstore(float* p, v16 v) { __builtin_memcpy(p, &v, sizeof v); }
// x in every lane, as a shuffle of lane 0: GCC then folds it into the product as an embedded
// broadcast from memory (vmulps m32{1to16}). v16{} + x cost a scalar add of 0 (kept: 0 + -0 is
// +0) and a broadcast, on the ports the products need; x - v16{} and a 16-x initializer built
// the vector lane by lane under masks. Both slowed b3's attention (perf, Intel model 167).
SL_VINLINE v16 vsplat(float x) {
  const v16 v = {x};
  return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}
SL_VINLINE v16 lane_index() { return v16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; }

// fast_exp(v16) is core/fastmath.h's fast_exp on each lane: the same operations in the same
// order, with the constants broadcast by vsplat.
template <>
struct Lanes<v16_value> {
  using Int = v16i;
  static SL_VINLINE v16 splat(float c) { return vsplat(c); }
};

// The lanes of v summed (or maxed) in one fixed tree, the same in every clone: lane l with lane
// l + 8, then l with l + 4, l + 2, l + 1 (halves added as vectors, not through memory).
typedef float v8 __attribute__((vector_size(32), aligned(4)));
typedef float v4 __attribute__((vector_size(16), aligned(4)));
typedef float v2 __attribute__((vector_size(8), aligned(4)));
SL_VINLINE v4 halves_to4(v16 v, bool max) {
  const v8 lo = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  const v8 hi = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const v8 a = max ? (hi > lo ? hi : lo) : lo + hi;
  const v4 alo = __builtin_shufflevector(a, a, 0, 1, 2, 3),
           ahi = __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return max ? (ahi > alo ? ahi : alo) : alo + ahi;
}
SL_VINLINE float hsum(v16 v) {
  const v4 b = halves_to4(v, false);
  const v2 c = __builtin_shufflevector(b, b, 0, 1) + __builtin_shufflevector(b, b, 2, 3);
  return c[0] + c[1];
}
SL_VINLINE float hmax(v16 v) {
  const v4 b = halves_to4(v, true);
  const v2 lo = __builtin_shufflevector(b, b, 0, 1), hi = __builtin_shufflevector(b, b, 2, 3);
  const v2 c = hi > lo ? hi : lo;
  return c[1] > c[0] ? c[1] : c[0];
}

// A 16 x 16 block transposed in registers: r[k] row k in, column k out. Each scale B = 1, 2, 4, 8
// swaps the off-diagonal B x B blocks of every 2B x 2B block, one two-input shuffle per row.
template <int B, int... L>
SL_VINLINE void swap_blocks(v16& lo, v16& hi, std::integer_sequence<int, L...>) {
  const v16 a = lo, b = hi;
  lo = __builtin_shufflevector(a, b, ((L & B) == 0 ? L : 16 + L - B)...);
  hi = __builtin_shufflevector(a, b, ((L & B) == 0 ? L + B : 16 + L)...);
}
template <int B>
SL_VINLINE void swap_blocks_all(v16 (&r)[kLanes]) {
  for (int i = 0; i < kLanes; ++i)
    if ((i & B) == 0) swap_blocks<B>(r[i], r[i + B], std::make_integer_sequence<int, kLanes>{});
}
SL_VINLINE void transpose16(v16 (&r)[kLanes]) {
  swap_blocks_all<1>(r);
  swap_blocks_all<2>(r);
  swap_blocks_all<4>(r);
  swap_blocks_all<8>(r);
}

}  // namespace sl
