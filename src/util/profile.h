// Where a training step's time goes, op by op: the table of `stacklab bench --profile`.
//
// Off by default; the cost when off is one relaxed atomic load per recorded op and per sgemm.
// When on (op_profile::Scope), three clocks run:
//   forward   attach() closes each recorded op: the wall time since the previous attach (or since
//             op_profile::mark(), the start of a forward pass) is charged to the op that attaches.
//             So a forward row also holds the glue before the op (a reshape that records
//             nothing, a dropout mask), and an op that records nothing (no input needs grad)
//             is charged to the next one that does.
//   backward  run_backward times each node's closure and each tensor's gradient hooks.
//   sgemm     every BLAS call (core/blas.cpp, the leaf product of gemm, gemm_ld and gemm_rows)
//             adds its wall time to the op running it, so each row splits into time in sgemm and
//             the rest. Inside a parallel region (attention's per-head products) the calls of
//             every thread add up: with more than one thread the sgemm column is thread time.
// Not here: the optimizer (the bench times its step as a whole), printing (cli/cmd_bench.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sl::op_profile {

bool on();
// Starts the forward clock: the next recorded op's forward time counts from here.
void mark();
// Called by attach(): charges the time since the last mark or attach to `op`'s forward.
void forward_done(const char* op);
// Called by run_backward around a node's closure (op) or a tensor's hooks ("(gradient hooks)").
void backward_begin();
void backward_done(const char* op);
// Called by core/blas.cpp around each BLAS product.
int64_t now_ns();
void add_sgemm_ns(int64_t ns);

struct Row {
  std::string op;
  double forward_ms = 0, forward_sgemm_ms = 0;    // summed over every call
  double backward_ms = 0, backward_sgemm_ms = 0;  // summed over every call
  int64_t forward_calls = 0, backward_calls = 0;
};
// The rows recorded since the profile was started, in the order each op first ran.
std::vector<Row> rows();

// Turns the profile on (cleared) for its lifetime; not reentrant.
class Scope {
 public:
  Scope();
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace sl::op_profile
