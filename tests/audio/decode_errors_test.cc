// Bad input: every case must throw steno::Error with the right code and a message naming the problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

using ::testing::HasSubstr;
using testing::make_wav;
using testing::make_wav_i16;
using testing::one_second_wav;

// Runs `f`, expecting a steno::Error with `code` whose message contains `substring`.
void expect_error(const std::function<void()>& f, ErrorCode code, const std::string& substring) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << error_code_name(code) << " with \"" << substring << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << error_code_name(e.code()) << ": " << e.what();
    EXPECT_THAT(e.what(), HasSubstr(substring));
  }
}

void expect_decode_error(const std::vector<uint8_t>& bytes, ErrorCode code, const std::string& substring,
                         const AudioLimits& limits = {}) {
  expect_error([&] { decode_audio(bytes, limits); }, code, substring);
}

TEST(DecodeErrors, EmptyInput) {
  expect_decode_error({}, ErrorCode::kInvalidArgument, "empty (0 bytes)");
}

TEST(DecodeErrors, TextIsNotAudio) {
  const std::string text = "{\"model\": \"parakeet\", \"file\": \"hello.wav\"}\n";
  expect_decode_error({text.begin(), text.end()}, ErrorCode::kInvalidArgument,
                      "not an audio file: the 43 bytes look like text (\"{\"model\": \"parakeet\", \"file\": \"h\")");
}

TEST(DecodeErrors, RandomBytesAreNotAudio) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<uint8_t> bytes(1 + rng() % 4096);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    try {
      decode_audio(bytes);
      ADD_FAILURE() << "random bytes decoded";
    } catch (const Error& e) {
      // Almost always "not a recognised audio file"; a chance MPEG sync word makes it a corrupt "MP3" instead.
      EXPECT_TRUE(e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kDataLoss ||
                  e.code() == ErrorCode::kUnimplemented)
          << e.what();
    }
  }
  std::vector<uint8_t> bytes = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  expect_decode_error(bytes, ErrorCode::kInvalidArgument, "not a recognised audio file (9 bytes");
}

TEST(DecodeErrors, GarbageAfterWaveMagic) {
  std::vector<uint8_t> bytes = {'R', 'I', 'F', 'F', 0x10, 0, 0, 0, 'W', 'A', 'V', 'E', 1, 2, 3, 4, 5, 6, 7, 8};
  expect_decode_error(bytes, ErrorCode::kDataLoss, "malformed WAV file");
  bytes.resize(12);
  expect_decode_error(bytes, ErrorCode::kDataLoss, "malformed WAV file");
}

TEST(DecodeErrors, UnsupportedContainersAreNamed) {
  std::vector<uint8_t> w64 = {'r', 'i', 'f', 'f', 0x2E, 0x91, 0xCF, 0x11, 0xA5, 0xD6, 0x28, 0xDB, 0x04, 0xC1, 0, 0};
  expect_decode_error(w64, ErrorCode::kUnimplemented, "Wave64 (W64) is not supported; send WAV, FLAC");
  std::vector<uint8_t> au = {'.', 's', 'n', 'd', 0, 0, 0, 24};
  expect_decode_error(au, ErrorCode::kUnimplemented, "AU/SND is not supported");
  const std::string amr_mc = "#!AMR_MC1.0\n";
  expect_decode_error(std::vector<uint8_t>(amr_mc.begin(), amr_mc.end()), ErrorCode::kUnimplemented,
                      "Multichannel AMR is not supported");
  std::vector<uint8_t> adts_bad_rate = {0xFF, 0xF1, 0x3C, 0x80, 0x02, 0x1F, 0xFC};  // sample-rate index 15
  expect_decode_error(adts_bad_rate, ErrorCode::kUnimplemented, "AAC (ADTS) with a malformed first header");
}

