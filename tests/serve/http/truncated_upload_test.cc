// Recordings whose last seconds were cut off, as a crashed recorder leaves them, sent to the real core with the
// bundled model: each is transcribed as far as it goes, with the same transcript `steno transcribe` gives for the
// file, and the client is told (an X-Steno-Warning header, and "warnings" in json and verbose_json).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../../cli_util.h"
#include "core_server.h"
#include "steno/asr/model.h"
#include "test_client.h"
#include "test_server.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// test-0000025.flac: "twenty six plus twenty four equals fifty", 3.6 s.
constexpr const char* kSpeech = "test-0000025.flac";

class TruncatedUploads : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("steno-truncated-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    const std::string src = test_audio(kSpeech), d = dir_.string();
    int rc = 0;
    // The whole clip as a 16-bit WAV and as an MP3; each kind then cut at 60 % of its bytes.
    const std::string out = run("sox '" + src + "' -b 16 '" + d + "/whole.wav' && lame --quiet -b 64 '" + d +
                                    "/whole.wav' '" + d + "/whole.mp3'",
                                &rc);
    ASSERT_EQ(rc, 0) << out;
    for (const char* kind : {"wav", "mp3"}) cut(d + "/whole." + kind, d + "/cut." + kind, 0.6);
    cut(src, d + "/cut.flac", 0.6);
    // A WAV whose header says twice the audio it holds: its data size field doubled, the bytes left as they are.
    std::string wav = read_file(d + "/whole.wav");
    const size_t data = wav.find("data");
    ASSERT_NE(data, std::string::npos);
    uint32_t size = 0;
    std::memcpy(&size, wav.data() + data + 4, 4);
    size *= 2;
    std::memcpy(wav.data() + data + 4, &size, 4);
    std::ofstream(d + "/overstated.wav", std::ios::binary) << wav;
    spdlog::set_level(spdlog::level::warn);
    model_ = asr::AsrModel::load(std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en");
  }
  static void TearDownTestSuite() {
    model_.reset();
    fs::remove_all(dir_);
    spdlog::set_level(spdlog::level::info);
  }

  static void cut(const std::string& from, const std::string& to, double share) {
    const std::string bytes = read_file(from);
    std::ofstream(to, std::ios::binary) << bytes.substr(0, static_cast<size_t>(static_cast<double>(bytes.size()) * share));
  }

  // What `steno transcribe` prints for the file, and the warning it gives.
  static json cli(const std::string& file) {
    int rc = 0;
    const std::string json_file = file + ".json";  // stdout alone: the warning goes to stderr
    const std::string out = run("(" + std::string(STENO_BINARY) + " transcribe --format json '" + file + "' > '" + json_file + "')", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("warning: truncated: "), std::string::npos) << out;
    return json::parse(slurp(json_file), nullptr, false);
  }

  static ClientResponse post(uint16_t port, const std::string& file, const std::string& format) {
    return post_transcription(port, fs::path(file).filename().string(), read_file(file), format);
  }

  static fs::path dir_;
  static std::shared_ptr<const asr::AsrModel> model_;
};

fs::path TruncatedUploads::dir_;
std::shared_ptr<const asr::AsrModel> TruncatedUploads::model_;

TEST_F(TruncatedUploads, AreTranscribedAsFarAsTheyGoWithAWarning) {
  CoreServer s(serve::transcriber_runners(model_, 1));
  for (const char* name : {"cut.wav", "overstated.wav", "cut.flac", "cut.mp3"}) {
    SCOPED_TRACE(name);
    const std::string file = (dir_ / name).string();
    const json expected = cli(file);
    ASSERT_FALSE(expected.is_discarded());
    const json& first = expected.contains("files") ? expected["files"][0] : expected;
    const std::string text = first["text"];
    EXPECT_FALSE(text.empty());

    for (const char* format : {"json", "verbose_json", "text"}) {
      const ClientResponse r = post(s.port(), file, format);
      ASSERT_EQ(r.status, 200) << format << ": " << r.body;
      const std::string warning = r.header("X-Steno-Warning");
      EXPECT_EQ(warning.rfind("truncated: ", 0), 0u) << format << ": '" << warning << "'";
      if (std::string(format) == "text") {
        EXPECT_EQ(r.body, text + "\n");
        continue;
      }
      const json body = json::parse(r.body);
      EXPECT_EQ(body["text"], text) << format;
      ASSERT_EQ(body["warnings"].size(), 1u) << r.body;
      EXPECT_EQ(body["warnings"][0], warning);
    }
  }
  // A whole file carries no warning.
  const ClientResponse whole = post(s.port(), test_audio(kSpeech), "json");
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.header("X-Steno-Warning"), "");
  EXPECT_FALSE(json::parse(whole.body).contains("warnings"));
}

}  // namespace
}  // namespace steno::testing
