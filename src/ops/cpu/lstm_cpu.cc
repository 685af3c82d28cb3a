// LSTM (PyTorch formulation, gates i, f, g, o).
#include <algorithm>
#include <cstring>

#include "cpu/kernels.h"
#include "cpu/simd.h"

namespace steno::ops::cpu {
namespace {

STENO_SIMD_CLONES void cell_update(const float* gates, const float* c, float* c_out, int64_t n) {
  const float* gi = gates;
  const float* gf = gates + n;
  const float* gg = gates + 2 * n;
  for (int64_t j = 0; j < n; ++j) c_out[j] = gf[j] * c[j] + gi[j] * gg[j];
}

STENO_SIMD_CLONES void mul_into(const float* a, float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] *= a[j];
}

// z [4H]: the pre-activations (i, f, g, o), overwritten by the gates. c_out may alias c.
void lstm_gates(float* z, const float* c, float* c_out, float* h_out, int64_t n) {
  // Separate vectorised passes: one loop with five exponentials does not vectorise with GCC 12.
  sigmoid_row(z, z, 2 * n);  // i, f
  tanh_row(z + 2 * n, z + 2 * n, n);
  sigmoid_row(z + 3 * n, z + 3 * n, n);
  cell_update(z, c, c_out, n);
  tanh_row(c_out, h_out, n);
  mul_into(z + 3 * n, h_out, n);
}

// Fills the rows of z [rows, 4H] with b_ih + b_hh; returns the beta for the GEMMs that follow (0 without bias).
float fill_bias(Context& ctx, float* z, int64_t rows, int64_t n4, const Tensor& b_ih, const Tensor& b_hh) {
  if (!b_ih.defined() && !b_hh.defined()) return 0.0f;
  Tensor sum = ctx.scratch({n4});
  float* sp = sum.data<float>();
  const float* a = b_ih.defined() ? b_ih.data<float>() : nullptr;
  const float* b = b_hh.defined() ? b_hh.data<float>() : nullptr;
  for (int64_t j = 0; j < n4; ++j) sp[j] = (a ? a[j] : 0.0f) + (b ? b[j] : 0.0f);
  fill_rows(ctx, z, rows, n4, sp);
  return 1.0f;
}

}  // namespace

void lstm_cell(Context& ctx, const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
               const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, Tensor& h_out, Tensor& c_out) {
  const int64_t batch = x.dim(0), in = x.dim(1), hid = h.dim(1), n4 = 4 * hid;
  Tensor z = ctx.scratch({batch, n4});
  float* zp = z.data<float>();
  const float beta = fill_bias(ctx, zp, batch, n4, b_ih, b_hh);
  cpu::gemm_raw(ctx, false, true, batch, n4, in, 1.0f, x.data<float>(), std::max<int64_t>(in, 1), w_ih.data<float>(),
           std::max<int64_t>(in, 1), beta, zp, n4);
  lstm_cell_projected(ctx, z, h, c, w_hh, h_out, c_out);
}

void lstm_cell_projected(Context& ctx, Tensor& z, const Tensor& h, const Tensor& c, const Tensor& w_hh, Tensor& h_out,
                         Tensor& c_out) {
  const int64_t batch = h.dim(0), hid = h.dim(1), n4 = 4 * hid;
  float* zp = z.data<float>();
  cpu::gemm_raw(ctx, false, true, batch, n4, hid, 1.0f, h.data<float>(), hid, w_hh.data<float>(), hid, 1.0f, zp, n4);
  const float* cp = c.data<float>();
  float* cop = c_out.data<float>();
  float* hop = h_out.data<float>();
  for (int64_t b = 0; b < batch; ++b) lstm_gates(zp + b * n4, cp + b * hid, cop + b * hid, hop + b * hid, hid);
}

void lstm_layer(Context& ctx, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh, Tensor& h, Tensor& c, Tensor& y) {
  const int64_t steps = x.dim(0), batch = x.dim(1), in = x.dim(2), hid = h.dim(1), n4 = 4 * hid;
  if (steps == 0 || batch == 0 || hid == 0) return;
  // The input projections of all steps in one GEMM; only h·w_hhᵀ stays in the recurrence.
  Tensor z = ctx.scratch({steps * batch, n4});
  float* zp = z.data<float>();
  const float beta = fill_bias(ctx, zp, steps * batch, n4, b_ih, b_hh);
  cpu::gemm_raw(ctx, false, true, steps * batch, n4, in, 1.0f, x.data<float>(), std::max<int64_t>(in, 1),
           w_ih.data<float>(), std::max<int64_t>(in, 1), beta, zp, n4);
  float* hp = h.data<float>();
  float* cp = c.data<float>();
  float* yp = y.data<float>();
  const int64_t step = batch * hid;
  for (int64_t t = 0; t < steps; ++t) {
    float* zt = zp + t * batch * n4;
    const float* h_prev = t == 0 ? hp : yp + (t - 1) * step;  // y[t-1] is h after step t-1
    cpu::gemm_raw(ctx, false, true, batch, n4, hid, 1.0f, h_prev, hid, w_hh.data<float>(), hid, 1.0f, zt, n4);
    for (int64_t b = 0; b < batch; ++b)
      lstm_gates(zt + b * n4, cp + b * hid, cp + b * hid, yp + t * step + b * hid, hid);
  }
  std::memcpy(hp, yp + (steps - 1) * step, static_cast<size_t>(step) * sizeof(float));
}

}  // namespace steno::ops::cpu