// The heads of the FFmpeg formats with nothing after them: FFmpeg's demuxers find no audio there (a build without
// FFmpeg says it cannot read them at all). Real files of each: decode_ffmpeg_test.cc.
TEST(DecodeErrors, FfmpegFormatsWithoutAudio) {
  const std::string amr = "#!AMR\n", caf = std::string("caff\0\1\0\0", 8);
  const std::vector<std::pair<std::vector<uint8_t>, std::string>> heads = {
      {{0, 0, 0, 0x20, 'f', 't', 'y', 'p', 'M', '4', 'A', ' ', 0, 0, 0, 0}, "MP4/M4A"},
      {{0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01}, "WebM/Matroska"},
      {{0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC}, "AAC (ADTS)"},  // a frame header that promises 16 bytes
      {{amr.begin(), amr.end()}, "AMR"},
      {{caf.begin(), caf.end()}, "CAF"},
  };
  for (const auto& [bytes, name] : heads) {
    SCOPED_TRACE(name);
    if (decodes_ffmpeg_formats()) {
      try {
        decode_audio(bytes);
        ADD_FAILURE() << "decoded";
      } catch (const Error& e) {  // no stream (MP4, WebM, CAF) or no frame (the raw streams)
        EXPECT_TRUE(e.code() == ErrorCode::kDataLoss || e.code() == ErrorCode::kInvalidArgument) << e.what();
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
    } else {
      expect_decode_error(bytes, ErrorCode::kUnimplemented, name + " is not supported by this build of steno");
    }
  }
}

// A cut-off file decodes as far as it goes (decode_truncated_test.cc); one cut before its first frame is an error.
TEST(DecodeErrors, HeaderOnlyWav) {
  std::vector<uint8_t> wav = one_second_wav();
  wav.resize(44 + 1);  // not even one frame
  expect_decode_error(wav, ErrorCode::kDataLoss,
                      "truncated: the WAV header says 16000 frames (1.00 s), the file holds 0 (0.00 s); no audio "
                      "could be decoded");
  expect_decode_error(make_wav({}, {}), ErrorCode::kInvalidArgument, "no samples (0 frames)");
}

TEST(DecodeErrors, ZeroChannelsOrSampleRate) {
  const std::vector<uint8_t> payload(200);
  expect_decode_error(make_wav({.channels = 0}, payload), ErrorCode::kDataLoss, "header says 0 channels");
  expect_decode_error(make_wav({.sample_rate = 0}, payload), ErrorCode::kDataLoss, "sample rate of 0 Hz");
}

TEST(DecodeErrors, AbsurdSampleRates) {
  const std::vector<uint8_t> payload(200);
  expect_decode_error(make_wav({.sample_rate = 999}, payload), ErrorCode::kOutOfRange,
                      "sample rate 999 Hz is outside the supported range 1000..384000 Hz");
  expect_decode_error(make_wav({.sample_rate = 384001}, payload), ErrorCode::kOutOfRange, "384001 Hz");
  expect_decode_error(make_wav({.sample_rate = 2000000000}, payload), ErrorCode::kOutOfRange, "2000000000 Hz");
  EXPECT_EQ(decode_audio(make_wav({.sample_rate = 384000}, std::vector<uint8_t>(7680))).samples.size(), 160u);  // 10 ms
  EXPECT_EQ(decode_audio(make_wav({.sample_rate = 1000}, std::vector<uint8_t>(200))).samples.size(), 1600u);
}

TEST(DecodeErrors, TooManyChannels) {
  expect_decode_error(make_wav({.channels = 33}, std::vector<uint8_t>(33 * 2 * 10)), ErrorCode::kOutOfRange,
                      "audio has 33 channels, over the limit of 32");
  expect_decode_error(make_wav({.channels = 5000}, std::vector<uint8_t>(64)), ErrorCode::kOutOfRange,
                      "audio has 5000 channels");
  const DecodedAudio a = decode_audio(make_wav({.channels = 32}, std::vector<uint8_t>(32 * 2 * 10)));
  EXPECT_EQ(a.channels_in, 32);
  EXPECT_EQ(a.samples.size(), 10u);
}

TEST(DecodeErrors, DurationOverTheLimitIsRefusedFromTheHeader) {
  expect_decode_error(one_second_wav(), ErrorCode::kOutOfRange,
                      "audio is 1.0 s, over the limit of 0.5 s (--max-audio-seconds)", {.max_duration_s = 0.5});
  EXPECT_EQ(decode_audio(one_second_wav(), {.max_duration_s = 1.0}).samples.size(), 16000u);
}

TEST(DecodeErrors, InputOverTheByteLimit) {
  expect_decode_error(one_second_wav(), ErrorCode::kOutOfRange,
                      "audio input is 32044 bytes, over the limit of 1000 bytes", {.max_bytes = 1000});
}

TEST(DecodeErrors, InvalidLimits) {
  expect_decode_error(one_second_wav(), ErrorCode::kInvalidArgument, "max_duration_s", {.max_duration_s = 0});
  expect_decode_error(one_second_wav(), ErrorCode::kInvalidArgument, "max_duration_s",
                      {.max_duration_s = std::numeric_limits<double>::infinity()});
}

TEST(DecodeErrors, MissingFile) {
  expect_error([] { load_audio_file("/nonexistent/steno/audio.wav"); }, ErrorCode::kNotFound,
               "audio file not found: /nonexistent/steno/audio.wav");
}

TEST(DecodeErrors, FileOverTheByteLimitIsRefusedBeforeReading) {
  testing::TempDir dir;
  testing::write_bytes(dir.file("a.wav"), one_second_wav());
  expect_error([&] { load_audio_file(dir.file("a.wav"), {.max_bytes = 100}); }, ErrorCode::kOutOfRange,
               "is 32044 bytes, over the limit of 100 bytes");
  expect_error([&] { load_audio_file(dir.path().string()); }, ErrorCode::kInvalidArgument, "is a directory");
}

TEST(DecodeErrors, Id3TagWithoutAudio) {
  std::vector<uint8_t> id3 = {'I', 'D', '3', 4, 0, 0, 0, 0, 0, 20};
  expect_decode_error(id3, ErrorCode::kDataLoss, "the ID3 tag says 30 bytes, the input has only 10");
  id3.resize(40, 0);
  expect_decode_error(id3, ErrorCode::kInvalidArgument, "followed by no MP3, FLAC or AAC audio");
}

// Real encoders' files with nothing decodable, or corrupt before their end.
class CodecErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    testing::write_bytes(dir_->file("t.wav"), make_wav_i16({.channels = 2, .sample_rate = 44100},
                                                           testing::tone_i16(440, 2.0, 44100, 2, 0.5)));
    errors_ = testing::encode_all(*dir_, "t");
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::vector<uint8_t> bytes(const std::string& name) { return testing::read_bytes(dir_->file(name)); }
  static std::unique_ptr<testing::TempDir> dir_;
  static std::string errors_;
};
std::unique_ptr<testing::TempDir> CodecErrors::dir_;
std::string CodecErrors::errors_;

