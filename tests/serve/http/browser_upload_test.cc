// What browsers record (MediaRecorder: WebM with Opus) and phones save (M4A with AAC; AMR, alone or in 3GP, with
// its DTX pauses), and raw AAC, uploaded as OpenAI clients upload them, to the real core with the bundled model:
// the transcript of the FLAC they were made from. A build without FFmpeg refuses them with 415 and says why.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../../cli_util.h"
#include "core_server.h"
#include "steno/asr/model.h"
#include "steno/audio/decode.h"
#include "test_client.h"
#include "test_server.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// test-0000025.flac: "twenty six plus twenty four equals fifty", 3.6 s.
constexpr const char* kSource = "test-0000025.flac";

class BrowserUploads : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("steno-browser-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    const std::string src = test_audio(kSource), d = dir_.string(), ff = "ffmpeg -nostdin -v error -y -i '" + src;
    int rc = 0;
    const std::string out = run(ff + "' -c:a libopus -b:a 32k '" + d + "/speech.webm' && " + ff +
                                    "' -c:a aac -b:a 64k '" + d + "/speech.m4a' && " + ff +
                                    "' -c:a aac -b:a 64k -movflags +faststart '" + d + "/faststart.mp4' && " + ff +
                                    "' -c:a aac -b:a 64k -f adts '" + d + "/speech.aac' && sox '" + src + "' -r 8000 "
                                    "-c 1 -t amr-nb -C 7 '" + d + "/speech.amr' && ffmpeg -nostdin -v error -y -i '" +
                                    d + "/speech.amr' -c:a copy '" + d + "/speech.3gp'",
                                &rc);
    ASSERT_EQ(rc, 0) << out;
    spdlog::set_level(spdlog::level::warn);
    model_ = asr::AsrModel::load(std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en");
  }
  static void TearDownTestSuite() {
    model_.reset();
    fs::remove_all(dir_);
    spdlog::set_level(spdlog::level::info);
  }

  static fs::path dir_;
  static std::shared_ptr<const asr::AsrModel> model_;
};

fs::path BrowserUploads::dir_;
std::shared_ptr<const asr::AsrModel> BrowserUploads::model_;

TEST_F(BrowserUploads, RecordedFormatsAreTranscribedAsTheirSource) {
  CoreServer s(serve::transcriber_runners(model_, 1));
  const ClientResponse source = post_transcription(s.port(), "speech.flac", read_file(test_audio(kSource)), "json");
  ASSERT_EQ(source.status, 200) << source.body;
  const std::string text = json::parse(source.body)["text"];
  EXPECT_EQ(text, "twenty six plus twenty four equals fifty");

  for (const char* name : {"speech.webm", "speech.m4a", "faststart.mp4", "speech.aac", "speech.amr", "speech.3gp"}) {
    SCOPED_TRACE(name);
    const ClientResponse r = post_transcription(s.port(), name, read_file((dir_ / name).string()), "json");
    if (!audio::decodes_ffmpeg_formats()) {
      EXPECT_EQ(r.status, 415) << r.body;
      EXPECT_NE(r.body.find("built without FFmpeg"), std::string::npos) << r.body;
      continue;
    }
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body)["text"], text);
    EXPECT_EQ(r.header("X-Steno-Warning"), "");
  }
}

TEST_F(BrowserUploads, ACutOffRecordingIsTranscribedAsFarAsItGoes) {
  if (!audio::decodes_ffmpeg_formats()) GTEST_SKIP() << "built without FFmpeg (the refusal: the test above)";
  CoreServer s(serve::transcriber_runners(model_, 1));
  const std::string whole = read_file((dir_ / "faststart.mp4").string());
  const ClientResponse r = post_transcription(s.port(), "cut.mp4", whole.substr(0, whole.size() * 6 / 10), "json");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("X-Steno-Warning").rfind("truncated: the MP4/M4A header says", 0), 0u)
      << r.header("X-Steno-Warning");
  const std::string text = json::parse(r.body)["text"];
  EXPECT_EQ(text.rfind("twenty six", 0), 0u) << text;  // the start is there, the end is not
  EXPECT_NE(text, "twenty six plus twenty four equals fifty");

  // Cut inside its index (moov last, as FFmpeg writes by default), nothing can be read: a 400 that says so.
  const std::string m4a = read_file((dir_ / "speech.m4a").string());
  const ClientResponse bad = post_transcription(s.port(), "cut.m4a", m4a.substr(0, m4a.size() - 300), "json");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("malformed or truncated MP4/M4A"), std::string::npos) << bad.body;
}

}  // namespace
}  // namespace steno::testing
