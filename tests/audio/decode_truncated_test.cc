// Inputs that end early -- a crashed recorder's file, a cut-off upload -- decode every complete frame present, with
// one warning that names the container and says what is missing. Lossless cuts must equal the untruncated file's
// decode sample for sample; lossy ones must match it up to shortly before the cut.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::make_wav;
using testing::make_wav_i16;
using testing::one_second_wav;

// Lossy decoders finish their last frame with the next one's overlap, and the resampler flushes its filter: the
// last 100 ms before a cut may differ from the whole file's decode. Before that, the same packets decode to the
// same samples; the tolerance only absorbs float rounding.
constexpr double kLossyMarginS = 0.1;
constexpr double kLossyTolerance = 1e-5;

void set_u32le(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

// `cut` holds exactly the first `frames` samples of `full` (16 kHz sources: no resampling, so equality is exact).
void expect_exact_prefix(const DecodedAudio& cut, const DecodedAudio& full, size_t frames) {
  ASSERT_EQ(cut.samples.size(), frames);
  ASSERT_LE(frames, full.samples.size());
  EXPECT_TRUE(std::equal(cut.samples.begin(), cut.samples.end(), full.samples.begin()));
}

// `cut` lasts about `expected_s` and matches `full` up to kLossyMarginS before its end.
void expect_close_prefix(const DecodedAudio& cut, const DecodedAudio& full, double expected_s, double length_tol_s) {
  EXPECT_NEAR(cut.duration_s(), expected_s, length_tol_s);
  const auto margin = static_cast<size_t>(kLossyMarginS * kSampleRate);
  ASSERT_GT(cut.samples.size(), margin);
  const size_t n = std::min(cut.samples.size(), full.samples.size()) - margin;
  EXPECT_LE(testing::max_abs_diff(cut.samples.data(), full.samples.data(), n), kLossyTolerance);
}

std::string present(size_t samples_16k) { return fmt::format("{:.2f} s present", samples_16k / 16000.0); }

TEST(TruncatedWav, DecodesTheCompleteFramesPresent) {
  std::vector<uint8_t> wav = one_second_wav();  // 16000 frames
  const DecodedAudio full = decode_audio(wav);
  wav.resize(44 + 2 * 6000 + 1);  // and an odd byte: half a frame, dropped
  const DecodedAudio cut = decode_audio(wav);
  expect_exact_prefix(cut, full, 6000);
  EXPECT_THAT(cut.warnings, ElementsAre("truncated: the WAV header says 16000 frames (1.00 s), the file holds 6000 "
                                        "(0.38 s); transcribed the 0.38 s present"));
  EXPECT_TRUE(full.warnings.empty());
}

TEST(TruncatedWav, DataSizeBiggerThanTheFile) {
  std::vector<uint8_t> wav = one_second_wav();
  const DecodedAudio full = decode_audio(wav);
  set_u32le(wav, 40, 32000 + 2000);
  const DecodedAudio a = decode_audio(wav);
  expect_exact_prefix(a, full, 16000);
  EXPECT_THAT(a.warnings, ElementsAre("truncated: the WAV header says 17000 frames (1.06 s), the file holds 16000 "
                                      "(1.00 s); transcribed the 1.00 s present"));
}

TEST(TruncatedWav, AbsurdDataSizeDecodesWhatIsThere) {
  // 0xFFFFFFFF and 0x7FFFFFFF are also "unknown length" placeholders of streaming writers. The header's claim is
  // bounded by the file's size, so it is neither refused as too long nor allocated for.
  std::vector<uint8_t> wav = one_second_wav();
  const DecodedAudio full = decode_audio(wav);
  set_u32le(wav, 40, 0x7FFFFFFF);
  DecodedAudio a = decode_audio(wav, {.max_duration_s = 2});
  expect_exact_prefix(a, full, 16000);
  EXPECT_GE(a.samples.capacity(), 16000u);
  EXPECT_LT(a.samples.capacity(), 100000u);
  EXPECT_THAT(a.warnings, ElementsAre("truncated: the WAV header says 1073741823 frames (67108.86 s), the file holds "
                                      "16000 (1.00 s); transcribed the 1.00 s present"));
  set_u32le(wav, 40, 0xFFFFFFFF);
  set_u32le(wav, 4, 0xFFFFFFFF);
  a = decode_audio(wav);
  expect_exact_prefix(a, full, 16000);
  EXPECT_THAT(a.warnings, ElementsAre("truncated: the WAV header says 2147483647 frames (134217.73 s), the file "
                                      "holds 16000 (1.00 s); transcribed the 1.00 s present"));
}

TEST(TruncatedWav, RiffSizeBiggerThanTheFileWithTheAudioWhole) {
  // What followed the data chunk (tags, cue points) was cut off; the audio is all there.
  const auto pcm = testing::tone_i16(440, 1.0, 16000, 1, 0.5);
  const DecodedAudio a = decode_audio(make_wav_i16({.channels = 1, .sample_rate = 16000, .riff_size = 36 + 33000},
                                                   pcm));
  EXPECT_EQ(a.samples.size(), 16000u);
  EXPECT_THAT(a.warnings, ElementsAre("truncated: the WAV header says the file is 33044 bytes, it holds 32044; "
                                      "transcribed the 1.00 s present"));
  // The streaming placeholder is not a claim.
  EXPECT_TRUE(decode_audio(make_wav_i16({.channels = 1, .sample_rate = 16000, .riff_size = 0xFFFFFFFF}, pcm))
                  .warnings.empty());
}

TEST(TruncatedWav, Stereo24BitCutInsideAFrame) {
  // 6 bytes a frame: the cut leaves 4000 whole frames and 5 bytes of the next.
  std::vector<uint8_t> payload(6 * 16000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 37);
  std::vector<uint8_t> wav = make_wav({.channels = 2, .sample_rate = 16000, .bits = 24}, payload);
  const DecodedAudio full = decode_audio(wav);
  wav.resize(44 + 6 * 4000 + 5);
  const DecodedAudio cut = decode_audio(wav);
  expect_exact_prefix(cut, full, 4000);
  EXPECT_THAT(cut.warnings, ElementsAre("truncated: the WAV header says 16000 frames (1.00 s), the file holds 4000 "
                                        "(0.25 s); transcribed the 0.25 s present"));
}

// 4 s of a 440 Hz tone with deterministic noise, 16 kHz stereo: rich enough that Vorbis and Opus spread it over
// several pages, and at the output rate, so lossless decodes need no resampling and a cut one must equal the whole
// one's first samples exactly.
std::vector<int16_t> noisy_tone() {
  std::vector<int16_t> pcm = testing::tone_i16(440, 4.0, 16000, 2, 0.4);
  uint32_t state = 12345;
  for (int16_t& s : pcm) {
    state = state * 1664525u + 1013904223u;
    s = static_cast<int16_t>(s + static_cast<int16_t>((state >> 16) % 6001) - 3000);
  }
  return pcm;
}

// Real encoders' files, cut.
class TruncatedCodecs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    testing::write_bytes(dir_->file("t.wav"), make_wav_i16({.channels = 2, .sample_rate = 16000}, noisy_tone()));
    // Constant bitrate and no Info tag (-t): 144-byte frames (576 samples at 32 kbit/s, 16 kHz) from byte 0.
    errors_ = testing::encode_all(*dir_, "t") +
              testing::run_tool("lame", "lame --quiet -t -b 32 " + dir_->file("t.wav") + " " +
                                            dir_->file("t_cbr.mp3") + " >/dev/null 2>&1");
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::vector<uint8_t> bytes(const std::string& name) { return testing::read_bytes(dir_->file(name)); }
  static std::vector<uint8_t> cut(const std::string& name, size_t n) {
    std::vector<uint8_t> b = bytes(name);
    b.resize(n);
    return b;
  }
  static std::unique_ptr<testing::TempDir> dir_;
  static std::string errors_;
};
std::unique_ptr<testing::TempDir> TruncatedCodecs::dir_;
std::string TruncatedCodecs::errors_;

