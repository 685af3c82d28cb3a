#include "fake_service.h"

#include <thread>

#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"
#include "steno/ops/context.h"

namespace steno::testing {

asr::Transcript transcribe_with_bundled_model(const std::vector<float>& pcm) {
  // One model and one context for the whole test binary; the engine is not re-entrant on one context.
  static std::mutex mu;
  static std::shared_ptr<const asr::AsrModel> model =
      asr::AsrModel::load(std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en");
  static ops::Context ctx = ops::Context::cpu(2);
  std::lock_guard lock(mu);
  asr::Transcriber transcriber(model, ctx);
  return transcriber.transcribe({std::span<const float>(pcm)}).front();
}

asr::Transcript FakeService::canned(double audio_seconds) {
  asr::Transcript t;
  t.text = "hello world";
  t.words = {{"hello", 0.08, 0.48}, {"world", 0.64, 1.2}};
  t.segments = {{"hello", 0.08, 0.48}, {"world", 0.64, 1.2}};
  t.audio_seconds = audio_seconds;
  return t;
}

serve::TranscriptionResponse FakeService::respond(const serve::TranscriptionRequest& r) {
  serve::TranscriptionResponse out;
  out.batch_size = 1;
  out.durations.compute_ms = 1.0;
  out.durations.queue_ms = 0.5;
  if (mode_ == Mode::kTranscribe)
    out.transcript = transcribe_with_bundled_model(r.pcm);
  else
    out.transcript = canned(static_cast<double>(r.pcm.size()) / 16000.0);
  return out;
}

void FakeService::submit(std::unique_ptr<serve::TranscriptionRequest> request) {
  std::optional<serve::TranscriptionResponse> forced;
  {
    std::lock_guard lock(mu_);
    seen_.push_back({request->id, request->model, request->pcm.size(), request->priority,
                     request->deadline != serve::Clock::time_point::max()});
    forced = forced_;
    if (!forced && mode_ == Mode::kHold) {
      held_.push_back(std::move(request));
      return;
    }
  }
  request->done(forced ? *forced : respond(*request));
}

void FakeService::force_outcome(serve::Outcome o, std::string message, double retry_after_s) {
  std::lock_guard lock(mu_);
  serve::TranscriptionResponse r;
  r.outcome = o;
  r.message = std::move(message);
  r.retry_after_s = retry_after_s;
  forced_ = r;
}

bool FakeService::wait_held(size_t n, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard lock(mu_);
      if (held_.size() >= n) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

bool FakeService::wait_cancelled(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard lock(mu_);
      for (const auto& r : held_)
        if (r->cancelled->load()) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void FakeService::release_held(serve::Outcome outcome) {
  std::vector<std::unique_ptr<serve::TranscriptionRequest>> held;
  {
    std::lock_guard lock(mu_);
    held.swap(held_);
  }
  for (auto& r : held) {
    serve::TranscriptionResponse resp;
    resp.outcome = outcome;
    if (outcome == serve::Outcome::kOk) {
      resp.transcript = canned(static_cast<double>(r->pcm.size()) / 16000.0);
      resp.batch_size = 1;
    } else {
      resp.message = "released by the test";
    }
    r->done(std::move(resp));
  }
}

std::vector<FakeService::Seen> FakeService::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

}  // namespace steno::testing
