// The persistent decoding path of CudaTdtDecoder (the kernel: tdt_persistent_kernel.h): the decoder's weights
// in the kernel's padded layout, one bucket's buffers, and the cooperative launch with its fallbacks.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "steno/asr/tdt_decoder.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"
#include "tdt_persistent_kernel.h"

namespace steno::asr::detail {

// The kernels' element type for a compute dtype of the decoder (f32, f16 or bf16, checked by its constructor).
inline cuda_tdt::Dt kernel_dt(DType t) {
  switch (t) {
    case DType::kF16: return cuda_tdt::Dt::kF16;
    case DType::kBF16: return cuda_tdt::Dt::kBF16;
    default: return cuda_tdt::Dt::kF32;
  }
}

class TdtPersistent {
 public:
  // Pads `p`'s weights to the kernel's layout and places them on ctx's device in `dtype` (biases in f32).
  // When the sizes are out of the kernel's range nothing is placed and usable() is false (why_not() says why).
  TdtPersistent(const TdtDecoder::Parameters& p, ops::Context& ctx, DType dtype);

  bool usable() const { return smem_ > 0; }
  const std::string& why_not() const { return why_not_; }
  static int64_t padded_rows(int64_t bucket_rows) { return (bucket_rows + 15) / 16 * 16; }
  cuda_tdt::PersistentRoles roles(int grid) const { return cuda_tdt::persistent_roles(w_, grid); }
  bool fits(int64_t bucket_rows) const { return padded_rows(bucket_rows) <= cuda_tdt::kPersistentMaxRows; }

  // A bucket's buffers (zeroed), around the TdtRows arrays and loop control of the bucket's state block.
  struct Buffers {
    std::vector<Tensor> tensors;
    cuda_tdt::PersistentBuffers b;
  };
  Buffers make_buffers(ops::Context& ctx, int64_t bucket_rows, const cuda_tdt::TdtRows& rows,
                       cuda_tdt::TdtControl* ctrl) const;

  // Queues the decode of a bucket on ctx's stream and returns the blocks launched. `grid` is the grid to try
  // (0: SMs x blocks per SM), lowered here by halving while the driver says it is too large (a green context or
  // an MPS share has fewer SMs): the caller keeps it as the context's bound. A launch uses no more blocks than
  // can have work (cuda_tdt::persistent_useful_grid); the grid it gets decides the blocks' roles
  // (cuda_tdt::PersistentRoles). Returns 0, with a warning, when cooperative launches are unavailable; the caller
  // then decodes another way.
  // Dedicated roles are taken where the grid allows them and `dedicated` is true, shared roles otherwise.
  int launch(ops::Context& ctx, const cuda_tdt::TdtDims& dims, const Buffers& buffers,
             const cuda_tdt::TdtCallParams* params, int& grid, bool dedicated) const;

  // With $STENO_TDT_TRACE=FILE (a developer's measuring aid, read when the decoder is made) the kernel stamps
  // its phases until the first decode of each bucket size, grid and roles, whose per-phase summary
  // (tdt_persistent_trace.h) is then appended to FILE (the caller has synchronized the stream).
  void report_trace(ops::Context& ctx, const Buffers& buffers, int grid, bool dedicated) const;

 private:
  DType dtype_;
  std::vector<Tensor> weights_;  // owns what w_ points at
  cuda_tdt::PersistentWeights w_;
  size_t smem_ = 0;
  int full_grid_ = 0;  // SMs x blocks per SM on the device
  std::string why_not_;
  std::string trace_path_;  // $STENO_TDT_TRACE
  mutable std::mutex trace_mutex_;
  mutable std::set<std::pair<int, int>> traced_;  // (rows, grid, negated for shared roles) already reported
};

}  // namespace steno::asr::detail
