#include "steno/vad/vad.h"

#include <algorithm>
#include <exception>
#include <thread>

#include <unistd.h>

#include <cstdlib>

#include "steno/core/error.h"

namespace steno::vad {

namespace fs = std::filesystem;

fs::path default_vad_dir() {
  if (const char* env = std::getenv("STENO_VAD"); env && *env) return env;
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / "../share/steno/models/silero-vad");
  candidates.push_back(fs::path(STENO_SOURCE_DIR) / "models/silero-vad");
  for (const auto& c : candidates)
    if (fs::exists(c / "config.json")) return fs::weakly_canonical(c);
  fail(ErrorCode::kNotFound, "$STENO_VAD is unset and the bundled VAD model (models/silero-vad) is missing; make it "
                             "with tools/vad/convert_silero_vad.py or run with --vad off");
}

SpeechDetector::SpeechDetector(const fs::path& dir, RegionOptions options, int threads)
    : threads_(threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))),
      model_(SileroVad::load(dir)),
      options_(options) {}

std::vector<float> SpeechDetector::probabilities(std::span<const float> pcm) const {
  const int64_t chunks = (static_cast<int64_t>(pcm.size()) + SileroVad::kChunk - 1) / SileroVad::kChunk;
  const auto per_second = static_cast<double>(SileroVad::kSampleRate) / SileroVad::kChunk;
  const auto min_segment = static_cast<int64_t>(kMinSegmentSeconds * per_second);
  const int64_t segments = std::clamp<int64_t>(chunks / min_segment, 1, threads_);
  std::vector<float> out(static_cast<size_t>(chunks));
  if (segments == 1) {
    ops::Context ctx = ops::Context::cpu(1);
    model_.speech_probabilities(ctx, pcm, 0, chunks, out.data());
    return out;
  }
  const int64_t prime = static_cast<int64_t>(kPrimeSeconds * per_second);
  const int64_t size = (chunks + segments - 1) / segments;
  std::vector<std::thread> workers;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(segments));
  for (int64_t s = 0; s < segments; ++s)
    workers.emplace_back([&, s] {
      try {
        const int64_t first = s * size, last = std::min(chunks, first + size);
        const int64_t from = std::max<int64_t>(0, first - prime);  // primed on the seconds before
        std::vector<float> probs(static_cast<size_t>(last - from));
        ops::Context ctx = ops::Context::cpu(1);
        model_.speech_probabilities(ctx, pcm, from, last - from, probs.data());
        std::copy(probs.begin() + (first - from), probs.end(), out.begin() + first);
      } catch (...) {
        errors[static_cast<size_t>(s)] = std::current_exception();
      }
    });
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

std::vector<SampleRange> SpeechDetector::regions(std::span<const float> pcm) const {
  return speech_regions(probabilities(pcm), SileroVad::kChunk, SileroVad::kSampleRate,
                        static_cast<int64_t>(pcm.size()), options_);
}

}  // namespace steno::vad
