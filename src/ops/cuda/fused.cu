// Fused glue of the Conformer layer (see steno/ops/fused.h): a residual add with the LayerNorm after it, and the
// convolution module's GLU, padding mask, depthwise convolution and SiLU. Both are memory-bound chains whose
// intermediates the plain ops write and read back; here each input is read once and each output written once.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "fp8_common.cuh"
#include "fused_launch.h"
#include "launch_common.cuh"

namespace steno::ops::cuda {
namespace {

// ---- add + layer norm ----

// Where add_layer_norm_kernel's normalised rows go: stored in T (ops::add_layer_norm) ...
template <typename T>
struct StoreRows {
  T* y;
  template <int P, int V>
  __device__ void row(int64_t r, int64_t d, int lane, int packs, const float (&v)[P][V]) const {
    auto* yr = reinterpret_cast<Pack<T>*>(y + r * d);
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int p = lane + 32 * j;
      if (p >= packs) break;
      Pack<T> out;
#pragma unroll
      for (int i = 0; i < V; ++i) out.v[i] = from_f32<T>(v[j][i]);
      yr[p] = out;
    }
  }
};

// ... or quantized to E4M3 with the row's scale (ops::add_layer_norm_fp8), straight from f32.
struct StoreE4M3Rows {
  uint8_t* q;
  float* scales;
  template <int P, int V>
  __device__ void row(int64_t r, int64_t d, int lane, int packs, const float (&v)[P][V]) const {
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      if (lane + 32 * j >= packs) break;
#pragma unroll
      for (int i = 0; i < V; ++i) amax = fmaxf(amax, fabsf(v[j][i]));
    }
    const RowScale s = row_scale(warp_max(amax));
    auto* qr = reinterpret_cast<E4M3Pack<V>*>(q + r * d);
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int p = lane + 32 * j;
      if (p >= packs) break;
      qr[p] = to_e4m3<V>(v[j], s.quant);
    }
    if (lane == 0) scales[r] = s.dequant;
  }
};

// One warp per row; lane l holds the row's 16-byte vectors l, l + 32, ... (at most P of them) in registers, so
// the row is read from memory once. The sum is rounded to T before the statistics, exactly what ops::add writes
// and ops::layer_norm reads; the statistics take two passes (mean, then squared deviations) as the plain kernel.
// x is written back only when keep_sum (the output not aliasing x); the output may alias x, each vector being one
// lane's own.
template <typename T, int P, typename Store>
__global__ void __launch_bounds__(kThreads)
    add_layer_norm_kernel(T* x, const T* h, float alpha, const T* gamma, const T* beta, float eps, Store out,
                          int64_t rows, int64_t d, bool keep_sum) {
  constexpr int V = Pack<T>::kSize;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = blockDim.x / 32;
  const int packs = static_cast<int>(d / V);
  const auto* g = reinterpret_cast<const Pack<T>*>(gamma);
  const auto* bt = reinterpret_cast<const Pack<T>*>(beta);
  for (int64_t r = int64_t(blockIdx.x) * warps + threadIdx.x / 32; r < rows; r += int64_t(gridDim.x) * warps) {
    auto* xr = reinterpret_cast<Pack<T>*>(x + r * d);
    const auto* hr = h != nullptr ? reinterpret_cast<const Pack<T>*>(h + r * d) : nullptr;
    float v[P][V];
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int p = lane + 32 * j;
      if (p >= packs) break;
      Pack<T> px = xr[p];
      if (hr != nullptr) {
        const Pack<T> ph = hr[p];
#pragma unroll
        for (int i = 0; i < V; ++i) px.v[i] = from_f32<T>(to_f32(px.v[i]) + alpha * to_f32(ph.v[i]));
        if (keep_sum) xr[p] = px;
      }
#pragma unroll
      for (int i = 0; i < V; ++i) {
        v[j][i] = to_f32(px.v[i]);
        s += v[j][i];
      }
    }
    const float mean = warp_sum(s) / static_cast<float>(d);
    float q = 0.0f;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      if (lane + 32 * j >= packs) break;
#pragma unroll
      for (int i = 0; i < V; ++i) {
        const float dv = v[j][i] - mean;
        q += dv * dv;
      }
    }
    const float rstd = 1.0f / sqrtf(warp_sum(q) / static_cast<float>(d) + eps);
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int p = lane + 32 * j;
      if (p >= packs) break;
      const Pack<T> pg = g[p], pb = bt[p];
