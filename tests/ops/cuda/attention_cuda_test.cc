// rel_pos_attention on CUDA against the CPU kernel, on seeded random inputs rounded to the tested dtype first
// (so both sides see the same values). Full attention runs on cuBLASLt products + a softmax kernel (the GEMM path)
// unless the score budget sends it to the fused CUDA-core kernel, or, in f16/bf16 with the flash kernels opted in,
// on the flash tensor-core kernel; every path and the GEMM path's chunking are tested.
// Cases cover full and windowed spans, one-sided windows, lengths 0 and T,
// T not a multiple of the kernel's 64-query / 32-key blocks, head sizes 16 to 128 (44: the bundled model's,
// whose rows are not 16-byte aligned), 1 and 8 heads, pos tables larger than needed, and out aliasing q.
//
// Tolerances (absolute; values are O(1), v in [-1, 1]):
//   f32  1e-5: exact f32 on both sides, only summation order differs.
//   f16  3e-3: the GPU rounds P to f16 before P·V (relative 2^-11 per weight, at most 2^-11·max|v| in total)
//              and the output to f16 (2^-11·|out|): about 1e-3 at worst.
//   bf16 1.5e-2: the same with 2^-8: about 8e-3 at worst.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "steno/core/cuda.h"
#include "steno/core/tensor.h"
#include "steno/ops/attention.h"
#include "steno/ops/context.h"
#include "steno/ops/copy.h"
#include "cuda/kernels.h"

