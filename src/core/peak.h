// The machine's own limit for float32 arithmetic: the rate of fused multiply-adds a core sustains
// with every operand in registers (no memory traffic), on the widest vectors it has. `stacklab
// bench` divides a training step's FLOP rate by it, beside the sgemm ceiling: OpenBLAS's kernels
// may use narrower vectors than the core has (OPENBLAS_CORETYPE=Haswell runs 256-bit code on an
// AVX-512 core, half its peak), so the ceiling alone can hide half the machine.
#pragma once
#include <string>

namespace sl {

struct FmaPeak {
  double gflops = 0.0;  // 2 FLOPs per lane per FMA, summed over the threads
  std::string isa;      // "AVX-512", "AVX2+FMA" or "scalar": the widest this CPU runs
};

// Runs `threads` threads (0: every core) of independent FMA chains (12 accumulators, enough to
// cover the FMA latency on two ports) for about `seconds` each; the rate is the FLOPs of all
// threads over the slowest thread's time.
FmaPeak fma_peak(int threads, double seconds);

}  // namespace sl
