// Speaker-attributed transcripts over OpenAI's transcription route, as a user runs them: the real `steno serve`
// with the bundled ASR model and diarizer, curl over loopback, one held-out conversation. diarized_json's segments
// and verbose_json's words (diarize=true) must be exactly what `steno transcribe --diarize` prints for the file
// (the same models, the same join of words and speakers); known_speaker_names[] relabel speakers in the order they
// first speak; what steno cannot honour is a 400 naming its field.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_util.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kAsr = fs::path(STENO_SOURCE_DIR) / "models" / "steno-tdt-small-en";
const fs::path kDiarizer = fs::path(STENO_SOURCE_DIR) / "models" / "steno-sortformer-small";
const fs::path kConversation = fs::path(STENO_TEST_DATA) / "diar-testset" / "conv01.flac";  // 3 speakers, 23 s

// `steno serve --port 0` in the background (logging every request), its port read from its log; SIGTERM on
// destruction.
class Server {
 public:
  explicit Server(const std::string& args) : dir_(fs::temp_directory_path() / ("steno_speakers_" +
                                                                                 std::to_string(getpid()))) {
    fs::create_directories(dir_);
    std::string cmd = "(";
    cmd += std::string(STENO_BINARY) + " --log-level info serve --port 0 " + args;
    cmd += " 2>" + (dir_ / "log").string() + " & echo $! > " + (dir_ / "pid").string() + "; wait $!) &";
    if (std::system(cmd.c_str()) != 0) return;
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      const std::string log = slurp(dir_ / "log");
      if (const size_t at = log.find("on http://127.0.0.1:"); at != std::string::npos)
        port_ = std::atoi(log.c_str() + at + 20);
      else
        usleep(50000);
    }
  }
  ~Server() {
    pid_t pid = 0;
    std::ifstream(dir_ / "pid") >> pid;
    if (pid > 0) {
      kill(pid, SIGTERM);
      for (int i = 0; i < 200 && kill(pid, 0) == 0; ++i) usleep(50000);
    }
    fs::remove_all(dir_);
  }
  int port() const { return port_; }
  std::string log() const { return slurp(dir_ / "log"); }

  // POST /v1/audio/transcriptions with the conversation and `fields` (curl -F arguments): status and body.
  std::pair<int, std::string> transcribe(const std::string& fields) const {
    int code = 0;
    const std::string out = run("curl -s -w '\\n%{http_code}' http://127.0.0.1:" + std::to_string(port_) +
                                    "/v1/audio/transcriptions -F file=@" + kConversation.string() + " " + fields,
                                &code);
    const size_t nl = out.rfind('\n');
    return {nl == std::string::npos ? 0 : std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
  }

 private:
  fs::path dir_;
  int port_ = 0;
};

