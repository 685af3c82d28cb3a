// FP8 rows on the GPU (steno/ops/fp8.h) against their definition computed here: each row's scale is its largest
// magnitude over 448 and each value the E4M3 number nearest to value / scale (decoded on the host from the bits);
// the product is the f64 product of the operands the GPU quantized, so the only difference allowed is the bf16
// output's rounding and f32 summation order. How far FP8 moves a linear layer from its 16-bit result is measured
// and bounded too, as the number to expect rather than a property of the code.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "steno/core/error.h"
#include "steno/ops/copy.h"
#include "steno/ops/elementwise.h"
#include "steno/ops/fp8.h"
#include "steno/ops/gemm.h"
#include "steno/ops/norm.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

// The value of an E4M3 byte (OCP FP8: bias 7, subnormals below 2^-6, S.1111.111 is NaN, no infinities).
float e4m3_value(uint8_t b) {
  const int exp = (b >> 3) & 0xF, man = b & 7;
  float v;
  if (exp == 15 && man == 7)
    v = NAN;
  else if (exp == 0)
    v = std::ldexp(static_cast<float>(man) / 8.0f, -6);
  else
    v = std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  return (b & 0x80) != 0 ? -v : v;
}

// Every finite non-negative E4M3 value, ascending.
const std::vector<float>& e4m3_grid() {
  static const std::vector<float> grid = [] {
    std::vector<float> g;
    for (int b = 0; b < 0x7F; ++b) g.push_back(e4m3_value(static_cast<uint8_t>(b)));
    return g;
  }();
  return grid;
}

// Whether `got` is an E4M3 value nearest to v (either of two equally near ones), after saturation at 448.
bool nearest_e4m3(float v, float got) {
  const float a = std::min(std::fabs(v), 448.0f);
  const auto& g = e4m3_grid();
  const auto above = std::lower_bound(g.begin(), g.end(), a);  // a <= 448 = g.back(): never g.end()
  float best = *above - a;
  if (above != g.begin()) best = std::min(best, a - *std::prev(above));
  return std::fabs(std::fabs(got) - a) <= best && (got == 0.0f || std::signbit(got) == std::signbit(v));
}

struct HostRows {
  std::vector<uint8_t> values;
  std::vector<float> scales;
  int64_t rows, cols;
  float value(int64_t r, int64_t c) const { return e4m3_value(values[r * cols + c]); }
  float dequantized(int64_t r, int64_t c) const { return scales[r] * value(r, c); }
};

HostRows download_rows(Context& gpu, const Fp8Rows& d) {
  Tensor v = Tensor::empty(d.values.shape(), DType::kU8), s = Tensor::empty(d.scales.shape());
  copy(gpu, d.values, v);
  copy(gpu, d.scales, s);
  gpu.synchronize();
  const auto* pv = v.data<uint8_t>();
  return {std::vector<uint8_t>(pv, pv + v.numel()), s.to_vector(), d.rows(), d.cols()};
}

// The rows of `want` ([rows, cols] f32 on the host) quantized as defined: scale = amax / 448, each value the
// nearest E4M3 to want / scale. `slack`: the scale may differ by this relative amount (the GPU's f32 arithmetic
// before quantizing is not this test's), and a value then by one E4M3 step.
::testing::AssertionResult quantized_as_defined(const HostRows& got, const Tensor& want, float slack = 0.0f) {
  const std::vector<float> w = want.to_vector();
  for (int64_t r = 0; r < got.rows; ++r) {
    float amax = 0.0f;
    for (int64_t c = 0; c < got.cols; ++c) amax = std::max(amax, std::fabs(w[r * got.cols + c]));
    const float scale = amax / 448.0f;
    if (!(std::fabs(got.scales[r] - scale) <= slack * scale))
      return ::testing::AssertionFailure() << "row " << r << ": scale " << got.scales[r] << ", want " << scale;
    // The value before rounding as the GPU forms it (the same IEEE operations: exact, so the nearest E4M3 value
    // is one value; with slack, from the GPU's own scale).
    const float quant = amax > 0.0f ? (slack == 0.0f ? 448.0f / amax : 1.0f / got.scales[r]) : 0.0f;
    for (int64_t c = 0; c < got.cols; ++c) {
      const float v = w[r * got.cols + c] * quant;
      const float q = got.value(r, c);
      const bool ok = slack == 0.0f ? nearest_e4m3(v, q) : std::fabs(q - v) <= 0.0625f * std::fabs(v) + 1e-3f;
      if (!ok)
        return ::testing::AssertionFailure() << "row " << r << " col " << c << ": " << w[r * got.cols + c]
                                             << " / scale " << got.scales[r] << " = " << v << " became " << q;
    }
  }
  return ::testing::AssertionSuccess();
}

