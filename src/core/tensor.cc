#include "steno/core/tensor.h"

#include <cstring>

namespace steno {

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, Allocator* alloc) {
  for (int64_t d : shape) STENO_CHECK(d >= 0, "negative dimension in shape {}", shape_str(shape));
  if (alloc == nullptr) {
    if (!device.is_cpu())
      fail(ErrorCode::kUnavailable, "no allocator given for a tensor on {}", device.str());
    alloc = &default_cpu_allocator();
  }
  STENO_CHECK(alloc->device() == device, "allocator for {} used for a tensor on {}", alloc->device().str(),
              device.str());
  Tensor t;
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  void* p = alloc->allocate(bytes);
  t.storage_ = std::shared_ptr<void>(p, [alloc, bytes](void* q) { alloc->deallocate(q, bytes); });
  t.data_ = p;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device, Allocator* alloc) {
  STENO_CHECK(device.is_cpu(), "Tensor::zeros on {} needs a device op", device.str());
  Tensor t = empty(shape, dtype, device, alloc);
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::wrap(void* data, const Shape& shape, DType dtype, Device device, std::shared_ptr<void> owner) {
  STENO_CHECK(data != nullptr, "Tensor::wrap of a null pointer");
  Tensor t;
  t.storage_ = std::move(owner);
  t.data_ = data;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape) {
  STENO_CHECK(shape_numel(shape) == static_cast<int64_t>(values.size()), "{} values for shape {}",
              values.size(), shape_str(shape));
  Tensor t = empty(shape);
  std::memcpy(t.data_, values.data(), values.size() * sizeof(float));
  return t;
}

int64_t Tensor::dim(int i) const {
  const int r = rank();
  if (i < 0) i += r;
  STENO_CHECK(i >= 0 && i < r, "dimension {} out of range for shape {}", i, shape_str(shape_));
  return shape_[i];
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape s = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      STENO_CHECK(infer < 0, "reshape to {}: more than one -1", shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    STENO_CHECK(known > 0 && numel() % known == 0, "cannot reshape {} to {}", shape_str(shape_), shape_str(shape));
    s[infer] = numel() / known;
  }
  STENO_CHECK(shape_numel(s) == numel(), "cannot reshape {} to {}", shape_str(shape_), shape_str(shape));
  Tensor t = *this;
  t.shape_ = s;
  return t;
}

Tensor Tensor::narrow0(int64_t begin, int64_t end) const {
  STENO_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0], "narrow0({}, {}) of shape {}", begin,
              end, shape_str(shape_));
  Tensor t = *this;
  const int64_t row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  t.data_ = static_cast<char*>(data_) + static_cast<size_t>(begin * row) * dtype_size(dtype_);
  t.shape_[0] = end - begin;
  return t;
}

Tensor Tensor::clone(Allocator* alloc) const {
  STENO_CHECK(device_.is_cpu(), "Tensor::clone on {} needs a device copy", device_.str());
  Tensor t = empty(shape_, dtype_, device_, alloc);
  std::memcpy(t.data_, data_, nbytes());
  return t;
}

namespace {
float load_float(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(p)[i];
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: fail(ErrorCode::kInvalidArgument, "dtype {} is not a float type", dtype_name(t));
  }
}
void store_float(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::kF32: static_cast<float*>(p)[i] = v; break;
    case DType::kF16: static_cast<uint16_t*>(p)[i] = f32_to_f16(v); break;
    case DType::kBF16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(v); break;
    default: fail(ErrorCode::kInvalidArgument, "dtype {} is not a float type", dtype_name(t));
  }
}
}  // namespace

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  STENO_CHECK(device_.is_cpu(), "Tensor::to on {} needs a device op", device_.str());
  Tensor t = empty(shape_, dtype, device_);
  const int64_t n = numel();
  if (dtype == DType::kF32 && (dtype_ == DType::kF16 || dtype_ == DType::kBF16)) {
    widen_to_f32(static_cast<const uint16_t*>(data_), dtype_, static_cast<float*>(t.data_), n);
    return t;
  }
  for (int64_t i = 0; i < n; ++i) store_float(t.data_, dtype, i, load_float(data_, dtype_, i));
  return t;
}

std::vector<float> Tensor::to_vector() const {
  STENO_CHECK(device_.is_cpu(), "Tensor::to_vector on {}", device_.str());
  std::vector<float> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = load_float(data_, dtype_, i);
  return v;
}

std::string Tensor::str() const {
  return std::string(dtype_name(dtype_)) + shape_str(shape_) + " on " + device_.str();
}

void Tensor::check_type(DType expected) const {
  STENO_CHECK(dtype_ == expected, "tensor is {}, accessed as {}", dtype_name(dtype_), dtype_name(expected));
}

}  // namespace steno
