// Batched greedy TDT decoding on a CUDA device with no host synchronization per step: NeMo's label-looping
// search (docs/engine.md, "Greedy TDT decoding"), giving the same tokens, timestamps and durations as
// TdtDecoder::decode (the CPU reference) for the same encoder output, up to floating-point rounding of near-tied
// logits.
//
// The loop runs on the device. Each iteration is one fixed sequence of kernels and cuBLASLt GEMMs over a bucket
// of rows (batch padded to a power of two, padding rows inactive): the joint's hidden layer, the output GEMM,
// the label decision (argmax, durations, max_symbols, token recording, loop flags), then one LSTM step and the
// prediction projection, which change only the rows that emitted a token. In graph mode that sequence is
// captured once per bucket as the body of a CUDA graph WHILE node whose condition the decision kernel sets,
// so one graph launch decodes the whole batch; the host waits once, at the end, to copy the results back.
//
// Not built without CUDA (STENO_HAVE_CUDA). The header names no CUDA type.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "steno/asr/tdt_decoder.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::asr {

namespace detail {
struct TdtBucket;      // one bucket's device buffers and graphs (cuda_tdt_decoder.cc)
class TdtPersistent;   // the persistent kernel's weights and launch (tdt_persistent.h)
}

// How the decode loop is driven. The three step-by-step modes run the same kernels on the same data and give
// bit-identical results; they differ in launch overhead and host involvement (what the benchmark compares). The
// persistent kernel computes the same decisions its own way (f32 logits and gates straight from the
// accumulators, where the step kernels round them to the compute dtype first).
enum class TdtLoop {
  // One cooperative launch per decode: a persistent kernel that runs every step between grid-wide barriers
  // (tdt_persistent_kernel.h), for the buckets CudaDecodeOptions::persistent_{min,max}_rows select. Other
  // buckets run kGraphWhile, as does everything where it cannot run: sizes past its shared memory, no
  // cooperative launch.
  kPersistent,
  // One graph launch per decode: the step is the body of a conditional WHILE node (driver >= CUDA 12.4).
  kGraphWhile,
  // A graph of kUnrolledSteps steps, relaunched while the loop flag (copied to pinned memory after each launch)
  // says rows are active: one host synchronization per kUnrolledSteps steps. kGraphWhile falls back to it if
  // the driver refuses conditional nodes or the while graph cannot be instantiated.
  kGraphUnrolled,
  // The same kernels launched one by one, the flag read every kUnrolledSteps steps.
  kEager,
};
const char* tdt_loop_name(TdtLoop loop);  // "persistent", "graph-while", "graph-unrolled", "eager"
// The loop decode() runs with graphs: kPersistent, or $STENO_TDT_LOOP (a tdt_loop_name) for the benchmarks'
// side-by-side arms. An unknown name is an error.
TdtLoop default_tdt_loop();

struct CudaDecodeOptions {
  TdtLoop loop = TdtLoop::kPersistent;
  // Per-step joint outputs are a debugging aid of the CPU decoder only: asking for them here is an error.
  bool keep_alignments = false;
  // Tokens per clip the first pass has room for (0: frames + 16, plenty for speech). A clip that emits more
  // makes the decode run again with room for the bound, frames x max_symbols. Tests set it low to force that.
  int64_t initial_token_capacity = 0;
  // Blocks of the persistent kernel (0: as many as are co-resident, capped by the widest phase's tiles). Any
  // count gives the same result; tests set 1 to take cross-block traffic out of the picture.
  int persistent_blocks = 0;
  // Buckets up to this many rows give the persistent kernel's blocks dedicated roles where the grid allows
  // (tdt_persistent_kernel.h's PersistentRoles: weights resident in shared memory for the whole decode, but a
  // phase on part of the grid); larger ones shared roles. Measured on an H200 at the 0.6B shapes
  // (bench/results/h200-decoder-dedicated): dedicated is ahead at one row tile, where each dedicated block has
  // one LSTM tile, and behind from two on, where it must take its row tiles one after another.
  int64_t persistent_dedicated_max_rows = 16;
  // The buckets kPersistent decodes persistently; the others run graph-while. Measured on an H200 at the 0.6B
  // shapes (bench/results/h200-decoder-x0): the persistent decoder alone is 25 %, 39 % and 18 % ahead at 1, 8 and
  // 32 rows and four times behind at 128, where each phase has many more tiles than blocks. max up to 256.
  int64_t persistent_min_rows = 1;
  int64_t persistent_max_rows = 32;
};

class CudaTdtDecoder {
 public:
  // Steps per launch of the unrolled graph, and steps between host checks in eager mode.
  static constexpr int kUnrolledSteps = 16;

