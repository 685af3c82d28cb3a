// ops::self_attention against the header's formula written out in double precision, and against
// rel_pos_attention with the positional terms zeroed (the same maths by another kernel).
#include <gtest/gtest.h>

#include <cmath>

#include "ops_test_util.h"
#include "steno/ops/attention.h"

namespace steno::ops {
namespace {

using testing::all_close;
using testing::nan_tensor;
using testing::pat_tensor;

// out[b, i, h*dk + c] for i < lengths[b]; zeros elsewhere.
std::vector<float> formula(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                           const std::vector<int64_t>& lengths) {
  const int64_t batch = q.dim(0), steps = q.dim(1), d = q.dim(2), dk = d / heads;
  const std::vector<float> qv = q.to_vector(), kv = k.to_vector(), vv = v.to_vector();
  std::vector<float> out(qv.size(), 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < lengths[b]; ++i) {
        std::vector<double> s(lengths[b]);
        double m = -1e300, sum = 0;
        for (int64_t j = 0; j < lengths[b]; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < dk; ++c)
            dot += double(qv[(b * steps + i) * d + h * dk + c]) * kv[(b * steps + j) * d + h * dk + c];
          s[j] = dot / std::sqrt(double(dk));
          m = std::max(m, s[j]);
        }
        for (double& x : s) sum += (x = std::exp(x - m));
        for (int64_t c = 0; c < dk; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < lengths[b]; ++j) acc += s[j] / sum * vv[(b * steps + j) * d + h * dk + c];
          out[(b * steps + i) * d + h * dk + c] = static_cast<float>(acc);
        }
      }
  return out;
}

class SelfAttentionTest : public ::testing::TestWithParam<int> {};

TEST_P(SelfAttentionTest, MatchesTheFormulaAcrossBlocksAndPadding) {
  Context ctx = Context::cpu(GetParam());
  // 150 frames: three blocks of query rows; the second clip's padding starts inside the second block.
  const Tensor q = pat_tensor({2, 150, 24}, 3, 0.5f), k = pat_tensor({2, 150, 24}, 7, 0.5f),
               v = pat_tensor({2, 150, 24}, 11);
  const std::vector<int64_t> lengths = {150, 97};
  Tensor out = nan_tensor({2, 150, 24});
  self_attention(ctx, q, k, v, 4, lengths, out);
  EXPECT_TRUE(all_close(out, formula(q, k, v, 4, lengths), 2e-5f, 2e-5f));  // fp32 scores up to ~30
}

TEST_P(SelfAttentionTest, EqualsRelPosAttentionWithoutItsPositionalTerms) {
  Context ctx = Context::cpu(GetParam());
  const Tensor q = pat_tensor({3, 70, 16}, 5, 0.5f), k = pat_tensor({3, 70, 16}, 9, 0.5f), v = pat_tensor({3, 70, 16}, 2);
  const std::vector<int64_t> lengths = {70, 1, 33};
  Tensor zero_pos = Tensor::zeros({2 * 70 - 1, 16}), zero_bias = Tensor::zeros({2, 8});
  Tensor plain = nan_tensor({3, 70, 16}), rel = nan_tensor({3, 70, 16});
  self_attention(ctx, q, k, v, 2, lengths, plain);
  rel_pos_attention(ctx, q, k, v, zero_pos, zero_bias, zero_bias, lengths, {-1, -1}, rel);
  EXPECT_TRUE(all_close(plain, rel.to_vector(), 1e-7f, 1e-5f));
}

INSTANTIATE_TEST_SUITE_P(Threads, SelfAttentionTest, ::testing::Values(1, 2));

TEST(SelfAttention, OutMayAliasQAndEmptyClipsGiveZeros) {
  Context ctx = Context::cpu(2);
  Tensor q = pat_tensor({2, 80, 8}, 4, 0.5f);
  const Tensor k = pat_tensor({2, 80, 8}, 6, 0.5f), v = pat_tensor({2, 80, 8}, 8);
  const std::vector<float> want = formula(q, k, v, 2, {80, 0});
  self_attention(ctx, q, k, v, 2, {80, 0}, q);
  EXPECT_TRUE(all_close(q, want, 1e-6f, 1e-5f));
}

TEST(SelfAttention, RefusesBadShapesHeadsAndLengths) {
  Context ctx = Context::cpu(1);
  const Tensor q = pat_tensor({1, 5, 6}, 1), k = pat_tensor({1, 5, 6}, 2);
  Tensor out = nan_tensor({1, 5, 6});
  EXPECT_THROW(self_attention(ctx, q, k, k, 4, {5}, out), Error);  // 4 heads do not divide 6
  EXPECT_THROW(self_attention(ctx, q, k, k, 2, {6}, out), Error);  // longer than T
  EXPECT_THROW(self_attention(ctx, q, k, k, 2, {5, 5}, out), Error);
  Tensor wrong = nan_tensor({1, 5, 4});
  EXPECT_THROW(self_attention(ctx, q, k, k, 2, {5}, wrong), Error);
  Tensor alias = k.clone();
  EXPECT_THROW(self_attention(ctx, q, alias, k, 2, {5}, alias), Error);
}

}  // namespace
}  // namespace steno::ops
