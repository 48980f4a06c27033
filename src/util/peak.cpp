// fma_peak (see peak.h): one loop per vector width, chosen at run time by what the CPU supports,
// so a portable build measures the widest vectors of the machine it runs on.
#include "util/peak.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SL_PEAK_X86 1
#endif

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;

// Each accumulator follows a <- a * m + c, which converges to c / (1 - m) = 1: finite, never
// subnormal, and the compiler cannot fold it. Returns the FLOPs done.
constexpr int kChains = 12;
constexpr float kM = 0.999999f, kC = 1e-6f;
volatile float g_sink;  // keeps the result alive

double scalar_loop(long iters) {
  float a[kChains];
  for (int j = 0; j < kChains; ++j) a[j] = static_cast<float>(j);
  for (long i = 0; i < iters; ++i)
    for (float& x : a) x = x * kM + kC;
  float s = 0;
  for (float x : a) s += x;
  g_sink = s;
  return 2.0 * kChains * static_cast<double>(iters);
}

#ifdef SL_PEAK_X86
__attribute__((target("avx2,fma"))) double avx2_loop(long iters) {
  const __m256 m = _mm256_set1_ps(kM), c = _mm256_set1_ps(kC);
  __m256 a[kChains];
  for (int j = 0; j < kChains; ++j) a[j] = _mm256_set1_ps(static_cast<float>(j));
  for (long i = 0; i < iters; ++i)
    for (int j = 0; j < kChains; ++j) a[j] = _mm256_fmadd_ps(a[j], m, c);
  __m256 s = a[0];
  for (int j = 1; j < kChains; ++j) s = _mm256_add_ps(s, a[j]);
  g_sink = _mm256_cvtss_f32(s);
  return 2.0 * 8 * kChains * static_cast<double>(iters);
}

// Operands are loaded from memory and the result stored back: GCC 12's _mm512_set1_ps and
// _mm512_reduce_add_ps trip -Wuninitialized inside its own headers.
__attribute__((target("avx512f"))) double avx512_loop(long iters) {
  alignas(64) float buf[16];
  std::fill(buf, buf + 16, kM);
  const __m512 m = _mm512_load_ps(buf);
  std::fill(buf, buf + 16, kC);
  const __m512 c = _mm512_load_ps(buf);
  __m512 a[kChains];
  for (int j = 0; j < kChains; ++j) {
    std::fill(buf, buf + 16, static_cast<float>(j));
    a[j] = _mm512_load_ps(buf);
  }
  for (long i = 0; i < iters; ++i)
    for (int j = 0; j < kChains; ++j) a[j] = _mm512_fmadd_ps(a[j], m, c);
  __m512 s = a[0];
  for (int j = 1; j < kChains; ++j) s = _mm512_add_ps(s, a[j]);
  _mm512_store_ps(buf, s);
  float sum = 0;
  for (float x : buf) sum += x;
  g_sink = sum;
  return 2.0 * 16 * kChains * static_cast<double>(iters);
}
#endif

struct Loop {
  double (*run)(long);
  const char* isa;
};

Loop widest_loop() {
#ifdef SL_PEAK_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {avx512_loop, "AVX-512"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {avx2_loop, "AVX2+FMA"};
#endif
  return {scalar_loop, "scalar"};
}

double seconds_of(const Loop& loop, long iters, double* flops) {
  const auto t0 = Clock::now();
  *flops = loop.run(iters);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

FmaPeak fma_peak(int threads, double seconds) {
  const Loop loop = widest_loop();
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Calibrate on this thread: grow the count until one run takes a tenth of the budget.
  long iters = 1 << 14;
  double flops = 0.0;
  while (seconds_of(loop, iters, &flops) < 0.1 * seconds && iters < (1L << 40)) iters *= 2;
  iters = static_cast<long>(static_cast<double>(iters) * 10.0);
  std::vector<double> secs(static_cast<size_t>(threads)), done(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      secs[static_cast<size_t>(t)] = seconds_of(loop, iters, &done[static_cast<size_t>(t)]);
    });
  for (auto& th : pool) th.join();
  double total = 0.0;
  for (double d : done) total += d;
  const double slowest = *std::max_element(secs.begin(), secs.end());
  return {slowest > 0 ? total / slowest / 1e9 : 0.0, loop.isa};
}

PeakReading read_peak(const std::vector<double>& rounds, const std::vector<PeakProduct>& products,
                      double loadavg, int cpus, int threads) {
  PeakReading r;
  if (!rounds.empty()) {
    const auto [lo, hi] = std::minmax_element(rounds.begin(), rounds.end());
    r.gflops = *hi;
    r.spread = *hi > 0 ? (*hi - *lo) / *hi : 0.0;
  }
  for (const PeakProduct& p : products)
    if (p.gflops > r.product.gflops) r.product = p;
  char buf[200];
  if (r.product.gflops > r.gflops) {
    r.below_product = true;
    std::snprintf(buf, sizeof buf, "the FMA peak's best round, %.2f GFLOP/s, is below %s at %.2f",
                  r.gflops, r.product.name.c_str(), r.product.gflops);
    r.signs.emplace_back(buf);
  }
  if (r.spread > kPeakLoadedSpread) {
    std::snprintf(buf, sizeof buf, "the peak's %zu rounds spread %.0f %%", rounds.size(),
                  100.0 * r.spread);
    r.signs.emplace_back(buf);
  }
  if (std::isfinite(loadavg) && cpus > 0 && loadavg + std::max(threads, 1) > cpus + 0.5) {
    std::snprintf(buf, sizeof buf, "load average %.2f on %d CPUs before it, for %d thread%s",
                  loadavg, cpus, std::max(threads, 1), threads == 1 ? "" : "s");
    r.signs.emplace_back(buf);
  }
  r.loaded = !r.signs.empty();
  return r;
}

double parse_loadavg(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && std::isfinite(v) && v >= 0
             ? v
             : std::numeric_limits<double>::quiet_NaN();
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  std::string text;
  if (!std::getline(in, text)) return std::numeric_limits<double>::quiet_NaN();
  return parse_loadavg(text);
}

}  // namespace sl
