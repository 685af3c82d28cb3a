#include "audio_upload.h"

#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>

#include "steno/core/cuda.h"
#include "check_cuda.h"
#include "steno/core/error.h"
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

// Packs the clips into pinned memory with up to kMaxThreads threads while this thread calls send(i) for each 4 MiB
// chunk i, in order, as soon as it is packed. Returns the staging block, which must outlive the DMAs.
//
// The packers are an OpenMP team, as steno's ThreadPool is (thread_pool.h), and for the same reason: the host
// context's team spins on every core for a while after its last parallel region (the transcripts, just before the
// next batch's front end), and threads of our own would fight it for the cores. Measured on the H200 at 32 x 45 s:
// the front end took 9.6 ms after a transcription with its own threads, 4.6 ms alone.
Tensor pack_and_send(const std::vector<std::span<const float>>& clips, const std::vector<int64_t>& starts,
                     int64_t total, const std::function<void(const float* host, int64_t chunk)>& send) {
  Tensor staging = Tensor::empty({total}, DType::kF32, Device::cpu(), &steno::cuda::default_pinned_allocator());
  float* host = staging.data<float>();
  const int64_t chunks = (total + kChunkFloats - 1) / kChunkFloats;
  auto pack = [&](int64_t i) {
    pack_range(clips, starts, i * kChunkFloats, std::min(total, (i + 1) * kChunkFloats), host);
  };
  const int packers = static_cast<int>(std::min<int64_t>(kMaxThreads, chunks));
  if (packers <= 1 || omp_in_parallel()) {  // nested in a parallel region: one thread, chunk after chunk
    for (int64_t i = 0; i < chunks; ++i) {
      pack(i);
      send(host, i);
    }
    return staging;
  }
  // Thread 0 sends each chunk, in order, once it is packed; the others pack chunks id - 1, id - 1 + n - 1, ...
  std::mutex mu;
  std::condition_variable packed_cv;
  std::vector<char> packed(static_cast<size_t>(chunks), 0);
  std::exception_ptr error;
#pragma omp parallel num_threads(packers + 1)
  {
    const int id = omp_get_thread_num(), n = omp_get_num_threads();
    if (id == 0) {
      try {
        for (int64_t i = 0; i < chunks; ++i) {
          if (n == 1) {
            pack(i);  // the runtime gave no second thread
          } else {
            std::unique_lock lock(mu);
            packed_cv.wait(lock, [&] { return packed[static_cast<size_t>(i)] != 0; });
          }
          send(host, i);
        }
      } catch (...) {
        error = std::current_exception();  // an exception must not leave the parallel region
      }
    } else {
      for (int64_t i = id - 1; i < chunks; i += n - 1) {
        pack(i);
        std::lock_guard lock(mu);
        packed[static_cast<size_t>(i)] = 1;
        packed_cv.notify_all();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  return staging;
}

// Where each clip starts in the packed audio; the total.
int64_t clip_starts(const std::vector<std::span<const float>>& clips, std::vector<int64_t>& starts) {
  int64_t total = 0;
  for (const auto& c : clips) {
    starts.push_back(total);
    total += static_cast<int64_t>(c.size());
  }
  return total;
}

}  // namespace

void upload_clips(ops::Context& ctx, const std::vector<std::span<const float>>& clips, float* device_dst) {
  std::vector<int64_t> starts;
  const int64_t total = clip_starts(clips, starts);
  if (total == 0) return;
  const Tensor staging = pack_and_send(clips, starts, total, [&](const float* host, int64_t i) {
    const int64_t lo = i * kChunkFloats, hi = std::min(total, lo + kChunkFloats);
    steno::cuda::memcpy_async(device_dst + lo, host + lo, (hi - lo) * sizeof(float), ctx.stream());
  });
  // The staging block returns to the pinned cache when `staging` goes: the DMAs must have read it by then.
  ctx.synchronize();
}

void upload_clips_in_pieces(ops::Context& ctx, const std::vector<std::span<const float>>& clips, float* device_dst,
                            const std::vector<size_t>& cuts, const std::function<void(size_t piece)>& arrived) {
  STENO_CHECK(!cuts.empty() && cuts.back() == clips.size(), "upload pieces: the last cut must be the clip count");
  std::vector<int64_t> starts;
  const int64_t total = clip_starts(clips, starts);
  const steno::cuda::Stream copies(ctx.device().index);
  const auto copy_stream = static_cast<cudaStream_t>(copies.handle());
  const auto compute = static_cast<cudaStream_t>(ctx.stream().handle());
  std::vector<cudaEvent_t> events(cuts.size(), nullptr);
  size_t next = 0;  // the next piece to hand over
  // Piece k has arrived once the chunks up to its last sample are queued on the copy stream.
  auto hand_over = [&](int64_t sent_up_to) {
    for (; next < cuts.size(); ++next) {
      const int64_t end = cuts[next] == clips.size() ? total : starts[cuts[next]];
      if (end > sent_up_to) return;
      check_cuda(cudaEventCreateWithFlags(&events[next], cudaEventDisableTiming), "upload: an event");
      check_cuda(cudaEventRecord(events[next], copy_stream), "upload: recording a piece");
      check_cuda(cudaStreamWaitEvent(compute, events[next], 0), "upload: waiting for a piece");
      arrived(next);
    }
  };
  Tensor staging;
  try {
    if (total > 0)
      staging = pack_and_send(clips, starts, total, [&](const float* host, int64_t i) {
        const int64_t lo = i * kChunkFloats, hi = std::min(total, lo + kChunkFloats);
        steno::cuda::memcpy_async(device_dst + lo, host + lo, (hi - lo) * sizeof(float), copies);
        hand_over(hi);
      });
    hand_over(total);
  } catch (...) {
    copies.synchronize();  // the staging block must outlive the DMAs queued before the error
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
    throw;
  }
  copies.synchronize();  // as upload_clips: the staging block is freed after its DMAs
  for (cudaEvent_t e : events) cudaEventDestroy(e);  // released once the waits on them are done
}

}  // namespace steno::asr
