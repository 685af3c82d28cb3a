#include "steno/ops/lstm.h"

#include "check.h"
#include "cpu/kernels.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {

using detail::check_optional;
using detail::check_shape;
using detail::check_tensor;

namespace {

// w_ih [4H, In], w_hh [4H, H], optional biases [4H].
void check_weights(const char* op, Context& ctx, int64_t in, int64_t hid, const Tensor& w_ih, const Tensor& w_hh,
                   const Tensor& b_ih, const Tensor& b_hh) {
  check_tensor(op, "w_ih", w_ih, ctx);
  check_tensor(op, "w_hh", w_hh, ctx);
  check_shape(op, "w_ih", w_ih, {4 * hid, in});
  check_shape(op, "w_hh", w_hh, {4 * hid, hid});
  check_optional(op, "b_ih", b_ih, {4 * hid}, ctx);
  check_optional(op, "b_hh", b_hh, {4 * hid}, ctx);
}

}  // namespace

void lstm_cell(Context& ctx, const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
               const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, Tensor& h_out, Tensor& c_out) {
  const char* op = "lstm_cell";
  check_tensor(op, "x", x, ctx);
  check_tensor(op, "h", h, ctx);
  check_tensor(op, "c", c, ctx);
  check_tensor(op, "h_out", h_out, ctx);
  check_tensor(op, "c_out", c_out, ctx);
  STENO_CHECK(x.rank() == 2 && h.rank() == 2, "lstm_cell: x must be [B, In] and h [B, H], got {} and {}",
              shape_str(x.shape()), shape_str(h.shape()));
  const int64_t batch = x.dim(0), hid = h.dim(1);
  STENO_CHECK(h.dim(0) == batch, "lstm_cell: h {} and x {} disagree on the batch", shape_str(h.shape()),
              shape_str(x.shape()));
  check_shape(op, "c", c, h.shape());
  check_shape(op, "h_out", h_out, h.shape());
  check_shape(op, "c_out", c_out, h.shape());
  check_weights(op, ctx, x.dim(1), hid, w_ih, w_hh, b_ih, b_hh);
  STENO_CHECK(batch * hid == 0 || (h_out.raw() != c.raw() && c_out.raw() != h.raw() && h_out.raw() != c_out.raw()),
              "lstm_cell: h_out and c_out may alias h and c respectively, not each other");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL(op, cuda::lstm_cell(ctx, x, h, c, w_ih, w_hh, b_ih, b_hh, h_out, c_out));
    return;
  }
  cpu::lstm_cell(ctx, x, h, c, w_ih, w_hh, b_ih, b_hh, h_out, c_out);
}

void lstm_cell_projected(Context& ctx, Tensor& z, const Tensor& h, const Tensor& c, const Tensor& w_hh, Tensor& h_out,
                         Tensor& c_out) {
  const char* op = "lstm_cell_projected";
  STENO_CHECK(ctx.device().is_cpu(), "lstm_cell_projected runs on the CPU only");
  check_tensor(op, "z", z, ctx);
  check_tensor(op, "h", h, ctx);
  check_tensor(op, "c", c, ctx);
  check_tensor(op, "w_hh", w_hh, ctx);
  check_tensor(op, "h_out", h_out, ctx);
  check_tensor(op, "c_out", c_out, ctx);
  STENO_CHECK(h.rank() == 2, "lstm_cell_projected: h must be [B, H], got {}", shape_str(h.shape()));
  const int64_t batch = h.dim(0), hid = h.dim(1);
  check_shape(op, "z", z, {batch, 4 * hid});
  check_shape(op, "w_hh", w_hh, {4 * hid, hid});
  check_shape(op, "c", c, h.shape());
  check_shape(op, "h_out", h_out, h.shape());
  check_shape(op, "c_out", c_out, h.shape());
  STENO_CHECK(batch * hid == 0 || (h_out.raw() != c.raw() && c_out.raw() != h.raw() && h_out.raw() != c_out.raw()),
              "lstm_cell_projected: h_out and c_out may alias h and c respectively, not each other");
  cpu::lstm_cell_projected(ctx, z, h, c, w_hh, h_out, c_out);
}

void lstm_layer(Context& ctx, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh, Tensor& h, Tensor& c, Tensor& y) {
  const char* op = "lstm_layer";
  check_tensor(op, "x", x, ctx);
  check_tensor(op, "h", h, ctx);
  check_tensor(op, "c", c, ctx);
  check_tensor(op, "y", y, ctx);
  STENO_CHECK(x.rank() == 3 && h.rank() == 2, "lstm_layer: x must be [T, B, In] and h [B, H], got {} and {}",
              shape_str(x.shape()), shape_str(h.shape()));
  const int64_t steps = x.dim(0), batch = x.dim(1), hid = h.dim(1);
  STENO_CHECK(h.dim(0) == batch, "lstm_layer: h {} and x {} disagree on the batch", shape_str(h.shape()),
              shape_str(x.shape()));
  check_shape(op, "c", c, h.shape());
  check_shape(op, "y", y, {steps, batch, hid});
  check_weights(op, ctx, x.dim(2), hid, w_ih, w_hh, b_ih, b_hh);
  STENO_CHECK(y.numel() == 0 || (y.raw() != x.raw() && y.raw() != h.raw() && y.raw() != c.raw()),
              "lstm_layer: y must not alias x, h or c");
  STENO_CHECK(h.numel() == 0 || h.raw() != c.raw(), "lstm_layer: h and c must not alias");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL(op, cuda::lstm_layer(ctx, x, w_ih, w_hh, b_ih, b_hh, h, c, y));
    return;
  }
  cpu::lstm_layer(ctx, x, w_ih, w_hh, b_ih, b_hh, h, c, y);
}

}  // namespace steno::ops
