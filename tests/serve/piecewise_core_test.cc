// Long transcriptions served as pieces (serve/piecewise.h) by the core with the bundled model: the words come in
// order as the pieces finish and join into the answer, the request is counted once and its pieces as inferences,
// a client that goes away frees the pieces not yet run, and a drain stops a long request at a piece boundary.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "asr/wer.h"
#include "serve/inference_core.h"
#include "serve/lanes.h"
#include "testset_clips.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;

// What one long submission got: its stretches of words as they came, then its answer.
struct LongRun {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<asr::Transcript> stretches;
  std::optional<TranscriptionResponse> answer;
  bool words_after_answer = false;

  bool wait(std::chrono::seconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return answer.has_value(); });
  }
};

class PiecewiseCoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    spdlog::set_level(spdlog::level::warn);
    model_ = asr::AsrModel::load(std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en");
    // The test set's clips end to end with half a second of silence between them: about two minutes of speech.
    for (const testing::Clip& clip : testing::testset_clips()) {
      long_pcm_.insert(long_pcm_.end(), clip.pcm.begin(), clip.pcm.end());
      long_pcm_.insert(long_pcm_.end(), 8000, 0.0f);
      reference_ += (reference_.empty() ? "" : " ") + clip.reference;
    }
  }
  static void TearDownTestSuite() {
    model_.reset();
    long_pcm_.clear();
  }

  static std::unique_ptr<InferenceCore> make_core(double piece_seconds) {
    ModelSpec spec = lane_model("m", 1, transcriber_runners(model_, 2));
    spec.info.piece_seconds = piece_seconds;
    spec.batcher.max_batch_size = 4;
    return std::make_unique<InferenceCore>(std::vector<ModelSpec>{spec});
  }

  // Submits the long audio; `on_stretch` (if any) runs after each stretch is recorded, outside the run's lock.
  static void submit_long(InferenceCore& core, LongRun& run, std::function<void()> on_stretch = nullptr,
                          std::shared_ptr<std::atomic<bool>> cancelled = nullptr) {
    Submission s;
    s.id = "long";
    s.model = "m";
    s.audio = PcmAudio{long_pcm_, 16000};
    if (cancelled) s.cancelled = cancelled;
    s.on_words = [&run, on_stretch](const asr::Transcript& next) {
      {
        std::lock_guard lock(run.mu);
        if (run.answer) run.words_after_answer = true;
        run.stretches.push_back(next);
      }
      if (on_stretch) on_stretch();
    };
    core.submit(std::move(s), [&run](TranscriptionResponse r) {
      std::lock_guard lock(run.mu);
      run.answer = std::move(r);
      run.cv.notify_all();
    });
  }

  static std::shared_ptr<const asr::AsrModel> model_;
  static std::vector<float> long_pcm_;
  static std::string reference_;
};

std::shared_ptr<const asr::AsrModel> PiecewiseCoreTest::model_;
std::vector<float> PiecewiseCoreTest::long_pcm_;
std::string PiecewiseCoreTest::reference_;

