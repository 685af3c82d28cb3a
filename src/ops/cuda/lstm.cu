// The LSTM's pointwise half: gate activations and the state update after the two GEMMs (lstm_cuda.cc).
#include <algorithm>
#include <cstdint>

#include "launch_common.cuh"
#include "lstm_launch.h"

namespace steno::ops::cuda {
namespace {


__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// z [batch, 4H] holds x·w_ihᵀ + h·w_hhᵀ in PyTorch's gate order (i, f, g, o); b_ih, b_hh [4H] or null.
// c' = σ(f)·c + σ(i)·tanh(g), h' = σ(o)·tanh(c'). One thread per (b, j) reads c[b, j] before it writes
// c_out[b, j], so c_out may alias c; h is not read here (the GEMM before consumed it), so h_out may alias h.
template <typename T>
__global__ void lstm_gates_kernel(const T* z, const T* b_ih, const T* b_hh, const T* c, T* c_out, T* h_out,
                                  int64_t hid, int64_t n) {
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = idx / hid, j = idx % hid;
    const T* zr = z + b * 4 * hid;
    float pre[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t col = q * hid + j;
      // The two biases summed first, as the CPU kernel folds b_ih + b_hh into one vector.
      const float bias = (b_ih != nullptr ? to_f32(b_ih[col]) : 0.0f) + (b_hh != nullptr ? to_f32(b_hh[col]) : 0.0f);
      pre[q] = to_f32(zr[col]) + bias;
    }
    const float gi = sigmoid(pre[0]), gf = sigmoid(pre[1]), gg = tanhf(pre[2]), go = sigmoid(pre[3]);
    const float c_new = gf * to_f32(c[idx]) + gi * gg;
    c_out[idx] = from_f32<T>(c_new);
    h_out[idx] = from_f32<T>(go * tanhf(c_new));
  }
}

}  // namespace

// ---- launchers (declared in lstm_launch.h) ----

void launch_lstm_gates(Dt dt, const void* z, const void* b_ih, const void* b_hh, const void* c, void* c_out,
                       void* h_out, int64_t batch, int64_t hid, cudaStream_t stream) {
  const int64_t n = batch * hid;
  if (n == 0) return;
  const unsigned blocks = grid_for(n);
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    lstm_gates_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(z), static_cast<const T*>(b_ih),
                                                         static_cast<const T*>(b_hh), static_cast<const T*>(c),
                                                         static_cast<T*>(c_out), static_cast<T*>(h_out), hid, n);
  });
}

}  // namespace steno::ops::cuda
