// rel_pos_attention on CUDA, three ways to the same maths (include/steno/ops/attention.h):
//
// - The flash kernel (flash_attention.cu), for full attention in f16/bf16 (heads of up to 128 columns):
//   the products on the tensor cores with the scores in registers, after the f32 bias terms u·k_j and v·pos_r.
//   The default there (flash_attention_level 2): 0.59 ms a layer where the GEMM path takes 1.31 at 32 x 750
//   frames, 8 heads of 64 (bench/results/h200-diar-speed).
// - The GEMM path, otherwise when the score matrices of at least one batch item fit the score budget (1 GiB): q·kᵀ
//   and q·posᵀ as strided-batched cuBLASLt products with f32 outputs, the bias terms and the masked, rel-shifted
//   softmax in attention_scores.cu, then P·v on cuBLASLt again. Batch items go through in chunks that keep the f32
//   scores within the budget. It writes and rereads the scores (about 4 GB a layer at 32 x 750 frames), which
//   the flash kernel avoids; it serves f32 and the comparisons ($STENO_FLASH_ATTENTION=0).
// - The fused CUDA-core kernel (attention.cu): O(T·w) for a window and no [T, T] matrix, for banded attention,
//   whose window the other two would compute in full, and for f32 inputs too long for the budget.
// All keep the scores in f32 until the softmax, and all mask as the CPU kernel does.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "check.h"
#include "kernels.h"
#include "launch.h"
#include "attention_launch.h"
#include "flash_attention_launch.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"

