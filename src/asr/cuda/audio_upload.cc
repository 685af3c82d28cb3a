#include "audio_upload.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "steno/core/cuda.h"
#include "steno/core/tensor.h"

namespace steno::asr {
namespace {

// Chunks of the packed audio: each is packed by one thread and then sent by one DMA. 4 MiB keeps a DMA well past
// its fixed cost and lets the first DMAs start while later chunks are still being packed.
constexpr int64_t kChunkFloats = int64_t{1} << 20;
// Packing threads at most: a memcpy thread moves about 10 GB/s, a DMA about 50 GB/s on PCIe 5.
constexpr int kMaxThreads = 6;

// Copies packed floats [lo, hi) (clip b at starts[b]) into dst + lo.
void pack_range(const std::vector<std::span<const float>>& clips, const std::vector<int64_t>& starts, int64_t lo,
                int64_t hi, float* dst) {
  auto b = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), lo) - starts.begin()) - 1;
  for (int64_t pos = lo; pos < hi; ++b) {
    const int64_t begin = std::max(pos, starts[b]), end = std::min(hi, starts[b] + int64_t(clips[b].size()));
    if (end > begin) std::memcpy(dst + begin, clips[b].data() + (begin - starts[b]), (end - begin) * sizeof(float));
    pos = std::max(pos, end);
  }
}

}  // namespace

void upload_clips(ops::Context& ctx, const std::vector<std::span<const float>>& clips, float* device_dst) {
  std::vector<int64_t> starts;
  int64_t total = 0;
  for (const auto& c : clips) {
    starts.push_back(total);
    total += static_cast<int64_t>(c.size());
  }
  if (total == 0) return;
  Tensor staging = Tensor::empty({total}, DType::kF32, Device::cpu(), &steno::cuda::default_pinned_allocator());
  float* host = staging.data<float>();
  const int64_t chunks = (total + kChunkFloats - 1) / kChunkFloats;
  auto send = [&](int64_t i) {
    const int64_t lo = i * kChunkFloats, hi = std::min(total, lo + kChunkFloats);
    steno::cuda::memcpy_async(device_dst + lo, host + lo, (hi - lo) * sizeof(float), ctx.stream());
  };
  const int threads = static_cast<int>(std::min<int64_t>(kMaxThreads, chunks));
  if (threads <= 1) {
    pack_range(clips, starts, 0, total, host);
    send(0);
  } else {
    // Thread t packs chunks t, t + threads, ...; this thread queues each chunk's DMA, in order, once it is packed.
    std::mutex mu;
    std::condition_variable packed_cv;
    std::vector<char> packed(static_cast<size_t>(chunks), 0);
    std::vector<std::jthread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        for (int64_t i = t; i < chunks; i += threads) {
          pack_range(clips, starts, i * kChunkFloats, std::min(total, (i + 1) * kChunkFloats), host);
          std::lock_guard lock(mu);
          packed[static_cast<size_t>(i)] = 1;
          packed_cv.notify_all();
        }
      });
    for (int64_t i = 0; i < chunks; ++i) {
      {
        std::unique_lock lock(mu);
        packed_cv.wait(lock, [&] { return packed[static_cast<size_t>(i)] != 0; });
      }
      send(i);
    }
  }
  // The staging block returns to the pinned cache when `staging` goes: the DMAs must have read it by then.
  ctx.synchronize();
}

}  // namespace steno::asr
