// A transcription that asks for speakers (Submission::diarizer) through the real inference core: the audio goes to
// the transcription model and the diarization model side by side (each runner waits for the other to be running:
// run one after the other, they would time out), one answer carries both, a failure of either is that answer, each
// request is counted under its own model, and a server without a diarizer refuses it. Stand-in runners: what is
// tested is the core's path, not the models (tests/diar/serve_speakers_test.cc runs the real ones).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>

#include "serve/inference_core.h"
#include "serve/lanes.h"
#include "steno/core/error.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;

class OutputRunner final : public BatchRunner {
 public:
  using Fn = std::function<BatchOutput(const std::vector<std::span<const float>>&)>;
  explicit OutputRunner(Fn fn) : fn_(std::move(fn)) {}
  BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings*) override { return fn_(clips); }

 private:
  Fn fn_;
};

// Two runners that each wait, up to 10 s, until the other is running too.
class Rendezvous {
 public:
  bool arrive() {
    std::unique_lock lock(mu_);
    ++arrived_;
    cv_.notify_all();
    return cv_.wait_for(lock, 10s, [&] { return arrived_ >= 2; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
};

struct Models {
  Rendezvous meet;
  bool diarizer_fails = false;
  std::atomic<int> together{0};  // runners that saw the other one running

  ModelSpec asr() {
    ModelSpec spec = lane_model("asr", 1, [this](int) {
      return std::make_unique<OutputRunner>([this](const auto& clips) {
        if (meet.arrive()) ++together;
        asr::Transcript t;
        t.text = "hello there";
        t.words = {{"hello", 0.0, 0.4}, {"there", 0.48, 0.8}};
        return BatchOutput(std::vector<asr::Transcript>(clips.size(), t));
      });
    });
    spec.batcher.max_queue_delay = 0us;
    return spec;
  }
  ModelSpec diarizer() {
    ModelSpec spec = lane_model("diar", 1, [this](int) {
      return std::make_unique<OutputRunner>([this](const auto& clips) {
        if (meet.arrive()) ++together;
        if (diarizer_fails) throw Error(ErrorCode::kInternal, "diarizer exploded");
        DiarizationResult d;
        d.num_speakers = 2;
        d.frame_seconds = 0.08;
        d.frames = 10;
        d.probs.assign(20, 0.5f);
        d.segments = {{1, 0.0, 0.8}};
        return BatchOutput(std::vector<DiarizationResult>(clips.size(), d));
      });
    });
    spec.info.task = "diarization";
    spec.batcher.max_queue_delay = 0us;
    return spec;
  }
};

Submission with_speakers() {
  Submission s;
  s.id = "both";
  s.model = "asr";
  s.diarizer = "";
  s.audio = PcmAudio{std::vector<float>(16000, 0.0f), 16000};
  return s;
}

// Submits and waits for the one answer; fails when it comes twice.
TranscriptionResponse answer_of(InferenceCore& core, Submission s) {
  auto answers = std::make_shared<std::atomic<int>>(0);
  auto promise = std::make_shared<std::promise<TranscriptionResponse>>();
  core.submit(std::move(s), [answers, promise](TranscriptionResponse r) {
    if (answers->fetch_add(1) == 0) promise->set_value(std::move(r));
  });
  auto future = promise->get_future();
  EXPECT_EQ(future.wait_for(30s), std::future_status::ready);
  core.drain();
  EXPECT_EQ(answers->load(), 1) << "answered more than once";
  return future.get();
}

TEST(SpeakersCore, BothModelsRunSideBySideAndOneAnswerCarriesBoth) {
  spdlog::set_level(spdlog::level::warn);
  Models m;
  InferenceCore core({m.asr(), m.diarizer()});
  const TranscriptionResponse r = answer_of(core, with_speakers());
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(m.together.load(), 2) << "the two models did not run at the same time";
  EXPECT_EQ(r.model, "asr");
  EXPECT_EQ(r.transcript.text, "hello there");
  ASSERT_TRUE(r.diarization.has_value());
  EXPECT_EQ(r.diarization->num_speakers, 2);
  EXPECT_DOUBLE_EQ(r.audio_seconds, 1.0);
  const std::vector<ModelStatsSnapshot> stats = core.statistics({"asr", "diar"});
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].success.count, 1u);  // each request counted under its own model
  EXPECT_EQ(stats[1].success.count, 1u);
}

TEST(SpeakersCore, AFailedDiarizationIsTheAnswer) {
  spdlog::set_level(spdlog::level::warn);
  Models m;
  m.diarizer_fails = true;
  InferenceCore core({m.asr(), m.diarizer()});
  const TranscriptionResponse r = answer_of(core, with_speakers());
  EXPECT_EQ(r.outcome, Outcome::kInternal);
  EXPECT_EQ(r.message, "diarizer exploded");
  const std::vector<ModelStatsSnapshot> stats = core.statistics({"asr", "diar"});
  EXPECT_EQ(stats[0].success.count, 1u);
  EXPECT_EQ(stats[1].fail.count, 1u);
}

TEST(SpeakersCore, WithoutADiarizationModelTheRequestIsRefused) {
  spdlog::set_level(spdlog::level::warn);
  Models m;
  InferenceCore core({m.asr()});
  const TranscriptionResponse r = answer_of(core, with_speakers());
  EXPECT_EQ(r.outcome, Outcome::kInvalidInput);
  EXPECT_NE(r.message.find("this server serves none"), std::string::npos) << r.message;
  Submission named = with_speakers();
  named.diarizer = "asr";  // a transcription model is no diarizer
  InferenceCore core2({m.asr()});
  EXPECT_NE(answer_of(core2, std::move(named)).message.find("'asr' is not a diarization model"), std::string::npos);
}

}  // namespace
}  // namespace steno::serve
