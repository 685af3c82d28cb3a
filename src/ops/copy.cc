#include "steno/ops/copy.h"

#include <algorithm>
#include <cstring>

#include "check.h"
#include "steno/core/cuda.h"
#if STENO_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace steno::ops {
namespace {

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

float load(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

void store(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::kF16: static_cast<uint16_t*>(p)[i] = f32_to_f16(v); break;
    case DType::kBF16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(v); break;
    default: static_cast<float*>(p)[i] = v;
  }
}

// The CUDA side of a copy must be the context's device (its stream orders the copy).
void check_side(const char* name, const Tensor& t, const Context& ctx) {
  STENO_CHECK(t.device().is_cpu() || t.device() == ctx.device(), "copy: {} is on {} but the context runs on {}",
              name, t.device().str(), ctx.device().str());
}

}  // namespace

void copy(Context& ctx, const Tensor& src, Tensor& dst) {
  STENO_CHECK(src.defined() && dst.defined(), "copy: src and dst must be defined");
  STENO_CHECK(src.shape() == dst.shape() && src.dtype() == dst.dtype(), "copy: {} into {}: shape or dtype differs",
              src.str(), dst.str());
  if (src.nbytes() == 0 || src.raw() == dst.raw()) return;
  if (src.device().is_cpu() && dst.device().is_cpu()) {
    std::memmove(dst.raw(), src.raw(), src.nbytes());
    return;
  }
  check_side("src", src, ctx);
  check_side("dst", dst, ctx);
  steno::cuda::memcpy_async(dst.raw(), src.raw(), src.nbytes(), ctx.stream());
}

void cast(Context& ctx, const Tensor& src, Tensor& dst) {
  detail::check_tensor("cast", "src", src, ctx);
  detail::check_tensor("cast", "dst", dst, ctx);
  STENO_CHECK(src.shape() == dst.shape(), "cast: shapes differ: {} and {}", src.str(), dst.str());
  if (src.dtype() == dst.dtype()) return copy(ctx, src, dst);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("cast", cuda::cast(ctx, src, dst));
    return;
  }
  // Unreachable today (CPU tensors are f32), kept for host tensors checked by callers below.
  for (int64_t i = 0; i < src.numel(); ++i) store(dst.raw(), dst.dtype(), i, load(src.raw(), src.dtype(), i));
}

Tensor to_context(Context& ctx, const Tensor& src, DType dtype) {
  STENO_CHECK(src.defined(), "to_context: src is undefined");
  STENO_CHECK(is_float(src.dtype()) || src.dtype() == dtype, "to_context: {} to {} is not a float conversion",
              src.str(), dtype_name(dtype));
  if (src.device().is_cpu()) {
    // Convert on the host (Tensor::to), then one upload.
    const Tensor host = src.dtype() == dtype ? src : src.to(dtype);
    if (ctx.device().is_cpu()) return host.raw() == src.raw() ? src.clone() : host;
    Tensor out = ctx.scratch(src.shape(), dtype);
    copy(ctx, host, out);
    // A pageable source is copied before memcpy_async returns, so `host` may be freed now.
    return out;
  }
  Tensor out = ctx.scratch(src.shape(), dtype);
  if (src.dtype() == dtype)
    copy(ctx, src, out);
  else
    cast(ctx, src, out);
  return out;
}

Tensor clone(Context& ctx, const Tensor& t) {
  STENO_CHECK(t.defined(), "clone: tensor is undefined");
  Tensor out = ctx.scratch(t.shape(), t.dtype());
  copy(ctx, t, out);
  return out;
}

Tensor place(Context& ctx, const Tensor& src, DType dtype, Allocator& alloc) {
  STENO_CHECK(src.defined() && src.device().is_cpu(), "place: src must be a defined host tensor, got {}",
              src.defined() ? src.str() : "undefined");
  STENO_CHECK(alloc.device() == ctx.device(), "place: allocator for {} with a context on {}",
              alloc.device().str(), ctx.device().str());
  const Tensor host = src.dtype() == dtype ? src : src.to(dtype);
  Tensor out = Tensor::empty(src.shape(), dtype, ctx.device(), &alloc);
  copy(ctx, host, out);
  ctx.synchronize();
  return out;
}

void fill_zero(Context& ctx, Tensor& t) {
  STENO_CHECK(t.defined(), "fill_zero: tensor is undefined");
  if (t.device().is_cpu()) {
    std::memset(t.raw(), 0, t.nbytes());
    return;
  }
  STENO_CHECK(t.device() == ctx.device(), "fill_zero: {} is not on the context's {}", t.str(), ctx.device().str());
  steno::cuda::memset_async(t.raw(), 0, t.nbytes(), ctx.stream());
}

void copy_frames(Context& ctx, const Tensor& src, Tensor& dst) {
  detail::check_tensor("copy_frames", "src", src, ctx);
  detail::check_tensor("copy_frames", "dst", dst, ctx);
  STENO_CHECK(src.rank() == 3 && dst.rank() == 3 && src.dim(0) == dst.dim(0) && src.dim(2) == dst.dim(2) &&
                  src.dtype() == dst.dtype(),
              "copy_frames: src {} and dst {} must be [B, T, D] and [B, T', D] of one dtype", src.str(), dst.str());
  STENO_CHECK(dst.numel() == 0 || src.raw() != dst.raw(), "copy_frames: dst must not alias src");
  const int64_t frame = src.dim(2) * static_cast<int64_t>(dtype_size(src.dtype()));
  const int64_t src_row = src.dim(1) * frame, dst_row = dst.dim(1) * frame, kept = std::min(src_row, dst_row);
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("copy_frames", cuda::copy_frames(ctx, src.raw(), src_row, dst.raw(), dst_row, kept, src.dim(0)));
    return;
  }
  const auto* s = static_cast<const uint8_t*>(src.raw());
  auto* d = static_cast<uint8_t*>(dst.raw());
  for (int64_t b = 0; b < src.dim(0); ++b) {
    std::memcpy(d + b * dst_row, s + b * src_row, static_cast<size_t>(kept));
    std::memset(d + b * dst_row + kept, 0, static_cast<size_t>(dst_row - kept));
  }
}

void merge_channels(Context& ctx, const Tensor& x, Tensor& y) {
  detail::check_tensor("merge_channels", "x", x, ctx);
  detail::check_tensor("merge_channels", "y", y, ctx);
  STENO_CHECK(x.rank() == 4, "merge_channels: x must be [B, C, T, F], got {}", shape_str(x.shape()));
  const int64_t b = x.dim(0), c = x.dim(1), t = x.dim(2), f = x.dim(3);
  detail::check_shape("merge_channels", "y", y, {b, t, c * f});
  STENO_CHECK(y.numel() == 0 || y.raw() != x.raw(), "merge_channels: y must not alias x");
  if (!ctx.device().is_cpu()) {
    STENO_CUDA_KERNEL("merge_channels", cuda::merge_channels(ctx, x, y));
    return;
  }
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  ctx.pool().parallel_for(0, b * c, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t bi = i / c, ci = i % c;
      for (int64_t ti = 0; ti < t; ++ti)
        std::copy_n(src + ((bi * c + ci) * t + ti) * f, f, dst + (bi * t + ti) * c * f + ci * f);
    }
  });
}

}  // namespace steno::ops