TEST_F(CodecErrors, FlacWithoutAnyFrame) {
  ASSERT_EQ(errors_, "");
  std::string error;
  const auto frames = testing::flac_frames(dir_->file("t.flac"), &error);
  ASSERT_EQ(error, "");
  std::vector<uint8_t> flac = bytes("t.flac");
  flac.resize(frames[0].offset);  // the metadata blocks only
  expect_decode_error(flac, ErrorCode::kDataLoss,
                      "truncated: the FLAC header says 88200 frames (2.00 s), the file holds 0 (0.00 s); no audio "
                      "could be decoded");
}

TEST_F(CodecErrors, FlacCutInsideItsFirstFrame) {
  ASSERT_EQ(errors_, "");
  std::string error;
  const auto frames = testing::flac_frames(dir_->file("t.flac"), &error);
  ASSERT_EQ(error, "");
  std::vector<uint8_t> flac = bytes("t.flac");
  flac.resize(frames[0].offset + frames[0].bytes / 2);
  expect_decode_error(flac, ErrorCode::kDataLoss,
                      "truncated: the FLAC header says 88200 frames (2.00 s), the file holds 0 (0.00 s); no audio "
                      "could be decoded");
}

TEST_F(CodecErrors, FlacCorruptInTheMiddleIsNotATruncation) {
  // A frame in the middle loses its sync code: libFLAC loses sync there, as at a cut, but intact frames follow, so
  // decoding the part before it and calling the rest "truncated" would hide the damage.
  ASSERT_EQ(errors_, "");
  std::string error;
  const auto frames = testing::flac_frames(dir_->file("t.flac"), &error);
  ASSERT_EQ(error, "");
  std::vector<uint8_t> flac = bytes("t.flac");
  const auto& broken = frames[frames.size() / 2];
  flac[broken.offset] = 0x00;
  expect_decode_error(flac, ErrorCode::kDataLoss, "truncated or corrupt FLAC data: decoding failed after");
  expect_decode_error(flac, ErrorCode::kDataLoss, "of 88200 frames (flac decoder lost sync.)");
}

