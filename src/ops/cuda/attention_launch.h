// Launchers of attention.cu (raw pointers, see launch.h), included by both attention.cu and attention_cuda.cc so
// that the two sides cannot disagree on a signature.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_rel_pos_attention(Dt dt, const void* q, const void* k, const void* v, const void* pos,
                              const void* pos_bias_u, const void* pos_bias_v, void* out, const int32_t* lengths,
                              int64_t batch, int64_t steps, int64_t heads, int64_t dk, int64_t r_max, int64_t left,
                              int64_t right, float scale, cudaStream_t stream);

// ---- attention_scores.cu: the GEMM path's kernels (attention_cuda.cc runs its products on cuBLASLt) ----

// uk[h][bb][t] = u_h·k[bb, t, head h] for the chunk's nb items (k points at its first), and
// vp[h][c] = v_h·pos[c, head h] for the 2*steps - 1 pos rows from `pos` on; f32.
void launch_rel_pos_bias_dots(Dt dt, const void* k, const void* pos, const void* pos_bias_u,
                              const void* pos_bias_v, float* uk, float* vp, int64_t nb, int64_t steps,
                              int64_t heads, int64_t dk, cudaStream_t stream);

// The masked, rel-shifted softmax over a chunk's score rows (layouts: attention_scores.cu).
struct RelPosScores {
  float* ac;                // [heads][nb][steps][ld_ac]; the probabilities (storage type) overwrite it
  const float* bd;          // [heads][nb * steps][ld_bd]; null: plain attention, ac alone (uk, vp unused)
  const float* uk;          // [heads][nb][steps]
  const float* vp;          // [heads][2 * steps - 1]
  const int32_t* lengths;   // [nb]
  int64_t heads, nb, steps, ld_ac, ld_bd, left, right;
  float scale;
};
void launch_rel_pos_softmax(Dt dt, const RelPosScores& scores, cudaStream_t stream);
// The longest rows launch_rel_pos_softmax takes (each thread holds its share of a row in registers).
int64_t rel_pos_softmax_max_steps();

}  // namespace steno::ops::cuda
