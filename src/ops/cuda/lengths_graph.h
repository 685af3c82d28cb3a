// Ops captured once into a CUDA graph and replayed for other clip lengths (the encoder of small batches:
// src/asr/cuda/encoder_graphs.h). Two things tie an op's queued work to the lengths it was given on the host:
// upload_lengths copies the host vector (a graph would freeze the capture's values), and zero_padded_frames
// skips its masking when every clip is full (a replay with shorter clips would go unmasked). So while a capture
// runs on a context, upload_lengths hands out slots of a device buffer the graph owns, each slot made of the
// graph's length parameters (per-clip vectors named at capture and given again at each replay, which refills
// the buffer before it launches the graph), and no op skips its masking. Private to the CUDA build.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops::cuda {

class LengthsGraph {
 public:
  // Captures what `record` queues on ctx's stream; nothing runs. `params`: the per-clip length vectors the ops
  // will be given, all of one size (the batch) and pairwise different. An op given a vector that is neither one of
  // them nor a concatenation of them fails the capture (kUnimplemented), as does any error `record` throws;
  // the stream is then out of capture again. Whatever `record` allocates must be freed before it returns (memory
  // a graph allocates and keeps cannot be launched twice).
  static LengthsGraph capture(Context& ctx, const std::vector<std::vector<int64_t>>& params,
                              const std::function<void()>& record);
  // Destroy (or assign over) a graph only once no launch of it is queued on the stream.
  LengthsGraph(LengthsGraph&& other) noexcept;
  LengthsGraph& operator=(LengthsGraph&& other) noexcept;
  ~LengthsGraph();

  // Queues the graph on ctx's stream (the context it was captured on) with `params` in place of the capture's:
  // the same count, each of the batch's size.
  void replay(Context& ctx, const std::vector<std::vector<int64_t>>& params);
  size_t slots() const { return pieces_.size(); }  // batch-sized pieces of the length buffer the ops read

 private:
  LengthsGraph() = default;
  void reset();

  int64_t batch_ = 0;
  size_t num_params_ = 0;
  std::vector<int> pieces_;  // the parameter that fills each batch-sized piece of `lengths_`, in buffer order
  Tensor lengths_;           // int32 on the device, allocated before the capture: the graph's kernels read it
  void* exec_ = nullptr;     // cudaGraphExec_t
};

// The state of a capture in progress on a context (CudaResources::capture), for upload_lengths.
struct LengthsCaptureState {
  const std::vector<std::vector<int64_t>>* params = nullptr;
  int64_t batch = 0;
  Tensor buffer;  // the graph's length buffer (capacity kMaxPieces pieces)
  std::vector<int> pieces;
  std::vector<std::pair<std::vector<int64_t>, int64_t>> given;  // each vector handed out and its first piece
  static constexpr int64_t kMaxPieces = 64;

  // The slot for `lengths`, from the parameters (kUnimplemented if it is not made of them).
  Tensor slot(const std::vector<int64_t>& lengths);
};

}  // namespace steno::ops::cuda