TEST_F(TruncatedCodecs, Aiff) {
  ASSERT_EQ(errors_, "");
  const std::vector<uint8_t> whole = bytes("t.aiff");
  const auto ssnd = std::search(whole.begin(), whole.end(), std::begin("SSND"), std::end("SSND") - 1) - whole.begin();
  const size_t n = whole.size() / 2, frames = (n - static_cast<size_t>(ssnd) - 16) / 4;
  const DecodedAudio a = decode_audio(cut("t.aiff", n));
  expect_exact_prefix(a, decode_audio(whole), frames);
  EXPECT_THAT(a.warnings, ElementsAre(fmt::format("truncated: the AIFF header says 64000 frames (4.00 s), the file "
                                                  "holds {} ({:.2f} s); transcribed the {}",
                                                  frames, frames / 16000.0, present(frames))));
}

TEST_F(TruncatedCodecs, AiffWhoseFrameCountOverstatesItsSoundData) {
  // The SSND chunk and the file agree, but COMM promises 100 frames more than they hold.
  ASSERT_EQ(errors_, "");
  std::vector<uint8_t> aiff = bytes("t.aiff");
  const auto comm = std::search(aiff.begin(), aiff.end(), std::begin("COMM"), std::end("COMM") - 1) - aiff.begin();
  const size_t frames_at = static_cast<size_t>(comm) + 10;  // after the id, the size and the channel count
  ASSERT_EQ(aiff[frames_at + 2] * 256 + aiff[frames_at + 3], 64000 % 65536);
  const uint32_t more = 64100;
  for (int i = 0; i < 4; ++i) aiff[frames_at + static_cast<size_t>(i)] = static_cast<uint8_t>(more >> (24 - 8 * i));
  const DecodedAudio a = decode_audio(aiff);
  EXPECT_EQ(a.samples.size(), 64000u);
  EXPECT_THAT(a.warnings, ElementsAre("truncated: the AIFF header says 64100 frames (4.01 s), the file holds 64000 "
                                      "(4.00 s); transcribed the 4.00 s present"));
}

