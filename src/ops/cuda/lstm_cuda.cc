// LSTM on CUDA: the matrix products through cuBLASLt (gemm_cuda.cc), the gates in one pointwise kernel (lstm.cu).
// The pre-activations z live in the tensors' dtype; the gate math is f32. cuda::gemm is qualified so that
// argument-dependent lookup cannot also pick ops::gemm.
#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "lstm_launch.h"
#include "steno/core/cuda.h"

namespace steno::ops::cuda {

namespace {

const void* raw_or_null(const Tensor& t) { return t.defined() ? t.raw() : nullptr; }

}  // namespace

void lstm_cell(Context& ctx, const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
               const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, Tensor& h_out, Tensor& c_out) {
  detail::check_same_dtype("lstm_cell", {&x, &h, &c, &w_ih, &w_hh, &b_ih, &b_hh, &h_out, &c_out});
  const int64_t batch = x.dim(0), hid = h.dim(1);
  if (batch == 0 || hid == 0) return;
  // z = x·w_ihᵀ, then z += h·w_hhᵀ (beta = 1): one [B, 4H] buffer, the biases added by the gate kernel.
  Tensor z = ctx.scratch({batch, 4 * hid}, x.dtype());
  cuda::gemm(ctx, x, false, w_ih, true, z, 1.0f, 0.0f);
  cuda::gemm(ctx, h, false, w_hh, true, z, 1.0f, 1.0f);
  // h was consumed by the GEMM above (stream order), so h_out may alias it; c is read before c_out is written.
  launch_lstm_gates(dt_of(x), z.raw(), raw_or_null(b_ih), raw_or_null(b_hh), c.raw(), c_out.raw(), h_out.raw(),
                    batch, hid, stream_of(ctx));
  check_launch("lstm_cell");
}

void lstm_layer(Context& ctx, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh, Tensor& h, Tensor& c, Tensor& y) {
  detail::check_same_dtype("lstm_layer", {&x, &w_ih, &w_hh, &b_ih, &b_hh, &h, &c, &y});
  const int64_t steps = x.dim(0), batch = x.dim(1), in = x.dim(2), hid = h.dim(1);
  if (steps == 0 || batch == 0 || hid == 0) return;
  // The input projections of all steps in one GEMM; only h·w_hhᵀ stays in the recurrence.
  Tensor z = ctx.scratch({steps * batch, 4 * hid}, x.dtype());
  cuda::gemm(ctx, x.reshape({steps * batch, in}), false, w_ih, true, z, 1.0f, 0.0f);
  const Dt dt = dt_of(x);
  for (int64_t t = 0; t < steps; ++t) {
    Tensor zt = z.narrow0(t * batch, (t + 1) * batch);
    const Tensor h_prev = t == 0 ? h : y.narrow0(t - 1, t).reshape({batch, hid});  // y[t-1] is h after step t-1
    cuda::gemm(ctx, h_prev, false, w_hh, true, zt, 1.0f, 1.0f);
    Tensor yt = y.narrow0(t, t + 1);
    launch_lstm_gates(dt, zt.raw(), raw_or_null(b_ih), raw_or_null(b_hh), c.raw(), c.raw(), yt.raw(), batch, hid,
                      stream_of(ctx));
    check_launch("lstm_layer");
  }
  // The final hidden state is the last output row.
  steno::cuda::memcpy_async(h.raw(), y.narrow0(steps - 1, steps).raw(), h.nbytes(), ctx.stream());
}

}  // namespace steno::ops::cuda
