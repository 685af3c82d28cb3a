#include "steno/ops/attention.h"

#include "check.h"
#include "cpu/kernels.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_tensor;

void rel_pos_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                       const Tensor& pos_bias_u, const Tensor& pos_bias_v, const std::vector<int64_t>& lengths,
                       AttentionWindow window, Tensor& out) {
  const char* op = "rel_pos_attention";
  check_tensor(op, "q", q, ctx);
  check_tensor(op, "k", k, ctx);
  check_tensor(op, "v", v, ctx);
  check_tensor(op, "pos", pos, ctx);
  check_tensor(op, "pos_bias_u", pos_bias_u, ctx);
  check_tensor(op, "pos_bias_v", pos_bias_v, ctx);
  check_tensor(op, "out", out, ctx);
  STENO_CHECK(q.rank() == 3, "rel_pos_attention: q must be [B, T, H*dk], got {}", shape_str(q.shape()));
  STENO_CHECK(k.shape() == q.shape() && v.shape() == q.shape() && out.shape() == q.shape(),
              "rel_pos_attention: q, k, v and out must have one shape, got {}, {}, {}, {}", shape_str(q.shape()),
              shape_str(k.shape()), shape_str(v.shape()), shape_str(out.shape()));
  STENO_CHECK(pos_bias_u.rank() == 2 && pos_bias_u.shape() == pos_bias_v.shape(),
              "rel_pos_attention: pos_bias_u and pos_bias_v must both be [H, dk], got {} and {}",
              shape_str(pos_bias_u.shape()), shape_str(pos_bias_v.shape()));
  const int64_t steps = q.dim(1), d = q.dim(2), heads = pos_bias_u.dim(0), dk = pos_bias_u.dim(1);
  STENO_CHECK(heads >= 1 && dk >= 1 && heads * dk == d,
              "rel_pos_attention: H*dk = {}*{} from pos_bias_u {} does not match q's width {}", heads, dk,
              shape_str(pos_bias_u.shape()), d);
  STENO_CHECK(pos.rank() == 2 && pos.dim(1) == d && pos.dim(0) % 2 == 1,
              "rel_pos_attention: pos must be [2R+1, {}], got {}", d, shape_str(pos.shape()));
  detail::check_lengths(op, lengths, q.dim(0), steps);
  STENO_CHECK(window.left >= -1 && window.right >= -1,
              "rel_pos_attention: window sides must be >= 0 or -1 (unlimited), got [{}, {}]", window.left,
              window.right);
  // The largest offset a query can see on each side, bounded by the sequence.
  const int64_t far = std::max<int64_t>(steps - 1, 0);
  const int64_t need = std::max(window.left < 0 ? far : std::min(window.left, far),
                                window.right < 0 ? far : std::min(window.right, far));
  const int64_t r = (pos.dim(0) - 1) / 2;
  STENO_CHECK(r >= need,
              "rel_pos_attention: pos {} covers relative positions up to R = {}, but T = {} with window [{}, {}] "
              "needs R >= {}",
              shape_str(pos.shape()), r, steps, window.left, window.right, need);
  // out may alias q (each work item reads its own q rows before writing the same rows of out), not k, v, pos.
  STENO_CHECK(out.numel() == 0 || (out.raw() != k.raw() && out.raw() != v.raw() && out.raw() != pos.raw()),
              "rel_pos_attention: out must not alias k, v or pos");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL(op, cuda::rel_pos_attention(ctx, q, k, v, pos, pos_bias_u, pos_bias_v, lengths, window, out));
    return;
  }
  cpu::rel_pos_attention(ctx, q, k, v, pos, pos_bias_u, pos_bias_v, lengths, window, out);
}

void self_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                    const std::vector<int64_t>& lengths, Tensor& out) {
  const char* op = "self_attention";
  check_tensor(op, "q", q, ctx);
  check_tensor(op, "k", k, ctx);
  check_tensor(op, "v", v, ctx);
  check_tensor(op, "out", out, ctx);
  STENO_CHECK(q.rank() == 3, "self_attention: q must be [B, T, H*dk], got {}", shape_str(q.shape()));
  STENO_CHECK(k.shape() == q.shape() && v.shape() == q.shape() && out.shape() == q.shape(),
              "self_attention: q, k, v and out must have one shape, got {}, {}, {}, {}", shape_str(q.shape()),
              shape_str(k.shape()), shape_str(v.shape()), shape_str(out.shape()));
  STENO_CHECK(heads >= 1 && q.dim(2) % heads == 0, "self_attention: {} heads do not divide the width {}", heads,
              q.dim(2));
  detail::check_lengths(op, lengths, q.dim(0), q.dim(1));
  STENO_CHECK(out.numel() == 0 || (out.raw() != k.raw() && out.raw() != v.raw()),
              "self_attention: out must not alias k or v");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL(op, cuda::self_attention(ctx, q, k, v, heads, lengths, out));
    return;
  }
  cpu::self_attention(ctx, q, k, v, heads, lengths, out);
}

}  // namespace steno::ops
