#include "tdt_persistent.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "steno/core/cuda.h"
#include "steno/core/logging.h"
#include "steno/ops/copy.h"
#include "steno/ops/gemm.h"
#include "tdt_persistent_trace.h"

namespace steno::asr::detail {

namespace kern = cuda_tdt;

namespace {

int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

// Trace entries a block has (PersistentBuffers::trace): ~8 stamps an iteration, up to ~1,000 iterations.
constexpr int kTraceCap = 8192;

std::pair<int, int> trace_key(int rows, int grid, bool dedicated) { return {rows, dedicated ? grid : -grid}; }

// src [rows, cols] (f32, CPU) into the top-left corner of a zero [prows, pcols] matrix.
Tensor padded(const Tensor& src, int64_t prows, int64_t pcols) {
  Tensor out = Tensor::zeros({prows, pcols});
  const int64_t rows = src.dim(0), cols = src.dim(1);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(src.data<float>() + r * cols, cols, out.data<float>() + r * pcols);
  return out;
}

Tensor padded_vector(const Tensor& src, int64_t n, int64_t pn) {
  Tensor out = Tensor::zeros({pn});
  if (src.defined()) std::copy_n(src.data<float>(), n, out.data<float>());
  return out;
}

// Layer 0's input half for every token, f32 on the CPU: embed · W_ih0ᵀ plus `bias` (b_ih0 + b_hh0, padded to
// [4H]), gate g of unit j at column g * H + j of [V+1, 4H].
Tensor input_gates(const TdtDecoder::Parameters& p, const Tensor& bias, int64_t H) {
  const int64_t rows = p.embed.dim(0), hidden = p.w_hh[0].dim(1);
  Tensor gates = Tensor::zeros({rows, 4 * hidden});
  ops::Context cpu = ops::Context::cpu();
  ops::linear(cpu, p.embed, p.w_ih[0], Tensor(), gates);
  Tensor out = Tensor::zeros({rows, 4 * H});
  for (int64_t v = 0; v < rows; ++v)
    for (int64_t g = 0; g < 4; ++g)
      for (int64_t j = 0; j < hidden; ++j)
        out.data<float>()[v * 4 * H + g * H + j] =
            gates.data<float>()[v * 4 * hidden + g * hidden + j] + bias.data<float>()[g * H + j];
  return out;
}

}  // namespace

TdtPersistent::TdtPersistent(const TdtDecoder::Parameters& p, ops::Context& ctx, DType dtype) : dtype_(dtype) {
  const int layers = static_cast<int>(p.w_ih.size());
  const int64_t hidden = p.w_hh[0].dim(1), joint = p.enc_w.dim(0);
  const int64_t n_out = p.out_w.dim(0);
  if (layers > kern::kPersistentMaxLayers) {
    why_not_ = fmt::format("{} LSTM layers (the kernel takes up to {})", layers, kern::kPersistentMaxLayers);
    return;
  }
  const int64_t H = pad16(hidden), J = pad16(joint), N = pad16(n_out);
  kern::PersistentWeights& w = w_;
  w.layers = layers;
  w.H = static_cast<int32_t>(H);
  w.J = static_cast<int32_t>(J);
  w.N = static_cast<int32_t>(N);
  w.enc_width = static_cast<int32_t>(joint);
  for (int l = 0; l < layers; ++l) w.k_layer[l] = static_cast<int32_t>(l == 0 ? H : 2 * H);
  smem_ = kern::persistent_smem_bytes(kernel_dt(dtype), w);
  const int device = ctx.device().index;
  const int per_sm = smem_ > 0 ? kern::persistent_blocks_per_sm(kernel_dt(dtype), smem_) : 0;
  if (per_sm == 0) {
    why_not_ = fmt::format("{} bytes of shared memory a block for sizes H {} J {} N {}", smem_, H, J, N);
    smem_ = 0;
    return;
  }
  full_grid_ = per_sm * steno::cuda::sm_count(device);
  if (const char* path = std::getenv("STENO_TDT_TRACE"); path != nullptr && *path != '\0') trace_path_ = path;

  Allocator& alloc = steno::cuda::weight_allocator(device);
  auto put = [&](const Tensor& host, DType t) {
    weights_.push_back(ops::place(ctx, host, t, alloc));
    return weights_.back().raw();
  };
  for (int l = 0; l < layers; ++l) {
    // Row g * H + j holds gate g of unit j: [w_ih row | zeros | w_hh row | zeros] over [x (in_p) | h (H)];
    // layer 0's x half is the x0 table below instead (in_p = 0).
    const int64_t in = p.w_ih[l].dim(1), in_p = l == 0 ? 0 : H, K = in_p + H;
    Tensor cat = Tensor::zeros({4 * H, K});
    Tensor bias = Tensor::zeros({4 * H});
    for (int64_t g = 0; g < 4; ++g) {
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t src = g * hidden + j;
        float* dst = cat.data<float>() + (g * H + j) * K;
        if (l > 0) std::copy_n(p.w_ih[l].data<float>() + src * in, in, dst);
        std::copy_n(p.w_hh[l].data<float>() + src * hidden, hidden, dst + in_p);
        float b = 0.0f;
        for (const Tensor* t : {&p.b_ih[l], &p.b_hh[l]})
          if (t->defined()) b += t->data<float>()[src];
        bias.data<float>()[g * H + j] = b;
      }
    }
    w.w_cat[l] = put(cat, dtype);
    w.lstm_bias[l] = static_cast<const float*>(put(bias, DType::kF32));
    if (l == 0) w.x0 = static_cast<const float*>(put(input_gates(p, bias, H), DType::kF32));
  }
  w.pred_w = put(padded(p.pred_w, J, H), dtype);
  w.pred_b = static_cast<const float*>(put(padded_vector(p.pred_b, joint, J), DType::kF32));
  w.enc_b = static_cast<const float*>(put(padded_vector(p.enc_b, joint, J), DType::kF32));
  w.out_w = put(padded(p.out_w, N, J), dtype);
  w.out_b = static_cast<const float*>(put(padded_vector(p.out_b, n_out, N), DType::kF32));
}