  // Per-caller mutable state: device buffers and captured graphs for each bucket size seen so far. The decoder
  // is shared read-only; each ops::Context (lane, stream) that decodes owns one Workspace, which stays bound to
  // that context (it keeps a copy, so the stream and cuBLASLt workspace its graphs captured stay alive) and to
  // this decoder (the graphs hold its weights). Using it with another context or decoder frees everything and
  // captures again. Not thread-safe.
  class Workspace {
   public:
    Workspace();
    ~Workspace();
    Workspace(Workspace&&) noexcept;
    Workspace& operator=(Workspace&&) noexcept;

    int num_buckets() const;       // buckets allocated so far
    int num_graphs() const;        // graphs captured so far (a bucket has up to one per graph mode)
    bool while_supported() const;  // false once a conditional node was refused (graph-while then unrolls)
    // Blocks of the persistent kernel's last launch on this workspace: 0 before the first, -1 once it could
    // not be launched (persistent decoding then runs graph-while).
    int persistent_blocks() const;
    bool persistent_dedicated() const;  // whether that launch gave its blocks dedicated roles
    void clear();                  // frees every bucket and graph (the next decode captures again)

   private:
    friend class CudaTdtDecoder;
    struct State;
    std::unique_ptr<State> state_;
  };

  // Places `cpu`'s weights on ctx's device in `dtype` (f32, f16 or bf16) for the matrix products; biases and
  // the LSTM cell state stay f32. Waits for the uploads.
  CudaTdtDecoder(const TdtDecoder& cpu, ops::Context& ctx, DType dtype);
  ~CudaTdtDecoder();

  Device device() const { return device_; }
  DType dtype() const { return dtype_; }
  int blank_id() const { return vocab_size_; }
  // Whether a persistent launch of `grid` blocks can give them dedicated roles (tdt_persistent_kernel.h's
  // PersistentRoles: every block's weights in its shared memory for the whole decode); false also when this
  // model has no persistent kernel.
  bool persistent_can_dedicate(int grid) const;
  // The bucket a batch of `batch` rows runs in: the next power of two.
  static int64_t bucket_size(int64_t batch);

  // encoded [B, T, d_model] on ctx's device in dtype(), lengths[b] in [0, T] -> one hypothesis per clip (no
  // alignments). `stats` (optional) is added to as by the CPU decoder. With graphs the loop is
  // default_tdt_loop(), without them kEager.
  std::vector<Hypothesis> decode(ops::Context& ctx, Workspace& ws, const Tensor& encoded,
                                 const std::vector<int64_t>& lengths, DecodeStats* stats = nullptr,
                                 bool use_graphs = true) const;
  std::vector<Hypothesis> decode(ops::Context& ctx, Workspace& ws, const Tensor& encoded,
                                 const std::vector<int64_t>& lengths, const CudaDecodeOptions& options,
                                 DecodeStats* stats = nullptr) const;

 private:
  using Bucket = detail::TdtBucket;

  Bucket& bucket(ops::Context& ctx, Workspace& ws, int64_t rows) const;
  // Queues the LSTM step and the prediction projection (only rows whose `emitted` flag is set advance): the SOS
  // step before the loop and the second half of every loop step.
  void record_prediction(ops::Context& ctx, Bucket& bk) const;
  // Queues one loop step; `handle` is the WHILE node's condition (a cudaGraphConditionalHandle) if set_handle.
  void record_step(ops::Context& ctx, Bucket& bk, uint64_t handle, bool set_handle) const;
  // Queues the reset of the loop state and the SOS step (eagerly, before the loop).
  void record_start(ops::Context& ctx, Bucket& bk) const;
  // Capture the step once per bucket: as the body of a WHILE node (false if the driver refuses conditional
  // nodes), or kUnrolledSteps times into a plain graph.
  bool capture_while(ops::Context& ctx, Bucket& bk) const;
  void capture_unrolled(ops::Context& ctx, Bucket& bk) const;
  void run_loop(ops::Context& ctx, Workspace& ws, Bucket& bk, TdtLoop loop) const;

  uint64_t id_;  // unique per decoder: a workspace captured for another decoder starts over
  Device device_;
  DType dtype_;
  int vocab_size_, max_symbols_, joint_hidden_, hidden_, embed_dim_, n_out_;
  int64_t d_model_;
  std::vector<int> durations_;
  Tensor embed_;                   // [V+1, P], dtype
  std::vector<Tensor> w_cat_;      // per LSTM layer: [4H, In + H] = [w_ih | w_hh], dtype
  std::vector<Tensor> lstm_bias_;  // per layer: b_ih + b_hh [4H], f32
  Tensor enc_w_, pred_w_, out_w_;  // dtype
  Tensor enc_b_, pred_b_, out_b_;  // f32
  std::unique_ptr<detail::TdtPersistent> persistent_;  // the same weights in the persistent kernel's layout
};

}  // namespace steno::asr
