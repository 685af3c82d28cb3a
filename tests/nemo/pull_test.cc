// `steno model pull` against a stand-in for the Hugging Face Hub on loopback (hub_fixture.py, the Hub's URL layout
// serving tests/data/nemo-tiny/model.nemo); nothing here reaches the internet. The pulled model transcribes as the
// converter's directory does; a connection cut mid-file is resumed with a Range request; a part file left by an
// earlier run is resumed; a SHA-256 that is not the Hub's is refused and leaves nothing; an endpoint nobody listens
// on fails at once, naming the URL.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../cli_util.h"
#include "nemo_test_util.h"

namespace steno::nemo::testing {
namespace {

namespace fs = std::filesystem;
using steno::testing::run;
using steno::testing::slurp;

const fs::path kNemo = fs::path(STENO_TEST_DATA) / "nemo-tiny/model.nemo";
const fs::path kConvertedAuto = fs::path(STENO_BINARY_DIR) / "testdata/nemo-import/nemo-tiny-auto";
const fs::path kFixture = fs::path(STENO_SOURCE_DIR) / "tests/nemo/hub_fixture.py";
const std::string kSteno = STENO_BINARY;
// A test's steno sees neither a proxy nor a real token.
const std::string kCleanEnv =
    "env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy -u HF_TOKEN "
    "-u HF_ENDPOINT";

std::string clip() { return (fs::path(STENO_TEST_DATA) / "nemo-tiny/clip2_9.0s.wav").string(); }

class Pull : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("steno_pull_test_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
    cache_ = tmp_ / "cache";
  }
  void TearDown() override {
    if (server_ > 0) {
      ::kill(server_, SIGTERM);
      ::waitpid(server_, nullptr, 0);
    }
    fs::remove_all(tmp_);
  }

