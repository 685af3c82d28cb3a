// Launchers of norm.cu (raw pointers, see launch.h), included by both norm.cu and norm_cuda.cc so
// that the two sides cannot disagree on a signature.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_layer_norm(Dt dt, const void* x, const void* gamma, const void* beta, float eps, void* y, int64_t rows,
                       int64_t d, cudaStream_t stream);
void launch_batch_norm(Dt dt, const void* x, const void* mean, const void* var, const void* gamma, const void* beta,
                       float eps, void* y, int64_t rows, int64_t c, cudaStream_t stream);

}  // namespace steno::ops::cuda
