// The persistent TDT decoder kernel: the whole label-looping decode of a bucket in one cooperative launch.
//
// Why: a decoding step is ~8 small launches (GEMMs of 32 rows, an argmax, LSTM cells), each latency-bound and
// separated by the graph's node-to-node gaps: ~57 µs a step at batch 32 on an H200 for ~2 µs of arithmetic
// (bench/results/h200-decoder-step). Here one grid of co-resident blocks (a cooperative launch) keeps the rows'
// decoding state on chip and runs each step as a few phases between grid-wide barriers:
//   logits     each block computes 16-row x 16-column tiles of joint.out(hidden) (tensor cores in f16/bf16, f32
//              FMAs in f32) and raises each row's best-token key with the tile's first maximum (one atomicMax),
//              keeping the duration logits;
//   decide     every block reads every row's key and duration logits and applies NeMo's rules itself (the same
//              inputs give every block the same decisions, so the state needs no broadcast); block 0 records
//              the tokens;
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
  // Layer 0's input half depends on the token alone: x0[v] = embed[v] · W_ih0ᵀ + b_ih0 + b_hh0, f32 [V+1, 4H]
  // (gate g of unit j at g * H + j), a table made at load. Its products and weights are gone from every step.
  const float* x0 = nullptr;
  const void* w_cat[kPersistentMaxLayers] = {};           // [4H, K_l]: row g*H + j is gate g of unit j
  const float* lstm_bias[kPersistentMaxLayers] = {};      // f32 [4H]: b_ih + b_hh (layer 0's: in x0)
  int32_t k_layer[kPersistentMaxLayers] = {};             // K_0 = H ([h]), K_l = 2H ([x | h]) above
  const void* pred_w = nullptr;                           // [J, H]
  const float* pred_b = nullptr;                          // f32 [J]
  const float* enc_b = nullptr;                           // f32 [J]
  const void* out_w = nullptr;                            // [N, J]: rows past n_out are zero
  const float* out_b = nullptr;                           // f32 [N]
  int32_t layers = 0;
  int32_t H = 0, J = 0, N = 0;  // padded sizes (multiples of 16)
  int32_t enc_width = 0;               // the unpadded joint width: the row length of enc_proj
  // Set by persistent_smem_bytes: each output tile's weights are staged in shared memory (copied once for the
  // tile's rows, with cp.async) rather than read by the tensor cores from L2 one k-step at a time, which leaves
  // every k-step waiting out an L2 latency.
  int32_t resident = 0;
};

// How the grid's blocks share a step's phases. Shared roles: every phase's tiles are spread over all blocks, and
// a block restages weights whenever its next tile's differ (each step, since a block serves several phases).
// Dedicated roles, when the grid is large enough and the weights are resident: each LSTM layer's unit tiles go to
// blocks of their own (one tile of 16 units, its four gates: 160 KB at the 0.6B sizes in bf16), the other blocks
// take the pred and logits tiles (a few each, in slots of 16 weight rows), so every block stages its weights once
// per decode and a step reads only activations from L2. A phase then runs on part of the grid only, which costs
// nothing: every phase is latency-bound.
struct PersistentRoles {
  int32_t lstm_blocks = 0;  // layers x H/16 blocks, one LSTM unit tile each; 0: shared roles
  int32_t other_blocks = 0;
  int32_t pred_chunk = 0;   // pred column tiles per other block (slots 0 ...)
  int32_t logit_chunk = 0;  // logits column tiles per other block (the slots after pred's)
};

inline constexpr int kPersistentWeightSlots = 4;  // slots of 16 weight rows a block holds (the LSTM's 4 gates)

constexpr PersistentRoles persistent_roles(const PersistentWeights& w, int grid) {
  PersistentRoles r;
  if (w.resident == 0) return r;
  const int lstm = w.layers * (w.H / 16), others = grid - lstm;
  if (others < 1) return r;
  const int pred = (w.J / 16 + others - 1) / others, logit = (w.N / 16 + others - 1) / others;
  if (pred + logit > kPersistentWeightSlots) return r;
  r.lstm_blocks = lstm;
  r.other_blocks = others;
  r.pred_chunk = pred;
  r.logit_chunk = logit;
  return r;
}