namespace steno::ops::cuda {

namespace {

// The f32 score scratch one call may hold (per context: a serving lane keeps it in its memory pool).
// $STENO_ATTENTION_SCORE_BUDGET_MB overrides the default (0: always the fused kernel).
int64_t default_score_budget() {
  if (const char* mb = std::getenv("STENO_ATTENTION_SCORE_BUDGET_MB"); mb != nullptr && *mb != '\0')
    return std::max<int64_t>(0, std::atoll(mb)) << 20;
  return int64_t{1} << 30;
}
std::atomic<int64_t> score_budget_bytes{default_score_budget()};

// $STENO_FLASH_ATTENTION: 0 no flash kernels, 1 plain self-attention's only, all (the default): relative-position
// attention's too (see flash_attention_level).
int default_flash_level() {
  const char* level = std::getenv("STENO_FLASH_ATTENTION");
  if (level == nullptr) return 2;
  const std::string_view v(level);
  return v == "0" ? 0 : v == "1" ? 1 : 2;
}
std::atomic<int> flash_level{default_flash_level()};

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Row strides (elements) of the score matrices: 32-byte rows, so every product's operands stay aligned.
struct ScoreShape {
  int64_t steps, heads, ld_ac, ld_bd, n_pos;
  explicit ScoreShape(int64_t t, int64_t h)
      : steps(t), heads(h), ld_ac(round_up(t, 8)), ld_bd(round_up(2 * t - 1, 8)), n_pos(2 * t - 1) {}
  int64_t bytes_per_item() const { return heads * steps * (ld_ac + ld_bd + 1) * 4; }
  // An odd T still runs, on cuBLASLt's slower kernels for unaligned extents; the CUDA encoder pads T to 8.
};

// The batch items per chunk of the GEMM path, or 0 when it does not apply.
int64_t gemm_path_chunk(const ScoreShape& s, int64_t batch, AttentionWindow window) {
  if (window.left >= 0 || window.right >= 0) return 0;  // banded: the fused kernel is O(T·w)
  if (s.steps > rel_pos_softmax_max_steps()) return 0;
  const int64_t budget = score_budget_bytes.load(std::memory_order_relaxed), per_item = s.bytes_per_item();
  if (per_item > budget) return 0;
  return std::min(batch, budget / per_item);
}

int64_t elem_bytes(const Tensor& t) { return static_cast<int64_t>(dtype_size(t.dtype())); }

// ac[h][bb] = q_bb,h · k_bb,hᵀ in f32 ([H][nb][T][ld] rows) for the nb items from qc/kc ([nb][T][H*dk]): one batched
// product per item over the heads, or per head over the items, whichever makes fewer calls.
void query_key_products(Context& ctx, Dt dt, const char* qc, const char* kc, float* ac_p, int64_t nb, int64_t T,
                        int64_t H, int64_t dk, int64_t ld, int64_t eb) {
  const int64_t W = H * dk;
  if (nb <= H) {
    for (int64_t bb = 0; bb < nb; ++bb)
      gemm_batched_dt(ctx, dt, true, false, true, T, T, dk, {qc + bb * T * W * eb, W, dk}, {kc + bb * T * W * eb, W, dk},
                      {ac_p + bb * T * ld, ld, nb * T * ld}, static_cast<int32_t>(H));
  } else {
    for (int64_t h = 0; h < H; ++h)
      gemm_batched_dt(ctx, dt, true, false, true, T, T, dk, {qc + h * dk * eb, W, T * W}, {kc + h * dk * eb, W, T * W},
                      {ac_p + h * nb * T * ld, ld, T * ld}, static_cast<int32_t>(nb));
  }
}

// out_bb,h = P_bb,h · v_bb,h, with P in the storage type over ac's bytes (row stride ld * 4 / eb elements), as the
// softmax leaves it.
void probabilities_times_values(Context& ctx, Dt dt, const float* ac_p, const char* vc, char* oc, int64_t nb,
                                int64_t T, int64_t H, int64_t dk, int64_t ld, int64_t eb) {
  const int64_t W = H * dk, ld_p = ld * 4 / eb;
  const char* p = reinterpret_cast<const char*>(ac_p);
  if (nb <= H) {
    for (int64_t bb = 0; bb < nb; ++bb)
      gemm_batched_dt(ctx, dt, false, false, false, T, dk, T, {p + bb * T * ld_p * eb, ld_p, nb * T * ld_p},
                      {vc + bb * T * W * eb, W, dk}, {oc + bb * T * W * eb, W, dk}, static_cast<int32_t>(H));
  } else {
    for (int64_t h = 0; h < H; ++h)
      gemm_batched_dt(ctx, dt, false, false, false, T, dk, T, {p + h * nb * T * ld_p * eb, ld_p, T * ld_p},
                      {vc + h * dk * eb, W, T * W}, {oc + h * dk * eb, W, T * W}, static_cast<int32_t>(nb));
  }
}

// One chunk of nb batch items starting at b0: products into ac/bd, softmax, P·v into out.
void attention_chunk(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos_used,
                     const Tensor& pos_bias_u, const Tensor& pos_bias_v, const int32_t* lengths, Tensor& out,
                     const ScoreShape& s, int64_t b0, int64_t nb, Tensor& ac, Tensor& bd, Tensor& bias_terms) {
  const Dt dt = dt_of(q);
  const int64_t T = s.steps, H = s.heads, dk = pos_bias_u.dim(1), W = H * dk, eb = elem_bytes(q);
  const auto at = [&](const Tensor& x, int64_t elements) {
    return static_cast<const char*>(x.raw()) + elements * eb;
  };
  const char* qc = at(q, b0 * T * W);
  const char* kc = at(k, b0 * T * W);
  const char* vc = at(v, b0 * T * W);
  char* oc = static_cast<char*>(out.raw()) + b0 * T * W * eb;
  const char* pos0 = static_cast<const char*>(pos_used.raw());  // row c: offset T-1-c; zero rows past 2T-1
  float* ac_p = ac.data<float>();
  float* bd_p = bd.data<float>();
  float* uk = bias_terms.data<float>();
  float* vp = uk + H * nb * T;
  const cudaStream_t stream = stream_of(ctx);

  launch_rel_pos_bias_dots(dt, kc, pos0, pos_bias_u.raw(), pos_bias_v.raw(), uk, vp, nb, T, H, dk, stream);
  check_launch("rel_pos_attention (bias terms)");

  query_key_products(ctx, dt, qc, kc, ac_p, nb, T, H, dk, s.ld_ac, eb);
  // bd[h] = q_h · pos_hᵀ for every row of the chunk at once (the rows of q are the chunk's nb*T frames), over
  // ld_bd columns (the zero pos rows past 2T-1 keep the extent a multiple of 8).
  gemm_batched_dt(ctx, dt, true, false, true, nb * T, s.ld_bd, dk, {qc, W, dk}, {pos0, W, dk},
                  {bd_p, s.ld_bd, nb * T * s.ld_bd}, static_cast<int32_t>(H));

  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));  // as the CPU kernel rounds it
  launch_rel_pos_softmax(dt, {ac_p, bd_p, uk, vp, lengths + b0, H, nb, T, s.ld_ac, s.ld_bd, -1, -1, scale}, stream);
  check_launch("rel_pos_attention (softmax)");

