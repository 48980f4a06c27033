// embedding gather/scatter and the head split/merge permutes.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::randn;

TEST(Embedding, GathersRowsAndScatterAddsRepeatedIds) {
  Tensor w = Tensor::from({3, 2}, {0, 1, 10, 11, 20, 21}, true);
  Tensor y = embedding(w, {2, 0, 2}, Shape{1, 3});
  EXPECT_EQ(y.shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{20, 21, 0, 1, 20, 21}));
  sum(y).backward();
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{1, 1, 0, 0, 2, 2}));
}

TEST(Embedding, BackwardMatchesFiniteDifferences) {
  std::vector<int32_t> ids = {1, 4, 4, 0, 2, 1};
  EXPECT_TRUE(grad_check(
      [&](const std::vector<Tensor>& in) {
        return embedding(in[0], ids, Shape{2, 3});
      },
      {randn({5, 3}, 1)}));
}

TEST(Embedding, RejectsAnIdOutsideTheTable) {
  EXPECT_THROW(embedding(Tensor::zeros({3, 2}), {3}, Shape{1}), ShapeError);
}

TEST(Heads, SplitThenMergeIsTheIdentity) {
  Tensor x = randn({2, 3, 8}, 2, 1.0f, false);
  Tensor h = split_heads(x, 4);
  EXPECT_EQ(h.shape(), (Shape{2, 4, 3, 2}));
  // head 1 of (b=0, t=2) holds channels 2..3 of x[0, 2, :]
  EXPECT_EQ(h.data()[((0 * 4 + 1) * 3 + 2) * 2 + 1], x.data()[(0 * 3 + 2) * 8 + 3]);
  EXPECT_EQ(merge_heads(h).to_vector(), x.to_vector());
}

TEST(Heads, SplitMergeSliceAndReshapeBackwardMatchFiniteDifferences) {
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return split_heads(in[0], 2); },
                         {randn({2, 3, 4}, 3)}));
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return merge_heads(in[0]); },
                         {randn({2, 2, 3, 2}, 4)}));
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return slice_last(in[0], 2, 3); },
                         {randn({2, 3, 6}, 5)}));
  EXPECT_TRUE(grad_check(
      [](const std::vector<Tensor>& in) {
        return tanh(reshape(in[0], Shape{6, 2}));
      },
      {randn({3, 4}, 6)}));
}

TEST(ConcatLast, IsTheInverseOfSlicesAndItsBackwardMatchesFiniteDifferences) {
  Tensor x = randn({2, 3, 7}, 8, 1.0f, false);
  Tensor back = concat_last({slice_last(x, 0, 2), slice_last(x, 2, 4), slice_last(x, 6, 1)});
  EXPECT_EQ(back.shape(), x.shape());
  EXPECT_EQ(back.to_vector(), x.to_vector());
  EXPECT_TRUE(grad_check(
      [](const std::vector<Tensor>& in) {
        return tanh(concat_last({in[0], in[1]}));
      },
      {randn({2, 3, 2}, 9), randn({2, 3, 5}, 10)}));
  EXPECT_THROW(concat_last({randn({2, 3}, 1), randn({3, 3}, 2)}), ShapeError);
  EXPECT_THROW(concat_last({}), ShapeError);
}

TEST(Reshape, SharesStorageWithItsInput) {
  Tensor x = Tensor::zeros({2, 3});
  Tensor y = reshape(x, Shape{6});
  x.data()[4] = 7.0f;
  EXPECT_EQ(y.data()[4], 7.0f);
  EXPECT_THROW(reshape(x, Shape{4}), ShapeError);
}

}  // namespace
}  // namespace sl
