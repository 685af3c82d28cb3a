// What the fleet tests share: a real `steno serve` process (its log, port, pid, worker processes found in /proc),
// real HTTP clients, and the reference transcripts `steno transcribe` gives for the clips they send (the bundled
// test clips, and longer clips joined from them so that batches take long enough to be interrupted).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "test_client.h"

namespace steno::testing {

// `steno --log-level info serve --port 0 ARGS` in the background (info: one completion line per request); killed
// (SIGKILL) by the destructor if still running. Beside tests/serve_process.h's ServeProcess it sees the worker
// processes; a name of its own, since two classes of one name in one test program break the one-definition rule.
class FleetServer {
 public:
  explicit FleetServer(const std::string& args);
  ~FleetServer();
  FleetServer(const FleetServer&) = delete;
  FleetServer& operator=(const FleetServer&) = delete;

  bool started() const { return port_ > 0; }
  uint16_t port() const { return static_cast<uint16_t>(port_); }
  pid_t pid() const { return pid_; }
  std::string log() const;
  // SIGTERM, then the exit status (-1 if it did not exit within `timeout_s`).
  int stop(int timeout_s = 60);
  // Its live child processes (the workers), from /proc.
  std::vector<pid_t> workers() const;
  // Polls until `n` workers are up per /metrics (steno_workers_up) and /proc; false after `timeout_s`.
  bool wait_for_workers(int n, int timeout_s = 30) const;
  std::string metrics() const;

 private:
  std::filesystem::path dir_;
  pid_t pid_ = 0;
  int port_ = 0;
  bool stopped_ = false;
};

// The sum of every series of a family whose labels contain `label` (e.g. reason="signal").
double metric_sum(const std::string& text, const std::string& family, const std::string& label = "");

struct Clip {
  std::string path;
  std::string transcript;  // `steno transcribe`'s
};
// The clips and their reference transcripts: 8 bundled test clips and 4 clips of about 12 s joined from others.
const std::vector<Clip>& short_clips();
const std::vector<Clip>& long_clips();

struct Answer {
  int status = 0;
  std::string text;        // the transcript (200) or the error message
  std::string request_id;  // X-Request-Id
};
// POST /v1/audio/transcriptions with the clip, waiting up to `timeout_s`.
Answer transcribe(uint16_t port, const std::string& clip_path, const Headers& extra = {}, int timeout_s = 120);
// A diarized conversation (tests/data/diar-testset/conv00.flac) and `steno diarize`'s RTTM of it with one thread, as
// each diarizer worker runs (another thread count's summation order can move a segment edge on the threshold).
const std::string& conversation_clip();
const std::string& conversation_rttm();
// POST /v1/audio/diarizations of the clip with response_format=rttm, waiting up to 120 s.
ClientResponse diarize_rttm(uint16_t port, const std::string& clip_path, const Headers& extra = {});

// How many "request id=<id> " completion lines the server logged for `id` (the completer logs each exactly once).
int completions_logged(const std::string& log, const std::string& id);

bool process_exists(pid_t pid);

// A request a test sends: the clip and its extra headers.
struct Sent {
  const Clip* clip;
  Headers headers;
};
// Sends them all at once, one connection each; the answers in order.
std::vector<Answer> send_all(const FleetServer& server, const std::vector<Sent>& sent);
// Every answer is the clip's transcript (but the one at `skip`), every request id distinct and completed exactly
// once by the server (its completion log lines).
void expect_served_once(const FleetServer& server, const std::vector<Sent>& sent, const std::vector<Answer>& answers,
                        size_t skip = SIZE_MAX);
// Waits until the server has logged `n` successful completions; false after `timeout_s`.
bool wait_for_completions(const FleetServer& server, int n, int timeout_s);

}  // namespace steno::testing