  probabilities_times_values(ctx, dt, ac_p, vc, oc, nb, T, H, dk, s.ld_ac, eb);
}

void attention_by_gemms(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                        const Tensor& pos_bias_u, const Tensor& pos_bias_v, const Tensor& lengths, Tensor& out,
                        const ScoreShape& s, int64_t chunk) {
  const int64_t batch = q.dim(0), width = q.dim(2), eb = elem_bytes(q);
  // The pos rows the keys use (offsets T-1 down to -(T-1)), then zero rows up to ld_bd.
  Tensor pos_used = ctx.scratch({s.ld_bd, width}, q.dtype());
  const int64_t r_max = (pos.dim(0) - 1) / 2, row_bytes = width * eb;
  const cudaStream_t stream = stream_of(ctx);
  cudaError_t err = cudaMemcpyAsync(pos_used.raw(), static_cast<const char*>(pos.raw()) + (r_max - (s.steps - 1)) * row_bytes,
                                    s.n_pos * row_bytes, cudaMemcpyDeviceToDevice, stream);
  if (err == cudaSuccess)
    err = cudaMemsetAsync(static_cast<char*>(pos_used.raw()) + s.n_pos * row_bytes, 0, (s.ld_bd - s.n_pos) * row_bytes,
                          stream);
  if (err != cudaSuccess) fail(ErrorCode::kInternal, "rel_pos_attention: pos rows: {}", cudaGetErrorString(err));
  Tensor ac = ctx.scratch({s.heads * chunk * s.steps * s.ld_ac}, DType::kF32);
  Tensor bd = ctx.scratch({s.heads * chunk * s.steps * s.ld_bd}, DType::kF32);
  Tensor bias_terms = ctx.scratch({s.heads * (chunk * s.steps + s.n_pos)}, DType::kF32);
  for (int64_t b0 = 0; b0 < batch; b0 += chunk)
    attention_chunk(ctx, q, k, v, pos_used, pos_bias_u, pos_bias_v, lengths.data<int32_t>(), out, s, b0,
                    std::min(chunk, batch - b0), ac, bd, bias_terms);
}

// Full attention in one fused tensor-core kernel (flash_attention.cu) after the f32 bias terms.
void attention_by_flash(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                        const Tensor& pos_bias_u, const Tensor& pos_bias_v, const Tensor& lengths, Tensor& out) {
  const char* op = "rel_pos_attention";
  const int64_t batch = q.dim(0), steps = q.dim(1), width = q.dim(2), heads = pos_bias_u.dim(0),
                dk = pos_bias_u.dim(1), r_max = (pos.dim(0) - 1) / 2, n_pos = 2 * steps - 1;
  STENO_CHECK(r_max >= steps - 1, "{}: full attention needs pos rows for offsets up to {}", op, steps - 1);
  STENO_CHECK(heads <= 65535 && batch <= 65535,
              "{}: CUDA kernel takes at most 65535 heads and batch items, got {} and {}", op, heads, batch);
  const Dt dt = dt_of(q);
  const cudaStream_t stream = stream_of(ctx);
  const char* pos0 = static_cast<const char*>(pos.raw()) + (r_max - (steps - 1)) * width * elem_bytes(q);
  Tensor bias_terms = ctx.scratch({heads * (batch * steps + n_pos)}, DType::kF32);
  float* uk = bias_terms.data<float>();
  float* vp = uk + heads * batch * steps;
  launch_rel_pos_bias_dots(dt, k.raw(), pos0, pos_bias_u.raw(), pos_bias_v.raw(), uk, vp, batch, steps, heads, dk,
                           stream);
  check_launch("rel_pos_attention (bias terms)");
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));  // as the CPU kernel rounds it
  launch_flash_rel_pos_attention(dt, q.raw(), k.raw(), v.raw(), pos0, uk, vp, out.raw(), lengths.data<int32_t>(),
                                 batch, steps, heads, dk, scale, stream);
  check_launch(op);
}

}  // namespace

