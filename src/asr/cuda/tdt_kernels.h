// Raw-pointer launchers for the kernels of the CUDA TDT decoder (tdt_kernels.cu). Like src/ops/cuda/launch.h,
// this header holds CUDA headers only, because nvcc cannot compile steno's headers; cuda_tdt_decoder.cc does
// the Tensor work, the checks and the graph capture around these. Every launcher queues on `stream` and
// returns without waiting, and none allocates, copies to the host or synchronizes, so all of them can be
// captured into a CUDA graph.
//
// What the decode loop keeps on the device, per bucket of `rows` batch rows (rows past the batch are inactive
// padding): the per-row integers of TdtRows, the loop control of TdtControl, and TdtCallParams, which the host
// rewrites before every decode (so that one captured graph serves any number of frames and any output buffer).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "launch.h"  // src/ops/cuda: Dt, check_launch

namespace steno::asr::cuda_tdt {

using ops::cuda::Dt;

inline constexpr int kMaxDurations = 16;

// The decoder's shapes and settings, passed by value to every kernel.
struct TdtDims {
  int32_t rows = 0;         // the bucket: grid size of the per-row kernels
  int32_t joint = 0;        // J, the joint's hidden size
  int32_t hidden = 0;       // H, the LSTM's hidden size
  int32_t embed_dim = 0;    // the embedding's width (layer 0's input size)
  int32_t blank = 0;        // V: token logits are [0, V], blank included
  int32_t n_out = 0;        // V + 1 + durations
  int32_t max_symbols = 0;  // tokens on one frame before the decoder is forced forward
  int32_t n_durations = 0;
  int32_t durations[kMaxDurations] = {};
};

// Written by the host before each decode (one upload together with TdtRows::len).
struct TdtCallParams {
  const void* enc_proj = nullptr;  // [batch, frames, J] in the compute dtype: joint.enc(encoded), no bias
  int32_t* out = nullptr;          // [batch, out_cap, 3]: token, frame, duration of each emitted token
  int32_t frames = 0;              // T, the row stride of enc_proj
  int32_t out_cap = 0;             // tokens each row can record; more are counted but not written
  int32_t max_steps = 0;           // loop iterations after which the loop stops and reports `overflow`
  int32_t batch = 0;               // real rows (the rest of the bucket is padding)
};

// Loop control, written by the last block of each tdt_update launch.
struct TdtControl {
  uint32_t blocks_done = 0;  // tdt_update blocks finished in the current launch (reset by the last one)
  int32_t iterations = 0;    // loop iterations so far
  int32_t any_active = 0;    // some row still has frames left (and the step bound is not reached)
  int32_t overflow = 0;      // the loop hit max_steps with rows still active (a bug, reported by the host)
};

// Per-row state, each an int32 array of `rows` elements in device memory.
struct TdtRows {
  int32_t* len;      // valid frames (0 for padding rows)
  int32_t* t;        // the frame the next joint step looks at
  int32_t* last_ts;  // frame of the last emitted token (-1 before the first)
  int32_t* sym;      // tokens emitted on frame last_ts
  int32_t* count;    // tokens emitted so far
  int32_t* steps;    // joint evaluations so far (DecodeStats::steps)
  int32_t* active;   // t < len
  int32_t* emitted;  // the last step emitted a token: the LSTM and the prediction output advance for this row
};

// Sets every row to the start of decoding (t = 0, nothing emitted, `emitted` = 1 so that the first LSTM step
// runs as NeMo's SOS step for every row), copies embed[blank] (the SOS input) into xh0[:, 0:embed_dim], and
// resets the loop control. The LSTM state (the h halves of each layer's xh, and c) is zeroed by the host.
void launch_tdt_init(Dt dt, const TdtDims& dims, TdtControl* ctrl, TdtRows rows, const void* embed, void* xh0,
                     int32_t xh0_ld, cudaStream_t stream);

// The joint's hidden layer for every active row: pred_proj[b] = g_new[b] + pred_b where `emitted` (the LSTM
// advanced on the previous step; f32, kept across steps), then
// hidden[b] = relu(enc_proj[b, min(t, len - 1)] + enc_b + pred_proj[b]) in the compute dtype (zero for inactive
// rows).
void launch_tdt_joint_hidden(Dt dt, const TdtDims& dims, const TdtCallParams* params, TdtRows rows,
                             const void* g_new, const float* pred_b, const float* enc_b, float* pred_proj,
                             void* hidden, cudaStream_t stream);

// One label-looping decision per active row from its logits (+ out_b, f32): token and duration argmax (first
// maximum on ties), NeMo's duration rules, the token recorded, t advanced, max_symbols enforced, `emitted`
// and `active` updated, and the token's embedding copied into xh0[:, 0:embed_dim] for the LSTM step that
// follows. The last block to finish then sets ctrl->any_active and, when `set_handle`, the conditional node
// `handle` of the graph's while loop.
void launch_tdt_update(Dt dt, const TdtDims& dims, const TdtCallParams* params, TdtControl* ctrl, TdtRows rows,
                       const void* logits, const float* out_b, const void* embed, void* xh0, int32_t xh0_ld,
                       cudaGraphConditionalHandle handle, bool set_handle, cudaStream_t stream);

// One LSTM layer's cell update for the rows that emitted (the others keep their state): gates [rows, 4H] =
// xh·w_catᵀ from the GEMM (no bias; `bias` = b_ih + b_hh in f32), c [rows, H] in f32. The new h goes to the
// layer's own recurrent input xh[:, in_dim:in_dim+H] and to `h_next` [rows, h_next_ld] (the next layer's
// input, or the prediction network's output for the last layer).
void launch_tdt_lstm_pointwise(Dt dt, const TdtDims& dims, TdtRows rows, const void* gates, const float* bias,
                               float* c, void* xh, int32_t in_dim, void* h_next, int32_t h_next_ld,
                               cudaStream_t stream);

}  // namespace steno::asr::cuda_tdt
