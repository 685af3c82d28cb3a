// Convolutions: 2-D via im2col + GEMM (pointwise without im2col), a direct kernel for one input channel per
// output channel (depthwise, Cin == 1), and the channel-last depthwise 1-D convolution of the Conformer.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/simd.h"

namespace steno::ops::cpu {
namespace {

int64_t ceil_div_nonneg(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

// Output positions o in [lo, hi) whose input position o*stride - pad + k lies in [0, size).
void valid_range(int64_t size, int64_t out, int stride, int pad, int64_t k, int64_t& lo, int64_t& hi) {
  lo = ceil_div_nonneg(pad - k, stride);
  const int64_t last = size - 1 + pad - k;  // o*stride <= last
  hi = last < 0 ? 0 : std::min<int64_t>(out, last / stride + 1);
  lo = std::min(lo, hi);
}

// col[(ci, kh, kw), oh*Wo + ow] = x[ci, oh*sh - ph + kh, ow*sw - pw + kw], zero outside the image.
void im2col_rows(const float* x, int64_t h, int64_t w, int64_t kh_n, int64_t kw_n, int64_t ho, int64_t wo, int sh,
                 int sw, int ph, int pw, int64_t r0, int64_t r1, float* col) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t ci = r / (kh_n * kw_n), kh = (r / kw_n) % kh_n, kw = r % kw_n;
    const float* xc = x + ci * h * w;
    float* dst = col + r * ho * wo;
    int64_t ow_lo, ow_hi;
    valid_range(w, wo, sw, pw, kw, ow_lo, ow_hi);
    for (int64_t oh = 0; oh < ho; ++oh) {
      float* d = dst + oh * wo;
      const int64_t ih = oh * sh - ph + kh;
      if (ih < 0 || ih >= h) {
        std::memset(d, 0, static_cast<size_t>(wo) * sizeof(float));
        continue;
      }
      const float* src = xc + ih * w - pw + kw;
      for (int64_t ow = 0; ow < ow_lo; ++ow) d[ow] = 0.0f;
      if (sw == 1)
        std::memcpy(d + ow_lo, src + ow_lo, static_cast<size_t>(ow_hi - ow_lo) * sizeof(float));
      else
        for (int64_t ow = ow_lo; ow < ow_hi; ++ow) d[ow] = src[ow * sw];
      for (int64_t ow = ow_hi; ow < wo; ++ow) d[ow] = 0.0f;
    }
  }
}

// Direct convolution of planes with one input channel per output channel (depthwise, or Cin == 1 such as the
// subsampling's first conv), where im2col + GEMM would have K = KH*KW and run far below peak.
//
// The input plane is first rewritten as "phase rows": for each input row, the zero-padded row split into
// `s` = stride_w interleaved phases, q[(ih*s + phase)*len + m] = padded[s*m + phase]. Tap kw of output column
// ow then reads q[(ih*s + kw%s)*len + kw/s + ow]: contiguous in ow for any stride, with no bounds checks.
STENO_SIMD_CLONES void build_phase_rows(const float* x, int64_t h, int64_t w, int s, int pad_w, int64_t len,
                                        float* q, float* tmp) {
  const int64_t n = s * len;  // padded columns needed
  const int64_t lead = std::min<int64_t>(pad_w, n);
  const int64_t body = std::clamp<int64_t>(n - pad_w, 0, w);
  for (int64_t ih = 0; ih < h; ++ih) {
    float* qr = q + ih * n;
    float* row = s == 1 ? qr : tmp;
    std::fill_n(row, lead, 0.0f);
    std::memcpy(row + lead, x + ih * w, static_cast<size_t>(body) * sizeof(float));
    std::fill_n(row + lead + body, n - lead - body, 0.0f);
    if (s == 2) {
      for (int64_t m = 0; m < len; ++m) {
        qr[m] = tmp[2 * m];
        qr[len + m] = tmp[2 * m + 1];
      }
    } else if (s > 2) {
      for (int64_t ph = 0; ph < s; ++ph)
        for (int64_t m = 0; m < len; ++m) qr[ph * len + m] = tmp[s * m + ph];
    }
  }
}

// One output plane from phase rows. `tap` [KW]: offset of tap kw within an input row's phase rows.
STENO_SIMD_CLONES void direct_plane(const float* q, int64_t h, int64_t row_stride, const int64_t* tap,
                                    const float* wk, int64_t kh_n, int64_t kw_n, float bias, int sh, int ph,
                                    float* y, int64_t ho, int64_t wo) {
  constexpr int64_t kBlock = 16;  // output columns kept in registers across all taps
  for (int64_t oh = 0; oh < ho; ++oh) {
    float* yr = y + oh * wo;
    const int64_t top = oh * sh - ph;
    const int64_t kh_lo = std::max<int64_t>(0, -top), kh_hi = std::min<int64_t>(kh_n, h - top);
    int64_t ow = 0;
    for (; ow + kBlock <= wo; ow += kBlock) {
      vf8 acc0 = splat8(bias), acc1 = acc0;
      for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
        const float* qrow = q + (top + kh) * row_stride + ow;
        for (int64_t kw = 0; kw < kw_n; ++kw) {
          const float wv = wk[kh * kw_n + kw];
          const float* src = qrow + tap[kw];
          acc0 += wv * load8(src);
          acc1 += wv * load8(src + 8);
        }
      }
      store8(yr + ow, acc0);
      store8(yr + ow + 8, acc1);
    }
    if (ow < wo) {
      const int64_t rest = wo - ow;
      for (int64_t l = 0; l < rest; ++l) yr[ow + l] = bias;
      for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
        const float* qrow = q + (top + kh) * row_stride + ow;
        for (int64_t kw = 0; kw < kw_n; ++kw) {
          const float wv = wk[kh * kw_n + kw];
          const float* src = qrow + tap[kw];
          for (int64_t l = 0; l < rest; ++l) yr[ow + l] += wv * src[l];
        }
      }
    }
  }
}