#pragma unroll
      for (int i = 0; i < V; ++i) v[j][i] = (v[j][i] - mean) * rstd * to_f32(pg.v[i]) + to_f32(pb.v[i]);
    }
    out.row(r, d, lane, packs, v);
  }
}

// ---- GLU + mask + depthwise conv + SiLU ----

// A block computes kTileSteps output steps of kTileChannels channels. It first builds the gated input those
// steps need (kTileSteps + taps - 1 rows, the halo included) in shared memory, zero outside [0, length), then
// every thread convolves one channel over a quarter of the steps from there (a nine-tap kernel from registers).
// The gated values are rounded to T, as ops::glu's output, and the convolution sums in the plain kernel's order
// and rounds to T before SiLU: in every dtype the result is the plain chain's, bit for bit.
constexpr int kTileChannels = 64;
constexpr int kTileSteps = 64;

// TAPS > 0: a TAPS-tap kernel (the Conformer's 9), each thread convolving kStepsPerThread consecutive steps of its
// channel from its weights and a window of the gated rows held in registers (a shared-memory read per step instead
// of two per tap); TAPS = 0: any count of taps, each thread every fourth step.
constexpr int kStepGroups = kThreads / kTileChannels;
constexpr int kStepsPerThread = kTileSteps / kStepGroups;

template <typename T, int TAPS>
__global__ void __launch_bounds__(kThreads)
    gated_depthwise_silu_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                const int32_t* __restrict__ lengths, T* __restrict__ y, int64_t steps,
                                int64_t channels, int taps, int pad_left) {
  extern __shared__ float smem[];
  const int rows = kTileSteps + taps - 1;
  float* gated = smem;                              // [rows][kTileChannels]
  float* wt = smem + rows * kTileChannels;          // [taps][kTileChannels]: a tap's weights side by side
  const int64_t c0 = int64_t(blockIdx.x) * kTileChannels, t0 = int64_t(blockIdx.y) * kTileSteps, b = blockIdx.z;
  const int64_t length = lengths[b];
  const T* xb = x + b * steps * 2 * channels;
  for (int i = threadIdx.x; i < rows * kTileChannels; i += blockDim.x) {
    const int64_t t = t0 - pad_left + i / kTileChannels, c = c0 + i % kTileChannels;
    float v = 0.0f;
    if (t >= 0 && t < length && c < channels) {
      const T* row = xb + t * 2 * channels;
      v = to_f32(from_f32<T>(gate_for<T>(to_f32(row[c]), to_f32(row[channels + c]))));
    }
    gated[i] = v;
  }
  for (int i = threadIdx.x; i < taps * kTileChannels; i += blockDim.x) {
    const int64_t c = c0 + i % kTileChannels;
    wt[i] = c < channels ? to_f32(w[c * taps + i / kTileChannels]) : 0.0f;
  }
  __syncthreads();
  const int cl = static_cast<int>(threadIdx.x % kTileChannels);
  const int64_t c = c0 + cl;
  if (c >= channels) return;
  const float b0 = bias != nullptr ? to_f32(bias[c]) : 0.0f;
  // The convolution's output in T, as the plain chain has it, then SiLU.
  auto store = [&](int s, float acc) {
    const float v = to_f32(from_f32<T>(acc));
    y[(b * steps + t0 + s) * channels + c] = from_f32<T>(silu_for<T>(v));
  };
  if constexpr (TAPS > 0) {
    const int s0 = static_cast<int>(threadIdx.x / kTileChannels) * kStepsPerThread;
    float wr[TAPS], win[kStepsPerThread + TAPS - 1];
#pragma unroll
    for (int k = 0; k < TAPS; ++k) wr[k] = wt[k * kTileChannels + cl];
#pragma unroll
    for (int i = 0; i < kStepsPerThread + TAPS - 1; ++i) win[i] = gated[(s0 + i) * kTileChannels + cl];
#pragma unroll
    for (int j = 0; j < kStepsPerThread; ++j) {
      if (t0 + s0 + j >= steps) break;
      float acc = b0;
#pragma unroll
      for (int k = 0; k < TAPS; ++k) acc = fmaf(wr[k], win[j + k], acc);
      store(s0 + j, acc);
    }
  } else {
    for (int s = static_cast<int>(threadIdx.x / kTileChannels); s < kTileSteps && t0 + s < steps; s += kStepGroups) {
      float acc = b0;
      for (int k = 0; k < taps; ++k) acc = fmaf(wt[k * kTileChannels + cl], gated[(s + k) * kTileChannels + cl], acc);
      store(s, acc);
    }
  }
}

