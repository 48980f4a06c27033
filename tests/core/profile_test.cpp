// The op profile of `stacklab bench --profile`: each recorded op gets its forward and backward
// time, with the part spent in sgemm inside it, and nothing is recorded outside a Scope.
#include "util/profile.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/autograd.h"
#include "core/ops.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::randn;

const op_profile::Row* find_row(const std::vector<op_profile::Row>& rows, const std::string& op) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.op == op; });
  return it == rows.end() ? nullptr : &*it;
}

void linear_step() {
  op_profile::mark();  // a forward pass starts here, as each bench step marks it
  Tensor x = randn({64, 32}, 1), w = randn({48, 32}, 2), b = randn({48}, 3);
  sum(linear(x, w, b)).backward();
}

TEST(OpProfile, ChargesEachRecordedOpItsForwardAndBackwardWithTheSgemmTimeInside) {
  std::vector<op_profile::Row> rows;
  {
    op_profile::Scope scope;
    EXPECT_TRUE(op_profile::on());
    linear_step();
    linear_step();
    rows = op_profile::rows();
  }
  EXPECT_FALSE(op_profile::on());
  const op_profile::Row* lin = find_row(rows, "linear");
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->forward_calls, 2);
  EXPECT_EQ(lin->backward_calls, 2);
  EXPECT_GT(lin->forward_sgemm_ms, 0.0);
  EXPECT_LE(lin->forward_sgemm_ms, lin->forward_ms);
  EXPECT_GT(lin->backward_sgemm_ms, 0.0);
  EXPECT_LE(lin->backward_sgemm_ms, lin->backward_ms);
  const op_profile::Row* total = find_row(rows, "sum");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->forward_calls, 2);
  EXPECT_EQ(total->forward_sgemm_ms, 0.0);
  EXPECT_EQ(rows.front().op, "linear");  // in the order the ops first ran
}

TEST(OpProfile, RecordsNothingOutsideAScope) {
  { op_profile::Scope scope; }
  linear_step();
  EXPECT_TRUE(op_profile::rows().empty());
}

}  // namespace
}  // namespace sl