// The most blocks that can have work at `rows` (padded) rows: shared roles one per item of the widest phase
// (more only wait longer at the barriers); dedicated roles, where asked for, up to one block per LSTM unit tile
// and per pred or logits tile.
constexpr int persistent_useful_grid(const PersistentWeights& w, int rows, bool dedicated) {
  const int widest_tiles = (w.H > w.J ? (w.H > w.N ? w.H : w.N) : (w.J > w.N ? w.J : w.N)) / 16;
  const int shared = rows / 16 * widest_tiles;
  const int roles = !dedicated || w.resident == 0 ? 0 : w.layers * (w.H / 16) + (w.J > w.N ? w.J : w.N) / 16;
  return shared > roles ? shared : roles;
}

// One bucket's device buffers. `rows` is the bucket padded to a multiple of 16; len, count and steps are the
// arrays of TdtRows (dims.rows entries: rows past them are padding with no frames).
struct PersistentBuffers {
  void* h[kPersistentMaxLayers][2] = {};  // [rows, H] each: a layer's h, double-buffered across LSTM steps
  float* c[kPersistentMaxLayers] = {};    // [rows, H]
  float* pred_proj = nullptr;             // [rows, J]: joint.pred(g) + bias, kept across steps
  void* hidden = nullptr;                 // [rows, J]: the joint's hidden layer for the current step
  // [2, rows]: each row's best token of a step as one 64-bit key (the logit's bits made orderable, then the
  // index inverted, so that the largest key is the first maximum), raised by every logits tile with atomicMax;
  // one half per step parity, the other reset during the decision.
  unsigned long long* best_key = nullptr;
  float* dur_logits = nullptr;            // [rows, kMaxDurations]
  const int32_t* len = nullptr;
  int32_t* count = nullptr;
  int32_t* steps = nullptr;
  TdtControl* ctrl = nullptr;  // iterations and overflow are written at the end
  int32_t rows = 0;
  // A developer's trace of where a step's time goes (null: none). Thread 0 of every block records SM clock
  // stamps (clock64) into its own trace_cap entries: entry 0 the count of stamps that follow, then per stamp
  // (cycles << 8 | tag) with the tags of PersistentTraceTag, stopping when the entries are full.
  uint64_t* trace = nullptr;
  int32_t trace_cap = 0;
};

// A stamp's tag: when it was taken. kTraceBarrier follows every grid barrier; the others end a phase's work
// (taken after the block's threads have met, before the barrier).
enum PersistentTraceTag : uint32_t {
  kTraceBarrier = 0,
  kTraceStart = 1,  // the rows' state set up
  kTraceLogits = 2,
  kTraceDecide = 3,
  kTracePred = 4,
  kTraceLstm0 = 5,  // + layer
};

// Dynamic shared memory one block needs on the current device (0 if the sizes are out of range: no persistent
// decoding for them); sets w.resident when the weight tiles fit beside the rest.
size_t persistent_smem_bytes(Dt dt, PersistentWeights& w);

// Most blocks of the kernel one SM holds with that shared memory (0: it does not fit).
int persistent_blocks_per_sm(Dt dt, size_t smem_bytes);

// Queues the decode as one cooperative launch of `grid` blocks in `roles` (persistent_roles(w, grid), or shared
// roles: all zero). Returns the launch's error without throwing:
// cudaErrorCooperativeLaunchTooLarge when the grid cannot be co-resident (the caller retries smaller), other
// errors when cooperative launches are unavailable (the caller decodes another way).
cudaError_t launch_tdt_persistent(Dt dt, const TdtDims& dims, const PersistentWeights& w,
                                  const PersistentBuffers& buffers, const TdtCallParams* params, int grid,
                                  const PersistentRoles& roles, size_t smem_bytes, cudaStream_t stream);

}  // namespace steno::asr::cuda_tdt