namespace steno::ops {
namespace {

Tensor uniform(const Shape& shape, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = dist(gen);
  return Tensor::from_vector(v, shape);
}

// The values `dt` holds (round to nearest even), as f32: the CPU reference's inputs.
Tensor rounded(const Tensor& t, DType dt) { return t.to(dt).to(DType::kF32); }

std::vector<float> download(Context& ctx, const Tensor& dev) {
  Tensor host = Tensor::empty(dev.shape(), dev.dtype());
  copy(ctx, dev, host);
  ctx.synchronize();
  return host.to(DType::kF32).to_vector();
}

::testing::AssertionResult near(const std::vector<float>& actual, const std::vector<float>& expected, float atol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " != " << expected.size();
  int bad = 0;
  float worst = 0.0f;
  std::string msg;
  for (size_t i = 0; i < actual.size(); ++i) {
    const float err = std::fabs(actual[i] - expected[i]);
    if (!(err <= atol)) {  // NaN fails too
      if (++bad <= 8)
        msg += "\n  [" + std::to_string(i) + "] " + std::to_string(actual[i]) + " vs " + std::to_string(expected[i]);
    }
    if (err > worst || std::isnan(err)) worst = err;
  }
  if (bad == 0) return ::testing::AssertionSuccess() << "max error " << worst;
  return ::testing::AssertionFailure() << bad << " of " << actual.size() << " values off by more than " << atol
                                       << " (max error " << worst << "):" << msg;
}

float tolerance(DType dt) { return dt == DType::kF32 ? 1e-5f : dt == DType::kF16 ? 3e-3f : 1.5e-2f; }

struct AttnCase {
  const char* name;
  int64_t batch, steps, heads, dk;
  std::vector<int64_t> lengths;
  AttentionWindow window;
  int64_t r_max;          // pos has 2R+1 rows
  float q_range = 1.0f;   // q in [-q_range, q_range]: 4 gives peaked softmax rows
};

struct Inputs {
  Tensor q, k, v, pos, u, vb;
};

Inputs make_inputs(const AttnCase& c, DType dt, uint32_t seed) {
  const int64_t d = c.heads * c.dk;
  return {rounded(uniform({c.batch, c.steps, d}, seed, -c.q_range, c.q_range), dt),
          rounded(uniform({c.batch, c.steps, d}, seed + 1, -1.0f, 1.0f), dt),
          rounded(uniform({c.batch, c.steps, d}, seed + 2, -1.0f, 1.0f), dt),
          rounded(uniform({2 * c.r_max + 1, d}, seed + 3, -1.0f, 1.0f), dt),
          rounded(uniform({c.heads, c.dk}, seed + 4, -0.5f, 0.5f), dt),
          rounded(uniform({c.heads, c.dk}, seed + 5, -0.5f, 0.5f), dt)};
}

std::vector<float> cpu_reference(const AttnCase& c, const Inputs& in) {
  Context cpu = Context::cpu(1);
  Tensor out = Tensor::empty(in.q.shape());
  rel_pos_attention(cpu, in.q, in.k, in.v, in.pos, in.u, in.vb, c.lengths, c.window, out);
  return out.to_vector();
}

// Runs the op on the GPU; with alias_q the output is written over q's device copy.
std::vector<float> gpu_result(const AttnCase& c, const Inputs& in, DType dt, bool alias_q) {
  Context gpu = Context::cuda(0);
  Tensor q = to_context(gpu, in.q, dt), k = to_context(gpu, in.k, dt), v = to_context(gpu, in.v, dt);
  Tensor pos = to_context(gpu, in.pos, dt), u = to_context(gpu, in.u, dt), vb = to_context(gpu, in.vb, dt);
  // NaN-filled, so that an element the kernel forgets to write fails the comparison.
  const std::vector<float> nans(static_cast<size_t>(in.q.numel()), NAN);
  Tensor out = alias_q ? q : to_context(gpu, Tensor::from_vector(nans, in.q.shape()), dt);
  rel_pos_attention(gpu, q, k, v, pos, u, vb, c.lengths, c.window, out);
  return download(gpu, out);
}

const AttnCase kCases[] = {
    {"full_h1_dk64", 3, 100, 1, 64, {100, 0, 37}, {-1, -1}, 99},
    {"full_h8_dk16_wide_pos", 2, 77, 8, 16, {77, 50}, {-1, -1}, 80},
    {"full_h8_dk128", 2, 130, 8, 128, {1, 130}, {-1, -1}, 129},
    // The 0.6b encoder's heads over 45 s: five 128-query blocks, nine key tiles through the pos-row ring.
    {"full_h8_dk128_45s", 2, 563, 8, 128, {563, 300}, {-1, -1}, 562},
    {"full_h4_dk44", 2, 45, 4, 44, {45, 20}, {-1, -1}, 44},
    {"full_long", 2, 600, 1, 64, {600, 333}, {-1, -1}, 599},
    {"peaked_h8_dk128", 1, 100, 8, 128, {100}, {-1, -1}, 99, 4.0f},
    {"window_5_3_tight_pos", 3, 150, 2, 64, {150, 0, 71}, {5, 3}, 5},
    {"window_40_70", 2, 200, 4, 32, {200, 123}, {40, 70}, 199},
    {"window_0_0", 1, 33, 2, 16, {33}, {0, 0}, 0},
    {"window_left_only", 2, 90, 2, 64, {90, 64}, {10, -1}, 89},
    {"window_right_only", 2, 90, 2, 64, {90, 65}, {-1, 10}, 89},
    {"window_256_long", 1, 700, 2, 64, {700}, {256, 256}, 256},
    {"window_wider_than_t", 2, 50, 2, 128, {50, 17}, {100, 100}, 49},
};

// The attention paths' switches for one scope.
class ScopedScoreBudget {
 public:
  explicit ScopedScoreBudget(int64_t bytes) { cuda::set_attention_score_budget(bytes); }
  ~ScopedScoreBudget() { cuda::set_attention_score_budget(-1); }
};

class ScopedFlash {
 public:
  explicit ScopedFlash(int level) : was_(cuda::flash_attention_level()) { cuda::set_flash_attention_level(level); }
  ~ScopedFlash() { cuda::set_flash_attention_level(was_); }

