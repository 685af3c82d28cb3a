#include "steno/ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "cpu/kernels.h"
#include "ops_test_util.h"

namespace steno::ops {
namespace {

using testing::all_close;
using testing::nan_tensor;
using testing::pat_tensor;
using testing::random_tensor;

// Expected values: tests/ops/reference_values.py, rel_pos_attention_formula() — the header's formula written as
// loops in numpy (masked scores -10000, masked probabilities 0) — on B=2, T=5, H=2, dk=3 pat() inputs, lengths
// {5, 3}. The script also checks that formula against NeMo's own maths (rel_shift on [T, 2T-1] scores,
// masked_fill) for full attention.
// kAttnFull: [2, 5, 6]
const std::vector<float> kAttnFull = {
    0.090442054f, -0.409557939f, -0.841575921f, 1.35465252f, 0.854652524f, 0.354652554f, -1.6004771f, -2.10047698f,
    1.78380477f, 1.3809911f, 0.880991042f, 0.380991071f, -0.765154779f, -1.26515472f, 0.886684954f, 0.750253618f,
    0.250253588f, -0.249746412f, 0.99925971f, 0.49925974f, -0.000455397618f, 0.754257917f, 0.254257947f,
    -0.245742053f, 0.280478239f, -0.219521746f, -0.707175195f, -0.499406844f, -0.999406874f, -1.49940681f,
    -1.35517752f, -1.85517752f, 1.19295311f, -0.0843646526f, -0.583092511f, -1.08309245f, 1.35976171f, 0.859761715f,
    0.360328615f, 1.95680976f, 1.49286115f, 0.992861152f, -1.35535228f, -1.85535228f, 1.245731f, -0.100428909f,
    -0.600375354f, -1.10037529f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
// kAttnWindow11: [2, 5, 6]
const std::vector<float> kAttnWindow11 = {
    -1.11458564f, -1.61458564f, -2.11458564f, 1.95563614f, 1.45563614f, 0.955636203f, -1.84232903f, -2.34232903f,
    1.98386168f, 1.62740827f, 1.12740827f, 0.627408266f, -1.66354156f, -2.16354156f, 1.83567059f, 1.62425578f,
    1.12425578f, 0.624255776f, 0.0111131249f, -0.488886863f, -0.577287674f, 0.753646314f, 0.253646284f, -0.246353716f,
    0.158283323f, -0.341716677f, -0.841716707f, 0.749997675f, 0.249997661f, -0.250002325f, -0.748047233f,
    -1.24804723f, -1.74804723f, -0.125537887f, -0.624240637f, -1.12424064f, 1.35976171f, 0.859761715f, 0.360328615f,
    1.95680976f, 1.49286115f, 0.992861152f, -1.60609901f, -2.10609913f, 2.48661184f, -0.100406431f, -0.600406408f,
    -1.10040641f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
// kAttnWindow20: [2, 5, 6]
const std::vector<float> kAttnWindow20 = {
    -1.125f, -1.625f, -2.125f, 2.5f, 2.0f, 1.5f, 0.704279244f, 0.204279274f, -0.295720726f, 1.90572774f, 1.40572774f,
    0.905727744f, -1.56461489f, -2.06461501f, 0.838589668f, 1.62450945f, 1.12450945f, 0.624509513f, 0.999292433f,
    0.499292463f, -0.000422667916f, 0.0875739679f, -0.412426025f, -0.912426054f, 0.152155936f, -0.347844064f,
    -0.833294153f, 0.753157318f, 0.253157318f, -0.246842682f, -0.75f, -1.25f, -1.75f, -2.25f, 2.375f, 1.875f,
    1.36009192f, 0.860091925f, 0.360091925f, -1.24973071f, 0.962855041f, 0.462855041f, -1.35535228f, -1.85535228f,
    1.245731f, -0.100428909f, -0.600375354f, -1.10037529f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
    0.0f, 0.0f};
// kAttnWideR: [2, 5, 6]
const std::vector<float> kAttnWideR = {
    -1.71645522f, -2.21645522f, 0.82472682f, 1.62664783f, 1.12664783f, 0.62664789f, 0.388201118f, -0.11179889f,
    -0.606504917f, 1.61751986f, 1.11751986f, 0.617519855f, -1.66302598f, -2.16302586f, 1.83187807f, 1.38050365f,
    0.880503654f, 0.380503654f, -0.0829777122f, -0.582977712f, -0.678850412f, 0.834992051f, 0.334992051f,
    -0.165007964f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -1.3592689f, -1.82837987f, 1.19253612f, 0.643488109f,
    0.143994585f, -0.35600543f, 0.510388196f, 0.0104494626f, -0.488269806f, 1.89123714f, 1.39178967f, 0.891789734f,
    -1.70262754f, -1.63918042f, 2.38841939f, -0.00523545779f, -0.505235076f, -1.00523508f, 0.502051473f,
    0.00205844315f, -0.497742832f, 0.256802797f, -0.237234458f, -0.737234473f, 0.355664104f, 0.563999057f,
    0.0687398538f, -0.29144305f, -0.791442156f, -1.29144216f};
// kAttnWindowSmallR: [2, 5, 6]
const std::vector<float> kAttnWindowSmallR = {
    0.999660432f, 0.499660432f, -0.000339569495f, -0.475050986f, -0.975050986f, -1.47505093f, -1.08500123f,
    -1.58500123f, -2.02959466f, 2.25416636f, 1.75416625f, 1.25416625f, 0.121657997f, -0.378342003f, -0.860153258f,
    2.10532188f, 1.60532176f, 1.10532176f, 2.21586657f, 1.71586668f, 1.25698841f, 0.867475748f, 0.367475718f,
    -0.132524267f, 0.341990381f, -0.158009619f, -0.541748106f, 0.750078499f, 0.250078499f, -0.249921501f, 1.37480235f,
    0.874802351f, 0.374802351f, -0.12500304f, -0.624995708f, -1.12499571f, 1.37491465f, 0.874914646f, 0.375044733f,
    -1.77612078f, 2.27199435f, 1.77199435f, 0.489628464f, -0.0103715332f, -0.478392959f, -0.125076875f, -0.624732375f,
    -1.12473238f, -1.62485719f, -2.12485719f, 2.49989653f, 0.301943988f, -0.198056027f, -0.698056042f, 0.0f, 0.0f,
    0.0f, 0.0f, 0.0f, 0.0f};

struct AttnInputs {
  Tensor q, k, v, pos, u, vb;
};

// The tensors reference_values.py uses: pos has `pos_rows` rows from seed `pos_seed`.
AttnInputs small_inputs(int64_t pos_rows, int pos_seed) {
  const int64_t B = 2, T = 5, D = 6;
  return {pat_tensor({B, T, D}, 40, 0.125f), pat_tensor({B, T, D}, 41, 0.125f), pat_tensor({B, T, D}, 42, 0.125f),
          pat_tensor({pos_rows, D}, pos_seed, 0.125f), pat_tensor({2, 3}, 43, 0.125f),
          pat_tensor({2, 3}, 44, 0.125f)};
}

// The header's formula, directly, in double precision.
std::vector<float> naive_attention(const AttnInputs& in, const std::vector<int64_t>& lengths, AttentionWindow win) {
  const int64_t B = in.q.dim(0), T = in.q.dim(1), D = in.q.dim(2), H = in.u.dim(0), dk = in.u.dim(1);
  const int64_t R = (in.pos.dim(0) - 1) / 2;
  const auto q = in.q.to_vector(), k = in.k.to_vector(), v = in.v.to_vector(), pos = in.pos.to_vector();
  const auto u = in.u.to_vector(), vb = in.vb.to_vector();
  std::vector<float> out(B * T * D, 0.0f);
  std::vector<double> s(T);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < lengths[b]; ++i) {
        double m = -1e300;
        for (int64_t j = 0; j < T; ++j) {
          const bool visible = j < lengths[b] && (win.left < 0 || j >= i - win.left) &&
                               (win.right < 0 || j <= i + win.right);
          if (!visible) {
            s[j] = -INFINITY;
            continue;
          }
          double ac = 0, bd = 0;
          const int64_t r = R - (i - j);
          for (int64_t c = 0; c < dk; ++c) {
            const int64_t col = h * dk + c;
            ac += (double(q[(b * T + i) * D + col]) + u[col]) * k[(b * T + j) * D + col];
            bd += (double(q[(b * T + i) * D + col]) + vb[col]) * pos[r * D + col];
          }
          s[j] = (ac + bd) / std::sqrt(double(dk));
          m = std::max(m, s[j]);
        }
        double z = 0;
        for (int64_t j = 0; j < T; ++j) z += std::exp(s[j] - m);
        for (int64_t c = 0; c < dk; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += std::exp(s[j] - m) / z * v[(b * T + j) * D + h * dk + c];
          out[(b * T + i) * D + h * dk + c] = static_cast<float>(acc);
        }
      }
  return out;
}

class AttentionTest : public ::testing::TestWithParam<std::tuple<GemmBackend, int>> {
 protected:
  Context ctx_ = Context::cpu(std::get<1>(GetParam()), std::get<0>(GetParam()));
};

TEST_P(AttentionTest, MatchesReferenceValues) {
  const AttnInputs in = small_inputs(9, 45);
  Tensor out = nan_tensor({2, 5, 6});
  rel_pos_attention(ctx_, in.q, in.k, in.v, in.pos, in.u, in.vb, {5, 3}, {-1, -1}, out);
  EXPECT_TRUE(all_close(out, kAttnFull, 1e-6f, 1e-5f));
  rel_pos_attention(ctx_, in.q, in.k, in.v, in.pos, in.u, in.vb, {5, 3}, {1, 1}, out);
  EXPECT_TRUE(all_close(out, kAttnWindow11, 1e-6f, 1e-5f));
  rel_pos_attention(ctx_, in.q, in.k, in.v, in.pos, in.u, in.vb, {5, 3}, {2, 0}, out);
  EXPECT_TRUE(all_close(out, kAttnWindow20, 1e-6f, 1e-5f));

  const AttnInputs wide = small_inputs(13, 46);  // R = 6 > T - 1: only the central rows are used
  rel_pos_attention(ctx_, wide.q, wide.k, wide.v, wide.pos, wide.u, wide.vb, {4, 5}, {-1, -1}, out);
  EXPECT_TRUE(all_close(out, kAttnWideR, 1e-6f, 1e-5f));

  const AttnInputs narrow = small_inputs(5, 47);  // R = 2 is enough for the window [2, 1]
  rel_pos_attention(ctx_, narrow.q, narrow.k, narrow.v, narrow.pos, narrow.u, narrow.vb, {5, 4}, {2, 1}, out);
  EXPECT_TRUE(all_close(out, kAttnWindowSmallR, 1e-6f, 1e-5f));
}

// Several query blocks, ragged lengths, head slices of a wider model: the banded path against the dense path
// with the window applied as a mask, and both against the formula.
TEST_P(AttentionTest, BandedEqualsDenseWithBandMask) {
  const int64_t B = 2, T = 150, H = 2, dk = 16, D = H * dk;
  const AttnInputs in = {random_tensor({B, T, D}, 1), random_tensor({B, T, D}, 2), random_tensor({B, T, D}, 3),
                         random_tensor({2 * T - 1, D}, 4), random_tensor({H, dk}, 5), random_tensor({H, dk}, 6)};
  const std::vector<int64_t> lengths = {150, 97};
  const AttentionWindow windows[] = {{5, 7}, {0, 0}, {40, 40}, {3, -1}, {-1, 2}, {-1, -1}, {200, 200}};
  for (const AttentionWindow w : windows) {
    Tensor banded = nan_tensor({B, T, D}), dense = nan_tensor({B, T, D});
    cpu::rel_pos_attention(ctx_, in.q, in.k, in.v, in.pos, in.u, in.vb, lengths, w, banded,
                           cpu::AttentionAlgo::kAuto);
    cpu::rel_pos_attention(ctx_, in.q, in.k, in.v, in.pos, in.u, in.vb, lengths, w, dense,
                           cpu::AttentionAlgo::kDense);
    EXPECT_TRUE(all_close(banded, dense.to_vector(), 1e-6f, 1e-5f)) << "window " << w.left << "," << w.right;
    EXPECT_TRUE(all_close(banded, naive_attention(in, lengths, w), 1e-5f, 1e-4f))
        << "window " << w.left << "," << w.right;
  }
}

INSTANTIATE_TEST_SUITE_P(BackendsThreads, AttentionTest,
                         ::testing::Combine(::testing::Values(GemmBackend::kOneDnn, GemmBackend::kOpenBlas),
                                            ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return std::string(gemm_backend_name(std::get<0>(info.param))) + "_x" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(Attention, OutMayAliasQ) {
  Context ctx = Context::cpu(2);
  const AttnInputs in = small_inputs(9, 45);
  Tensor q = in.q.clone();
  rel_pos_attention(ctx, q, in.k, in.v, in.pos, in.u, in.vb, {5, 3}, {-1, -1}, q);
  EXPECT_TRUE(all_close(q, kAttnFull, 1e-6f, 1e-5f));
}

TEST(Attention, EmptySequencesGiveZeros) {
  Context ctx = Context::cpu(2);
  const AttnInputs in = small_inputs(9, 45);
  Tensor out = nan_tensor({2, 5, 6});
  rel_pos_attention(ctx, in.q, in.k, in.v, in.pos, in.u, in.vb, {0, 0}, {-1, -1}, out);
  EXPECT_EQ(out.to_vector(), std::vector<float>(60, 0.0f));
}

TEST(Attention, Errors) {
  Context ctx = Context::cpu(1);
  const AttnInputs in = small_inputs(9, 45);
  Tensor out = Tensor::zeros({2, 5, 6});
  const Tensor short_pos = pat_tensor({7, 6}, 1);  // R = 3 < T - 1
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, short_pos, in.u, in.vb, {5, 3}, {-1, -1}, out), Error);
  EXPECT_NO_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, short_pos, in.u, in.vb, {5, 3}, {3, 3}, out));
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, short_pos, in.u, in.vb, {5, 3}, {4, 0}, out), Error);
  const Tensor even_pos = pat_tensor({10, 6}, 1);
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, even_pos, in.u, in.vb, {5, 3}, {-1, -1}, out), Error);
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, in.pos, in.u, in.vb, {5}, {-1, -1}, out), Error);
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, in.pos, in.u, in.vb, {6, 3}, {-1, -1}, out), Error);
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, in.pos, in.u, in.vb, {5, 3}, {-2, 1}, out), Error);
  const Tensor u3 = pat_tensor({3, 2}, 1);  // H*dk = 6 but v bias [2, 3]
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, in.pos, u3, in.vb, {5, 3}, {-1, -1}, out), Error);
  const Tensor u4 = pat_tensor({4, 2}, 1), v4 = pat_tensor({4, 2}, 2);  // H*dk = 8 != 6
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, in.pos, u4, v4, {5, 3}, {-1, -1}, out), Error);
  Tensor wrong = Tensor::zeros({2, 4, 6});
  EXPECT_THROW(rel_pos_attention(ctx, in.q, in.k, in.v, in.pos, in.u, in.vb, {4, 3}, {-1, -1}, wrong), Error);
  Tensor k_alias = in.k.clone();
  EXPECT_THROW(rel_pos_attention(ctx, in.q, k_alias, in.v, in.pos, in.u, in.vb, {5, 3}, {-1, -1}, k_alias), Error);
}

}  // namespace
}  // namespace steno::ops