bool have_fp8(Context& gpu) { return fp8_supported(gpu); }

#define SKIP_WITHOUT_FP8()                                                          \
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";           \
  Context gpu = Context::cuda(0);                                                   \
  if (!have_fp8(gpu)) GTEST_SKIP() << "the GPU has no FP8 (compute capability < 8.9)"

// Rows with a spread of magnitudes, a row of zeros and a row whose one outlier sets the scale.
Tensor awkward_rows(int64_t rows, int64_t cols, uint32_t seed, DType dt) {
  Tensor x = random_host({rows, cols}, seed, dt, -3.0f, 3.0f);
  float* p = x.data<float>();
  for (int64_t c = 0; c < cols; ++c) p[1 * cols + c] = 0.0f;
  p[2 * cols + cols / 3] = 200.0f;
  // One value 10^5 times the others: they land among E4M3's subnormals (below 2^-6) and zero.
  for (int64_t c = 1; c < cols; ++c) p[3 * cols + c] *= 1e-5f;
  p[3 * cols] = 3.0f;
  return dt == DType::kF32 ? x : x.to(dt).to(DType::kF32);
}

TEST(Fp8Cuda, QuantizeRowsAsDefined) {
  SKIP_WITHOUT_FP8();
  for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (int64_t cols : {16, 1024, 4096}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " x " + std::to_string(cols));
      const Tensor x = awkward_rows(9, cols, static_cast<uint32_t>(cols), dt);
      Fp8Rows q = fp8_scratch(gpu, 9, cols);
      quantize_rows(gpu, upload(gpu, x, dt), q);
      const HostRows got = download_rows(gpu, q);
      EXPECT_TRUE(quantized_as_defined(got, x));
      EXPECT_EQ(got.scales[1], 0.0f);  // the zero row
      EXPECT_FLOAT_EQ(got.value(2, cols / 3), 448.0f);  // the outlier is the top of the range
    }
  }
}

TEST(Fp8Cuda, SiluQuantizeRowsAsDefined) {
  SKIP_WITHOUT_FP8();
  const Tensor x = awkward_rows(7, 4096, 5, DType::kBF16);
  Tensor want = x.clone();
  for (float& v : std::span(want.data<float>(), want.numel())) v = v / (1.0f + std::exp(-v));
  Fp8Rows q = fp8_scratch(gpu, 7, 4096);
  silu_quantize_rows(gpu, upload(gpu, x, DType::kBF16), q);
  // expf on the GPU and std::exp here may differ in the last bit: a value then sits one E4M3 step away at most.
  EXPECT_TRUE(quantized_as_defined(download_rows(gpu, q), want, 1e-5f));
}

