// A TranscriptionService for the HTTP tests, independent of the real inference core: it transcribes with the
// real engine synchronously (the bundled model), answers a canned transcript, holds requests until the test
// releases them (for cancellation and shutdown tests), or answers a forced rejection.
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

  void submit(std::unique_ptr<serve::TranscriptionRequest> request) override;
  std::vector<std::string> models() const override { return {kModel}; }
  bool ready() const override { return ready_; }
  void drain() override { release_held(serve::Outcome::kShuttingDown); }
  std::string render_metrics() const override { return "steno_fake_metric 1\n"; }

  // ---- test controls ----
  void set_mode(Mode m) { mode_ = m; }
  void set_ready(bool r) { ready_ = r; }
  // Every later request is answered with this outcome (and message, and retry hint).
  void force_outcome(serve::Outcome o, std::string message = {}, double retry_after_s = 0);
  // Waits until `n` requests are held.
  bool wait_held(size_t n, std::chrono::milliseconds timeout);
  // Waits until a held request's cancelled flag is set.
  bool wait_cancelled(std::chrono::milliseconds timeout);
  // Completes every held request (with a canned transcript for kOk).
  void release_held(serve::Outcome outcome = serve::Outcome::kOk);

  struct Seen {
    std::string id, model;
    size_t samples = 0;
    int priority = 0;
    bool has_deadline = false;
  };
  std::vector<Seen> seen() const;

  // The transcript kCanned answers: "hello world" in two words and two segments.
  static asr::Transcript canned(double audio_seconds);

 private:
  serve::TranscriptionResponse respond(const serve::TranscriptionRequest& r);

  std::atomic<Mode> mode_;
  std::atomic<bool> ready_{true};
  mutable std::mutex mu_;
  std::optional<serve::TranscriptionResponse> forced_;
  std::vector<std::unique_ptr<serve::TranscriptionRequest>> held_;
  std::vector<Seen> seen_;
};

// The bundled model's transcript of a PCM clip (what `steno transcribe` prints), computed once per clip size.
asr::Transcript transcribe_with_bundled_model(const std::vector<float>& pcm);

}  // namespace steno::testing