 private:
  int was_;
};

class RelPosAttentionCuda : public ::testing::TestWithParam<std::tuple<AttnCase, DType>> {};

TEST_P(RelPosAttentionCuda, MatchesCpu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto& [c, dt] = GetParam();
  const Inputs in = make_inputs(c, dt, 1000);
  for (const int level : {1, 3}) {  // the GEMM path, then the flash kernel wherever it applies
    const ScopedFlash flash(level);
    SCOPED_TRACE("flash level " + std::to_string(level));
    EXPECT_TRUE(near(gpu_result(c, in, dt, false), cpu_reference(c, in), tolerance(dt)));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RelPosAttentionCuda,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  dtype_name(std::get<1>(info.param));
                         });

// Full attention through the fused kernel (score budget 0) and through the GEMM path one batch item per chunk,
// with the flash kernels off.
TEST(RelPosAttentionCudaPaths, FusedKernelAndChunkedGemmsMatchCpu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const ScopedFlash no_flash(0);
  for (const AttnCase& c : kCases) {
    if (c.window.left >= 0 || c.window.right >= 0) continue;  // windows always take the fused kernel
    const int64_t ld = (c.steps + 7) / 8 * 8, ld_bd = (2 * c.steps - 1 + 7) / 8 * 8;
    const int64_t one_item = c.heads * c.steps * (ld + ld_bd + 1) * 4;
    for (const int64_t budget : {int64_t{0}, one_item}) {
      ScopedScoreBudget scoped(budget);
      for (DType dt : {DType::kF32, DType::kBF16}) {
        SCOPED_TRACE(std::string(c.name) + (budget == 0 ? " fused " : " chunked ") + dtype_name(dt));
        const Inputs in = make_inputs(c, dt, 4000);
        EXPECT_TRUE(near(gpu_result(c, in, dt, false), cpu_reference(c, in), tolerance(dt)));
      }
    }
  }
}

// out may alias q: each CTA reads its q rows before it writes the same rows of out.
TEST(RelPosAttentionCudaAlias, OutOverQ) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const AttnCase c{"alias", 2, 150, 2, 64, {150, 90}, {-1, -1}, 149};
  for (DType dt : {DType::kF32, DType::kF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Inputs in = make_inputs(c, dt, 2000);
    EXPECT_TRUE(near(gpu_result(c, in, dt, true), cpu_reference(c, in), tolerance(dt)));
  }
}

// With a window {0, 0} each valid row sees only itself: out = v there, exactly (softmax of one score is 1).
TEST(RelPosAttentionCudaWindow, SelfOnlyIsV) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const AttnCase c{"self", 2, 70, 2, 32, {70, 41}, {0, 0}, 0};
  const Inputs in = make_inputs(c, DType::kF32, 3000);
  const std::vector<float> got = gpu_result(c, in, DType::kF32, false), v = in.v.to_vector();
  const int64_t d = c.heads * c.dk;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t t = 0; t < c.steps; ++t)
      for (int64_t i = 0; i < d; ++i) {
        const size_t at = static_cast<size_t>((b * c.steps + t) * d + i);
        ASSERT_EQ(got[at], t < c.lengths[b] ? v[at] : 0.0f) << "b " << b << " t " << t << " col " << i;
      }
}

// The flash kernel at the Sortformer encoder's shapes (8 heads of 64, 750 frames: twelve 64-row
// tiles, the last cut at 46) and past the GEMM path's 4096 frames, against the CPU and against the GEMM path (flash
// off): the two 16-bit paths round P at different points, so they agree within the same tolerance, not bit for
// bit.
TEST(RelPosAttentionCudaFlash, SortformerShapesAndLongInputsMatchCpuAndGemmPath) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const AttnCase sortformer{"sortformer", 3, 750, 8, 64, {750, 401, 64}, {-1, -1}, 749};
  const AttnCase beyond{"beyond_4096", 1, 4200, 1, 16, {4111}, {-1, -1}, 4199};
  for (const AttnCase& c : {sortformer, beyond}) {
    for (DType dt : {DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dt));
      const Inputs in = make_inputs(c, dt, 5000);
      std::vector<float> flash;
      {
        const ScopedFlash on(3);
        flash = gpu_result(c, in, dt, false);
      }
      EXPECT_TRUE(near(flash, cpu_reference(c, in), tolerance(dt)));
      if (c.steps <= 4096) {  // the GEMM path's longest rows
        const ScopedFlash no_flash(0);
        EXPECT_TRUE(near(flash, gpu_result(c, in, dt, false), tolerance(dt)));
      }
    }
  }
}