TEST_F(CodecErrors, OggWithHeadersOnly) {
  ASSERT_EQ(errors_, "");
  for (const char* name : {"t.ogg", "t.opus"}) {
    std::vector<uint8_t> ogg = bytes(name);
    const auto pages = testing::ogg_pages(ogg);
    size_t headers_end = 0;
    for (const auto& p : pages)
      if (p.granule == 0) headers_end = p.offset + p.length;
    ogg.resize(headers_end);
    expect_decode_error(ogg, ErrorCode::kDataLoss, "without its end-of-stream page; no audio could be decoded");
  }
}

// Cut inside the comment and setup headers (the pages after the first): libvorbisfile leaked the stream's serial
// number list on this path (found by fuzz/audio_decode; its input is fuzz/seeds/audio_decode/regress-vorbis-*).
TEST_F(CodecErrors, OggVorbisCutInsideItsHeaders) {
  ASSERT_EQ(errors_, "");
  std::vector<uint8_t> ogg = bytes("t.ogg");
  const auto pages = testing::ogg_pages(ogg);
  ASSERT_GE(pages.size(), 3u);
  ogg.resize(pages[1].offset + pages[1].length / 2);
  expect_decode_error(ogg, ErrorCode::kDataLoss, "malformed OGG/Vorbis file: it ends inside its headers");
  ogg = bytes("t.ogg");
  ogg[pages[1].offset + pages[1].length - 1] ^= 0x5a;  // the setup header's last byte: a failed page checksum
  expect_decode_error(ogg, ErrorCode::kDataLoss, "malformed OGG/Vorbis file");
}

TEST_F(CodecErrors, Mp3WithOnlyItsInfoFrame) {
  ASSERT_EQ(errors_, "");
  std::vector<uint8_t> mp3 = bytes("t.mp3");
  mp3.resize(500);  // the Info frame (417 bytes at 128 kbit/s, 44.1 kHz) and the start of the first audio frame
  expect_decode_error(mp3, ErrorCode::kDataLoss,
                      "truncated: the MP3 header says 88200 frames (2.00 s), the file holds 0 (0.00 s); no audio "
                      "could be decoded (malformed MP3 file: no decodable MPEG audio frame");
}

TEST_F(CodecErrors, OggFirstPageCorrupt) {
  ASSERT_EQ(errors_, "");
  std::vector<uint8_t> ogg = bytes("t.ogg");
  ogg[40] ^= 0x55;  // inside the identification packet: the page checksum no longer matches
  expect_decode_error(ogg, ErrorCode::kDataLoss, "the first page is incomplete or fails its checksum");
  ogg.resize(20);
  expect_decode_error(ogg, ErrorCode::kDataLoss, "the first page is incomplete");
}

TEST_F(CodecErrors, OggFlacIsNamedAsUnsupported) {
  ASSERT_EQ(errors_, "");
  ASSERT_EQ(testing::run_tool("flac", "flac -s -f --ogg -o " + dir_->file("t.oga") + " " + dir_->file("t.wav") +
                                          " >/dev/null 2>&1"),
            "");
  expect_decode_error(bytes("t.oga"), ErrorCode::kUnimplemented, "OGG/FLAC is not supported");
}

}  // namespace
}  // namespace steno::audio