int flash_attention_level() { return flash_level.load(std::memory_order_relaxed); }

namespace {

// Whether a flash kernel at `level` (1 plain, 2 relative positions) takes a call of batch x heads x steps: below
// two 64-query pieces of work per SM (one 60 s clip: 12 x 8 = 96 on 132 SMs; the kernel's blocks take 128 queries
// now, so: below one block per SM) each block's serial walk over the keys leaves the device idle, and the GEMM
// path is faster (11.7 against 15.3 ms for Sortformer at 1 x 60 s, measured with 64-query blocks), unless the
// GEMM path cannot take the call (rows past its softmax's limit, or one item's scores past the score budget).
bool flash_takes(const Context& ctx, int level, int64_t batch, int64_t heads, int64_t steps, int64_t item_bytes) {
  const int set = flash_attention_level();
  if (set < level) return false;
  if (set >= 3) return true;
  if (steps > rel_pos_softmax_max_steps() || item_bytes > score_budget_bytes.load(std::memory_order_relaxed))
    return true;
  const int64_t blocks = batch * heads * ((steps + 63) / 64);
  return blocks >= 2 * steno::cuda::sm_count(ctx.device().index);
}

}  // namespace
void set_flash_attention_level(int level) { flash_level.store(level < 0 ? default_flash_level() : level); }

int64_t attention_score_budget() { return score_budget_bytes.load(); }
void set_attention_score_budget(int64_t bytes) { score_budget_bytes.store(bytes < 0 ? default_score_budget() : bytes); }

void rel_pos_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                       const Tensor& pos_bias_u, const Tensor& pos_bias_v, const std::vector<int64_t>& lengths,
                       AttentionWindow window, Tensor& out) {
  const char* op = "rel_pos_attention";
  detail::check_same_dtype(op, {&q, &k, &v, &pos, &pos_bias_u, &pos_bias_v, &out});
  const int64_t batch = q.dim(0), steps = q.dim(1), heads = pos_bias_u.dim(0), dk = pos_bias_u.dim(1);
  if (out.numel() == 0) return;
  const Tensor lens = upload_lengths(ctx, lengths);
  const bool full = window.left < 0 && window.right < 0;
  if (full && flash_rel_pos_attention_supported(dt_of(q), dk) &&
      flash_takes(ctx, 2, batch, heads, steps, ScoreShape(steps, heads).bytes_per_item())) {
    attention_by_flash(ctx, q, k, v, pos, pos_bias_u, pos_bias_v, lens, out);
    return;
  }
  const ScoreShape shape(steps, heads);
  if (const int64_t chunk = gemm_path_chunk(shape, batch, window); chunk > 0) {
    STENO_CHECK((pos.dim(0) - 1) / 2 >= steps - 1, "{}: full attention needs pos rows for offsets up to {}", op,
                steps - 1);
    attention_by_gemms(ctx, q, k, v, pos, pos_bias_u, pos_bias_v, lens, out, shape, chunk);
    return;
  }
  // The fused kernel's tiles hold a head in at most 128 columns; the grid puts heads and batch in y and z.
  if (dk > 128) fail(ErrorCode::kUnimplemented, "{}: CUDA kernel supports head sizes up to 128, got {}", op, dk);
  STENO_CHECK(heads <= 65535 && batch <= 65535,
              "{}: CUDA kernel takes at most 65535 heads and batch items, got {} and {}", op, heads, batch);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));  // as the CPU kernel rounds it
  launch_rel_pos_attention(dt_of(q), q.raw(), k.raw(), v.raw(), pos.raw(), pos_bias_u.raw(), pos_bias_v.raw(),
                           out.raw(), lens.data<int32_t>(), batch, steps, heads, dk, (pos.dim(0) - 1) / 2,
                           window.left, window.right, scale, static_cast<cudaStream_t>(ctx.stream().handle()));
  check_launch(op);
}

