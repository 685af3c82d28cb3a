// FP8 rows on CUDA (steno/ops/fp8.h): the quantization launchers of fp8.cu and the fused layer norm of fused.cu
// behind Tensor-level calls; the product itself is linear_fp8 in gemm_cuda.cc.
#include "check.h"
#include "fp8_launch.h"
#include "fused_launch.h"
#include "kernels.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"

namespace steno::ops::cuda {

bool fp8_supported(const Context& ctx) {
  const steno::cuda::DeviceInfo info = steno::cuda::device_info(ctx.device().index);
  return info.sm_major > 8 || (info.sm_major == 8 && info.sm_minor >= 9);
}

void quantize_rows(Context& ctx, const Tensor& x, bool silu, Fp8Rows& out) {
  const Fp8RowOp op = silu ? Fp8RowOp::kSilu : Fp8RowOp::kIdentity;
  if (!launch_quantize_rows(dt_of(x), op, x.raw(), out.rows(), out.cols(), out.values.data<uint8_t>(),
                            out.scales.data<float>(), stream_of(ctx)))
    fail(ErrorCode::kInternal, "quantize_rows: rows of {} {} (pointers {} / {}) are outside what the kernel takes",
         out.cols(), dtype_name(x.dtype()), x.raw(), out.values.raw());
  check_launch("quantize_rows");
}

void add_layer_norm_fp8(Context& ctx, Tensor& x, const Tensor& h, float alpha, const Tensor& gamma,
                        const Tensor& beta, float eps, Fp8Rows& out) {
  detail::check_same_dtype("add_layer_norm_fp8", {&x, &h, &gamma, &beta});
  if (launch_add_layer_norm_e4m3(dt_of(x), x.raw(), h.defined() ? h.raw() : nullptr, alpha, gamma.raw(), beta.raw(),
                                 eps, out.values.data<uint8_t>(), out.scales.data<float>(), out.rows(), out.cols(),
                                 stream_of(ctx))) {
    check_launch("add_layer_norm_fp8");
    return;
  }
  // Rows the one-warp kernel does not take: the plain ops, then the rows quantized.
  if (h.defined()) cuda::add(ctx, x, h, alpha, x);
  Tensor y = ctx.scratch(x.shape(), x.dtype());
  cuda::layer_norm(ctx, x, gamma, beta, eps, y);
  quantize_rows(ctx, y, false, out);
}

}  // namespace steno::ops::cuda
