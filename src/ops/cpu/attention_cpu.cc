// Relative-position multi-head attention (Transformer-XL / NeMo RelPositionMultiHeadAttention).
//
// Work is split into items (batch b, head h, block of query rows [i0, i1)), run in parallel, each with
// single-threaded GEMMs. For a block, the visible keys form one range [jlo, jhi) and the relative offsets i - j
// one range of pos rows [rlo, rhi], so each item is three small GEMMs on strided head slices plus a softmax per
// row:
//   AC = Qu · K[jlo:jhi]ᵀ / sqrt(dk),  Qu = q[i0:i1] + u
//   BD = Qv · pos[rlo:rhi]ᵀ / sqrt(dk), Qv = q[i0:i1] + v;   score(i, j) = AC[i, j] + BD[i, R - i + j]
//   out[i0:i1] = P · V[jlo:jhi]
// With a window of w = left + right + 1 keys, a block sees at most block + w - 1 keys and w pos rows, so the
// cost is O(T·w·dk) instead of O(T²·dk). Full attention uses the same blocks, which also trims NeMo's
// [T, 2T-1] positional product to [T, T + block - 1].
//
// Masking: keys outside [0, length) or outside the window get probability exactly 0 and take no part in the
// softmax; NeMo gives them score -10000, whose weight e^(-10000 - max) is exactly 0 in fp32 whenever a visible
// score exceeds -9890, so the results agree. Query rows at or past the length are zero.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu/kernels.h"
#include "cpu/simd.h"

namespace steno::ops::cpu {
namespace {

constexpr int64_t kBlockRows = 64;  // query rows per work item

// s[j] = softmax_j(s[j] + bd[j]) over n >= 1 entries, in place.
STENO_SIMD_CLONES void score_softmax_row(float* s, const float* bd, int64_t n) {
  for (int64_t j = 0; j < n; ++j) s[j] += bd[j];
  const float m = row_max(s, n);
  const float inv = 1.0f / row_exp_sum(s, s, n, m);
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

STENO_SIMD_CLONES void add_bias_rows(const float* q, int64_t ldq, const float* bias, float* dst, int64_t rows,
                                     int64_t n) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) dst[r * n + i] = q[r * ldq + i] + bias[i];
}

}  // namespace

void rel_pos_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                       const Tensor& pos_bias_u, const Tensor& pos_bias_v, const std::vector<int64_t>& lengths,
                       AttentionWindow window, Tensor& out, AttentionAlgo algo) {
  const int64_t batch = q.dim(0), steps = q.dim(1), d = q.dim(2);
  const int64_t heads = pos_bias_u.dim(0), dk = pos_bias_u.dim(1);
  const int64_t r_max = (pos.dim(0) - 1) / 2;  // R
  const int64_t left = window.left, right = window.right;
  const bool dense = algo == AttentionAlgo::kDense;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));

  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  const float* pp = pos.data<float>();
  const float* up = pos_bias_u.data<float>();
  const float* vbp = pos_bias_v.data<float>();
  float* op = out.data<float>();

  // Rows past each length are zero; everything else is written by exactly one work item.
  for (int64_t b = 0; b < batch; ++b)
    std::memset(op + (b * steps + lengths[b]) * d, 0, static_cast<size_t>((steps - lengths[b]) * d) * sizeof(float));

  const int64_t block = dense ? std::max<int64_t>(steps, 1) : kBlockRows;
  const int64_t nblocks = (steps + block - 1) / block;
  const bool banded = !dense && left >= 0 && right >= 0;
  const int64_t nk_max = banded ? std::min(steps, block + left + right) : steps;
  const int64_t np_max = std::min(2 * r_max + 1, block - 1 + nk_max);
  const GemmBackend backend = ctx.gemm_backend();
  const int threads = ctx.num_threads();  // sgemm runs single-threaded inside the parallel_for's chunks

  ctx.pool().parallel_for(0, batch * heads * nblocks, 1, [&](int64_t w0, int64_t w1) {
    Tensor scratch = ctx.scratch({2 * block * dk + block * nk_max + block * np_max});
    float* qu = scratch.data<float>();
    float* qv = qu + block * dk;
    float* s = qv + block * dk;
    float* bd = s + block * nk_max;
    for (int64_t item = w0; item < w1; ++item) {
      const int64_t b = item / (heads * nblocks), h = (item / nblocks) % heads, blk = item % nblocks;
      const int64_t len = lengths[b];
      const int64_t i0 = blk * block;
      if (i0 >= len) continue;
      const int64_t i1 = std::min(len, i0 + block), nq = i1 - i0;
      const int64_t jlo = dense || left < 0 ? 0 : std::max<int64_t>(0, i0 - left);
      const int64_t jhi = dense || right < 0 ? len : std::min(len, i1 + right);
      const int64_t nk = jhi - jlo;
      // pos rows for offsets i - j over the block: row = R - (i - j).
      int64_t rlo = r_max - (i1 - 1) + jlo, rhi = r_max - i0 + jhi - 1;
      if (!dense && left >= 0) rlo = std::max(rlo, r_max - left);
      if (!dense && right >= 0) rhi = std::min(rhi, r_max + right);
      rlo = std::max<int64_t>(rlo, 0);
      rhi = std::min(rhi, 2 * r_max);
      const int64_t np = rhi - rlo + 1;

      const int64_t col = h * dk;
      add_bias_rows(qp + (b * steps + i0) * d + col, d, up + col, qu, nq, dk);
      add_bias_rows(qp + (b * steps + i0) * d + col, d, vbp + col, qv, nq, dk);
      sgemm(backend, threads, false, true, nq, nk, dk, scale, qu, dk, kp + (b * steps + jlo) * d + col, d, 0.0f, s,
            nk);
      sgemm(backend, threads, false, true, nq, np, dk, scale, qv, dk, pp + rlo * d + col, d, 0.0f, bd, np);
      for (int64_t ii = 0; ii < nq; ++ii) {
        const int64_t i = i0 + ii;
        const int64_t a = left < 0 ? 0 : std::max<int64_t>(0, i - left);  // visible keys [a, e)
        const int64_t e = right < 0 ? len : std::min(len, i + right + 1);
        float* srow = s + ii * nk;
        score_softmax_row(srow + (a - jlo), bd + ii * np + (r_max - i + a - rlo), e - a);
        std::memset(srow, 0, static_cast<size_t>(a - jlo) * sizeof(float));
        std::memset(srow + (e - jlo), 0, static_cast<size_t>(jhi - e) * sizeof(float));
      }
      sgemm(backend, threads, false, false, nq, dk, nk, 1.0f, s, nk, vp + (b * steps + jlo) * d + col, d, 0.0f,
            op + (b * steps + i0) * d + col, d);
    }
  });
}

