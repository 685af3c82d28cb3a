// Signals for the VAD's tests, made at test time (never committed audio): the golden's noise (the same generator as
// tools/vad/silero_reference.py), white noise and silence, and a test-set clip decoded by steno.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "steno/audio/decode.h"

namespace steno::vad::test {

// Uniform noise in [-amplitude, amplitude) from a 32-bit LCG (Numerical Recipes' constants): bit for bit the
// reference tool's, so the parity test feeds both implementations the same samples.
inline std::vector<float> lcg_noise(size_t n, double amplitude, uint32_t seed = 12345) {
  std::vector<float> out(n);
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = 1664525u * x + 1013904223u;
    out[i] = static_cast<float>((static_cast<double>(x >> 8) / static_cast<double>(1 << 24) * 2.0 - 1.0) * amplitude);
  }
  return out;
}

inline std::vector<float> test_clip(const std::string& relative) {
  return audio::load_audio_file(std::string(STENO_SOURCE_DIR) + "/" + relative).samples;
}

}  // namespace steno::vad::test