TdtPersistent::Buffers TdtPersistent::make_buffers(ops::Context& ctx, int64_t bucket_rows, const kern::TdtRows& rows,
                                                   kern::TdtControl* ctrl) const {
  STENO_ASSERT(usable() && fits(bucket_rows));
  const int64_t R = padded_rows(bucket_rows);
  Buffers out;
  Allocator& alloc = steno::cuda::weight_allocator(ctx.device().index);
  auto make = [&](const Shape& shape, DType t) {
    Tensor x = Tensor::empty(shape, t, ctx.device(), &alloc);
    steno::cuda::memset_async(x.raw(), 0, x.nbytes(), ctx.stream());
    out.tensors.push_back(x);
    return x.raw();
  };
  kern::PersistentBuffers& b = out.b;
  for (int l = 0; l < w_.layers; ++l) {
    for (int half = 0; half < 2; ++half) b.h[l][half] = make({R, w_.H}, dtype_);
    b.c[l] = static_cast<float*>(make({R, w_.H}, DType::kF32));
  }
  b.pred_proj = static_cast<float*>(make({R, w_.J}, DType::kF32));
  b.hidden = make({R, w_.J}, dtype_);
  b.best_key = static_cast<unsigned long long*>(make({2 * R}, DType::kI64));
  b.dur_logits = static_cast<float*>(make({R, kern::kMaxDurations}, DType::kF32));
  b.len = rows.len;
  b.count = rows.count;
  b.steps = rows.steps;
  b.ctrl = ctrl;
  b.rows = static_cast<int32_t>(R);
  if (!trace_path_.empty()) {
    b.trace = static_cast<uint64_t*>(make({static_cast<int64_t>(full_grid_) * kTraceCap}, DType::kI64));
    b.trace_cap = kTraceCap;
  }
  return out;
}

void TdtPersistent::report_trace(ops::Context& ctx, const Buffers& buffers, int grid, bool dedicated) const {
  if (buffers.b.trace == nullptr || grid <= 0) return;
  {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    if (!traced_.insert(trace_key(buffers.b.rows, grid, dedicated)).second) return;
  }
  std::vector<uint64_t> host(static_cast<size_t>(grid) * kTraceCap);
  steno::cuda::memcpy_async(host.data(), buffers.b.trace, host.size() * sizeof(uint64_t), ctx.stream());
  ctx.synchronize();
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, ctx.device().index);
  std::string text = fmt::format("persistent TDT decoder: {} rows, {} blocks, {} roles\n", buffers.b.rows, grid,
                                 dedicated ? "dedicated" : "shared");
  text += summarize_persistent_trace(host.data(), grid, kTraceCap, khz / 1000.0);
  if (std::FILE* f = std::fopen(trace_path_.c_str(), "a")) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
  } else {
    spdlog::warn("STENO_TDT_TRACE: cannot write {}", trace_path_);
  }
}

int TdtPersistent::launch(ops::Context& ctx, const kern::TdtDims& dims, const Buffers& buffers,
                           const kern::TdtCallParams* params, int& grid, bool dedicated) const {
  STENO_ASSERT(usable());
  // More blocks than can have work would only wait at the barriers.
  const int useful = kern::persistent_useful_grid(w_, buffers.b.rows, dedicated);
  if (grid == 0) grid = full_grid_;
  const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream().handle());
  for (;;) {
    const int n = std::min(grid, useful);
    const kern::PersistentRoles roles = dedicated ? kern::persistent_roles(w_, n) : kern::PersistentRoles{};
    // The trace stamps only until this bucket size, grid and roles have been reported (they cost time).
    kern::PersistentBuffers b = buffers.b;
    if (b.trace != nullptr) {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      if (traced_.count(trace_key(b.rows, n, roles.lstm_blocks > 0)) != 0) b.trace = nullptr;
    }
    const cudaError_t err =
        kern::launch_tdt_persistent(kernel_dt(dtype_), dims, w_, b, params, n, roles, smem_, stream);
    if (err == cudaSuccess) return n;
    if (err == cudaErrorCooperativeLaunchTooLarge && grid > 1) {
      grid /= 2;
      continue;
    }
    spdlog::warn("CUDA TDT decoder: the persistent kernel cannot be launched ({}: {}); decoding step by step",
                 cudaGetErrorName(err), cudaGetErrorString(err));
    return 0;
  }
}

}  // namespace steno::asr::detail
