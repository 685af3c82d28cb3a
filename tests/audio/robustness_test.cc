// A deterministic mini-fuzz: truncations and byte corruptions of valid files of every format must either decode
// to valid output or throw steno::Error -- never crash, hang, throw anything else or return out-of-range samples.
// (decode_fuzz.cc runs the same entry point under libFuzzer when built with clang.)
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

// Returns "" if `bytes` decoded to valid audio or was refused with steno::Error; otherwise what went wrong.
std::string decode_outcome(const std::vector<uint8_t>& bytes) {
  try {
    const DecodedAudio a = decode_audio(bytes, {.max_duration_s = 60, .max_bytes = 1 << 20});
    if (a.sample_rate != kSampleRate) return "wrong output rate";
    for (const float s : a.samples)
      if (!(s >= -1.0f && s <= 1.0f)) return "sample out of [-1, 1]";
    if (a.duration_s() > 60.5) return "output longer than the limit";
    return "";
  } catch (const Error& e) {
    if (std::string(e.what()).empty()) return "empty error message";
    return "";
  } catch (const std::exception& e) {
    return std::string("non-steno exception: ") + e.what();
  }
}

class Robustness : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    const std::string wav = dir_->file("r.wav");
    // Short, so that hundreds of variants decode quickly.
    testing::write_bytes(wav, testing::make_wav_i16({.channels = 2, .sample_rate = 22050},
                                                    testing::tone_i16(440, 0.3, 22050, 2, 0.5)));
    const std::string q = " >/dev/null 2>&1";
    errors_ = testing::run_tool("flac", "flac -s -f -o " + dir_->file("r.flac") + " " + wav + q) +
              testing::run_tool("oggenc", "oggenc -Q -o " + dir_->file("r.ogg") + " " + wav + q) +
              testing::run_tool("opusenc", "opusenc --quiet " + wav + " " + dir_->file("r.opus") + q) +
              testing::run_tool("lame", "lame --quiet " + wav + " " + dir_->file("r.mp3") + q) +
              testing::run_tool("sox", "sox " + wav + " " + dir_->file("r.aiff") + q);
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::unique_ptr<testing::TempDir> dir_;
  static std::string errors_;
};
std::unique_ptr<testing::TempDir> Robustness::dir_;
std::string Robustness::errors_;

TEST_P(Robustness, TruncationsAndCorruptionsAreHandled) {
  ASSERT_EQ(errors_, "");
  const std::vector<uint8_t> original = testing::read_bytes(dir_->file(GetParam()));
  ASSERT_EQ(decode_outcome(original), "");
  std::mt19937 rng(42);

  // Every prefix length near the start (headers), then evenly spaced ones.
  for (size_t n = 0; n < original.size(); n += n < 128 ? 1 : original.size() / 40) {
    const std::vector<uint8_t> prefix(original.begin(), original.begin() + static_cast<ptrdiff_t>(n));
    ASSERT_EQ(decode_outcome(prefix), "") << "prefix of " << n << " bytes";
  }
  // Random bytes overwritten, biased to the first 256 bytes where the headers are.
  for (int trial = 0; trial < 150; ++trial) {
    std::vector<uint8_t> bytes = original;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t span = (trial % 2 == 0) ? std::min<size_t>(256, bytes.size()) : bytes.size();
      const size_t at = rng() % span;
      bytes[at] = (rng() % 3 == 0) ? 0xFF : static_cast<uint8_t>(rng());
    }
    ASSERT_EQ(decode_outcome(bytes), "") << "corruption trial " << trial;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Robustness,
                         ::testing::Values("r.wav", "r.flac", "r.ogg", "r.opus", "r.mp3", "r.aiff"),
                         [](const auto& info) { return info.param.substr(2); });

}  // namespace
}  // namespace steno::audio