TEST_F(PiecewiseCoreTest, WordsComeInOrderAsPiecesFinishAndJoinIntoTheAnswer) {
  const double seconds = static_cast<double>(long_pcm_.size()) / 16000;
  ASSERT_GT(seconds, 90);
  auto core = make_core(10);
  LongRun run;
  submit_long(*core, run);
  ASSERT_TRUE(run.wait(300s));
  const TranscriptionResponse& r = *run.answer;
  ASSERT_EQ(r.outcome, Outcome::kOk) << r.message;
  EXPECT_FALSE(run.words_after_answer);
  EXPECT_NEAR(r.audio_seconds, seconds, 1e-6);

  // At least one stretch per 10 s piece but the last few; joined, they are the answer.
  ASSERT_GE(run.stretches.size(), static_cast<size_t>(seconds / 10) - 1);
  std::string joined;
  double last_end = 0;
  size_t words = 0;
  for (const asr::Transcript& t : run.stretches) {
    joined += (joined.empty() ? "" : " ") + t.text;
    for (const asr::TimedText& w : t.words) {
      EXPECT_GE(w.start, last_end - 1e-6) << w.text;  // on the recording's timeline, in order
      last_end = w.end;
      ++words;
    }
  }
  EXPECT_EQ(joined, r.transcript.text);
  EXPECT_EQ(words, r.transcript.words.size());
  EXPECT_LE(last_end, seconds);
  EXPECT_GT(last_end, seconds - 10);
  // Cut in the pauses, the pieces lose no words: as accurate as the whole recording in one piece (the small bundled
  // model, trained on single sentences, is better on the pieces: 27.8 % against 35.4 % when this was written).
  auto whole_core = make_core(0);
  LongRun whole;
  submit_long(*whole_core, whole);
  ASSERT_TRUE(whole.wait(300s));
  ASSERT_EQ(whole.answer->outcome, Outcome::kOk) << whole.answer->message;
  const double pieces_wer = asr::word_errors(reference_, r.transcript.text).rate();
  const double whole_wer = asr::word_errors(reference_, whole.answer->transcript.text).rate();
  EXPECT_LE(pieces_wer, whole_wer + 0.01) << r.transcript.text;
  EXPECT_LT(pieces_wer, 0.4);

  // Counted once as a request; its pieces as the inferences that ran.
  const std::vector<ModelStatsSnapshot> stats = core->statistics({"m"});
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].success.count, 1u);
  EXPECT_EQ(stats[0].inference_count, run.stretches.size() + 0);  // every piece here has words
  EXPECT_GE(stats[0].inference_count, static_cast<uint64_t>(seconds / 10));
  EXPECT_LE(stats[0].inference_count, static_cast<uint64_t>(seconds / (10.0 * 2 / 3)) + 1);
}

TEST_F(PiecewiseCoreTest, AClientThatGoesAwayFreesThePiecesNotYetRun) {
  auto core = make_core(10);
  LongRun run;
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  submit_long(*core, run, [cancelled] { cancelled->store(true); }, cancelled);  // gone after the first words
  ASSERT_TRUE(run.wait(300s));
  EXPECT_EQ(run.answer->outcome, Outcome::kCancelled) << run.answer->message;
  EXPECT_EQ(run.stretches.size(), 1u);
  // One piece in flight at a time on a CPU lane: the first ran, and nothing after the client left.
  const std::vector<ModelStatsSnapshot> stats = core->statistics({"m"});
  EXPECT_EQ(stats[0].inference_count, 1u);
  EXPECT_EQ(stats[0].success.count, 0u);
  EXPECT_EQ(stats[0].fail.count, 1u);
}

TEST_F(PiecewiseCoreTest, DrainStopsALongRequestAtAPieceBoundary) {
  auto core = make_core(10);
  LongRun run;
  std::mutex mu;
  std::condition_variable cv;
  bool first = false;
  submit_long(*core, run, [&] {
    std::lock_guard lock(mu);
    first = true;
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 120s, [&] { return first; }));
  }
  core->drain();  // returns once the long request has answered
  ASSERT_TRUE(run.answer.has_value());
  EXPECT_EQ(run.answer->outcome, Outcome::kShuttingDown) << run.answer->message;
  EXPECT_LT(run.stretches.size(), static_cast<size_t>(long_pcm_.size() / 16000 / 10));
}

TEST_F(PiecewiseCoreTest, ShortAudioAndPiecesOffRunWholeAndStillGiveTheirWords) {
  auto core = make_core(0);  // pieces off
  LongRun run;
  submit_long(*core, run);
  ASSERT_TRUE(run.wait(300s));
  ASSERT_EQ(run.answer->outcome, Outcome::kOk) << run.answer->message;
  ASSERT_EQ(run.stretches.size(), 1u);  // the whole transcript once, before the answer
  EXPECT_EQ(run.stretches[0].text, run.answer->transcript.text);
  EXPECT_EQ(core->statistics({"m"})[0].inference_count, 1u);
}

}  // namespace
}  // namespace steno::serve
