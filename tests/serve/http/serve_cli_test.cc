// `steno serve` as users run it: the real binary with the real inference core and the bundled model. Checks the
// start-up refusals, a transcription through curl, and that SIGTERM lets a request in flight finish and exits 0.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "../../cli_util.h"
#include "test_client.h"
#include "test_server.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// `steno serve ARGS` started in the background with its stderr in dir/log, its pid in dir/pid and, once it exits,
// its exit status in dir/rc; returns its port, read from the start-up line (0 if it never came).
int start_serve(const fs::path& dir, const std::string& args) {
  const std::string cmd = "(" + std::string(STENO_BINARY) + " serve " + args + " 2>" + (dir / "log").string() +
                          " & echo $! > " + (dir / "pid").string() + "; wait $!; echo $? > " + (dir / "rc").string() +
                          ") &";
  if (std::system(cmd.c_str()) != 0) return 0;
  const std::regex listening("on http://127\\.0\\.0\\.1:([0-9]+)");
  for (int i = 0; i < 200; ++i) {
    std::smatch m;
    const std::string log = slurp(dir / "log");
    if (std::regex_search(log, m, listening)) return std::stoi(m[1]);
    std::this_thread::sleep_for(50ms);
  }
  return 0;
}

TEST(ServeCli, RefusesUnsafeOrInvalidSettings) {
  int rc = 0;
  std::string out = run(std::string("env -u STENO_API_KEY ") + STENO_BINARY + " serve --host 0.0.0.0 --port 0", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("without an API key"), std::string::npos) << out;

  const fs::path config = fs::temp_directory_path() / "steno-http-test-config.json";
  std::ofstream(config) << R"({"prot": 8000})";
  out = run(std::string(STENO_BINARY) + " serve --config " + config.string(), &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("unknown setting 'prot'"), std::string::npos) << out;
  fs::remove(config);

  const std::string lm = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en/lm.arpa.gz";
  out = run(std::string(STENO_BINARY) + " serve --port 0 --decoding greedy --lm " + lm, &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("lm needs decoding beam"), std::string::npos) << out;
}

// The test set's reference transcript of one clip (tools/transcribe_ref.py's TSV: audio_filepath, tab, text), which
// tests/engine/bundled_model_test.cc holds `steno transcribe` to; "" when the clip is not there.
std::string reference_transcript(const fs::path& tsv, const std::string& clip) {
  std::ifstream in(tsv);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(clip + "\t", 0) == 0) return line.substr(clip.size() + 1);
  }
  return "";
}

// `steno serve` decodes the bundled model as `steno transcribe` does: by default with the model's own decoding
// (beam search, 4 hypotheses, its LM and lexicon), in lanes and in worker processes (which resolve it themselves),
// and so with the same settings given as flags. The clip is one whose transcript only the lexicon mends (greedy
// decoding says "answerfore" for "answer for", the LM alone "mistancer" for "must answer"), so that neither can
// pass.
class ServeBeam : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(ServeBeam, DecodesAsTranscribeDoes) {
  const auto [share, flags] = GetParam();
  // The clip's premise first: a failed assertion after the server starts would leave it running.
  const fs::path set = fs::path(STENO_TEST_DATA) / "testset/festival";
  const std::string clip = "audio/festival-test-0000011.flac";
  const std::string beam = reference_transcript(set / "reference_beam_lm_transcripts.tsv", clip);
  const std::string greedy = reference_transcript(set / "reference_transcripts.tsv", clip);
  ASSERT_FALSE(beam.empty());
  ASSERT_NE(beam, greedy) << "pick a clip whose transcript the lexicon changes";
  const fs::path dir = fs::temp_directory_path() / ("steno-http-beam-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string model = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en/";
  std::string args = std::string("--port 0 --share ") + share + " " + flags;
  for (const auto& [name, file] : {std::pair{"LM", "lm.arpa.gz"}, std::pair{"WORDS", "words.txt.gz"}})
    if (const size_t at = args.find(name); at != std::string::npos)
      args.replace(at, std::string_view(name).size(), model + file);
  const int port = start_serve(dir, args);
  ASSERT_GT(port, 0) << slurp(dir / "log");
  const CurlResult r =
      curl(static_cast<uint16_t>(port), "/v1/audio/transcriptions", "-F 'file=@" + (set / clip).string() + "'");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body, nullptr, false)["text"], beam) << args << ": " << r.body;
  kill(std::stoi(slurp(dir / "pid")), SIGTERM);
  for (int i = 0; i < 200 && slurp(dir / "rc").empty(); ++i) std::this_thread::sleep_for(50ms);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Modes, ServeBeam,
                         ::testing::Values(std::pair{"lanes", ""}, std::pair{"processes", ""},
                                           std::pair{"processes", "--lm LM --beam-size 4 --lexicon WORDS"}));

TEST(ServeCli, ServesThenDrainsOnSigterm) {
  const fs::path dir = fs::temp_directory_path() / ("steno-http-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  // The file sets the port to 1 (privileged, would fail); the flag overrides it with 0 (any free port).
  std::ofstream(dir / "config.json") << R"({"port": 1, "max_batch": 4, "max_queue_delay_ms": 5})";
  const int port = start_serve(dir, "--config " + (dir / "config.json").string() + " --port 0");
  ASSERT_GT(port, 0) << slurp(dir / "log");
  const pid_t pid = std::stoi(slurp(dir / "pid"));

  const CurlResult r = curl(static_cast<uint16_t>(port), "/v1/audio/transcriptions",
                            "-F 'file=@" + test_audio(kClip) + "' -F model=steno-tdt-small-en");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body, nullptr, false)["text"], kClipTranscript) << r.body;

  // A request in flight when SIGTERM arrives is still answered.
  Form form;
  form.file = read_file(test_audio("test-0000005.flac"));
  HttpClient client(static_cast<uint16_t>(port));
  const std::string body = form.body();
  client.send_raw("POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: " + form.content_type() +
                  "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  std::this_thread::sleep_for(20ms);  // long enough for the server to read it, shorter than transcribing it
  kill(pid, SIGTERM);
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200) << response->body;

  std::string rc;
  for (int i = 0; i < 200 && rc.empty(); ++i) {
    rc = slurp(dir / "rc");
    if (rc.empty()) std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(rc, "0\n") << slurp(dir / "log");
  EXPECT_NE(slurp(dir / "log").find("SIGTERM received"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace steno::testing
