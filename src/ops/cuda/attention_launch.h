// Launchers of attention.cu (raw pointers, see launch.h), included by both attention.cu and attention_cuda.cc so
// that the two sides cannot disagree on a signature.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_rel_pos_attention(Dt dt, const void* q, const void* k, const void* v, const void* pos,
                              const void* pos_bias_u, const void* pos_bias_v, void* out, const int32_t* lengths,
                              int64_t batch, int64_t steps, int64_t heads, int64_t dk, int64_t r_max, int64_t left,
                              int64_t right, float scale, cudaStream_t stream);

}  // namespace steno::ops::cuda