// Plain self-attention (the Sortformer Transformer's) on CUDA against the CPU kernel, and with out over q: through
// the GEMM path with all items in one chunk and with one item per chunk (f32, heads over 32 columns, flash off);
// in f16/bf16 with heads of up to 32 columns through the flash tensor-core kernel (flash_attention.cu), whose
// 64-row and 64-key tiles the odd lengths cut anywhere. Tolerances as rel_pos_attention's.
struct PlainCase {
  const char* name;
  int64_t batch, steps, heads, dk;
  std::vector<int64_t> lengths;
};

std::vector<float> plain_on_gpu(const PlainCase& c, const Tensor& q, const Tensor& k, const Tensor& v, DType dt,
                                bool alias) {
  Context gpu = Context::cuda(0);
  Tensor dq = to_context(gpu, q, dt), dk = to_context(gpu, k, dt), dv = to_context(gpu, v, dt);
  Tensor out = alias ? dq : gpu.scratch(q.shape(), dt);
  self_attention(gpu, dq, dk, dv, c.heads, c.lengths, out);
  return download(gpu, out);
}

TEST(SelfAttentionCuda, MatchesCpuInEveryDtypeChunkingAndAliasing) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<PlainCase> cases = {{"sortformer_heads", 3, 150, 8, 24, {150, 97, 1}},
                                        {"odd_t_one_head", 2, 77, 1, 64, {77, 0}},
                                        {"long", 1, 750, 8, 24, {750}},
                                        {"small_heads", 3, 70, 4, 8, {70, 0, 65}}};
  uint32_t seed = 7000;
  for (const PlainCase& c : cases) {
    const Shape shape = {c.batch, c.steps, c.heads * c.dk};
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      const Tensor q = rounded(uniform(shape, seed++, -1, 1), dt), k = rounded(uniform(shape, seed++, -1, 1), dt),
                   v = rounded(uniform(shape, seed++, -1, 1), dt);
      Context cpu = Context::cpu(2);
      Tensor want = Tensor::empty(shape);
      self_attention(cpu, q, k, v, c.heads, c.lengths, want);
      const int64_t one_item = c.heads * c.steps * ((c.steps + 7) / 8 * 8) * 4;
      for (const bool flash : {true, false})
        for (const int64_t budget : {int64_t{-1}, one_item}) {
          const ScopedFlash scoped_flash(flash ? 3 : 0);
          const ScopedScoreBudget scoped(budget);
          SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dt) + (flash ? " flash" : " gemm") +
                       (budget < 0 ? " one chunk" : " item by item"));
          EXPECT_TRUE(near(plain_on_gpu(c, q, k, v, dt, false), want.to_vector(), tolerance(dt)));
          EXPECT_TRUE(near(plain_on_gpu(c, q, k, v, dt, true), want.to_vector(), tolerance(dt)));
        }
    }
  }
}

// Past the GEMM path's 4096 frames: the fused kernel (16-bit, small heads) has no length limit.
TEST(SelfAttentionCuda, FusedKernelTakesSequencesBeyondTheGemmPath) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const PlainCase c{"beyond_4096", 1, 4500, 2, 16, {4321}};
  const Shape shape = {c.batch, c.steps, c.heads * c.dk};
  for (DType dt : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor q = rounded(uniform(shape, 9100, -1, 1), dt), k = rounded(uniform(shape, 9101, -1, 1), dt),
                 v = rounded(uniform(shape, 9102, -1, 1), dt);
    Context cpu = Context::cpu(2);
    Tensor want = Tensor::empty(shape);
    self_attention(cpu, q, k, v, c.heads, c.lengths, want);
    EXPECT_TRUE(near(plain_on_gpu(c, q, k, v, dt, false), want.to_vector(), tolerance(dt)));
  }
}

}  // namespace
}  // namespace steno::ops
