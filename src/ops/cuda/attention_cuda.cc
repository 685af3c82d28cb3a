// rel_pos_attention on CUDA: the host half of attention.cu's fused kernel (dtype and size checks, lengths upload).
#include <cuda_runtime.h>

#include <cmath>

#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "attention_launch.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"

namespace steno::ops::cuda {

void rel_pos_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                       const Tensor& pos_bias_u, const Tensor& pos_bias_v, const std::vector<int64_t>& lengths,
                       AttentionWindow window, Tensor& out) {
  const char* op = "rel_pos_attention";
  detail::check_same_dtype(op, {&q, &k, &v, &pos, &pos_bias_u, &pos_bias_v, &out});
  const int64_t batch = q.dim(0), steps = q.dim(1), heads = pos_bias_u.dim(0), dk = pos_bias_u.dim(1);
  if (out.numel() == 0) return;
  // The kernel's tiles hold a head in at most 128 columns; the grid puts heads and batch in y and z.
  if (dk > 128) fail(ErrorCode::kUnimplemented, "{}: CUDA kernel supports head sizes up to 128, got {}", op, dk);
  STENO_CHECK(heads <= 65535 && batch <= 65535,
              "{}: CUDA kernel takes at most 65535 heads and batch items, got {} and {}", op, heads, batch);
  const Tensor lens = upload_lengths(ctx, lengths);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));  // as the CPU kernel rounds it
  launch_rel_pos_attention(dt_of(q), q.raw(), k.raw(), v.raw(), pos.raw(), pos_bias_u.raw(), pos_bias_v.raw(),
                           out.raw(), lens.data<int32_t>(), batch, steps, heads, dk, (pos.dim(0) - 1) / 2,
                           window.left, window.right, scale, static_cast<cudaStream_t>(ctx.stream().handle()));
  check_launch(op);
}

}  // namespace steno::ops::cuda