TEST_F(TruncatedCodecs, FlacCutInsideAFrame) {
  ASSERT_EQ(errors_, "");
  std::string error;
  const std::vector<testing::FlacFrame> frames = testing::flac_frames(dir_->file("t.flac"), &error);
  ASSERT_EQ(error, "");
  ASSERT_GE(frames.size(), 6u);
  // Cut in the middle of a frame in the middle: every frame before it decodes, and nothing of it.
  const testing::FlacFrame& split = frames[frames.size() / 2];
  const size_t n = split.offset + split.bytes / 2;
  size_t complete = 0;
  for (const auto& f : frames)
    if (f.offset + f.bytes <= n) complete += f.samples;
  const DecodedAudio a = decode_audio(cut("t.flac", n));
  expect_exact_prefix(a, decode_audio(bytes("t.flac")), complete);
  EXPECT_THAT(a.warnings, ElementsAre(fmt::format("truncated: the FLAC header says 64000 frames (4.00 s), the file "
                                                  "holds {} ({:.2f} s); transcribed the {}",
                                                  complete, complete / 16000.0, present(complete))));
  // Cut inside the next frame's header, and exactly between frames: the same frames.
  EXPECT_EQ(decode_audio(cut("t.flac", split.offset + 3)).samples.size(), complete);
  const DecodedAudio at_boundary = decode_audio(cut("t.flac", split.offset));
  EXPECT_EQ(at_boundary.samples.size(), complete);
  EXPECT_THAT(at_boundary.warnings, ElementsAre(HasSubstr("truncated: the FLAC header says 64000 frames")));
}

TEST_F(TruncatedCodecs, FlacWithoutATotalCutInsideAFrame) {
  // A streaming encoder leaves STREAMINFO's total at 0 (unknown): only the cut frame shows that the end is missing.
  ASSERT_EQ(errors_, "");
  std::string error;
  const std::vector<testing::FlacFrame> frames = testing::flac_frames(dir_->file("t.flac"), &error);
  ASSERT_EQ(error, "");
  std::vector<uint8_t> flac = bytes("t.flac");
  // STREAMINFO starts at byte 8; its total sample count is the low 36 bits of bytes 13..17.
  flac[8 + 13] &= 0xF0;
  std::fill(flac.begin() + 8 + 14, flac.begin() + 8 + 18, 0);
  const DecodedAudio full = decode_audio(flac);
  EXPECT_EQ(full.samples.size(), 64000u);
  EXPECT_TRUE(full.warnings.empty());
  const testing::FlacFrame& split = frames[frames.size() / 2];
  size_t complete = 0;
  for (size_t i = 0; i < frames.size() / 2; ++i) complete += frames[i].samples;
  flac.resize(split.offset + split.bytes / 2);
  const DecodedAudio a = decode_audio(flac);
  expect_exact_prefix(a, full, complete);
  EXPECT_THAT(a.warnings, ElementsAre("truncated: the FLAC stream's last frame is cut off at the end of the file; "
                                      "transcribed the " + present(complete)));
}