// The fused norm quantizes the f32 normalised values; the reference here normalises on the CPU (f32, its own
// summation order), so scales agree closely and values within one E4M3 step. Rows wider than the one-warp kernel
// take the plain norm, whose output is rounded to bf16 before it is quantized: their scales agree to bf16's
// precision (2^-9).
TEST(Fp8Cuda, AddLayerNormFp8MatchesTheNormQuantized) {
  SKIP_WITHOUT_FP8();
  Context cpu = Context::cpu(2);
  for (int64_t d : {1024, 640, 48, 4096}) {  // 4096: wider than the one-warp kernel, the plain ops' path
    SCOPED_TRACE(d);
    const DType dt = DType::kBF16;
    const int64_t rows = 21;
    const Tensor x = random_host({rows, d}, 11, dt, 0.0f, 2.0f), h = random_host({rows, d}, 12, dt);
    const Tensor gamma = random_host({d}, 13, dt, 0.5f, 1.5f), beta = random_host({d}, 14, dt, -0.5f, 0.5f);
    Tensor sum = x.clone();
    add(cpu, sum, h, 0.5f, sum);
    sum = sum.to(dt).to(DType::kF32);
    Tensor normed = host_filled({rows, d}, NAN);
    layer_norm(cpu, sum, gamma, beta, 1e-5f, normed);

    Tensor x_dev = upload(gpu, x, dt);
    Fp8Rows q = fp8_scratch(gpu, rows, d);
    add_layer_norm_fp8(gpu, x_dev, upload(gpu, h, dt), 0.5f, upload(gpu, gamma, dt), upload(gpu, beta, dt), 1e-5f,
                       q);
    EXPECT_TRUE(close_to(download(gpu, x_dev), sum, 1e-2f));  // the residual stream gets the sum, in bf16
    const float slack = d > 2048 ? 4e-3f : 1e-4f;
    EXPECT_TRUE(quantized_as_defined(download_rows(gpu, q), normed, slack));

    // Without h: the norm of x alone, x untouched.
    Tensor plain = host_filled({rows, d}, NAN);
    layer_norm(cpu, x, gamma, beta, 1e-5f, plain);
    Tensor x2 = upload(gpu, x, dt);
    add_layer_norm_fp8(gpu, x2, Tensor(), 0.0f, upload(gpu, gamma, dt), upload(gpu, beta, dt), 1e-5f, q);
    EXPECT_TRUE(same_values(download(gpu, x2), x));
    EXPECT_TRUE(quantized_as_defined(download_rows(gpu, q), plain, slack));
  }
}

// y = x·wᵀ + bias from the operands' FP8 rows: the f64 product of exactly the values the GPU quantized, then the
// bf16 output's rounding (1e-2 of the largest output, as every bf16 op test allows).
TEST(Fp8Cuda, LinearIsTheProductOfTheQuantizedRows) {
  SKIP_WITHOUT_FP8();
  struct Case {
    int64_t m, n, k;
    bool bias;
  };
  for (const Case& c : {Case{50, 96, 256, true}, Case{1, 1024, 1024, true}, Case{7, 40, 16, false},
                        Case{65, 4096, 1024, true}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    const DType dt = DType::kBF16;
    const Tensor x = random_host({c.m, c.k}, 21, dt, -2.0f, 2.0f);
    const Tensor w = random_host({c.n, c.k}, 22, DType::kF32, -0.1f, 0.1f);
    const Tensor bias = c.bias ? random_host({c.n}, 23, dt) : Tensor();
    Fp8Rows x8 = fp8_scratch(gpu, c.m, c.k);
    quantize_rows(gpu, upload(gpu, x, dt), x8);
    const Fp8Rows w8 = quantize_weight(gpu, w, steno::cuda::weight_allocator(0));
    Tensor y = nan_device(gpu, {c.m, c.n}, dt);
    linear_fp8(gpu, x8, w8, c.bias ? upload(gpu, bias, dt) : Tensor(), y);

    const HostRows hx = download_rows(gpu, x8), hw = download_rows(gpu, w8);
    EXPECT_TRUE(quantized_as_defined(hw, w));
    Tensor want = Tensor::empty({c.m, c.n}), exact = Tensor::empty({c.m, c.n});
    const float* px = x.data<float>();
    const float* pw = w.data<float>();
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double s = c.bias ? bias.data<float>()[j] : 0.0, e = s;
        for (int64_t l = 0; l < c.k; ++l) {
          s += static_cast<double>(hx.dequantized(i, l)) * hw.dequantized(j, l);
          e += static_cast<double>(px[i * c.k + l]) * pw[j * c.k + l];
        }
        want.data<float>()[i * c.n + j] = static_cast<float>(s);
        exact.data<float>()[i * c.n + j] = static_cast<float>(e);
      }
    const Tensor got = download(gpu, y);
    EXPECT_TRUE(close_to(got, want, 1e-2f));
    // FP8's own error against the unquantized product: E4M3 keeps 3 mantissa bits (half a step is 1/16 of a
    // value), and random-sign errors over K terms largely cancel; 6 % of the largest output is a loose bound.
    EXPECT_TRUE(close_to(got, exact, 6e-2f));
  }
}

