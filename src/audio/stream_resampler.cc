#include "stream_resampler.h"

#include <soxr.h>

#include <cmath>

#include "steno/core/error.h"

namespace steno::audio {

StreamResampler::StreamResampler(int rate_in, int rate_out) {
  STENO_CHECK(rate_in > 0 && rate_out > 0, "resample: sample rates must be positive, got {} -> {}", rate_in,
              rate_out);
  ratio_ = static_cast<double>(rate_out) / rate_in;
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  const soxr_runtime_spec_t runtime = soxr_runtime_spec(1);  // callers run many decodes in parallel
  soxr_error_t error = nullptr;
  soxr_ = soxr_create(rate_in, rate_out, 1, &error, &io, &quality, &runtime);
  if (error != nullptr || soxr_ == nullptr)
    fail(ErrorCode::kInternal, "soxr_create({} -> {} Hz) failed: {}", rate_in, rate_out,
         error != nullptr ? error : "unknown error");
}

StreamResampler::~StreamResampler() { soxr_delete(soxr_); }

void StreamResampler::run(const float* in, size_t n, std::vector<float>& out) {
  // soxr may hold back or emit more than n * ratio in one call; loop until it has consumed the input (or, when
  // flushing, until it produces nothing more).
  size_t consumed = 0;
  for (;;) {
    const size_t room = static_cast<size_t>(std::ceil((n - consumed) * ratio_)) + 1024;
    if (scratch_.size() < room) scratch_.resize(room);
    size_t idone = 0, odone = 0;
    const soxr_error_t error = soxr_process(soxr_, in ? in + consumed : nullptr, in ? n - consumed : 0, &idone,
                                            scratch_.data(), room, &odone);
    if (error != nullptr) fail(ErrorCode::kInternal, "soxr_process failed: {}", error);
    out.insert(out.end(), scratch_.begin(), scratch_.begin() + static_cast<ptrdiff_t>(odone));
    consumed += idone;
    if (in != nullptr ? consumed >= n && odone < room : odone == 0) return;
  }
}

void StreamResampler::process(std::span<const float> in, std::vector<float>& out) {
  if (!in.empty()) run(in.data(), in.size(), out);
}

void StreamResampler::flush(std::vector<float>& out) { run(nullptr, 0, out); }

}  // namespace steno::audio
