// parallel_for: the one way non-BLAS kernels use threads. OpenMP splits [0, n) into contiguous
// chunks over the threads set by set_num_threads (core/blas.h); without OpenMP it is a plain
// loop. blas_serial_for is the variant for bodies that call gemm themselves (a few gemms per
// attention head), dynamically scheduled; gemm_ld does not split again inside it (core/blas.cpp).
// Not here: nested parallelism, task graphs.
#pragma once
#include <cstdint>

#include "core/blas.h"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace sl {

// Below this much work (elements touched) a loop stays on the calling thread.
inline constexpr int64_t kParallelGrain = 1 << 14;

template <typename F>
void parallel_for(int64_t n, int64_t work, F f) {
#ifdef _OPENMP
  if (work >= kParallelGrain && n > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#else
  (void)work;
#endif
  for (int64_t i = 0; i < n; ++i) f(i);
}

// f(begin, end) over [0, n) cut into chunks of `chunk` elements (the last one shorter), the
// chunks spread over the threads. Chunk boundaries do not depend on the thread count, so a
// per-chunk partial sum combined in chunk order is deterministic.
// `item_work` is the work per element (e.g. the row length when the elements are rows).
template <typename F>
void parallel_chunks(int64_t n, int64_t chunk, F f, int64_t item_work = 1) {
  const int64_t chunks = (n + chunk - 1) / chunk;
  parallel_for(chunks, n * item_work,
               [&](int64_t c) { f(c * chunk, c * chunk + chunk < n ? c * chunk + chunk : n); });
}

// The calling thread's index inside a parallel_for / blas_serial_for body, in [0, num_threads()).
inline int thread_index() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

template <typename F>
void blas_serial_for(int64_t n, F f) {
#ifdef _OPENMP
  if (n > 1 && num_threads() > 1) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) f(i);
}

}  // namespace sl