// `store` is StoreRows<T> or StoreE4M3Rows; keep_sum: x gets the sum (the output is elsewhere).
template <typename T, typename Store>
bool launch_rows(Dt dt, void* x, const void* h, float alpha, const void* gamma, const void* beta, float eps,
                 const Store& store, const void* out, int64_t rows, int64_t d, bool keep_sum, cudaStream_t stream) {
  const int64_t vec = dt == Dt::kF32 ? 4 : 8;
  const int64_t per_lane = (d / vec + 31) / 32;
  if (d == 0 || d % vec != 0 || per_lane > 8) return false;
  for (const void* p : {static_cast<const void*>(x), h, gamma, beta, out})
    if (p != nullptr && !aligned16(p)) return false;
  if (rows == 0) return true;
  const auto grid = grid_for(rows, kThreads / 32);
  auto go = [&](auto p_tag) {
    constexpr int P = decltype(p_tag)::value;
    add_layer_norm_kernel<T, P, Store><<<grid, kThreads, 0, stream>>>(
        static_cast<T*>(x), static_cast<const T*>(h), alpha, static_cast<const T*>(gamma),
        static_cast<const T*>(beta), eps, store, rows, d, keep_sum);
  };
  if (per_lane <= 1)
    go(std::integral_constant<int, 1>{});
  else if (per_lane <= 2)
    go(std::integral_constant<int, 2>{});
  else if (per_lane <= 4)
    go(std::integral_constant<int, 4>{});
  else
    go(std::integral_constant<int, 8>{});
  return true;
}

}  // namespace

// ---- launchers (declared in fused_launch.h) ----

bool launch_add_layer_norm(Dt dt, void* x, const void* h, float alpha, const void* gamma, const void* beta, float eps,
                           void* y, int64_t rows, int64_t d, cudaStream_t stream) {
  bool launched = false;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    launched = launch_rows<T>(dt, x, h, alpha, gamma, beta, eps, StoreRows<T>{static_cast<T*>(y)}, y, rows, d,
                              h != nullptr && x != y, stream);
  });
  return launched;
}

bool launch_add_layer_norm_e4m3(Dt dt, void* x, const void* h, float alpha, const void* gamma, const void* beta,
                                float eps, uint8_t* q, float* scales, int64_t rows, int64_t d, cudaStream_t stream) {
  bool launched = false;
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    launched = launch_rows<T>(dt, x, h, alpha, gamma, beta, eps, StoreE4M3Rows{q, scales}, q, rows, d,
                              h != nullptr, stream);
  });
  return launched;
}

bool launch_gated_depthwise_silu(Dt dt, const void* x, const void* w, const void* bias, const int32_t* lengths,
                                 void* y, int64_t batch, int64_t steps, int64_t channels, int64_t taps, int pad_left,
                                 cudaStream_t stream) {
  constexpr int64_t kMaxGrid = 65535;
  const int64_t step_tiles = (steps + kTileSteps - 1) / kTileSteps;
  if (taps > kMaxGatedTaps || batch > kMaxGrid || step_tiles > kMaxGrid) return false;
  if (batch * steps * channels == 0) return true;
  const size_t smem = sizeof(float) * static_cast<size_t>((kTileSteps + taps - 1 + taps) * kTileChannels);
  const dim3 grid(static_cast<unsigned>((channels + kTileChannels - 1) / kTileChannels),
                  static_cast<unsigned>(step_tiles), static_cast<unsigned>(batch));
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    const auto kernel = taps == 9 ? gated_depthwise_silu_kernel<T, 9> : gated_depthwise_silu_kernel<T, 0>;
    kernel<<<grid, kThreads, smem, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w),
                                             static_cast<const T*>(bias), lengths, static_cast<T*>(y), steps, channels,
                                             static_cast<int>(taps), pad_left);
  });
  return true;
}

}  // namespace steno::ops::cuda
