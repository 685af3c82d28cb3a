// Launchers of lstm.cu (raw pointers, see launch.h), included by both lstm.cu and lstm_cuda.cc so
// that the two sides cannot disagree on a signature.
#pragma once

#include "launch.h"

namespace steno::ops::cuda {

void launch_lstm_gates(Dt dt, const void* z, const void* b_ih, const void* b_hh, const void* c, void* c_out,
                       void* h_out, int64_t batch, int64_t hid, cudaStream_t stream);

}  // namespace steno::ops::cuda
