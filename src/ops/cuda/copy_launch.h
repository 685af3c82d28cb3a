// Launchers of copy.cu (raw pointers, see launch.h), included by both copy.cu and copy_cuda.cc so
// that the two sides cannot disagree on a signature.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_cast(Dt src_dt, const void* src, Dt dst_dt, void* dst, int64_t n, cudaStream_t stream);
void launch_merge_channels(Dt dt, const void* x, void* y, int64_t b, int64_t c, int64_t t, int64_t f,
                           cudaStream_t stream);

}  // namespace steno::ops::cuda
