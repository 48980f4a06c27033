// Google Benchmark microbenchmarks of the hot kernels of a training step, on the shapes of
// configs/bench/b1 (C 64, T 64, B 16) and b5 (C 512, T 256, B 4): the Linear gemms, fused
// attention forward/backward, layer_norm, GELU, fused cross-entropy and an AdamW step.
// Build with -DSTACKLAB_BUILD_BENCH=ON; run build/stacklab_microbench [--benchmark_filter=...].
// Threads: STACKLAB_THREADS (default 1) through set_num_threads, as `stacklab bench` does.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "core/blas.h"
#include "core/ops.h"
#include "core/rng.h"
#include "train/optimizer.h"

namespace sl {
namespace {

void setup_threads() {
  static const bool once = [] {
    const char* t = std::getenv("STACKLAB_THREADS");
    set_num_threads(t ? std::atoi(t) : 1);
    return true;
  }();
  (void)once;
}

std::vector<float> random_vec(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

// y (R, N) = x (R, K) w^T (K, N): the forward gemm of a Linear. Args: R, N, K.
void BM_LinearGemm(benchmark::State& st) {
  setup_threads();
  const int64_t R = st.range(0), N = st.range(1), K = st.range(2);
  auto x = random_vec(R * K, 1), w = random_vec(N * K, 2);
  std::vector<float> y(static_cast<size_t>(R * N));
  for (auto _ : st) gemm(false, true, R, N, K, 1.0f, x.data(), w.data(), 0.0f, y.data());
  st.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * R * N * K, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LinearGemm)
    ->Args({1024, 192, 64})
    ->Args({1024, 256, 64})
    ->Args({1024, 64, 256})  // b1 qkv, fc, proj
    ->Args({1024, 1536, 512})
    ->Args({1024, 2048, 512})
    ->Args({1024, 512, 2048});  // b5 qkv, fc, proj

// Fused causal attention. Args: B, T, C, NH.
void BM_AttentionForward(benchmark::State& st) {
  setup_threads();
  const int64_t B = st.range(0), T = st.range(1), C = st.range(2), NH = st.range(3);
  auto qkv = random_vec(B * T * 3 * C, 3);
  std::vector<float> y(static_cast<size_t>(B * T * C)),
      att(static_cast<size_t>(B * NH * attention_probs_size(T, C / NH, nullptr)));
  for (auto _ : st) attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
  st.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * B * T * T * C, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_AttentionBackward(benchmark::State& st) {
  setup_threads();
  const int64_t B = st.range(0), T = st.range(1), C = st.range(2), NH = st.range(3);
  auto qkv = random_vec(B * T * 3 * C, 3), dy = random_vec(B * T * C, 4);
  std::vector<float> y(static_cast<size_t>(B * T * C)),
      att(static_cast<size_t>(B * NH * attention_probs_size(T, C / NH, nullptr))),
      dqkv(static_cast<size_t>(B * T * 3 * C));
  attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH);
  for (auto _ : st) attention_backward(dqkv.data(), dy.data(), att.data(), qkv.data(), B, T, C, NH);
  st.counters["GFLOP/s"] =
      benchmark::Counter(8.0 * B * T * T * C, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttentionForward)->Args({16, 64, 64, 4})->Args({4, 256, 512, 8});
BENCHMARK(BM_AttentionBackward)->Args({16, 64, 64, 4})->Args({4, 256, 512, 8});

// LayerNorm forward + backward over (rows, C). Args: rows, C.
void BM_LayerNorm(benchmark::State& st) {
  setup_threads();
  const int64_t R = st.range(0), C = st.range(1);
  auto x = random_vec(R * C, 5), dy = random_vec(R * C, 6);
  std::vector<float> y(x.size()), dx(x.size()), g(static_cast<size_t>(C), 1.0f),
      b(static_cast<size_t>(C)), dg(static_cast<size_t>(C)), db(static_cast<size_t>(C)),
      mean(static_cast<size_t>(R)), rstd(static_cast<size_t>(R));
  for (auto _ : st) {
    layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), R, C,
                       1e-5f);
    layer_norm_backward(dx.data(), dg.data(), db.data(), dy.data(), x.data(), mean.data(),
                        rstd.data(), g.data(), R, C);
  }
  st.SetItemsProcessed(st.iterations() * R * C);
}
BENCHMARK(BM_LayerNorm)->Args({1024, 64})->Args({1024, 512});

// Exact GELU forward + backward over n elements.
void BM_Gelu(benchmark::State& st) {
  setup_threads();
  const int64_t n = st.range(0);
  auto x = random_vec(n, 7), dy = random_vec(n, 8);
  std::vector<float> y(x.size()), dx(x.size());
  for (auto _ : st) {
    gelu_forward(y.data(), x.data(), n, false);
    gelu_backward(dx.data(), dy.data(), x.data(), n, false);
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_Gelu)->Arg(1024 * 256)->Arg(1024 * 2048);

// The same through the pair linear_gelu uses: GELU and its derivative in one forward pass, then
// backward as a product in place over the derivative (each iteration includes the copy of x into
// the buffer the forward overwrites).
void BM_GeluKeepingItsDerivative(benchmark::State& st) {
  setup_threads();
  const int64_t n = st.range(0);
  auto x = random_vec(n, 7), dy = random_vec(n, 8);
  std::vector<float> y(x.size()), g(x.size());
  for (auto _ : st) {
    g = x;
    gelu_forward_grad_serial(y.data(), g.data(), n, false);
    gelu_backward_from_grad_serial(g.data(), dy.data(), n);
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_GeluKeepingItsDerivative)->Arg(1024 * 256)->Arg(1024 * 2048);

// Fused softmax + cross-entropy forward + backward over (N, V). Args: N, V.
void BM_CrossEntropy(benchmark::State& st) {
  setup_threads();
  const int64_t N = st.range(0), V = st.range(1);
  auto logits = random_vec(N * V, 9);
  std::vector<float> probs(logits.size()), dl(logits.size());
  std::vector<int32_t> t(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7) % V);
  for (auto _ : st) {
    benchmark::DoNotOptimize(cross_entropy_forward(probs.data(), logits.data(), t.data(), N, V));
    cross_entropy_backward(dl.data(), 1.0f, probs.data(), t.data(), N, V);
  }
  st.SetItemsProcessed(st.iterations() * N * V);
}
BENCHMARK(BM_CrossEntropy)->Args({1024, 65})->Args({1024, 256});

// One AdamW step over a parameter of n elements.
void BM_AdamW(benchmark::State& st) {
  setup_threads();
  const int64_t n = st.range(0);
  Tensor p = Tensor::from(Shape{n}, random_vec(n, 10), true);
  auto g = random_vec(n, 11);
  std::copy(g.begin(), g.end(), p.grad_data());
  OptimConfig cfg;
  auto opt = make_optimizer(cfg, {{"p", p, true}});
  for (auto _ : st) opt->step(1e-3f);
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_AdamW)->Arg(1 << 16)->Arg(1 << 22);

}  // namespace
}  // namespace sl
