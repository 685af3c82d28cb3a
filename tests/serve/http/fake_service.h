// A stand-in for the service contract (service.h) in the front ends' protocol tests, apart from the real inference
// core: it resolves model names and decodes audio as the core does (the same functions), then transcribes with
// the real engine synchronously (the bundled model), answers a canned transcript, holds requests until the test
// releases them (for cancellation and shutdown tests), or answers a forced failure. Tests of what the core counts
// use the real core (core_server.h).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "steno/serve/service.h"

namespace steno::testing {

class FakeService : public serve::TranscriptionService {
 public:
  enum class Mode { kTranscribe, kCanned, kHold };
  static constexpr const char* kModel = "steno-tdt-small-en";

  explicit FakeService(Mode mode = Mode::kCanned) : mode_(mode) {}
  ~FakeService() override { release_held(serve::Outcome::kShuttingDown); }

  void submit(serve::Submission submission, serve::AnswerFn answer) override;
  std::vector<serve::ModelInfo> models() const override;
  bool ready() const override { return ready_; }
  void drain() override { release_held(serve::Outcome::kShuttingDown); }
  std::vector<serve::ModelStatsSnapshot> statistics(const std::vector<std::string>& models) const override;
  std::string render_metrics() const override { return "steno_fake_metric 1\n"; }

  // ---- test controls ----
  void set_mode(Mode m) { mode_ = m; }
  void set_ready(bool r) { ready_ = r; }
  // Every later request is answered with this outcome (and message, and retry hint).
  void force_outcome(serve::Outcome o, std::string message = {}, double retry_after_s = 0);
  // The model's limit of seconds of audio (1200 by default).
  void set_max_audio_seconds(double s) { max_audio_seconds_ = s; }
  // Every later successful answer carries these warnings.
  void set_warnings(std::vector<std::string> warnings);
  // Waits until `n` requests are held.
  bool wait_held(size_t n, std::chrono::milliseconds timeout);
  // Waits until a held request's cancelled flag is set.
  bool wait_cancelled(std::chrono::milliseconds timeout);
  // Completes every held request (with a canned transcript for kOk).
  void release_held(serve::Outcome outcome = serve::Outcome::kOk);

  struct Seen {
    std::string id, model, fault;
    size_t samples = 0;
    int priority = 0;
    bool has_deadline = false;
  };
  std::vector<Seen> seen() const;

  // The transcript kCanned answers: "hello world" in two words and two segments.
  static asr::Transcript canned(double audio_seconds);

 private:
  struct Held {
    serve::AnswerFn answer;
    std::shared_ptr<std::atomic<bool>> cancelled;
    double audio_seconds = 0;
  };

  std::atomic<Mode> mode_;
  std::atomic<bool> ready_{true};
  std::atomic<double> max_audio_seconds_{1200};
  mutable std::mutex mu_;
  std::optional<serve::TranscriptionResponse> forced_;
  std::vector<std::string> warnings_;
  std::vector<Held> held_;
  std::vector<Seen> seen_;
};

// The bundled model's transcript of a PCM clip (what `steno transcribe` prints), computed once per clip size.
asr::Transcript transcribe_with_bundled_model(const std::vector<float>& pcm);

}  // namespace steno::testing
