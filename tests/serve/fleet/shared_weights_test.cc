// --share-weights in a real fleet (the inference core with worker processes of the real `steno` binary and the
// bundled model). On a GPU: two workers map one device copy of the weights and transcribe the espeak clips
// exactly as a fleet without sharing does, and steno_shared_weight_bytes says what they share. Anywhere: where
// sharing cannot work (here: the CPU, which the CLI refuses but the executor degrades on like on a refusing
// driver), the workers load private weights, the server says why, and the fleet serves as before.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "../../cli_util.h"
#include "../metrics_text.h"
#include "steno/audio/decode.h"
#include "steno/core/cuda.h"
#include "serve/fleet/worker_executor.h"
#include "serve/inference_core.h"

namespace steno::serve {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using steno::testing::steno_binary;

constexpr const char* kModelName = "steno-tdt-small-en";


struct Clip {
  std::vector<float> pcm;
  std::string reference;  // what `steno transcribe` prints on the CPU
};

std::vector<Clip> espeak_clips(size_t limit) {
  const fs::path dir = fs::path(STENO_TEST_DATA) / "testset" / "espeak";
  std::ifstream tsv(dir / "reference_transcripts.tsv");
  std::vector<Clip> clips;
  for (std::string line; std::getline(tsv, line) && clips.size() < limit;) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    clips.push_back({audio::load_audio_file((dir / line.substr(0, tab)).string()).samples, line.substr(tab + 1)});
  }
  return clips;
}

struct FleetRun {
  std::vector<std::string> texts;  // by clip; an error's message where one failed
  std::string metrics;
  std::string log;  // what the server logged at info and above
};

// A fleet of `workers` on `device`, every clip submitted at once, answered, and the metrics taken.
FleetRun run_fleet(Device device, bool share_weights, int workers, const std::vector<Clip>& clips, int max_batch) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  sink->set_level(spdlog::level::info);
  spdlog::set_level(spdlog::level::info);  // the lines checked below are info and warn
  spdlog::default_logger()->sinks().push_back(sink);
  FleetRun run;
  {
    fleet::WorkerFleetConfig f;
    f.workers = workers;
    f.command.executable = steno_binary();
    f.command.model_dir = std::string(STENO_SOURCE_DIR) + "/models/" + kModelName;
    f.command.device = device;
    f.command.dtype = device.is_cpu() ? DType::kF32 : DType::kBF16;
    f.command.threads = 1;
    // The references are greedy transcripts (the bundled model's own default is beam search with its LM).
    f.command.decoding.decoding = "greedy";
    f.share_weights = share_weights;
    ModelSpec spec;
    spec.info.name = kModelName;
    spec.info.max_audio_seconds = 1200;
    spec.batcher.max_batch_size = max_batch;
    spec.batcher.max_queue_delay = 5ms;
    spec.executors = [f](prometheus::Registry& registry) {
      return fleet::worker_executors(f, std::make_unique<fleet::FleetMetrics>(registry, kModelName, "1", f.workers));
    };
    InferenceCore core(std::vector<ModelSpec>{spec});

    std::mutex mu;
    std::condition_variable cv;
    size_t answered = 0;
    run.texts.resize(clips.size());
    for (size_t i = 0; i < clips.size(); ++i) {
      Submission s;
      s.id = "clip-" + std::to_string(i);
      s.model = kModelName;
      s.audio = PcmAudio{clips[i].pcm, 16000};
      core.submit(std::move(s), [&, i](TranscriptionResponse resp) {
        std::lock_guard lock(mu);
        run.texts[i] = resp.outcome == Outcome::kOk ? resp.transcript.text : "error: " + resp.message;
        ++answered;
        cv.notify_all();
      });
    }
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, 300s, [&] { return answered == clips.size(); }))
        << answered << " of " << clips.size() << " answered";
    lock.unlock();
    run.metrics = core.render_metrics();
    core.drain();
  }
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  run.log = log.str();
  return run;
}

double shared_weight_bytes(const std::string& metrics) {
  return testing::metric_value(metrics, "steno_shared_weight_bytes", {{"model", kModelName}}).value_or(-1);
}

TEST(SharedWeightsFleet, WorkersLoadPrivateWeightsWhereTheyCannotBeShared) {
  const std::vector<Clip> clips = espeak_clips(4);
  ASSERT_EQ(clips.size(), 4u);
  const FleetRun run = run_fleet(Device::cpu(), /*share_weights=*/true, 2, clips, 4);
  for (size_t i = 0; i < clips.size(); ++i) EXPECT_EQ(run.texts[i], clips[i].reference) << "clip " << i;
  EXPECT_EQ(shared_weight_bytes(run.metrics), 0) << run.metrics;
  EXPECT_NE(run.log.find("could not make a shared copy of the weights (weights are shared on CUDA devices only"),
            std::string::npos)
      << run.log;
  EXPECT_NE(run.log.find("every worker loads private weights"), std::string::npos) << run.log;
}

TEST(SharedWeightsFleet, TwoGpuWorkersOnOneCopyTranscribeAsWorkersWithTheirOwn) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device here: the GPU machine runs this";
  const std::vector<Clip> clips = espeak_clips(40);
  ASSERT_EQ(clips.size(), 40u);
  // One clip per batch: in bf16 a clip's transcript could depend on what it was batched with, which timing
  // decides; alone, it depends on the weights and the code only, which is what this compares.
  const FleetRun own = run_fleet(Device::cuda(0), /*share_weights=*/false, 2, clips, 1);
  const FleetRun shared = run_fleet(Device::cuda(0), /*share_weights=*/true, 2, clips, 1);
  for (size_t i = 0; i < clips.size(); ++i) {
    EXPECT_EQ(shared.texts[i], own.texts[i]) << "clip " << i;
    EXPECT_EQ(own.texts[i].rfind("error: ", 0), std::string::npos) << own.texts[i];
  }
  EXPECT_EQ(shared_weight_bytes(own.metrics), 0) << own.metrics;
  // The bundled model's weights in bf16 (tens of MB): more than a few, and no share-failure warnings.
  EXPECT_GT(shared_weight_bytes(shared.metrics), 1e6) << shared.metrics << shared.log;
  EXPECT_EQ(shared.log.find("private weights"), std::string::npos) << shared.log;
  EXPECT_NE(shared.log.find("2 of 2 workers share one device copy of the weights"), std::string::npos) << shared.log;
}

}  // namespace
}  // namespace steno::serve
