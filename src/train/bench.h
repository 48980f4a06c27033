// Bench: times full training steps (forward, backward, AdamW step) of a config's model after a
// warm-up, and measures this machine's OpenBLAS sgemm on the matrix shapes that model uses, so
// a step's GFLOP/s can be read against the machine's own ceiling. Used by `stacklab bench`.
// Not here: comparing against PyTorch (tests/bench/bench_vs_torch.py does that), printing.
//
// FLOPs per training step (the same formula as tests/bench/bench_vs_torch.py's torch side):
//   6 * N_matmul * B * T  +  12 * L * B * T^2 * C
// N_matmul counts the weights of every Linear (qkv, attn.proj, mlp.fc, mlp.proj, head; not
// embeddings, biases or norm gains). The attention term is q k^T and att v, 2 * B * T^2 * C
// FLOPs each forward, times 3 for forward + backward, counted over the full T x T square
// (causal masking would halve the useful part; torch computes the full square too).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "util/peak.h"

namespace sl {

struct BenchOptions {
  int steps = 20;
  int warmup = 3;
  int threads = 0;       // 0 = train.threads (0 there = all cores)
  bool ceiling = true;   // time the sgemm ceiling too, alternating with the steps
  int rounds = 3;        // ceiling timings: after each of `rounds` blocks of steps
  bool profile = false;  // then `steps` more steps with the op profile on (util/profile.h)
};

// One line of the op profile, per training step (the profiled steps' sums over their count).
struct ProfileRow {
  std::string op;
  double calls = 0;  // forward calls per step (backward ones when the op has no forward)
  double forward_ms = 0, forward_sgemm_ms = 0, backward_ms = 0, backward_sgemm_ms = 0;
};

struct BenchResult {
  std::vector<double> step_ms, forward_ms, backward_ms, optimizer_ms;  // one per timed step
  int64_t n_params = 0, n_matmul_params = 0, tokens_per_step = 0;
  double flops_per_step = 0.0;
  long peak_rss_kb = 0;
  double page_faults_per_step = 0.0;  // over the timed steps: 0 when nothing new is touched
  int threads = 0;
  double final_loss = 0.0;
  std::vector<double> ceiling_gflops;        // OpenBLAS sgemm on the Linear shapes, one per round
  std::vector<double> ceiling_build_gflops;  // the build's own path on them (libxsmm builds only)
  // The cores' FP32 FMA rate in registers (util/peak.h): short rounds before, between and after
  // the products of each ceiling round; the best one is the peak (read_peak).
  std::vector<double> peak_gflops;
  std::string peak_isa;  // the vectors it ran on: "AVX-512", "AVX2+FMA" or "scalar"
  double loadavg = std::numeric_limits<double>::quiet_NaN();  // /proc/loadavg before the steps
  int cpus = 0;                                               // the CPUs this process may use
  // With BenchOptions::profile: the ops, then "optimizer" and the unattributed rest of forward
  // and backward, so that the rows add up to profiled_step_ms (the profiled steps' mean).
  std::vector<ProfileRow> profile;
  double profiled_step_ms = 0.0;
};

// FLOPs of one training step of `m` on B x T tokens (formula above).
double train_step_flops(const ModelConfig& m, int64_t B, int64_t T, int64_t n_matmul_params);

BenchResult run_bench(Config cfg, const BenchOptions& opt);
// The FMA peak of `r` read against every product measured beside it (util/peak.h read_peak):
// OpenBLAS's and the build's ceiling rounds and the step's `step_gflops`.
PeakReading peak_reading(const BenchResult& r, double step_gflops);
nlohmann::json to_json(const BenchResult& r, const Config& cfg);

// One sgemm shape, row-major C (M, N) = op(A) op(B), timed over `reps` calls after a warm-up.
struct GemmShape {
  std::string name;
  int64_t M, N, K;
  bool trans_a, trans_b;
};
struct GemmTiming {
  GemmShape shape;
  double ms = 0.0, gflops = 0.0;
};

// The gemms of one training step's Linear layers (forward, dx, dW for qkv, attn.proj, mlp.fc,
// mlp.proj, head) for config `m` at B x T tokens.
std::vector<GemmShape> model_gemm_shapes(const ModelConfig& m, int64_t B, int64_t T);
// openblas_only: through OpenBLAS whatever the build (the reference ceiling); else the build's
// path.
std::vector<GemmTiming> time_gemms(const std::vector<GemmShape>& shapes, int threads,
                                   double min_seconds = 0.2, bool openblas_only = true);
// The ceiling: total FLOPs of all shapes over their total time (a FLOP-weighted harmonic mean).
double gemm_ceiling_gflops(const std::vector<GemmTiming>& t);

// Median and extrema of a non-empty list.
double median(std::vector<double> v);

}  // namespace sl
