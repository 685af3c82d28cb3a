// Launchers of elementwise.cu (raw pointers, see launch.h), included by both elementwise.cu and
// elementwise_cuda.cc (and gemm_cuda.cc) so that the two sides cannot disagree on a signature.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_add(Dt dt, const void* a, const void* b, float alpha, void* y, int64_t n, cudaStream_t stream);
void launch_scale(Dt dt, void* x, float s, int64_t n, cudaStream_t stream);
void launch_zero_padded_frames(Dt dt, void* x, const int32_t* lengths, int64_t batch, int64_t outer, int64_t steps,
                               int64_t inner, cudaStream_t stream);
// c = beta * c (+ bias): the epilogue-only case of a GEMM (k = 0), used by gemm_cuda.cc.
void launch_scale_matrix(Dt dt, void* c, int64_t rows, int64_t cols, int64_t ld, float beta, const void* bias,
                         cudaStream_t stream);

}  // namespace steno::ops::cuda