// Plain multi-head attention: the same work items, one score GEMM and one value GEMM each, every valid key seen.
void self_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                    const std::vector<int64_t>& lengths, Tensor& out) {
  const int64_t batch = q.dim(0), steps = q.dim(1), d = q.dim(2), dk = d / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  float* op = out.data<float>();
  for (int64_t b = 0; b < batch; ++b)
    std::memset(op + (b * steps + lengths[b]) * d, 0, static_cast<size_t>((steps - lengths[b]) * d) * sizeof(float));

  const int64_t nblocks = (steps + kBlockRows - 1) / kBlockRows;
  const GemmBackend backend = ctx.gemm_backend();
  const int threads = ctx.num_threads();
  ctx.pool().parallel_for(0, batch * heads * nblocks, 1, [&](int64_t w0, int64_t w1) {
    // q rows are copied out first so that out may alias q: another item of this head writes other rows only.
    Tensor scratch = ctx.scratch({kBlockRows * dk + kBlockRows * std::max<int64_t>(steps, 1)});
    float* qb = scratch.data<float>();
    float* s = qb + kBlockRows * dk;
    for (int64_t item = w0; item < w1; ++item) {
      const int64_t b = item / (heads * nblocks), h = (item / nblocks) % heads, blk = item % nblocks;
      const int64_t len = lengths[b], i0 = blk * kBlockRows;
      if (i0 >= len) continue;
      const int64_t nq = std::min(len, i0 + kBlockRows) - i0, col = h * dk;
      for (int64_t r = 0; r < nq; ++r) std::memcpy(qb + r * dk, qp + (b * steps + i0 + r) * d + col, dk * sizeof(float));
      sgemm(backend, threads, false, true, nq, len, dk, scale, qb, dk, kp + b * steps * d + col, d, 0.0f, s, len);
      for (int64_t r = 0; r < nq; ++r) {
        float* row = s + r * len;
        const float m = row_max(row, len);
        const float inv = 1.0f / row_exp_sum(row, row, len, m);
        for (int64_t j = 0; j < len; ++j) row[j] *= inv;
      }
      sgemm(backend, threads, false, false, nq, dk, len, 1.0f, s, len, vp + b * steps * d + col, d, 0.0f,
            op + (b * steps + i0) * d + col, d);
    }
  });
}

}  // namespace steno::ops::cpu
