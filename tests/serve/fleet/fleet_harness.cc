#include "fleet_harness.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <set>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "../child_processes.h"
#include "../../cli_util.h"
#include "steno/audio/decode.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string audio_dir() { return std::string(STENO_TEST_DATA) + "/testset/espeak/audio/"; }

std::string clip_name(int i) {
  char name[32];
  std::snprintf(name, sizeof name, "test-%07d.flac", i);
  return audio_dir() + name;
}

// 16-bit PCM mono WAV at 16 kHz.
void write_wav(const fs::path& path, const std::vector<float>& samples) {
  std::ofstream out(path, std::ios::binary);
  const auto put32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  const auto put16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  const auto data_bytes = static_cast<uint32_t>(samples.size() * 2);
  out.write("RIFF", 4);
  put32(36 + data_bytes);
  out.write("WAVEfmt ", 8);
  put32(16);
  put16(1);
  put16(1);
  put32(16000);
  put32(32000);
  put16(2);
  put16(16);
  out.write("data", 4);
  put32(data_bytes);
  for (float s : samples)
    put16(static_cast<uint16_t>(static_cast<int16_t>(std::lround(std::clamp(s, -1.0f, 1.0f) * 32767))));
}

// Clips written by this test process, removed when it exits.
struct ClipDir {
  fs::path path = fs::temp_directory_path() / ("steno-fleet-clips-" + std::to_string(getpid()));
  ClipDir() { fs::create_directories(path); }
  ~ClipDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::vector<Clip> with_references(std::vector<std::string> paths) {
  std::string cmd = steno_binary() + " transcribe --format text";
  for (const auto& p : paths) cmd += " '" + p + "'";
  int rc = 0;
  const std::string out = run(cmd + " 2>/dev/null", &rc);
  if (rc != 0) throw std::runtime_error("steno transcribe failed: " + out);
  std::map<std::string, std::string> by_path;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) by_path[line.substr(0, tab)] = line.substr(tab + 1);
  }
  std::vector<Clip> clips;
  for (const auto& p : paths) {
    if (!by_path.count(p)) throw std::runtime_error("steno transcribe gave no transcript for " + p + ": " + out);
    clips.push_back({p, by_path[p]});
  }
  return clips;
}

}  // namespace

