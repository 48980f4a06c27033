// FTZ and DAZ on every compute thread (see core/fpmode.h for why and which threads).
#include "core/fpmode.h"

#if defined(__x86_64__)
#include <immintrin.h>  // _mm_getcsr, _mm_setcsr
#define SL_HAVE_MXCSR 1
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include <atomic>

#include "util/error.h"

extern "C" {
// Provided by OpenBLAS. In its pthread build, after blas_thread_shutdown_ the next
// openblas_set_num_threads (or the next threaded call) starts the pool again from the calling
// thread. openblas_get_parallel: 0 sequential, 1 pthreads, 2 OpenMP.
int blas_thread_shutdown_(void);
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
int openblas_get_parallel(void);
}

namespace sl {
namespace {

#ifdef SL_HAVE_MXCSR
constexpr unsigned kFtz = 1u << 15;  // MXCSR bit 15: flush to zero
constexpr unsigned kDaz = 1u << 6;   // MXCSR bit 6: denormals are zero
#endif

}  // namespace

bool can_flush_subnormals() {
#ifdef SL_HAVE_MXCSR
  return true;
#else
  return false;
#endif
}

void set_flush_subnormals_this_thread(bool on) {
#ifdef SL_HAVE_MXCSR
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? csr | kFtz | kDaz : csr & ~(kFtz | kDaz));
#else
  (void)on;
#endif
}

bool flush_subnormals_on() {
#ifdef SL_HAVE_MXCSR
  return (_mm_getcsr() & (kFtz | kDaz)) == (kFtz | kDaz);
#else
  return false;
#endif
}

void set_flush_subnormals(bool on) {
  if (!can_flush_subnormals()) return;
  set_flush_subnormals_this_thread(on);
#ifdef _OPENMP
  SL_CHECK(!omp_in_parallel(), "set_flush_subnormals inside a parallel region");
  // One region of the team size every later region uses: libgomp keeps its workers between
  // regions (and ends the ones a smaller team leaves idle), so each of them runs this once.
  std::atomic<int> wrong{0};
#pragma omp parallel num_threads(omp_get_max_threads())
  {
    set_flush_subnormals_this_thread(on);
    if (flush_subnormals_on() != on) ++wrong;
  }
  SL_CHECK(wrong == 0, "an OpenMP worker did not take the flush-to-zero mode");
#endif
  // OpenBLAS's pthread workers were started by its library constructor with the mode main had
  // then: start them again from this thread. (An OpenMP OpenBLAS runs on the workers above.)
  if (openblas_get_parallel() == 1) {
    const int blas_threads = openblas_get_num_threads();
    blas_thread_shutdown_();
    openblas_set_num_threads(blas_threads);
  }
}

}  // namespace sl