// At an encoder's row counts (32 clips of 45 s: 18,016 rows) cuBLASLt picks other kernels than at the small shapes
// above. A row's product must still be its own: equal, within the bf16 output's rounding, to the same row's product
// in a call of one clip (563 rows) and of the row alone, and to the host's product of the quantized rows (sampled).
TEST(Fp8Cuda, ARowsProductDoesNotDependOnTheRowsBesideIt) {
  SKIP_WITHOUT_FP8();
  struct Case {
    int64_t n, k;
  };
  const int64_t m = 32 * 563, clip = 563;
  for (const Case& c : {Case{4096, 1024}, Case{1024, 4096}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    const DType dt = DType::kBF16;
    const Tensor x = random_host({m, c.k}, 31, dt, -2.0f, 2.0f);
    const Tensor w = random_host({c.n, c.k}, 32, DType::kF32, -0.05f, 0.05f);
    const Tensor bias = random_host({c.n}, 33, dt);
    const Tensor bias_dev = upload(gpu, bias, dt);
    Fp8Rows x8 = fp8_scratch(gpu, m, c.k);
    quantize_rows(gpu, upload(gpu, x, dt), x8);
    const Fp8Rows w8 = quantize_weight(gpu, w, steno::cuda::weight_allocator(0));
    auto product = [&](int64_t rows) {
      const Fp8Rows head{x8.values.narrow0(0, rows), x8.scales.narrow0(0, rows)};
      Tensor y = nan_device(gpu, {rows, c.n}, dt);
      linear_fp8(gpu, head, w8, bias_dev, y);
      return download(gpu, y).to_vector();
    };
    const std::vector<float> all = product(m), one_clip = product(clip), alone = product(1);

    const HostRows hx = download_rows(gpu, x8), hw = download_rows(gpu, w8);
    float largest = 0.0f;
    for (float v : all) largest = std::max(largest, std::fabs(v));
    ASSERT_GT(largest, 0.0f);
    const float tol = 1e-2f * largest;
    // Mismatches counted, the first described: a wrong kernel would otherwise print a million lines.
    int64_t wrong = 0;
    std::string first;
    auto check = [&](int64_t r, int64_t j, float got, const char* what) {
      const float whole = all[r * c.n + j];
      if (std::fabs(got - whole) <= tol) return;
      if (wrong++ == 0)
        first = "row " + std::to_string(r) + " col " + std::to_string(j) + ": " + what + " " + std::to_string(got) +
                ", in the whole call " + std::to_string(whole);
    };
    for (int64_t j = 0; j < c.n; ++j) check(0, j, alone[j], "alone");
    for (int64_t r = 0; r < clip; r += 37)
      for (int64_t j = 0; j < c.n; j += 5) check(r, j, one_clip[r * c.n + j], "in one clip's call");
    for (int64_t r = 0; r < m; r += 997)
      for (int64_t j = 0; j < c.n; j += 3) {
        double s = bias.data<float>()[j];
        for (int64_t l = 0; l < c.k; ++l) s += static_cast<double>(hx.dequantized(r, l)) * hw.dequantized(j, l);
        check(r, j, static_cast<float>(s), "on the host");
      }
    EXPECT_EQ(wrong, 0) << first << " (tolerance " << tol << ")";
  }
}

TEST(Fp8Cuda, RefusesRowsTheProductCannotTake) {
  SKIP_WITHOUT_FP8();
  Fp8Rows q = fp8_scratch(gpu, 2, 24);
  const Tensor x = upload(gpu, random_host({2, 24}, 1, DType::kBF16), DType::kBF16);
  EXPECT_THROW(quantize_rows(gpu, x, q), Error);  // 24 is not a multiple of 16
  Fp8Rows wrong = fp8_scratch(gpu, 3, 16);
  const Tensor x16 = upload(gpu, random_host({2, 16}, 1, DType::kBF16), DType::kBF16);
  EXPECT_THROW(quantize_rows(gpu, x16, wrong), Error);  // 2 rows into 3
  Tensor y = nan_device(gpu, {2, 5}, DType::kF32);
  Fp8Rows x8 = fp8_scratch(gpu, 2, 16), w8 = fp8_scratch(gpu, 5, 16);
  EXPECT_THROW(linear_fp8(gpu, x8, w8, Tensor(), y), Error);  // f32 output
}

}  // namespace
}  // namespace steno::ops
