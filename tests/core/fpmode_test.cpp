// Subnormals flushed to zero on every compute thread (core/fpmode.h): a product that would be
// subnormal is exactly 0 with the flush on and not without, on the main thread, on every OpenMP
// worker, in a gemm split over OpenMP threads and in an sgemm OpenBLAS runs on its own worker
// threads. The "alone" tests show each premise the flush rests on (a thread keeps the mode it
// was created with), so that the others would fail if only the calling thread were set.
// Results are checked by their bits: with DAZ on, the test's own comparisons would read a
// subnormal as 0.
#include "core/fpmode.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/blas.h"

extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
}

namespace sl {
namespace {

// Volatile so that the compiler cannot fold the products at compile time.
volatile float g_tiny = 1e-20f;       // tiny * tiny = 1e-40: a subnormal result (FTZ)
volatile float g_subnormal = 1e-40f;  // a subnormal input: times 1e10 it is 1e-30 (DAZ)

float subnormal_product() { return g_tiny * g_tiny; }
float product_of_subnormal_input() { return g_subnormal * 1e10f; }

// +0 or -0 by its bits (not by a float comparison, which DAZ on this thread would change).
bool is_zero(float v) { return (std::bit_cast<uint32_t>(v) & 0x7fffffffu) == 0; }

// Two threads each, and afterwards the mode the test process had before (so the other tests
// run as they would alone), OpenBLAS single-threaded again under OpenMP (core/blas.h).
struct FlushTest : ::testing::Test {
  bool was_on_ = false;
  void SetUp() override {
    if (!can_flush_subnormals())
      GTEST_SKIP() << "this build has no flush-to-zero control for this CPU";
    was_on_ = flush_subnormals_on();
    set_num_threads(2);
  }
  void TearDown() override {
    set_num_threads(2);
    set_flush_subnormals(was_on_);
  }
};

using FlushSubnormals = FlushTest;

TEST_F(FlushSubnormals, MakeASubnormalProductAndASubnormalInputZeroOnTheMainThreadOnlyWhenOn) {
  set_flush_subnormals(true);
  EXPECT_TRUE(flush_subnormals_on());
  EXPECT_TRUE(is_zero(subnormal_product()));
  EXPECT_TRUE(is_zero(product_of_subnormal_input()));
  set_flush_subnormals(false);
  EXPECT_FALSE(flush_subnormals_on());
  EXPECT_FALSE(is_zero(subnormal_product()));
  EXPECT_FALSE(is_zero(product_of_subnormal_input()));
}

#ifdef _OPENMP
// Per thread of one parallel region of the current team size: the subnormal product and whether
// the thread reads FTZ and DAZ set.
struct PerThread {
  std::vector<float> product;
  std::vector<char> on;
};
PerThread on_every_openmp_thread() {
  const int n = omp_get_max_threads();
  PerThread r{std::vector<float>(n, -1.0f), std::vector<char>(n, 0)};
#pragma omp parallel num_threads(n)
  {
    const int t = omp_get_thread_num();
    r.product[t] = subnormal_product();
    r.on[t] = flush_subnormals_on();
  }
  return r;
}
#endif

TEST_F(FlushSubnormals, MakeASubnormalProductZeroOnEveryOpenMpWorker) {
#ifndef _OPENMP
  GTEST_SKIP() << "built without OpenMP: no OpenMP workers";
#else
  ASSERT_EQ(omp_get_max_threads(), 2);
  on_every_openmp_thread();  // the workers exist (unflushed) before the mode is set
  set_flush_subnormals(true);
  PerThread r = on_every_openmp_thread();
  for (int t = 0; t < 2; ++t) {
    EXPECT_TRUE(is_zero(r.product[t])) << "thread " << t;
    EXPECT_TRUE(r.on[t]) << "thread " << t;
  }
  set_flush_subnormals(false);
  r = on_every_openmp_thread();
  for (int t = 0; t < 2; ++t) {
    EXPECT_FALSE(is_zero(r.product[t])) << "thread " << t;
    EXPECT_FALSE(r.on[t]) << "thread " << t;
  }
#endif
}

TEST_F(FlushSubnormals, SetOnTheMainThreadAloneLeavesAnExistingOpenMpWorkerUnflushed) {
#ifndef _OPENMP
  GTEST_SKIP() << "built without OpenMP: no OpenMP workers";
#else
  set_flush_subnormals(false);
  set_flush_subnormals_this_thread(true);
  const PerThread r = on_every_openmp_thread();
  EXPECT_TRUE(is_zero(r.product[0]));
  EXPECT_FALSE(is_zero(r.product[1])) << "the worker kept the mode it was created with";
#endif
}

// C (n, n) = A B with every A entry 1e-20 and every B entry `b`, through OpenBLAS's threads.
std::vector<float> openblas_sgemm(int n, float a, float b) {
  const std::vector<float> A(static_cast<size_t>(n) * n, a), B(static_cast<size_t>(n) * n, b);
  std::vector<float> C(static_cast<size_t>(n) * n, -1.0f);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A.data(), n, B.data(), n,
              0.0f, C.data(), n);
  return C;
}

int count_zeros(const std::vector<float>& c) {
  int zeros = 0;
  for (float v : c) zeros += is_zero(v);
  return zeros;
}

constexpr int kN =
    256;  // 256^3 multiply-adds: far above OpenBLAS's threshold for using its threads
constexpr int kCells = kN * kN;
// Each term 1e-20 * 4e-22 = 4e-42 and each output 256 of them, ~1e-39: subnormal all through (FTZ).
constexpr float kA = 1e-20f, kB = 4e-22f;
// A subnormal input 1e-40 times 1e10, 256 terms: ~2.6e-28, normal, unless DAZ reads it as 0.
constexpr float kSubnormalA = 1e-40f, kBigB = 1e10f;

// OpenBLAS with two threads of its own (not the single thread the OpenMP build gives it).
bool openblas_on_two_threads() {
  openblas_set_num_threads(2);
  return openblas_get_num_threads() > 1;
}

TEST_F(FlushSubnormals, MakeEveryOutputOfAnSgemmOnOpenBlasWorkerThreadsZero) {
  set_flush_subnormals(true);
  if (!openblas_on_two_threads())
    GTEST_SKIP() << "OpenBLAS runs on one thread here (openblas_get_num_threads() == 1)";
  EXPECT_EQ(count_zeros(openblas_sgemm(kN, kA, kB)), kCells) << "subnormal results flushed (FTZ)";
  EXPECT_EQ(count_zeros(openblas_sgemm(kN, kSubnormalA, kBigB)), kCells)
      << "subnormal inputs read as 0 (DAZ)";
  set_flush_subnormals(false);
  ASSERT_TRUE(openblas_on_two_threads());
  EXPECT_EQ(count_zeros(openblas_sgemm(kN, kA, kB)), 0);
  EXPECT_EQ(count_zeros(openblas_sgemm(kN, kSubnormalA, kBigB)), 0);
}

TEST_F(FlushSubnormals, SetOnTheMainThreadAloneLeavesOpenBlasWorkersUnflushed) {
  set_flush_subnormals(false);
  if (!openblas_on_two_threads())
    GTEST_SKIP() << "OpenBLAS runs on one thread here (openblas_get_num_threads() == 1)";
  set_flush_subnormals_this_thread(true);
  const int zeros = count_zeros(openblas_sgemm(kN, kA, kB));
  EXPECT_GT(zeros, 0) << "the calling thread's share is flushed";
  EXPECT_LT(zeros, kCells)
      << "an OpenBLAS worker's share is not: it kept the mode it was started with";
}

TEST_F(FlushSubnormals, MakeEveryOutputOfAGemmSplitOverOpenMpThreadsZero) {
  std::vector<float> A(static_cast<size_t>(kCells), kA), B(static_cast<size_t>(kCells), kB),
      C(static_cast<size_t>(kCells));
  set_flush_subnormals(true);
  gemm(false, false, kN, kN, kN, 1.0f, A.data(), B.data(), 0.0f, C.data());
  EXPECT_EQ(count_zeros(C), kCells);
  set_flush_subnormals(false);
  gemm(false, false, kN, kN, kN, 1.0f, A.data(), B.data(), 0.0f, C.data());
  EXPECT_EQ(count_zeros(C), 0);
}

}  // namespace
}  // namespace sl