  // Starts the fixture Hub with these extra arguments and waits for its port.
  void start_hub(std::vector<std::string> extra) {
    std::vector<std::string> args = {STENO_PYTHON,   kFixture.string(), "--repo", "nvidia/tiny-tdt",
                                     "--file",       kNemo.string(),    "--log",  (tmp_ / "requests.jsonl").string(),
                                     "--port-file",  (tmp_ / "port").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = ::fork();
    ASSERT_GE(server_, 0);
    if (server_ == 0) {
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !fs::exists(tmp_ / "port"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(tmp_ / "port")) << "the fixture Hub did not start";
    hub_ = fmt::format("http://127.0.0.1:{}", slurp(tmp_ / "port"));
  }

  // Runs steno with this test's cache; stdout and stderr apart.
  std::string steno(const std::string& args, int* code, std::string* err, const std::string& env = "") {
    const fs::path err_file = tmp_ / "stderr.txt";
    const std::string out = run(fmt::format("({} STENO_CACHE_DIR={} {} {} {} 2>{})", kCleanEnv, cache_.string(), env,
                                            kSteno, args, err_file.string()),
                                code);
    *err = slurp(err_file);
    return out;
  }

  // The requests the fixture Hub received, in order.
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(tmp_ / "requests.jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::vector<nlohmann::json> downloads() const {
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& r : requests())
      if (r["path"].get<std::string>().find("/resolve/") != std::string::npos) out.push_back(r);
    return out;
  }

  fs::path tmp_, cache_;
  pid_t server_ = -1;
  std::string hub_;
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// A connection cut after 1 MB: the pull resumes it in the same run with "Range: bytes=1000000-", and the model
// it imports transcribes exactly as the converter's directory does; the token goes along; a second pull finds it
// in the cache without downloading.
TEST_F(Pull, ResumesACutDownloadAndTranscribesLikeTheFile) {
  start_hub({"--name", "tiny-tdt.nemo", "--extra", "README.md", "--cut-after", "1000000"});
  int code = -1;
  std::string err;
  const std::string out =
      steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {}", hub_), &code, &err, "HF_TOKEN=hf_test_token");
  ASSERT_EQ(code, 0) << err;
  const fs::path dir = first_line(out);
  EXPECT_EQ(dir.filename(), "tiny-tdt");
  EXPECT_EQ(dir.parent_path().parent_path(), cache_ / "models");
  EXPECT_NE(err.find("broke off"), std::string::npos) << err;

  const std::vector<nlohmann::json> got = downloads();
  ASSERT_EQ(got.size(), 2u) << err;
  EXPECT_TRUE(got[0]["range"].is_null());
  EXPECT_EQ(got[1]["range"], "bytes=1000000-");
  for (const nlohmann::json& r : requests()) EXPECT_EQ(r["authorization"], "Bearer hf_test_token");
  EXPECT_EQ(requests()[0]["path"], "/api/models/nvidia/tiny-tdt/revision/main?blobs=true");

  // The same weights and tokenizer as the converter's directory, and the same transcript.
  for (const char* name : {"model.safetensors", "tokenizer.model"})
    EXPECT_TRUE(bytes_of((dir / name).string()) == bytes_of((kConvertedAuto / name).string())) << name;
  std::string err2;
  const std::string want =
      steno(fmt::format("transcribe --model {} {}", kConvertedAuto.string(), clip()), &code, &err2);
  ASSERT_EQ(code, 0) << err2;
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(steno(fmt::format("transcribe --model {} {}", dir.string(), clip()), &code, &err2), want);
  EXPECT_EQ(code, 0) << err2;
  EXPECT_TRUE(entries(cache_ / "downloads").empty());  // the checkpoint is not kept beside its model

  // Listed; pulled again, it is found in the cache (no second download).
  const std::string listed = steno("model list", &code, &err2);
  EXPECT_EQ(code, 0) << err2;
  const std::string sha = dir.parent_path().filename().string();
  EXPECT_NE(listed.find("tiny-tdt"), std::string::npos) << listed;
  EXPECT_NE(listed.find(sha.substr(0, 12)), std::string::npos) << listed;
  EXPECT_NE(listed.find("fastconformer_tdt"), std::string::npos) << listed;
  EXPECT_NE(listed.find("/nvidia/tiny-tdt/resolve/main/tiny-tdt.nemo"), std::string::npos) << listed;
  EXPECT_EQ(first_line(steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {}", hub_), &code, &err2)),
            dir.string());
  EXPECT_EQ(code, 0) << err2;
  EXPECT_NE(err2.find("in the cache already"), std::string::npos) << err2;
  EXPECT_EQ(downloads().size(), 2u);
}

// A part file left by an earlier run (the first 12345 bytes) is continued from where it stopped.
TEST_F(Pull, ResumesAnEarlierRunsPartFile) {
  start_hub({});
  int code = -1;
  std::string err;
  const std::string sum = run(fmt::format("sha256sum {}", kNemo.string()), &code);
  ASSERT_EQ(code, 0);
  const std::vector<uint8_t> bytes = bytes_of(kNemo.string());
  fs::create_directories(cache_ / "downloads");
  std::ofstream(cache_ / "downloads" / (sum.substr(0, 64) + ".part"), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), 12345);

  const std::string out = steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {}", hub_), &code, &err);
  ASSERT_EQ(code, 0) << err;
  const std::vector<nlohmann::json> got = downloads();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["range"], "bytes=12345-");
  const fs::path dir = first_line(out);
  EXPECT_EQ(dir.parent_path().filename(), sum.substr(0, 64));
  EXPECT_TRUE(bytes_of((dir / "model.safetensors").string()) ==
              bytes_of((kConvertedAuto / "model.safetensors").string()));
}

// The Hub's metadata states another SHA-256: the download is deleted and nothing is imported.
TEST_F(Pull, RefusesASha256Mismatch) {
  start_hub({"--lie-sha256"});
  int code = -1;
  std::string err;
  steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {}", hub_), &code, &err);
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("the download's SHA-256 is"), std::string::npos) << err;
  EXPECT_NE(err.find("nothing imported"), std::string::npos) << err;
  EXPECT_EQ(downloads().size(), 1u);
  EXPECT_TRUE(entries(cache_ / "models").empty());
  EXPECT_TRUE(entries(cache_ / "downloads").empty());
}

// Several .nemo files: refused with their names; --file picks one, --out imports it into a directory of one's own.
TEST_F(Pull, SeveralCheckpointsNeedFile) {
  start_hub({"--extra", "other.nemo"});
  int code = -1;
  std::string err;
  steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {}", hub_), &code, &err);
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("several .nemo files (model.nemo, other.nemo); choose one with --file"), std::string::npos)
      << err;
  EXPECT_TRUE(downloads().empty());