FleetServer::FleetServer(const std::string& args) {
  static int counter = 0;
  dir_ = fs::temp_directory_path() / ("steno-fleet-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter));
  fs::create_directories(dir_);
  // The subshell records the server's pid and, once it exits, its exit status.
  std::string cmd = "(";
  cmd += steno_binary();
  cmd += " --log-level info serve --port 0 " + args;
  cmd += " 2>" + (dir_ / "log").string();
  cmd += " & echo $! > " + (dir_ / "pid").string();
  cmd += "; wait $!; echo $? > " + (dir_ / "rc").string() + ") &";
  if (std::system(cmd.c_str()) != 0) return;
  const std::regex listening("on http://127\\.0\\.0\\.1:([0-9]+)");
  for (int i = 0; i < 1200 && port_ == 0; ++i) {  // up to 60 s: every worker loads the model first
    std::smatch m;
    const std::string text = log();
    if (std::regex_search(text, m, listening)) {
      port_ = std::stoi(m[1]);
    } else {
      if (fs::exists(dir_ / "rc") && !slurp(dir_ / "rc").empty()) break;  // it exited
      std::this_thread::sleep_for(50ms);
    }
  }
  const std::string pid_text = slurp(dir_ / "pid");
  if (!pid_text.empty()) pid_ = std::stoi(pid_text);
}

FleetServer::~FleetServer() {
  if (!stopped_ && pid_ > 0 && process_exists(pid_)) {
    ::kill(pid_, SIGKILL);
    for (int i = 0; i < 100 && slurp(dir_ / "rc").empty(); ++i) std::this_thread::sleep_for(50ms);
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string FleetServer::log() const { return slurp(dir_ / "log"); }

int FleetServer::stop(int timeout_s) {
  stopped_ = true;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < timeout_s * 20; ++i) {
    const std::string rc = slurp(dir_ / "rc");
    if (!rc.empty()) return std::stoi(rc);
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

std::vector<pid_t> FleetServer::workers() const { return child_processes(pid_); }

std::string FleetServer::metrics() const { return curl(port(), "/metrics", "").body; }

bool FleetServer::wait_for_workers(int n, int timeout_s) const {
  for (int i = 0; i < timeout_s * 10; ++i) {
    if (metric_sum(metrics(), "steno_workers_up") == n && static_cast<int>(workers().size()) == n) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

double metric_sum(const std::string& text, const std::string& family, const std::string& label) {
  double sum = 0;
  bool found = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(family + "{", 0) != 0) continue;
    const size_t end = line.find('}');
    if (end == std::string::npos || (!label.empty() && line.substr(0, end).find(label) == std::string::npos)) continue;
    sum += std::stod(line.substr(end + 1));
    found = true;
  }
  return found ? sum : -1;
}

const std::vector<Clip>& short_clips() {
  static const std::vector<Clip> clips = [] {
    std::vector<std::string> paths;
    for (int i = 0; i < 8; ++i) paths.push_back(clip_name(i));
    return with_references(paths);
  }();
  return clips;
}

const std::vector<Clip>& long_clips() {
  static ClipDir dir;
  static const std::vector<Clip> clips = [] {
    std::vector<std::string> paths;
    const std::vector<float> gap(4800, 0.0f);  // 0.3 s of silence between the joined clips
    for (int c = 0; c < 4; ++c) {
      std::vector<float> joined;
      for (int k = 0; k < 6; ++k) {
        const audio::DecodedAudio a = audio::load_audio_file(clip_name(8 + 6 * c + k));
        joined.insert(joined.end(), a.samples.begin(), a.samples.end());
        joined.insert(joined.end(), gap.begin(), gap.end());
      }
      const fs::path p = dir.path / ("joined-" + std::to_string(c) + ".wav");
      write_wav(p, joined);
      paths.push_back(p.string());
    }
    return with_references(paths);
  }();
  return clips;
}

const std::string& conversation_clip() {
  static const std::string path = std::string(STENO_SOURCE_DIR) + "/tests/data/diar-testset/conv00.flac";
  return path;
}

const std::string& conversation_rttm() {
  static const std::string rttm = [] {
    int rc = 0;
    std::string out =
        run(std::string(STENO_BINARY) + " diarize --threads 1 '" + conversation_clip() + "' 2>/dev/null", &rc);
    EXPECT_EQ(rc, 0) << out;
    return out;
  }();
  return rttm;
}

ClientResponse diarize_rttm(uint16_t port, const std::string& clip_path, const Headers& extra) {
  Form form;
  form.fields = {{"response_format", "rttm"}};
  form.file = read_file(clip_path);
  form.filename = std::filesystem::path(clip_path).filename().string();
  Headers headers = {{"Content-Type", form.content_type()}};
  headers.insert(headers.end(), extra.begin(), extra.end());
  return HttpClient(port, std::chrono::seconds(120)).request("POST", "/v1/audio/diarizations", form.body(), headers);
}

Answer transcribe(uint16_t port, const std::string& clip_path, const Headers& extra, int timeout_s) {
  Form form;
  form.file = read_file(clip_path);
  Headers headers = {{"Content-Type", form.content_type()}};
  headers.insert(headers.end(), extra.begin(), extra.end());
  HttpClient client(port, std::chrono::seconds(timeout_s));
  const ClientResponse r = client.request("POST", "/v1/audio/transcriptions", form.body(), headers);
  Answer a;
  a.status = r.status;
  a.request_id = r.header("X-Request-Id");
  const auto json = nlohmann::json::parse(r.body, nullptr, false);
  if (json.is_discarded()) {
    a.text = r.body;
  } else if (r.status == 200) {
    a.text = json.value("text", "");
  } else if (json.contains("error") && json["error"].is_object()) {
    a.text = json["error"].value("message", r.body);
  } else {
    a.text = r.body;
  }
  return a;
}

int completions_logged(const std::string& log, const std::string& id) {
  const std::string needle = "request id=" + id + " ";
  int n = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

std::vector<Answer> send_all(const FleetServer& server, const std::vector<Sent>& sent) {
  std::vector<std::future<Answer>> futures;
  for (const Sent& s : sent)
    futures.push_back(
        std::async(std::launch::async, [&server, &s] { return transcribe(server.port(), s.clip->path, s.headers); }));
  std::vector<Answer> answers;
  for (auto& f : futures) answers.push_back(f.get());
  return answers;
}

void expect_served_once(const FleetServer& server, const std::vector<Sent>& sent, const std::vector<Answer>& answers,
                        size_t skip) {
  const std::string log = server.log();
  std::set<std::string> ids;
  for (size_t i = 0; i < answers.size(); ++i) {
    EXPECT_TRUE(ids.insert(answers[i].request_id).second) << "request id " << answers[i].request_id << " twice";
    EXPECT_EQ(completions_logged(log, answers[i].request_id), 1) << answers[i].request_id;
    if (i == skip) continue;
    EXPECT_EQ(answers[i].status, 200) << i << ": " << answers[i].text;
    EXPECT_EQ(answers[i].text, sent[i].clip->transcript) << i;
  }
}

bool wait_for_completions(const FleetServer& server, int n, int timeout_s) {
  for (int i = 0; i < timeout_s * 100; ++i) {
    const std::string log = server.log();
    int ok = 0;
    for (size_t at = log.find("outcome=ok"); at != std::string::npos; at = log.find("outcome=ok", at + 1)) ++ok;
    if (ok >= n) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace steno::testing
