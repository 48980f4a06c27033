// The machine's own limit for float32 arithmetic: the rate of fused multiply-adds a core sustains
// with every operand in registers (no memory traffic), on the widest vectors it has. `stacklab
// bench` divides a training step's FLOP rate by it, beside the sgemm ceiling: OpenBLAS's kernels
// may use narrower vectors than the core has (OPENBLAS_CORETYPE=Haswell runs 256-bit code on an
// AVX-512 core, half its peak), so the ceiling alone can hide half the machine. Other processes on
// the cores slow a measurement down, never up: `bench` takes the best of short rounds between its
// product timings and says when the machine was loaded (read_peak).
#pragma once
#include <string>
#include <vector>

namespace sl {

struct FmaPeak {
  double gflops = 0.0;  // 2 FLOPs per lane per FMA, summed over the threads
  std::string isa;      // "AVX-512", "AVX2+FMA" or "scalar": the widest this CPU runs
};

// Runs `threads` threads (0: every core) of independent FMA chains (12 accumulators, enough to
// cover the FMA latency on two ports) for about `seconds` each; the rate is the FLOPs of all
// threads over the slowest thread's time.
FmaPeak fma_peak(int threads, double seconds);

// A rate measured beside the peak, in the same process and rounds: no product of this machine's
// float32 arithmetic can run faster than its FMA peak, so one that does says the peak's rounds
// were slowed (by other processes on the cores: load can only pull a round down).
struct PeakProduct {
  std::string name;  // "OpenBLAS sgemm", "this build's products", "the training step"
  double gflops = 0.0;
};

// The peak as a report gives it, from its rounds and what was measured beside them.
struct PeakReading {
  double gflops = 0.0;             // the best round (0 without rounds)
  double spread = 0.0;             // (best - worst) / best over the rounds
  bool below_product = false;      // the best round is below `product`: not a peak at all
  PeakProduct product;             // the fastest product measured beside it
  bool loaded = false;             // any of `signs`: the ratio to it is not clean
  std::vector<std::string> signs;  // why the machine reads as loaded, one phrase each
};

// Rounds that spread more than this (best to worst, relative to the best) were slowed unevenly.
inline constexpr double kPeakLoadedSpread = 0.10;

// Reads the peak from its `rounds` (GFLOP/s each) and the `products` measured beside them. The
// machine reads as loaded when the best round is below a product, when the rounds spread more
// than kPeakLoadedSpread, or when `loadavg` (the 1-minute load average before the measurement;
// NaN: unknown) leaves fewer idle CPUs of `cpus` than the `threads` measured on (with half a CPU
// of slack). A pure function, so the rule is tested on numbers, not on a loaded machine.
PeakReading read_peak(const std::vector<double>& rounds, const std::vector<PeakProduct>& products,
                      double loadavg, int cpus, int threads);

// The 1-minute load average of /proc/loadavg's text ("0.52 0.58 0.59 1/467 12345"), NaN when it
// does not start with a number.
double parse_loadavg(const std::string& text);

// parse_loadavg of /proc/loadavg (NaN where there is none).
double load_average();

}  // namespace sl