  const fs::path out = tmp_ / "pulled";
  steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {} --file model.nemo --out {}", hub_, out.string()), &code,
        &err);
  ASSERT_EQ(code, 0) << err;
  EXPECT_TRUE(bytes_of((out / "model.safetensors").string()) ==
              bytes_of((kConvertedAuto / "model.safetensors").string()));
  EXPECT_TRUE(entries(cache_ / "models").empty());

  steno(fmt::format("model pull nvidia/missing --hub-url {}", hub_), &code, &err);
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("not found on the Hub (HTTP 404)"), std::string::npos) << err;
}

// Metadata that is not the Hub's, and a file longer than the Hub says: clear refusals, nothing kept.
TEST_F(Pull, RefusesMalformedAnswers) {
  const fs::path body = tmp_ / "metadata.json";
  start_hub({"--metadata-body", body.string()});
  const std::string sha(64, 'a');
  const std::pair<std::string, std::string> cases[] = {
      {"<html>not json</html>", "not the Hub's model metadata (not a JSON object)"},
      {R"({"siblings": 5})", "no 'siblings' list"},
      {R"({"siblings": [{"rfilename": 3}]})", "a sibling without a file name"},
      {R"({"siblings": [{"rfilename": "a.nemo", "lfs": {"sha256": "xyz", "size": 1}}]})", "malformed lfs.sha256"},
      {fmt::format(R"({{"siblings": [{{"rfilename": "a.nemo", "lfs": {{"sha256": "{}", "size": -1}}}}]}})", sha),
       "malformed lfs.size"},
      {R"({"siblings": [{"rfilename": "../../etc/x.nemo"}]})", "bad file name '../../etc/x.nemo'"},
      {R"({"siblings": [{"rfilename": "README.md"}]})", "has no .nemo files (none)"},
      {fmt::format("{{\"siblings\": [], \"pad\": \"{}\"}}", std::string(17u << 20, 'x')), "over 16 MiB"},
  };
  for (const auto& [text, message] : cases) {
    std::ofstream(body, std::ios::trunc) << text;
    int code = -1;
    std::string err;
    steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {}", hub_), &code, &err);
    EXPECT_EQ(code, 1) << text.substr(0, 100) << ": " << err;
    EXPECT_NE(err.find(message), std::string::npos) << text.substr(0, 100) << ": " << err;
  }
  EXPECT_TRUE(downloads().empty());
  EXPECT_TRUE(entries(cache_ / "models").empty());
}

TEST_F(Pull, RefusesAFileLongerThanTheHubSays) {
  start_hub({"--lie-size", "1000"});
  int code = -1;
  std::string err;
  steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {}", hub_), &code, &err);
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("the server sent more than the 1000 bytes the Hub's metadata gives"), std::string::npos) << err;
  EXPECT_TRUE(entries(cache_ / "models").empty());
}

// Nobody listens on the endpoint: a prompt failure that says the Hub cannot be reached and names the URL.
TEST_F(Pull, UnreachableHubFailsFast) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);  // bound, never listened on, closed: a port that refuses connections
  const std::string url = fmt::format("http://127.0.0.1:{}", ntohs(addr.sin_port));

  int code = -1;
  std::string err;
  const auto start = std::chrono::steady_clock::now();
  steno(fmt::format("model pull nvidia/tiny-tdt --hub-url {}", url), &code, &err);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(code, 1) << err;
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(err.find(fmt::format("cannot reach the Hugging Face Hub at {}", url)), std::string::npos) << err;
  EXPECT_TRUE(entries(cache_ / "models").empty());
}

}  // namespace
}  // namespace steno::nemo::testing
