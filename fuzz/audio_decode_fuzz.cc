// libFuzzer target: decode_audio (steno/audio/decode.h), every container and codec behind the sniffing, on any
// bytes (built and run by fuzz/run.sh). Any input must either decode
// to valid 16 kHz samples in [-1, 1] or throw steno::Error; another exception, a crash, a sanitizer report or a
// broken invariant is a bug. Seeds: fuzz/seeds/audio_decode, a short clip in each format steno reads.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "steno/audio/decode.h"
#include "steno/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace steno::audio;
  try {
    // Small limits keep each run fast; the limit paths themselves are part of what is fuzzed.
    const DecodedAudio a =
        decode_audio(std::span<const uint8_t>(data, size), {.max_duration_s = 30, .max_bytes = 1 << 20});
    if (a.sample_rate != kSampleRate || a.duration_s() > 30.5) std::abort();
    for (const float s : a.samples)
      if (!(s >= -1.0f && s <= 1.0f)) std::abort();
  } catch (const steno::Error&) {
  }
  return 0;
}
