// The kernels of the CUDA TDT decoder's label-looping step (tdt_kernels.h says what each one does). Every
// kernel works on whole rows of the bucket and masks rows by their flags, so that the same fixed sequence of
// launches serves every step and can be captured into a CUDA graph once per bucket.
#include <cuda_runtime.h>

#include "launch_common.cuh"  // src/ops/cuda: to_f32, from_f32, dispatch_dt
#include "tdt_kernels.h"
#include "tdt_rules.cuh"  // beats, warp_argmax, sigmoid, apply_tdt_decision

namespace steno::asr::cuda_tdt {
namespace {

using ops::cuda::dispatch_dt;
using ops::cuda::from_f32;
using ops::cuda::to_f32;

constexpr int kRowThreads = 128;     // joint hidden, init, LSTM: one block (or a few) per row
constexpr int kUpdateThreads = 256;  // the argmax over V + 1 logits
constexpr int kUpdateWarps = kUpdateThreads / 32;

// ---- init ------------------------------------------------------------------------------------------------

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    tdt_init_kernel(TdtDims d, TdtControl* ctrl, TdtRows r, const T* __restrict__ embed, T* __restrict__ xh0,
                    int32_t xh0_ld) {
  const int b = blockIdx.x;
  if (threadIdx.x == 0) {
    r.t[b] = 0;
    r.last_ts[b] = -1;
    r.sym[b] = 0;
    r.count[b] = 0;
    r.steps[b] = 0;
    r.active[b] = r.len[b] > 0;
    r.emitted[b] = 1;  // the SOS step: every row's LSTM runs once on embed[blank]
    if (b == 0) *ctrl = TdtControl{0u, 0, 1, 0};
  }
  const T* sos = embed + static_cast<size_t>(d.blank) * d.embed_dim;
  T* x = xh0 + static_cast<size_t>(b) * xh0_ld;
  for (int j = threadIdx.x; j < d.embed_dim; j += kRowThreads) x[j] = sos[j];
}

// ---- joint hidden ----------------------------------------------------------------------------------------

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    tdt_joint_hidden_kernel(TdtDims d, const TdtCallParams* __restrict__ p, TdtRows r, const T* __restrict__ g_new,
                            const float* __restrict__ pred_b, const float* __restrict__ enc_b,
                            float* __restrict__ pred_proj, T* __restrict__ hidden) {
  const int b = blockIdx.x;
  const int joint = d.joint;
  const bool emitted = r.emitted[b] != 0;
  const bool active = r.active[b] != 0;
  const T* enc = nullptr;
  if (active) {
    const int frame = min(r.t[b], r.len[b] - 1);  // t < len for an active row; the min is the CPU's guard
    enc = static_cast<const T*>(p->enc_proj) + (static_cast<size_t>(b) * p->frames + frame) * joint;
  }
  float* pp = pred_proj + static_cast<size_t>(b) * joint;
  const T* g = g_new + static_cast<size_t>(b) * joint;
  T* h = hidden + static_cast<size_t>(b) * joint;
  // One element per thread (grid y covers the row): a loop would wait out one load latency per pass.
  for (int j = blockIdx.y * kRowThreads + threadIdx.x; j < joint; j += gridDim.y * kRowThreads) {
    float pred;
    if (emitted) {
      pred = to_f32(g[j]) + pred_b[j];
      pp[j] = pred;
    } else {
      pred = pp[j];
    }
    const float e = active ? to_f32(enc[j]) + enc_b[j] : 0.0f;
    h[j] = from_f32<T>(active ? fmaxf(0.0f, e + pred) : 0.0f);
  }
}

// ---- update ----------------------------------------------------------------------------------------------

// What the update of one row reads besides the token logits: loaded together, up front.
struct RowState {
  TdtRowState row;
  int out_cap;
  int32_t* out;
  float duration_logit[kMaxDurations];
};

template <typename T>
__device__ __forceinline__ RowState load_row_state(const TdtDims& d, const TdtCallParams* p, const TdtRows& r,
                                                   const T* row, const float* out_b, int b) {
  RowState st;
  st.row = {r.t[b], r.len[b], r.count[b], r.sym[b], r.last_ts[b], r.steps[b]};
  st.out_cap = p->out_cap;
  st.out = p->out;
#pragma unroll
  for (int j = 0; j < kMaxDurations; ++j)
    st.duration_logit[j] = j < d.n_durations ? to_f32(row[d.blank + 1 + j]) + out_b[d.blank + 1 + j] : 0.0f;
  return st;
}

template <typename T>
__global__ void __launch_bounds__(kUpdateThreads)
    tdt_update_kernel(TdtDims d, const TdtCallParams* __restrict__ p, TdtControl* ctrl, TdtRows r,
                      const T* __restrict__ logits, const float* __restrict__ out_b, const T* __restrict__ embed,
                      T* __restrict__ xh0, int32_t xh0_ld, cudaGraphConditionalHandle handle, int set_handle) {
  __shared__ float s_value[kUpdateWarps];
  __shared__ int s_index[kUpdateWarps];
  __shared__ int s_label;
  __shared__ int s_last;
  const int b = blockIdx.x;
  const int tid = threadIdx.x;

  if (r.active[b] != 0) {  // uniform across the block, so the barriers inside are safe
    const T* row = logits + static_cast<size_t>(b) * d.n_out;
    // Thread 0's loads of the row's state and duration logits are issued here, before the argmax, so that their
    // latencies overlap it instead of following one another after it (a step is latency-bound).
    RowState st;
    if (tid == 0) st = load_row_state(d, p, r, row, out_b, b);
    // Token argmax over [0, blank]: a strided scan per thread, then warps, then the block.
    float best = 0.0f;
    int best_i = -1;
#pragma unroll 4
    for (int k = tid; k <= d.blank; k += kUpdateThreads) {
      const float v = to_f32(row[k]) + out_b[k];
      if (beats(v, k, best, best_i)) {
        best = v;
        best_i = k;
      }
    }
    warp_argmax(best, best_i);
    if ((tid & 31) == 0) {
      s_value[tid >> 5] = best;
      s_index[tid >> 5] = best_i;
    }
    __syncthreads();
    if (tid < 32) {
      best = tid < kUpdateWarps ? s_value[tid] : 0.0f;
      best_i = tid < kUpdateWarps ? s_index[tid] : -1;
      warp_argmax(best, best_i);
    }
    if (tid == 0) {
      // Duration argmax (first maximum), then NeMo's rules.
      int d_idx = 0;
      for (int j = 1; j < d.n_durations; ++j)
        if (st.duration_logit[j] > st.duration_logit[d_idx]) d_idx = j;
      TdtRowState& row_st = st.row;
      const int label = apply_tdt_decision(d, best_i, d_idx, row_st,
                                           st.out + static_cast<size_t>(b) * st.out_cap * 3, st.out_cap);
      r.steps[b] = row_st.steps;
      if (label >= 0) {
        r.count[b] = row_st.count;
        r.sym[b] = row_st.sym;
        r.last_ts[b] = row_st.last_ts;
      }
      r.t[b] = row_st.t;
      r.emitted[b] = label >= 0;
      r.active[b] = row_st.t < row_st.len;
      s_label = label;
    }
    __syncthreads();
    const int label = s_label;
    if (label >= 0) {  // the next LSTM step's input
      const T* e = embed + static_cast<size_t>(label) * d.embed_dim;
      T* x = xh0 + static_cast<size_t>(b) * xh0_ld;
      for (int j = tid; j < d.embed_dim; j += kUpdateThreads) x[j] = e[j];
    }
  } else if (tid == 0) {
    r.emitted[b] = 0;
  }

  // Loop control without another kernel: each block's thread 0 (which wrote the row's flags) publishes them
  // and counts itself done; the last block of the grid then sees every row (the threadfence-reduction pattern).
  if (tid == 0) {
    __threadfence();
    s_last = atomicAdd(&ctrl->blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  int any = 0;
  for (int i = tid; i < d.rows; i += kUpdateThreads) any |= __ldcg(r.active + i);
  any = __syncthreads_or(any);
  if (tid == 0) {
    ctrl->blocks_done = 0;
    const int iterations = ctrl->iterations + 1;
    ctrl->iterations = iterations;
    const bool go = any != 0 && iterations < p->max_steps;
    if (any != 0 && !go) ctrl->overflow = 1;
    ctrl->any_active = go;
    if (set_handle) cudaGraphSetConditional(handle, go ? 1u : 0u);
  }
}

// ---- LSTM cell -------------------------------------------------------------------------------------------

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    tdt_lstm_pointwise_kernel(TdtDims d, TdtRows r, const T* __restrict__ gates, const float* __restrict__ bias,
                              float* __restrict__ c, T* __restrict__ xh, int32_t in_dim, T* __restrict__ h_next,
                              int32_t h_next_ld) {
  const int b = blockIdx.x;
  const int j = blockIdx.y * kRowThreads + threadIdx.x;
  const int hid = d.hidden;
  if (r.emitted[b] == 0 || j >= hid) return;
  // PyTorch's gate order i, f, g, o; z = x·w_ihᵀ + h·w_hhᵀ (one GEMM over [x | h]) + b_ih + b_hh.
  const T* z = gates + static_cast<size_t>(b) * 4 * hid;
  const float zi = to_f32(z[j]) + bias[j];
  const float zf = to_f32(z[hid + j]) + bias[hid + j];
  const float zg = to_f32(z[2 * hid + j]) + bias[2 * hid + j];
  const float zo = to_f32(z[3 * hid + j]) + bias[3 * hid + j];
  float& cell = c[static_cast<size_t>(b) * hid + j];
  const float c_new = sigmoid(zf) * cell + sigmoid(zi) * tanhf(zg);
  cell = c_new;
  const T h = from_f32<T>(tanhf(c_new) * sigmoid(zo));
  xh[static_cast<size_t>(b) * (in_dim + hid) + in_dim + j] = h;
  h_next[static_cast<size_t>(b) * h_next_ld + j] = h;
}

}  // namespace

void launch_tdt_init(Dt dt, const TdtDims& dims, TdtControl* ctrl, TdtRows rows, const void* embed, void* xh0,
                     int32_t xh0_ld, cudaStream_t stream) {
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    tdt_init_kernel<T><<<dims.rows, kRowThreads, 0, stream>>>(dims, ctrl, rows, static_cast<const T*>(embed),
                                                              static_cast<T*>(xh0), xh0_ld);
  });
  ops::cuda::check_launch("tdt_init");
}

void launch_tdt_joint_hidden(Dt dt, const TdtDims& dims, const TdtCallParams* params, TdtRows rows,
                             const void* g_new, const float* pred_b, const float* enc_b, float* pred_proj,
                             void* hidden, cudaStream_t stream) {
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>(dims.rows), ops::cuda::blocks_for(dims.joint, kRowThreads));
    tdt_joint_hidden_kernel<T><<<grid, kRowThreads, 0, stream>>>(
        dims, params, rows, static_cast<const T*>(g_new), pred_b, enc_b, pred_proj, static_cast<T*>(hidden));
  });
  ops::cuda::check_launch("tdt_joint_hidden");
}

