// A dense, contiguous, row-major tensor whose device and dtype are known at run time: "a tensor without the
// math". Ops live in steno/ops; a Tensor only owns (or borrows) bytes and knows their shape.
//
// Copies are cheap and share storage (like std::shared_ptr); use clone() for a deep copy. A Tensor may borrow
// memory it does not own (a memory-mapped weight file, a caller's buffer): the `owner` handle keeps it alive.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "steno/core/allocator.h"
#include "steno/core/device.h"
#include "steno/core/dtype.h"
#include "steno/core/error.h"

namespace steno {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);  // "[3, 128, 901]"
int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;  // an empty tensor: no storage, rank 0, numel 0, defined() == false

  // Uninitialised memory from `alloc` (the default host pool when null and device is CPU).
  static Tensor empty(const Shape& shape, DType dtype = DType::kF32, Device device = Device::cpu(),
                      Allocator* alloc = nullptr);
  static Tensor zeros(const Shape& shape, DType dtype = DType::kF32, Device device = Device::cpu(),
                      Allocator* alloc = nullptr);
  // Borrows `data`; `owner` (may be null) is kept alive as long as any Tensor refers to the bytes.
  static Tensor wrap(void* data, const Shape& shape, DType dtype, Device device = Device::cpu(),
                     std::shared_ptr<void> owner = nullptr);
  // A CPU fp32 tensor holding a copy of `values` (for tests and small constants).
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape);

  bool defined() const { return data_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // dim(i) with negative i counting from the end, as in Python.
  int64_t dim(int i) const;
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  // Typed access; throws kInvalidArgument if T does not match dtype().
  template <typename T> T* data() { check_type(dtype_of<T>()); return static_cast<T*>(data_); }
  template <typename T> const T* data() const { check_type(dtype_of<T>()); return static_cast<const T*>(data_); }

  // Same bytes, another shape with the same numel; one dimension may be -1.
  Tensor reshape(const Shape& shape) const;
  // Rows [begin, end) of dimension 0, sharing storage.
  Tensor narrow0(int64_t begin, int64_t end) const;
  // Deep copy on the same device.
  Tensor clone(Allocator* alloc = nullptr) const;
  // Converted copy (CPU only): any float type to any float type. Returns *this if already `dtype`.
  Tensor to(DType dtype) const;
  // The values as a std::vector<float> (CPU, float dtypes); for tests and small outputs.
  std::vector<float> to_vector() const;

  std::string str() const;  // "f32[3, 128, 901] on cpu"

 private:
  void check_type(DType expected) const;

  std::shared_ptr<void> storage_;  // keeps the bytes alive; for owned tensors also frees them
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::kF32;
  Device device_;
};

}  // namespace steno
