#include "fake_service.h"

#include <thread>

#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"
#include "steno/ops/context.h"
#include "serve/audio_input.h"

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

std::vector<serve::ModelInfo> FakeService::models() const {
  serve::ModelInfo m;
  m.name = kModel;
  m.aliases = {"whisper-1", "default"};
  m.platform = "steno_fastconformer_tdt";
  m.device = "cpu";
  m.share = "lanes";
  m.executors = 1;
  m.max_batch_size = 1;
  m.max_audio_seconds = max_audio_seconds_;
  return {m};
}

std::vector<serve::ModelStatsSnapshot> FakeService::statistics(const std::vector<std::string>& models) const {
  std::vector<serve::ModelStatsSnapshot> out;
  for (const std::string& name : models) {
    serve::ModelStatsSnapshot s;
    s.name = name;
    out.push_back(std::move(s));
  }
  return out;
}

void FakeService::submit(serve::Submission s, serve::AnswerFn answer) {
  serve::TranscriptionResponse out;
  try {
    out.model = serve::resolve_model(*this, s.model, s.default_model_allowed).name;
    if (s.refused) throw *s.refused;
    serve::DecodedInput in;
    try {
      in = serve::decode_input(s.audio, max_audio_seconds_);
    } catch (const Error& e) {
      throw serve::serve_error(e, s.audio_field);
    }
    out.audio_seconds = static_cast<double>(in.pcm.size()) / 16000.0;
    std::optional<serve::TranscriptionResponse> forced;
    {
      std::lock_guard lock(mu_);
      seen_.push_back({s.id, out.model, s.fault, in.pcm.size(), s.priority, s.deadline != serve::Clock::time_point::max()});
      forced = forced_;
      if (!forced && mode_ == Mode::kHold) {
        held_.push_back({std::move(answer), s.cancelled, out.audio_seconds});
        return;
      }
      out.warnings = warnings_;
    }
    if (forced) {
      forced->model = out.model;
      return answer(*forced);
    }
    out.batch_size = 1;
    out.durations.compute_ms = 1.0;
    out.durations.queue_ms = 0.5;
    out.transcript = mode_ == Mode::kTranscribe ? transcribe_with_bundled_model(in.pcm) : canned(out.audio_seconds);
  } catch (const serve::ServeError& e) {
    out.outcome = e.outcome();
    out.message = e.what();
    out.param = e.param();
    out.retry_after_s = e.retry_after_s();
  }
  answer(std::move(out));
}

void FakeService::set_warnings(std::vector<std::string> warnings) {
  std::lock_guard lock(mu_);
  warnings_ = std::move(warnings);
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
      for (const Held& h : held_)
        if (h.cancelled && h.cancelled->load()) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void FakeService::release_held(serve::Outcome outcome) {
  std::vector<Held> held;
  {
    std::lock_guard lock(mu_);
    held.swap(held_);
  }
  for (Held& h : held) {
    serve::TranscriptionResponse resp;
    resp.outcome = outcome;
    resp.model = kModel;
    if (outcome == serve::Outcome::kOk) {
      resp.transcript = canned(h.audio_seconds);
      resp.audio_seconds = h.audio_seconds;
      resp.batch_size = 1;
    } else {
      resp.message = "released by the test";
    }
    h.answer(std::move(resp));
  }
}

std::vector<FakeService::Seen> FakeService::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

}  // namespace steno::testing
