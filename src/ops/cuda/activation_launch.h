// Launchers of activation.cu (raw pointers, see launch.h), included by both activation.cu and activation_cuda.cc so
// that the two sides cannot disagree on a signature.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_relu(Dt dt, const void* x, void* y, int64_t n, cudaStream_t stream);
void launch_silu(Dt dt, const void* x, void* y, int64_t n, cudaStream_t stream);
void launch_sigmoid(Dt dt, const void* x, void* y, int64_t n, cudaStream_t stream);
void launch_glu(Dt dt, const void* x, void* y, int64_t rows, int64_t c, cudaStream_t stream);
void launch_softmax(Dt dt, const void* x, void* y, int64_t rows, int64_t n, cudaStream_t stream);

}  // namespace steno::ops::cuda
