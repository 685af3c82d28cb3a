#include "steno/core/host_weights.h"

#include <cstdlib>
#include <memory>

#include "steno/core/allocator.h"
#include "steno/core/error.h"

namespace steno {
namespace {

constexpr size_t kTensorAlignment = 64;  // each tensor's start, as the allocators give it

size_t aligned(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

std::vector<Tensor> widen_to_f32_in_one_block(const std::vector<Tensor>& tensors) {
  size_t total = 0;
  for (const Tensor& t : tensors) {
    STENO_CHECK(t.device().is_cpu(), "widen_to_f32_in_one_block: {} is not on the CPU", t.str());
    STENO_CHECK(t.dtype() == DType::kF32 || t.dtype() == DType::kF16 || t.dtype() == DType::kBF16,
                "widen_to_f32_in_one_block: {} is not a float tensor", t.str());
    if (t.dtype() != DType::kF32) total += aligned(static_cast<size_t>(t.numel()) * sizeof(float), kTensorAlignment);
  }
  if (total == 0) return tensors;

  // In huge pages where the kernel has them (allocate_host_block: from 2 MiB on).
  void* block = allocate_host_block(total);
  if (block == nullptr) fail(ErrorCode::kResourceExhausted, "out of host memory widening {} bytes of weights", total);
  std::shared_ptr<void> owner(block, [](void* p) { std::free(p); });
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  size_t at = 0;
  for (const Tensor& t : tensors) {
    if (t.dtype() == DType::kF32) {
      out.push_back(t);
      continue;
    }
    auto* dst = reinterpret_cast<float*>(static_cast<char*>(block) + at);
    widen_to_f32(static_cast<const uint16_t*>(t.raw()), t.dtype(), dst, t.numel());
    out.push_back(Tensor::wrap(dst, t.shape(), DType::kF32, Device::cpu(), owner));
    at += aligned(static_cast<size_t>(t.numel()) * sizeof(float), kTensorAlignment);
  }
  return out;
}

}  // namespace steno
