// MP4/M4A, WebM/Matroska, raw AAC, AMR and CAF through FFmpeg (src/audio/ffmpeg_reader.h): the formats browsers,
// phones and Apple's tools record, made here by the ffmpeg command-line tool (AMR by sox, since Debian's FFmpeg has
// no AMR encoder) from the same 2 s, 440 Hz, 44.1 kHz stereo tone as the other formats' tests. In a build without
// FFmpeg these are skipped; decode_errors_test.cc checks that build's refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

using testing::TempDir;

constexpr double kToneSeconds = 2.0;
constexpr double kToneFreq = 440.0;
constexpr double kToneAmplitude = 0.5;

// How closely a codec gives the tone back: music codecs closely, a speech codec (AMR) its pitch and level less so.
struct Fidelity {
  double min_tone_power = 0.95;  // the tone's share of the signal's power
  double rms_tolerance = 0.03;
};

class DecodeFfmpeg : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    const std::string wav = dir_->file("tone.wav");
    const auto tone = testing::tone_i16(kToneFreq, kToneSeconds, 44100, 2, kToneAmplitude);
    testing::write_bytes(wav, testing::make_wav_i16({.channels = 2, .sample_rate = 44100}, tone));
    const std::string ff = "ffmpeg -nostdin -v error -y ", in = "-i " + wav + " ";
    const std::string video = "-f lavfi -i testsrc=duration=2:size=64x48:rate=10 ";
    const std::map<std::string, std::string> commands = {
        {"tone.m4a", ff + in + "-c:a aac -b:a 128k " + dir_->file("tone.m4a")},
        {"faststart.mp4", ff + in + "-c:a aac -b:a 128k -movflags +faststart " + dir_->file("faststart.mp4")},
        {"tone.webm", ff + in + "-c:a libopus -b:a 96k " + dir_->file("tone.webm")},
        {"flac.mkv", ff + in + "-c:a flac " + dir_->file("flac.mkv")},
        {"mp2.mkv", ff + in + "-c:a mp2 " + dir_->file("mp2.mkv")},
        {"video.mp4", ff + video + in + "-c:v mpeg4 -c:a aac -shortest " + dir_->file("video.mp4")},
        {"silent-video.mp4", ff + video + "-c:v mpeg4 " + dir_->file("silent-video.mp4")},
        {"tone.aac", ff + in + "-c:a aac -b:a 128k -f adts " + dir_->file("tone.aac")},
        {"tagged.aac", ff + in + "-c:a aac -b:a 128k -f adts -write_id3v2 1 -metadata title=tone " +
                           dir_->file("tagged.aac")},
        {"alac.caf", ff + in + "-c:a alac " + dir_->file("alac.caf")},
        {"ulaw.caf", ff + in + "-ar 8000 -ac 1 -c:a pcm_mulaw " + dir_->file("ulaw.caf")},
        {"short-alac.caf", ff + in + "-t 0.15 -ar 16000 -c:a alac " + dir_->file("short-alac.caf")},
    };
    for (const auto& [file, command] : commands) errors_[file] = testing::run_tool("ffmpeg", command);
    // AMR-NB at 12.2 kbit/s (sox through libopencore-amrnb), then the same frames in a 3GP, as Android records.
    errors_["tone.amr"] = testing::run_tool(
        "sox", "sox " + wav + " -r 8000 -c 1 -t amr-nb -C 7 " + dir_->file("tone.amr"));
    // The tone and a second of silence, which the encoder sends as DTX frames (comfort noise, then no data).
    errors_["pause.amr"] = testing::run_tool(
        "sox", "sox " + wav + " -r 8000 -c 1 -t amr-nb -C 7 " + dir_->file("pause.amr") + " pad 0 1");
    errors_["tone.3gp"] = testing::run_tool(
        "ffmpeg", ff + "-i " + dir_->file("tone.amr") + " -c:a copy " + dir_->file("tone.3gp"));
  }
  static void TearDownTestSuite() { dir_.reset(); }

  void SetUp() override {
    if (!decodes_ffmpeg_formats()) GTEST_SKIP() << "built without FFmpeg (STENO_WITH_FFMPEG)";
  }

  std::vector<uint8_t> bytes(const std::string& file) {
    EXPECT_EQ(errors_[file], "");
    return testing::read_bytes(dir_->file(file));
  }

  // Decodes `file` and checks the tone, as decode_formats_test.cc does for the other formats.
  DecodedAudio decode_tone(const std::string& file, double length_tolerance_s, Fidelity fidelity = {}) {
    EXPECT_EQ(errors_[file], "");
    if (!errors_[file].empty()) return {};
    DecodedAudio a = load_audio_file(dir_->file(file));
    EXPECT_EQ(a.sample_rate, kSampleRate);
    EXPECT_NEAR(a.duration_s(), kToneSeconds, length_tolerance_s) << a.format;
    EXPECT_TRUE(a.warnings.empty()) << a.warnings[0];
    const size_t begin = kSampleRate / 2, n = kSampleRate;
    EXPECT_GE(a.samples.size(), begin + n);
    if (a.samples.size() >= begin + n) {
      EXPECT_GT(testing::tone_power_fraction(a.samples.data() + begin, n, kToneFreq, kSampleRate),
                fidelity.min_tone_power) << a.format;
      EXPECT_NEAR(testing::rms(a.samples.data() + begin, n), kToneAmplitude / std::sqrt(2.0), fidelity.rms_tolerance)
          << a.format;
    }
    return a;
  }

  // A losslessly coded tone: decode_tone's checks, then sample for sample the WAV it was encoded from.
  void expect_lossless_tone(const std::string& file, const std::string& format) {
    const DecodedAudio a = decode_tone(file, 0.0);
    const DecodedAudio wav = load_audio_file(dir_->file("tone.wav"));
    EXPECT_EQ(a.format, format);
    EXPECT_EQ(a.samples.size(), wav.samples.size()) << format;
    if (a.samples.size() == wav.samples.size()) {
      EXPECT_EQ(testing::max_abs_diff(a.samples.data(), wav.samples.data(), wav.samples.size()), 0.0) << format;
    }
  }

  static std::unique_ptr<TempDir> dir_;
  static std::map<std::string, std::string> errors_;
};