void launch_tdt_update(Dt dt, const TdtDims& dims, const TdtCallParams* params, TdtControl* ctrl, TdtRows rows,
                       const void* logits, const float* out_b, const void* embed, void* xh0, int32_t xh0_ld,
                       cudaGraphConditionalHandle handle, bool set_handle, cudaStream_t stream) {
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    tdt_update_kernel<T><<<dims.rows, kUpdateThreads, 0, stream>>>(
        dims, params, ctrl, rows, static_cast<const T*>(logits), out_b, static_cast<const T*>(embed),
        static_cast<T*>(xh0), xh0_ld, handle, set_handle ? 1 : 0);
  });
  ops::cuda::check_launch("tdt_update");
}

void launch_tdt_lstm_pointwise(Dt dt, const TdtDims& dims, TdtRows rows, const void* gates, const float* bias,
                               float* c, void* xh, int32_t in_dim, void* h_next, int32_t h_next_ld,
                               cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(dims.rows), ops::cuda::blocks_for(dims.hidden, kRowThreads));
  dispatch_dt(dt, [&](auto tag) {
    using T = decltype(tag);
    tdt_lstm_pointwise_kernel<T><<<grid, kRowThreads, 0, stream>>>(dims, rows, static_cast<const T*>(gates), bias,
                                                                   c, static_cast<T*>(xh), in_dim,
                                                                   static_cast<T*>(h_next), h_next_ld);
  });
  ops::cuda::check_launch("tdt_lstm_pointwise");
}

}  // namespace steno::asr::cuda_tdt
