// The op profile's clocks (util/profile.h). Recording runs on the thread that records ops and
// sweeps backward (one thread at a time); only the sgemm clock is added to from worker threads,
// hence its atomic.
#include "util/profile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>

namespace sl::op_profile {
namespace {

std::atomic<bool> g_on{false};
std::atomic<int64_t> g_sgemm_ns{0};  // every BLAS call's time since the profile started

struct Clock {
  int64_t at_ns = 0, sgemm_at_ns = 0;  // the last boundary, and the sgemm clock there
};
Clock g_forward, g_backward;

struct Totals {
  int64_t order = 0;
  int64_t fwd_ns = 0, fwd_sgemm_ns = 0, bwd_ns = 0, bwd_sgemm_ns = 0;
  int64_t fwd_calls = 0, bwd_calls = 0;
};
std::map<std::string, Totals> g_rows;

Totals& row(const char* op) {
  auto [it, fresh] = g_rows.try_emplace(op);
  if (fresh) it->second.order = static_cast<int64_t>(g_rows.size());
  return it->second;
}

Clock now_clock() { return {now_ns(), g_sgemm_ns.load(std::memory_order_relaxed)}; }

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool on() { return g_on.load(std::memory_order_relaxed); }

void mark() {
  if (on()) g_forward = now_clock();
}

void forward_done(const char* op) {
  if (!on()) return;
  const Clock c = now_clock();
  Totals& t = row(op);
  t.fwd_ns += c.at_ns - g_forward.at_ns;
  t.fwd_sgemm_ns += c.sgemm_at_ns - g_forward.sgemm_at_ns;
  ++t.fwd_calls;
  g_forward = now_clock();  // the bookkeeping above is nobody's time
}

void backward_begin() {
  if (on()) g_backward = now_clock();
}

void backward_done(const char* op) {
  if (!on()) return;
  const Clock c = now_clock();
  Totals& t = row(op);
  t.bwd_ns += c.at_ns - g_backward.at_ns;
  t.bwd_sgemm_ns += c.sgemm_at_ns - g_backward.sgemm_at_ns;
  ++t.bwd_calls;
}

void add_sgemm_ns(int64_t ns) { g_sgemm_ns.fetch_add(ns, std::memory_order_relaxed); }

std::vector<Row> rows() {
  std::vector<std::pair<int64_t, Row>> ordered;
  for (const auto& [op, t] : g_rows)
    ordered.push_back({t.order,
                       {op, t.fwd_ns * 1e-6, t.fwd_sgemm_ns * 1e-6, t.bwd_ns * 1e-6,
                        t.bwd_sgemm_ns * 1e-6, t.fwd_calls, t.bwd_calls}});
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Row> out;
  for (auto& [order, r] : ordered) out.push_back(std::move(r));
  return out;
}

Scope::Scope() {
  g_rows.clear();
  g_sgemm_ns = 0;
  g_on = true;
  mark();
}
Scope::~Scope() { g_on = false; }

}  // namespace sl::op_profile
