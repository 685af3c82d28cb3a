#include "steno/ops/fp8.h"

#include <cstdint>

#include "check.h"
#include "steno/ops/copy.h"
#if STENO_HAVE_CUDA
#include "cuda/fp8_launch.h"
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_optional;
using detail::check_shape;
using detail::check_tensor;

namespace {

// The longest row the quantizer holds in registers, in 16-bit values (half as many f32): 8 vectors of 16 bytes
// for each of a block's 256 threads.
constexpr int64_t kMaxRow16 = 16384;
#if STENO_HAVE_CUDA
static_assert(kMaxRow16 == cuda::kMaxFp8RowElems16);
#endif

// FP8 runs where the tensor cores have it; anywhere else the op says so.
void require_fp8(const char* op, const Context& ctx) {
  if (!fp8_supported(ctx))
    fail(ErrorCode::kUnimplemented, "{}: FP8 runs on CUDA devices of compute capability 8.9 or later, not on {}", op,
         ctx.device().str());
}

// `rows` FP8 rows of `cols`: u8 values and f32 scales of those sizes on ctx's device. cuBLASLt's FP8 kernels
// need 16-byte rows, and the quantizer one 16-byte vector per thread.
void check_rows(const char* op, const char* name, const Fp8Rows& r, int64_t rows, int64_t cols, const Context& ctx) {
  STENO_CHECK(r.values.defined() && r.scales.defined(), "{}: {} is undefined", op, name);
  STENO_CHECK(r.values.device() == ctx.device() && r.scales.device() == ctx.device(),
              "{}: {} is on {} but the context runs on {}", op, name, r.values.device().str(), ctx.device().str());
  STENO_CHECK(r.values.dtype() == DType::kU8 && r.scales.dtype() == DType::kF32,
              "{}: {} must be u8 values with f32 scales, got {} and {}", op, name, r.values.str(), r.scales.str());
  check_shape(op, name, r.values, {rows, cols});
  check_shape(op, name, r.scales, {rows});
}

// x [..., K] of a 16-bit dtype (or f32 for weights): its rows, checked against the quantizer's limits.
int64_t row_count(const char* op, const Tensor& x) {
  STENO_CHECK(x.rank() >= 1, "{}: x must have at least one dimension, got {}", op, shape_str(x.shape()));
  const int64_t k = x.dim(-1);
  const int64_t max = x.dtype() == DType::kF32 ? kMaxRow16 / 2 : kMaxRow16;
  STENO_CHECK(k > 0 && k % 16 == 0 && k <= max, "{}: rows of {} {} values; FP8 rows are multiples of 16 up to {}",
              op, k, dtype_name(x.dtype()), max);
  return x.numel() / k;
}

}  // namespace

bool fp8_supported(const Context& ctx) {
  if (ctx.device().is_cpu()) return false;
#if STENO_HAVE_CUDA
  return cuda::fp8_supported(ctx);
#else
  return false;
#endif
}

Fp8Rows fp8_scratch(Context& ctx, int64_t rows, int64_t cols) {
  return {ctx.scratch({rows, cols}, DType::kU8), ctx.scratch({rows}, DType::kF32)};
}

void quantize_rows(Context& ctx, const Tensor& x, Fp8Rows& out) {
  const char* op = "quantize_rows";
  require_fp8(op, ctx);
  check_tensor(op, "x", x, ctx);
  check_rows(op, "out", out, row_count(op, x), x.dim(-1), ctx);
  STENO_CUDA_KERNEL(op, cuda::quantize_rows(ctx, x, false, out));
}

void silu_quantize_rows(Context& ctx, const Tensor& x, Fp8Rows& out) {
  const char* op = "silu_quantize_rows";
  require_fp8(op, ctx);
  check_tensor(op, "x", x, ctx);
  check_rows(op, "out", out, row_count(op, x), x.dim(-1), ctx);
  STENO_CUDA_KERNEL(op, cuda::quantize_rows(ctx, x, true, out));
}

void add_layer_norm_fp8(Context& ctx, Tensor& x, const Tensor& h, float alpha, const Tensor& gamma,
                        const Tensor& beta, float eps, Fp8Rows& out) {
  const char* op = "add_layer_norm_fp8";
  require_fp8(op, ctx);
  check_tensor(op, "x", x, ctx);
  check_optional(op, "h", h, x.shape(), ctx);
  check_shape(op, "gamma", gamma, {x.dim(-1)});
  check_shape(op, "beta", beta, {x.dim(-1)});
  check_tensor(op, "gamma", gamma, ctx);
  check_tensor(op, "beta", beta, ctx);
  STENO_CHECK(eps >= 0.0f, "add_layer_norm_fp8: eps must be >= 0, got {}", eps);
  STENO_CHECK(!h.defined() || x.numel() == 0 || x.raw() != h.raw(), "add_layer_norm_fp8: h must not alias x");
  check_rows(op, "out", out, row_count(op, x), x.dim(-1), ctx);
  STENO_CUDA_KERNEL(op, cuda::add_layer_norm_fp8(ctx, x, h, alpha, gamma, beta, eps, out));
}

Fp8Rows quantize_weight(Context& ctx, const Tensor& w, Allocator& alloc) {
  const char* op = "quantize_weight";
  require_fp8(op, ctx);
  STENO_CHECK(w.rank() == 2, "{}: w must be [N, K], got {}", op, shape_str(w.shape()));
  const int64_t n = w.dim(0), k = w.dim(1);
  // The weight in f32 on the device (scratch, gone after the call), quantized from there: no 16-bit rounding
  // before the 8-bit one.
  const Tensor full = to_context(ctx, w, DType::kF32);
  row_count(op, full);
  Fp8Rows out{Tensor::empty({n, k}, DType::kU8, ctx.device(), &alloc),
              Tensor::empty({n}, DType::kF32, ctx.device(), &alloc)};
  STENO_CUDA_KERNEL(op, cuda::quantize_rows(ctx, full, false, out));
  ctx.synchronize();  // `full` goes when this returns; the weights are complete for every context
  return out;
}

void linear_fp8(Context& ctx, const Fp8Rows& x, const Fp8Rows& w, const Tensor& bias, Tensor& y) {
  const char* op = "linear_fp8";
  require_fp8(op, ctx);
  STENO_CHECK(x.defined() && w.defined(), "linear_fp8: x or w is undefined");
  const int64_t m = x.rows(), n = w.rows(), k = w.cols();
  check_rows(op, "x", x, m, k, ctx);
  check_rows(op, "w", w, n, k, ctx);
  check_tensor(op, "y", y, ctx);
  STENO_CHECK(y.dtype() == DType::kF16 || y.dtype() == DType::kBF16, "linear_fp8: y must be f16 or bf16, got {}",
              y.str());
  STENO_CHECK(y.rank() >= 1 && y.dim(-1) == n && y.numel() == m * n,
              "linear_fp8: y must hold {} rows of N = {}, got {}", m, n, shape_str(y.shape()));
  check_optional(op, "bias", bias, {n}, ctx);
  STENO_CUDA_KERNEL(op, cuda::linear_fp8(ctx, x, w, bias, y));
}

}  // namespace steno::ops
