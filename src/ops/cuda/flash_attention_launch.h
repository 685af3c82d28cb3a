// Launchers of flash_attention.cu (raw pointers, see launch.h), shared by it and attention_cuda.cc.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

// Whether the fused tensor-core kernel takes this case: f16 or bf16, heads of at most 128 columns.
bool flash_self_attention_supported(Dt dt, int64_t dk);

// out = self-attention of q, k, v ([batch, steps, heads * dk], one storage type) with keys at or past
// lengths[b] masked and rows at or past it zero (include/steno/ops/attention.h); scores scaled by `scale`.
void launch_flash_self_attention(Dt dt, const void* q, const void* k, const void* v, void* out,
                                 const int32_t* lengths, int64_t batch, int64_t steps, int64_t heads, int64_t dk,
                                 float scale, cudaStream_t stream);

// Whether the fused tensor-core relative-position kernel takes this case: f16 or bf16, heads of at most 128 columns.
bool flash_rel_pos_attention_supported(Dt dt, int64_t dk);

// out = full relative-position attention (include/steno/ops/attention.h, no window) of q, k, v ([batch, steps,
// heads * dk], one storage type); pos points at the pos row of offset steps - 1 (then offsets down to
// -(steps - 1), 2 * steps - 1 rows of heads * dk); uk [heads][batch][steps] and vp [heads][2 * steps - 1] are the
// f32 bias terms u·k_j and v·pos_c (launch_rel_pos_bias_dots). Keys at or past lengths[b] are masked, rows at or
// past it zero; scores scaled by `scale`.
void launch_flash_rel_pos_attention(Dt dt, const void* q, const void* k, const void* v, const void* pos,
                                    const float* uk, const float* vp, void* out, const int32_t* lengths,
                                    int64_t batch, int64_t steps, int64_t heads, int64_t dk, float scale,
                                    cudaStream_t stream);

}  // namespace steno::ops::cuda