// Plain attention (the Sortformer Transformer's). In f16/bf16 with heads of up to 32 columns, the fused
// tensor-core kernel (flash_attention.cu; see flash_attention_level); otherwise
// the GEMM path without the positional terms, batch items in chunks whose f32 scores fit the score budget (at
// least one item per chunk).
void self_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                    const std::vector<int64_t>& lengths, Tensor& out) {
  const char* op = "self_attention";
  detail::check_same_dtype(op, {&q, &k, &v, &out});
  const int64_t batch = q.dim(0), T = q.dim(1), W = q.dim(2), dk = W / heads, eb = elem_bytes(q);
  if (out.numel() == 0) return;
  const int64_t item_bytes = heads * T * round_up(T, 8) * 4;  // the GEMM path's f32 scores of one item
  if (flash_self_attention_supported(dt_of(q), dk) && flash_takes(ctx, 1, batch, heads, T, item_bytes)) {
    STENO_CHECK(heads <= 65535 && batch <= 65535, "{}: CUDA kernel takes at most 65535 heads and batch items, got {} "
                "and {}", op, heads, batch);
    const Tensor lens = upload_lengths(ctx, lengths);
    launch_flash_self_attention(dt_of(q), q.raw(), k.raw(), v.raw(), out.raw(), lens.data<int32_t>(), batch, T, heads,
                                dk, 1.0f / std::sqrt(static_cast<float>(dk)), stream_of(ctx));
    check_launch(op);
    return;
  }
  if (T > rel_pos_softmax_max_steps())
    fail(ErrorCode::kUnimplemented, "{}: CUDA takes sequences of up to {} frames, got {} (use streaming for longer)",
         op, rel_pos_softmax_max_steps(), T);
  const Tensor lens = upload_lengths(ctx, lengths);
  const int64_t ld = round_up(T, 8), per_item = heads * T * ld * 4;
  const int64_t chunk = std::clamp<int64_t>(score_budget_bytes.load(std::memory_order_relaxed) / per_item, 1, batch);
  Tensor ac = ctx.scratch({heads * chunk * T * ld}, DType::kF32);
  const Dt dt = dt_of(q);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));  // as the CPU kernel rounds it
  const auto at = [&](const Tensor& x, int64_t b0) { return static_cast<const char*>(x.raw()) + b0 * T * W * eb; };
  for (int64_t b0 = 0; b0 < batch; b0 += chunk) {
    const int64_t nb = std::min(chunk, batch - b0);
    query_key_products(ctx, dt, at(q, b0), at(k, b0), ac.data<float>(), nb, T, heads, dk, ld, eb);
    launch_rel_pos_softmax(dt, {ac.data<float>(), nullptr, nullptr, nullptr, lens.data<int32_t>() + b0, heads, nb, T,
                                ld, 0, -1, -1, scale},
                           stream_of(ctx));
    check_launch("self_attention (softmax)");
    probabilities_times_values(ctx, dt, ac.data<float>(), at(v, b0), static_cast<char*>(out.raw()) + b0 * T * W * eb,
                               nb, T, heads, dk, ld, eb);
  }
}

}  // namespace steno::ops::cuda