json parsed(const std::pair<int, std::string>& answer) {
  EXPECT_EQ(answer.first, 200) << answer.second;
  const json j = json::parse(answer.second, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << answer.second;
  return j;
}

TEST(ServeSpeakers, DiarizedJsonAndVerboseWordsAreStenoTranscribeDiarizes) {
  int code = 0;
  const std::string cli = run(std::string(STENO_BINARY) + " --log-level error transcribe --diarize -f json -m " +
                                  kAsr.string() + " --diarizer " + kDiarizer.string() + " " + kConversation.string(),
                              &code);
  ASSERT_EQ(code, 0) << cli;
  const json want = json::parse(cli)["files"][0];
  ASSERT_GT(want["segments"].size(), 2u) << cli;

  const Server server("--model " + kAsr.string() + " --diarizer " + kDiarizer.string());
  ASSERT_GT(server.port(), 0) << server.log();

  // OpenAI's diarizing model name, its natural format, and the chunking an SDK sends for long audio.
  const json diarized = parsed(server.transcribe("-F model=gpt-4o-transcribe-diarize -F response_format=diarized_json "
                                                 "-F chunking_strategy=auto"));
  EXPECT_EQ(diarized["task"], "transcribe");
  EXPECT_EQ(diarized["text"], want["text"]);
  EXPECT_NEAR(diarized["duration"].get<double>(), want["duration"].get<double>(), 1e-3);
  EXPECT_EQ(diarized["usage"]["type"], "duration");
  ASSERT_EQ(diarized["segments"].size(), want["segments"].size()) << diarized.dump();
  for (size_t i = 0; i < want["segments"].size(); ++i) {
    const json& got = diarized["segments"][i];
    const json& turn = want["segments"][i];
    EXPECT_EQ(got["type"], "transcript.text.segment");
    EXPECT_EQ(got["id"], "seg_" + std::to_string(i));
    EXPECT_EQ(got["speaker"], turn["speaker"]) << i;
    EXPECT_EQ(got["text"], turn["text"]) << i;
    EXPECT_DOUBLE_EQ(got["start"].get<double>(), turn["start"].get<double>()) << i;
    EXPECT_DOUBLE_EQ(got["end"].get<double>(), turn["end"].get<double>()) << i;
  }

  // NeMo-Speech.cpp's form: verbose_json words (and segments, the speaker turns) with speakers.
  const json verbose = parsed(server.transcribe("-F response_format=verbose_json -F diarize=true "
                                                "-F 'timestamp_granularities[]=word' "
                                                "-F 'timestamp_granularities[]=segment'"));
  ASSERT_EQ(verbose["words"].size(), want["words"].size()) << verbose.dump();
  for (size_t i = 0; i < want["words"].size(); ++i) {
    EXPECT_EQ(verbose["words"][i]["word"], want["words"][i]["text"]) << i;
    EXPECT_EQ(verbose["words"][i]["speaker"], want["words"][i]["speaker"]) << i;
  }
  ASSERT_EQ(verbose["segments"].size(), want["segments"].size());
  for (size_t i = 0; i < want["segments"].size(); ++i) {
    EXPECT_EQ(verbose["segments"][i]["speaker"], want["segments"][i]["speaker"]) << i;
    EXPECT_EQ(verbose["segments"][i]["text"], want["segments"][i]["text"]) << i;
  }
  // Without diarize, verbose_json is unchanged: no speakers.
  const json plain = parsed(server.transcribe("-F response_format=verbose_json -F 'timestamp_granularities[]=word'"));
  EXPECT_FALSE(plain["words"][0].contains("speaker"));

  // Names go to speakers in the order they first speak; the speakers beyond the list keep steno's labels.
  std::map<std::string, std::string> expected;  // steno's label -> the label with names
  const std::vector<std::string> names = {"agent", "customer"};
  for (const json& turn : want["segments"])
    if (const std::string s = turn["speaker"]; !expected.contains(s))
      expected[s] = expected.size() < names.size() ? names[expected.size()] : s;
  ASSERT_GE(expected.size(), 3u) << "the conversation's third speaker must go unnamed";
  const json named = parsed(server.transcribe("-F response_format=diarized_json -F 'known_speaker_names[]=agent' "
                                              "-F 'known_speaker_names[]=customer'"));
  ASSERT_EQ(named["segments"].size(), want["segments"].size());
  for (size_t i = 0; i < want["segments"].size(); ++i)
    EXPECT_EQ(named["segments"][i]["speaker"], expected.at(want["segments"][i]["speaker"])) << i;

  // What steno cannot honour, with a diarizer served.
  auto refused = [&](const std::string& fields, const std::string& param, const std::string& fragment) {
    const auto [status, body] = server.transcribe(fields);
    EXPECT_EQ(status, 400) << fields << ": " << body;
    const json e = json::parse(body, nullptr, false);
    ASSERT_TRUE(e.contains("error")) << body;
    EXPECT_EQ(e["error"]["param"], param) << body;
    EXPECT_NE(e["error"]["message"].get<std::string>().find(fragment), std::string::npos) << body;
  };
  refused("-F response_format=diarized_json -F 'known_speaker_names[]=agent' "
          "-F 'known_speaker_references[]=data:,'",
          "known_speaker_references[]", "cannot match voices");
  refused("-F response_format=diarized_json -F 'timestamp_granularities[]=word'", "timestamp_granularities[]",
          "diarized_json");
  refused("-F model=diarizer -F response_format=diarized_json", "model", "answers diarization, not transcription");
  EXPECT_NE(server.log().find("model=steno-sortformer-small outcome=ok"), std::string::npos)
      << "the diarizer ran as a request of its own model";
}

}  // namespace
}  // namespace steno::testing
