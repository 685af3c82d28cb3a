// The persistent TDT decoder kernel: the whole label-looping decode of a bucket in one cooperative launch.
//
// Why: a decoding step is ~8 small launches (GEMMs of 32 rows, an argmax, LSTM cells), each latency-bound and
// separated by the graph's node-to-node gaps: ~57 µs a step at batch 32 on an H200 for ~2 µs of arithmetic
// (bench/results/h200-decoder-step). Here one grid of co-resident blocks (a cooperative launch) keeps the rows'
// decoding state on chip and runs each step as a few phases between grid-wide barriers:
//   logits     each block computes 16-row x 16-column tiles of joint.out(hidden) (tensor cores in f16/bf16, f32
//              FMAs in f32) and keeps, per row, the tile's first-maximum token and the duration logits;
//   decide     every block reduces the tiles of every row and applies NeMo's rules itself (the same inputs give
//              every block the same decisions, so the state needs no broadcast); block 0 records the tokens;
//   LSTM       per layer, tiles of 16 rows x 16 units with the four gates of a unit in one block, the cell
//              update fused after the GEMM; skipped when no row emitted;
//   pred       joint.pred(h) for the rows that emitted, fused with the next step's joint hidden layer
//              relu(enc_proj[t] + pred) (only that layer when no row emitted).
// Steps without an emission cost two barriers, others four plus one per extra LSTM layer.
//
// Sizes are padded to multiples of 16 (PersistentWeights says how); rows to a multiple of 16, at most
// kPersistentMaxRows. Like tdt_kernels.h this header holds CUDA headers only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "tdt_kernels.h"

namespace steno::asr::cuda_tdt {

inline constexpr int kPersistentMaxLayers = 4;
inline constexpr int kPersistentMaxRows = 256;
inline constexpr int kPersistentThreads = 256;

// The decoder's weights in the padded layout, in the compute dtype unless f32 is said. Zero padding keeps the
// padded units and columns at zero through every step.
struct PersistentWeights {
  const void* embed = nullptr;                            // [V+1, E]
  const void* w_cat[kPersistentMaxLayers] = {};           // [4H, K_l]: row g*H + j is gate g of unit j
  const float* lstm_bias[kPersistentMaxLayers] = {};      // f32 [4H]: b_ih + b_hh
  int32_t k_layer[kPersistentMaxLayers] = {};             // K_l = (l == 0 ? E : H) + H: the layer's [x | h]
  const void* pred_w = nullptr;                           // [J, H]
  const float* pred_b = nullptr;                          // f32 [J]
  const float* enc_b = nullptr;                           // f32 [J]
  const void* out_w = nullptr;                            // [N, J]: rows past n_out are zero
  const float* out_b = nullptr;                           // f32 [N]
  int32_t layers = 0;
  int32_t E = 0, H = 0, J = 0, N = 0;  // padded sizes (multiples of 16)
  int32_t enc_width = 0;               // the unpadded joint width: the row length of enc_proj
  // Set by persistent_smem_bytes: each output tile's weights are staged in shared memory (copied once for the
  // tile's rows, with cp.async) rather than read by the tensor cores from L2 one k-step at a time, which leaves
  // every k-step waiting out an L2 latency.
  int32_t resident = 0;
};

// One bucket's device buffers. `rows` is the bucket padded to a multiple of 16; len, count and steps are the
// arrays of TdtRows (dims.rows entries: rows past them are padding with no frames).
struct PersistentBuffers {
  void* h[kPersistentMaxLayers][2] = {};  // [rows, H] each: a layer's h, double-buffered across LSTM steps
  float* c[kPersistentMaxLayers] = {};    // [rows, H]
  float* pred_proj = nullptr;             // [rows, J]: joint.pred(g) + bias, kept across steps
  void* hidden = nullptr;                 // [rows, J]: the joint's hidden layer for the current step
  float* part_value = nullptr;            // [rows, N / 16]: each logits tile's best token logit ...
  int32_t* part_index = nullptr;          // ... and its index (-1: the tile has no token column)
  float* dur_logits = nullptr;            // [rows, kMaxDurations]
  const int32_t* len = nullptr;
  int32_t* count = nullptr;
  int32_t* steps = nullptr;
  TdtControl* ctrl = nullptr;  // iterations and overflow are written at the end
  int32_t rows = 0;
};

// Dynamic shared memory one block needs on the current device (0 if the sizes are out of range: no persistent
// decoding for them); sets w.resident when the weight tiles fit beside the rest.
size_t persistent_smem_bytes(Dt dt, PersistentWeights& w);

// Most blocks of the kernel one SM holds with that shared memory (0: it does not fit).
int persistent_blocks_per_sm(Dt dt, size_t smem_bytes);

// Queues the decode as one cooperative launch of `grid` blocks. Returns the launch's error without throwing:
// cudaErrorCooperativeLaunchTooLarge when the grid cannot be co-resident (the caller retries smaller), other
// errors when cooperative launches are unavailable (the caller decodes another way).
cudaError_t launch_tdt_persistent(Dt dt, const TdtDims& dims, const PersistentWeights& w,
                                  const PersistentBuffers& buffers, const TdtCallParams* params, int grid,
                                  size_t smem_bytes, cudaStream_t stream);

}  // namespace steno::asr::cuda_tdt