TEST_F(TruncatedCodecs, Mp3WithInfoTag) {
  ASSERT_EQ(errors_, "");
  const std::vector<uint8_t> whole = bytes("t.mp3");
  const DecodedAudio full = decode_audio(whole);
  const DecodedAudio a = decode_audio(cut("t.mp3", whole.size() / 2));
  // LAME's default for 16 kHz is a constant bitrate: half the bytes hold about half the audio.
  expect_close_prefix(a, full, 2.0, 0.1);
  EXPECT_THAT(a.warnings, ElementsAre(fmt::format("truncated: the MP3 header says 64000 frames (4.00 s), the file "
                                                  "holds {} ({:.2f} s); transcribed the {}",
                                                  a.samples.size(), a.duration_s(), present(a.samples.size()))));
}

TEST_F(TruncatedCodecs, Mp3WithoutInfoTagCutInsideAFrame) {
  ASSERT_EQ(errors_, "");
  const std::vector<uint8_t> whole = bytes("t_cbr.mp3");
  ASSERT_EQ(whole.size() % 144, 0u) << "expected bare 144-byte frames";
  const size_t k = whole.size() / 144 / 2;  // complete frames kept
  const DecodedAudio full = decode_audio(whole);
  EXPECT_TRUE(full.warnings.empty());
  const DecodedAudio a = decode_audio(cut("t_cbr.mp3", 144 * k + 100));
  expect_close_prefix(a, full, k * 576 / 16000.0, 0.04);
  EXPECT_THAT(a.warnings, ElementsAre("truncated: the MP3 stream's last frame is cut off at the end of the file; "
                                      "transcribed the " + present(a.samples.size())));
  // Cut exactly between frames, with no header stating the length: nothing shows that the end is missing.
  const DecodedAudio clean = decode_audio(cut("t_cbr.mp3", 144 * k));
  EXPECT_EQ(clean.samples.size(), a.samples.size());
  EXPECT_TRUE(clean.warnings.empty());
}

// Ogg: the cut drops the page it falls in; what decodes ends at the last complete page's granule position.
struct OggCut {
  size_t cut = 0;           // bytes kept: half the file, inside a page
  size_t intact = 0;        // where the last complete page ends
  int64_t granule = 0;      // that page's granule position
};
OggCut ogg_cut_in_half(const std::vector<uint8_t>& bytes) {
  OggCut c{bytes.size() / 2};
  for (const auto& p : testing::ogg_pages(bytes))
    if (p.offset + p.length <= c.cut) c.intact = p.offset + p.length, c.granule = p.granule;
  return c;
}

TEST_F(TruncatedCodecs, OggVorbis) {
  ASSERT_EQ(errors_, "");
  const std::vector<uint8_t> whole = bytes("t.ogg");
  const OggCut c = ogg_cut_in_half(whole);
  ASSERT_LT(c.intact, c.cut);
  const DecodedAudio a = decode_audio(cut("t.ogg", c.cut));
  expect_close_prefix(a, decode_audio(whole), static_cast<double>(c.granule) / 16000, 0.001);
  EXPECT_THAT(a.warnings, ElementsAre(fmt::format("truncated: the OGG/Vorbis stream ends inside a page after {} "
                                                  "bytes, without its end-of-stream page; transcribed the {}",
                                                  c.intact, present(a.samples.size()))));
  const DecodedAudio at_page = decode_audio(cut("t.ogg", c.intact));
  EXPECT_EQ(at_page.samples, a.samples);
  EXPECT_THAT(at_page.warnings, ElementsAre(fmt::format("truncated: the OGG/Vorbis stream stops after {} bytes "
                                                        "without its end-of-stream page; transcribed the {}",
                                                        c.intact, present(a.samples.size()))));
}

TEST_F(TruncatedCodecs, OggOpus) {
  ASSERT_EQ(errors_, "");
  const std::vector<uint8_t> whole = bytes("t.opus");
  const OggCut c = ogg_cut_in_half(whole);
  ASSERT_LT(c.intact, c.cut);
  const size_t head = 27 + size_t{whole[26]};  // the OpusHead packet; its pre-skip is at byte 10
  const int64_t pre_skip = whole[head + 10] | (whole[head + 11] << 8);
  const DecodedAudio a = decode_audio(cut("t.opus", c.cut));
  // Opus granules count at 48 kHz, after the pre-skip.
  expect_close_prefix(a, decode_audio(whole), static_cast<double>(c.granule - pre_skip) / 48000, 0.03);
  EXPECT_THAT(a.warnings, ElementsAre(fmt::format("truncated: the OGG/Opus stream ends inside a page after {} "
                                                  "bytes, without its end-of-stream page; transcribed the {}",
                                                  c.intact, present(a.samples.size()))));
}

}  // namespace
}  // namespace steno::audio
