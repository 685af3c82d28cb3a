// Voice activity detection for transcription: whether to use it (--vad off|on|auto), where its model is, and the
// one call the ASR paths make: a recording in, its speech regions out. docs/vad.md.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "steno/vad/silero_vad.h"
#include "steno/vad/speech_regions.h"

namespace steno::vad {

// kAuto: only recordings longer than kAutoMinSeconds (consultations, meetings), where long silences are likely and
// the VAD's cost is surely paid back; a shorter clip is transcribed whole, as before. The VAD runs on the CPU at
// about 250x real time a core: ~1 % of the ASR's time on the CPU, but more than the ASR's own on a GPU, where a
// server of 45 s requests would spend ~25 cores on it (bench/results/h200-consult): hence minutes, not seconds.
enum class VadMode { kOff, kOn, kAuto };
inline constexpr double kAutoMinSeconds = 120;

VadMode parse_vad_mode(std::string_view s);  // "off" | "on" | "auto"; kInvalidArgument otherwise
const char* vad_mode_name(VadMode m);
bool vad_applies(VadMode m, double audio_seconds);

// The bundled model: $STENO_VAD if set, else models/silero-vad next to an installed binary
// (<prefix>/share/steno/models) or in the source tree. kNotFound if none exists.
std::filesystem::path default_vad_dir();

// The model and the rule that turns its probabilities into regions. Thread-safe (const); each call makes its own
// single-threaded CPU contexts, so callers on different threads never share one.
//
// A recording over two minutes is run in segments side by side, up to `threads` (0: the machine's threads), each
// of at least a minute and primed with the kPrimeSeconds before it (whose probabilities are dropped): the model's
// LSTM is sequential, and an hour takes ~15 s on one core (docs/vad.md). Silero's LSTM remembers long, so a segment's
// probabilities come close to one pass's but not equal (tests/vad/segments_test.cc, 5 minutes in 4 segments: 4 of
// 9,375 chunks on the other side of 0.5, the same 39 regions, boundaries at most one 32 ms chunk apart).
class SpeechDetector {
 public:
  static constexpr double kPrimeSeconds = 4;
  static constexpr double kMinSegmentSeconds = 60;

  explicit SpeechDetector(const std::filesystem::path& dir, RegionOptions options = {}, int threads = 0);
  // Speech regions of 16 kHz mono `pcm` (empty: no speech).
  std::vector<SampleRange> regions(std::span<const float> pcm) const;
  // The model's probability per 32 ms chunk, in segments as above.
  std::vector<float> probabilities(std::span<const float> pcm) const;

 private:
  int threads_;
  SileroVad model_;
  RegionOptions options_;
};

}  // namespace steno::vad
