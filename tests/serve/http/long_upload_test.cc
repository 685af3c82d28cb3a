// A 2-hour recording sent to a `steno serve` that takes 20 minutes (--max-audio-seconds 1200) is refused
// from its first bytes: 413 naming the limit, while the server's peak memory (its own VmHWM) grows by far less than
// the file -- the rest of the upload is never buffered. Over OpenAI's multipart form and KServe's raw binary body;
// a WAV (its header states the length) and a headerless CBR MP3 (its first frames tell the length).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../../cli_util.h"
#include "fleet_harness.h"
#include "test_client.h"
#include "test_server.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kTwoHours = 2 * 3600;
constexpr double kMaxGrowthMb = 100;

// The peak resident memory of process `pid` so far, in MB (VmHWM).
double peak_rss_mb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return -1;
}

class LongUploads : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("steno-long-upload-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    // Two hours of 16 kHz 16-bit mono silence: a 44-byte header, then 230 MB of zeros (a sparse file: cheap).
    const uint32_t data_bytes = static_cast<uint32_t>(kTwoHours * 16000 * 2);
    std::string header = "RIFF....WAVEfmt ";
    auto u32 = [&](uint32_t v) { header.append(reinterpret_cast<const char*>(&v), 4); };
    auto u16 = [&](uint16_t v) { header.append(reinterpret_cast<const char*>(&v), 2); };
    u32(16), u16(1), u16(1), u32(16000), u32(32000), u16(2), u16(16);
    header += "data";
    u32(data_bytes);
    const uint32_t riff = static_cast<uint32_t>(header.size() - 8 + data_bytes);
    std::memcpy(header.data() + 4, &riff, 4);
    { std::ofstream(wav(), std::ios::binary) << header; }
    fs::resize_file(wav(), header.size() + data_bytes);
    // A CBR MP3 without a length tag: ten seconds encoded once, its frames repeated to two hours (28.8 MB).
    int rc = 0;
    const std::string ten = (dir_ / "ten.mp3").string();
    const std::string out = run("sox '" + test_audio("test-0000025.flac") + "' -r 16000 -c 1 -t wav - pad 0 7 | "
                                "lame --quiet -t -b 32 - '" + ten + "'", &rc);
    ASSERT_EQ(rc, 0) << out;
    const std::string frames = read_file(ten);
    std::ofstream mp3(mp3_path(), std::ios::binary);
    for (int i = 0; i < kTwoHours / 10; ++i) mp3 << frames;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string wav() { return (dir_ / "two-hours.wav").string(); }
  static std::string mp3_path() { return (dir_ / "two-hours.mp3").string(); }
  static fs::path dir_;
};

fs::path LongUploads::dir_;

TEST_F(LongUploads, AreRefusedFromTheirFirstBytesWithoutBufferingTheRest) {
  // The upload limit (2 GiB by default) lets them in: the audio's own length must refuse them.
  FleetServer server("--max-audio-seconds 1200");
  ASSERT_TRUE(server.started()) << server.log();
  // Warm up (the first request's allocations are not the refusal's), then take the baseline.
  ASSERT_EQ(curl(server.port(), "/v1/audio/transcriptions", "-F 'file=@" + test_audio(kClip) + "'").status, 200);
  const double before = peak_rss_mb(server.pid());
  ASSERT_GT(before, 0);

  struct Upload {
    std::string what, target, args;
  } uploads[] = {
      {"WAV over OpenAI", "/v1/audio/transcriptions", "-F 'file=@" + wav() + "'"},
      {"MP3 over OpenAI", "/v1/audio/transcriptions", "-F 'file=@" + mp3_path() + "'"},
      {"WAV over KServe raw binary", "/v2/models/steno-tdt-small-en/infer",
       "-H 'Inference-Header-Content-Length: 0' --data-binary '@" + wav() + "'"},
  };
  for (const Upload& u : uploads) {
    const CurlResult r = curl(server.port(), u.target, u.args);
    EXPECT_EQ(r.status, 413) << u.what << ": " << r.body.substr(0, 300);
    EXPECT_NE(r.body.find("over the limit of 1200 s (--max-audio-seconds); refused from its first"), std::string::npos)
        << u.what << ": " << r.body.substr(0, 300);
  }
  const double after = peak_rss_mb(server.pid());
  std::printf("[ measured ] steno serve peak RSS %.1f MB before the three 2-hour uploads, %.1f MB after (%.1f MB of "
              "%.0f MB of files)\n",
              before, after, after - before,
              static_cast<double>(2 * fs::file_size(wav()) + fs::file_size(mp3_path())) / 1e6);
  EXPECT_LT(after - before, kMaxGrowthMb);
  // It serves on.
  EXPECT_EQ(curl(server.port(), "/v1/audio/transcriptions", "-F 'file=@" + test_audio(kClip) + "'").status, 200);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace steno::testing
