#include "steno/vad/vad.h"

#include <unistd.h>

#include <cstdlib>

#include "steno/core/error.h"

namespace steno::vad {

namespace fs = std::filesystem;

VadMode parse_vad_mode(std::string_view s) {
  if (s == "off") return VadMode::kOff;
  if (s == "on") return VadMode::kOn;
  if (s == "auto") return VadMode::kAuto;
  fail(ErrorCode::kInvalidArgument, "vad must be off, on or auto, got '{}'", s.substr(0, 64));
}

const char* vad_mode_name(VadMode m) {
  switch (m) {
    case VadMode::kOff: return "off";
    case VadMode::kOn: return "on";
    case VadMode::kAuto: return "auto";
  }
  return "?";
}

bool vad_applies(VadMode m, double audio_seconds) {
  return m == VadMode::kOn || (m == VadMode::kAuto && audio_seconds > kAutoMinSeconds);
}

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

SpeechDetector::SpeechDetector(const fs::path& dir, RegionOptions options)
    : model_(SileroVad::load(dir)), options_(options) {}

std::vector<SampleRange> SpeechDetector::regions(std::span<const float> pcm) const {
  ops::Context ctx = ops::Context::cpu(1);
  const std::vector<float> probs = model_.speech_probabilities(ctx, pcm);
  return speech_regions(probs, SileroVad::kChunk, SileroVad::kSampleRate, static_cast<int64_t>(pcm.size()),
                        options_);
}

}  // namespace steno::vad