std::unique_ptr<TempDir> DecodeFfmpeg::dir_;
std::map<std::string, std::string> DecodeFfmpeg::errors_;

void expect_ffmpeg_error(const std::vector<uint8_t>& bytes, ErrorCode code, const std::string& needle,
                  const AudioLimits& limits = {}) {
  try {
    decode_audio(bytes, limits);
    ADD_FAILURE() << "decoded; expected an error containing: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST_F(DecodeFfmpeg, M4aAac) {
  // FFmpeg's AAC encoder writes an edit list over its 1,024 frames of priming; the last frame's fill stays (the
  // length is the source's plus less than one 1,024-frame AAC frame).
  const DecodedAudio a = decode_tone("tone.m4a", 0.025);
  EXPECT_EQ(a.format, "mp4/aac");
  EXPECT_EQ(a.channels_in, 2);
  EXPECT_EQ(a.sample_rate_in, 44100);
}

TEST_F(DecodeFfmpeg, WebmOpus) {
  // What a browser's MediaRecorder uploads. Opus decodes at 48 kHz; WebM's codec delay trims the pre-skip.
  const DecodedAudio a = decode_tone("tone.webm", 0.005);
  EXPECT_EQ(a.format, "matroska/opus");
  EXPECT_EQ(a.sample_rate_in, 48000);
}

TEST_F(DecodeFfmpeg, LosslessMatroskaEqualsTheWav) { expect_lossless_tone("flac.mkv", "matroska/flac"); }

TEST_F(DecodeFfmpeg, RawAacAdts) {
  // ADTS states no length: FFmpeg's guess from the bitrate must not read as a cut-off file (decode_tone checks
  // that there is no warning).
  const DecodedAudio a = decode_tone("tone.aac", 0.05);
  EXPECT_EQ(a.format, "adts/aac");
  EXPECT_EQ(a.channels_in, 2);
  const std::vector<uint8_t> tagged = bytes("tagged.aac");  // an ID3v2 tag first, as taggers leave it
  ASSERT_GT(tagged.size(), 3u);
  EXPECT_EQ(std::string(tagged.begin(), tagged.begin() + 3), "ID3");
  EXPECT_EQ(decode_tone("tagged.aac", 0.05).samples.size(), a.samples.size());
}

TEST_F(DecodeFfmpeg, CafAlacEqualsTheWavAndG711IsRead) {
  expect_lossless_tone("alac.caf", "caf/alac");

  // CAF counts whole 4,096-frame ALAC packets: 2,400 frames are not a file cut short.
  const DecodedAudio short_alac = load_audio_file(dir_->file("short-alac.caf"));
  EXPECT_EQ(short_alac.samples.size(), 2400u);
  EXPECT_TRUE(short_alac.warnings.empty()) << short_alac.warnings[0];

  const DecodedAudio ulaw = decode_tone("ulaw.caf", 0.0);  // telephone audio: 8 kHz mu-law
  EXPECT_EQ(ulaw.format, "caf/pcm_mulaw");
  EXPECT_EQ(ulaw.sample_rate_in, 8000);
}

TEST_F(DecodeFfmpeg, AmrAndAmrIn3gp) {
  // A speech codec: the tone comes back at its pitch and length, its level less exactly than a music codec's.
  for (const std::string file : {"tone.amr", "tone.3gp"}) {
    const DecodedAudio a = decode_tone(file, 0.025, {.min_tone_power = 0.9, .rms_tolerance = 0.1});
    EXPECT_EQ(a.format, file == "tone.amr" ? "amr/amrnb" : "mp4/amrnb");
    EXPECT_EQ(a.sample_rate_in, 8000);
  }
}

TEST_F(DecodeFfmpeg, AmrDtxFramesDecodeAsSilenceOfTheirLength) {
  // FFmpeg's AMR decoder refuses DTX frames; they must neither fail the file nor shorten it.
  const std::vector<uint8_t> amr = bytes("pause.amr");
  static constexpr int kFrameBytes[16] = {12, 13, 15, 17, 19, 20, 26, 31, 5, 0, 0, 0, 0, 0, 0, 0};  // RFC 4867
  int dtx = 0;
  for (size_t at = 6; at < amr.size(); at += 1 + kFrameBytes[(amr[at] >> 3) & 15]) dtx += ((amr[at] >> 3) & 15) >= 8;
  EXPECT_GE(dtx, 3) << "the fixture should hold SID and no-data frames";
  const DecodedAudio a = decode_audio(amr);
  EXPECT_NEAR(a.duration_s(), kToneSeconds + 1.0, 0.025);
  EXPECT_TRUE(a.warnings.empty()) << a.warnings[0];
  ASSERT_GE(a.samples.size(), 3u * kSampleRate - kSampleRate / 10);
  const size_t n = kSampleRate / 2;
  EXPECT_GT(testing::tone_power_fraction(a.samples.data() + kSampleRate / 2, n, kToneFreq, kSampleRate), 0.9);
  EXPECT_LT(testing::rms(a.samples.data() + 5 * kSampleRate / 2, n), 0.01);
}

TEST_F(DecodeFfmpeg, AVideosSoundtrackIsDecoded) {
  const DecodedAudio a = decode_tone("video.mp4", 0.03);
  EXPECT_EQ(a.format, "mp4/aac");
}

TEST_F(DecodeFfmpeg, NoAudioStreamOrAnUnsupportedCodecIsRefused) {
  expect_ffmpeg_error(bytes("silent-video.mp4"), ErrorCode::kInvalidArgument, "the MP4/M4A file holds no audio stream");
  expect_ffmpeg_error(bytes("mp2.mkv"), ErrorCode::kUnimplemented, "mp2 audio in WebM/Matroska is not supported");
}

TEST_F(DecodeFfmpeg, CutOffUploadIsDecodedAsFarAsItGoes) {
  // moov first (faststart): the index survives the cut, the audio after it is gone.
  std::vector<uint8_t> mp4 = bytes("faststart.mp4");
  mp4.resize(mp4.size() * 6 / 10);
  const DecodedAudio a = decode_audio(mp4);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("truncated: the MP4/M4A header says 88200 frames (2.00 s), the file holds"),
            std::string::npos) << a.warnings[0];
  EXPECT_GT(a.duration_s(), 0.6);
  EXPECT_LT(a.duration_s(), 1.6);

  std::vector<uint8_t> webm = bytes("tone.webm");
  webm.resize(webm.size() / 2);
  const DecodedAudio w = decode_audio(webm);
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("truncated: the WebM/Matroska header says 96"), std::string::npos)  // 2.0x s at 48k
      << w.warnings[0];
  EXPECT_GT(w.duration_s(), 0.5);
  EXPECT_LT(w.duration_s(), 1.5);

  // Raw AAC and AMR: a stream of frames, decoded up to the cut.
  std::vector<uint8_t> aac = bytes("tone.aac");
  aac.resize(aac.size() / 2 + 3);  // inside a frame
  const DecodedAudio r = decode_audio(aac);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("the AAC (ADTS) stream's last frame is cut off"), std::string::npos) << r.warnings[0];
  EXPECT_NEAR(r.duration_s(), 1.0, 0.1);
  std::vector<uint8_t> amr = bytes("tone.amr");
  amr.resize(6 + (amr.size() - 6) / 2);
  EXPECT_NEAR(decode_audio(amr).duration_s(), 1.0, 0.05);

  // moov last (FFmpeg's default): cut off, there is no index to read any audio by.
  std::vector<uint8_t> m4a = bytes("tone.m4a");
  m4a.resize(m4a.size() - 400);
  expect_ffmpeg_error(m4a, ErrorCode::kDataLoss, "malformed or truncated MP4/M4A");
}

TEST_F(DecodeFfmpeg, DurationLimitFromTheContainer) {
  expect_ffmpeg_error(bytes("tone.m4a"), ErrorCode::kOutOfRange, "audio is 2.0 s, over the limit of 1.5 s",
               {.max_duration_s = 1.5});
}

TEST_F(DecodeFfmpeg, EstimatedDurationFromAPrefix) {
  for (const std::string file : {"faststart.mp4", "tone.aac", "tone.amr", "alac.caf"}) {
    const std::vector<uint8_t> b = bytes(file);
    const auto e = estimate_duration_s(b, b.size());
    ASSERT_TRUE(e.has_value()) << file;
    EXPECT_NEAR(e->seconds, kToneSeconds, 0.1) << file;
  }
}

}  // namespace
}  // namespace steno::audio