// One output frame of the channel-last depthwise conv: y[:] = bias + sum_k wt[k, :] * x[t + k - pad_left, :].
STENO_SIMD_CLONES void depthwise1d_frame(const float* x, int64_t steps, int64_t t, const float* wt, int64_t k_n,
                                         const float* bias, int pad_left, float* y, int64_t c) {
  if (bias)
    std::memcpy(y, bias, static_cast<size_t>(c) * sizeof(float));
  else
    std::memset(y, 0, static_cast<size_t>(c) * sizeof(float));
  const int64_t k_lo = std::max<int64_t>(0, pad_left - t), k_hi = std::min<int64_t>(k_n, steps + pad_left - t);
  for (int64_t k = k_lo; k < k_hi; ++k) {
    const float* xr = x + (t + k - pad_left) * c;
    const float* wr = wt + k * c;
    for (int64_t i = 0; i < c; ++i) y[i] += wr[i] * xr[i];
  }
}

}  // namespace

void conv2d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y, int stride_h,
            int stride_w, int pad_h, int pad_w, int groups) {
  const int64_t batch = x.dim(0), cin = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t cout = w.dim(0), cin_g = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const int64_t ho = y.dim(2), wo = y.dim(3), plane = ho * wo;
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  const float* bp = bias.defined() ? bias.data<float>() : nullptr;
  float* yp = y.data<float>();
  if (y.numel() == 0) return;

  if (cin_g == 1) {  // depthwise (any channel multiplier) or a single input channel: direct kernel
    const int64_t mult = cout / groups;  // output channels per input channel
    const int64_t len = wo + (kw + stride_w - 1) / stride_w;  // phase-row length covering every tap
    const int64_t row_stride = stride_w * len;
    std::vector<int64_t> tap(static_cast<size_t>(kw));
    for (int64_t k = 0; k < kw; ++k) tap[k] = (k % stride_w) * len + k / stride_w;
    const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(plane * kh * kw, 1));
    ctx.pool().parallel_for(0, batch * cout, grain, [&](int64_t p0, int64_t p1) {
      Tensor scratch = ctx.scratch({h * row_stride + row_stride});
      float* q = scratch.data<float>();
      float* tmp = q + h * row_stride;
      int64_t built = -1;  // input plane currently in q
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t b = p / cout, co = p % cout, in_plane = b * cin + co / mult;
        if (in_plane != built) {
          build_phase_rows(xp + in_plane * h * wd, h, wd, stride_w, pad_w, len, q, tmp);
          built = in_plane;
        }
        direct_plane(q, h, row_stride, tap.data(), wp + co * kh * kw, kh, kw, bp ? bp[co] : 0.0f, stride_h, pad_h,
                     yp + p * plane, ho, wo);
      }
    });
    return;
  }

  // General (grouped) convolution: per image and group, y_g[Cout/G, P] = w_g[Cout/G, Cin/G*KH*KW] · col.
  const int64_t cout_g = cout / groups, ckk = cin_g * kh * kw;
  const bool pointwise = kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
  Tensor col = pointwise ? Tensor() : ctx.scratch({ckk, plane});
  float* colp = pointwise ? nullptr : col.data<float>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = xp + (b * cin + g * cin_g) * h * wd;
      const float* src = xg;
      if (!pointwise) {
        ctx.pool().parallel_for(0, ckk, std::max<int64_t>(1, 16384 / plane), [&](int64_t r0, int64_t r1) {
          im2col_rows(xg, h, wd, kh, kw, ho, wo, stride_h, stride_w, pad_h, pad_w, r0, r1, colp);
        });
        src = colp;
      }
      float* yg = yp + (b * cout + g * cout_g) * plane;
      float beta = 0.0f;
      if (bp) {  // start from the bias, accumulate the product onto it
        const float* bg = bp + g * cout_g;
        ctx.pool().parallel_for(0, cout_g, std::max<int64_t>(1, 16384 / plane), [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) std::fill_n(yg + c * plane, plane, bg[c]);
        });
        beta = 1.0f;
      }
      cpu::gemm_raw(ctx, false, false, cout_g, plane, ckk, 1.0f, wp + g * cout_g * ckk, ckk,
                    src, plane, beta, yg, plane);
    }
  }
}

void depthwise_conv1d(Context& ctx, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
                      int pad_left, int pad_right) {
  const int64_t batch = x.dim(0), steps = x.dim(1), c = x.dim(2), k_n = w.dim(1), out_steps = y.dim(1);
  if (y.numel() == 0) return;
  // w [C, K] -> wt [K, C] so that the inner loop runs over contiguous channels.
  Tensor wt = ctx.scratch({k_n, c});
  const float* wp = w.data<float>();
  float* wtp = wt.data<float>();
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t k = 0; k < k_n; ++k) wtp[k * c + ch] = wp[ch * k_n + k];
  const float* xp = x.data<float>();
  const float* bp = bias.defined() ? bias.data<float>() : nullptr;
  float* yp = y.data<float>();
  ctx.pool().parallel_for(0, batch * out_steps, std::max<int64_t>(1, 8192 / std::max<int64_t>(c * k_n, 1)),
                          [&](int64_t r0, int64_t r1) {
                            for (int64_t r = r0; r < r1; ++r) {
                              const int64_t b = r / out_steps, t = r % out_steps;
                              depthwise1d_frame(xp + b * steps * c, steps, t, wtp, k_n, bp, pad_left, yp + r * c, c);
                            }
                          });
}

}  // namespace steno::ops::cpu
