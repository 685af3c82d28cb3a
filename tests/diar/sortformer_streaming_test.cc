// Streaming Sortformer against NeMo's own streaming code (tests/data/sortformer-tiny-streaming: NeMo's
// sortformer_modules.py and SortformerEncLabelModel.forward_streaming run by tools/sortformer_streaming_golden.py
// on the tiny model, four parameter sets that exercise the FIFO, the cache compression, no FIFO, one chunk), the
// offline path on clips shorter than one chunk, chunk-wise features against the whole recording's, bounded
// buffering, the presets and parameters, and the cache compression on a case computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "golden.h"
#include "sortformer_testdata.h"
#include "steno/core/error.h"
#include "steno/diar/streaming.h"

namespace steno::diar {
namespace {

namespace fs = std::filesystem;
using testing::GoldenSet;
using testing::relative_max_error;

using testdata::kPrepared;
using testdata::kTolerance;
const char* const kStreamingFields[] = {"chunk_len",    "chunk_left_context",     "chunk_right_context",
                                        "fifo_len",     "spkcache_update_period", "spkcache_len",
                                        "spkcache_sil_frames_per_spk"};

class SortformerStreaming : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    golden_ = new GoldenSet((kPrepared / "golden-sortformer-tiny-streaming").string());
    model_ = SortformerModel::load((kPrepared / "sortformer-tiny").string());
  }
  static void TearDownTestSuite() {
    delete golden_;
    model_.reset();
  }

  // The model's streaming parameters with a golden configuration's values set through the public setter.
  static SortformerModulesConfig golden_params(const std::string& name) {
    SortformerModulesConfig params = model_->config().sortformer_modules;
    const nlohmann::json& cfg = golden_->meta().at("configs").at(name);
    for (const char* field : kStreamingFields)
      set_streaming_parameter(params, std::string(field) + "=" + std::to_string(cfg.at(field).get<int>()));
    return params;
  }

  static GoldenSet* golden_;
  static std::shared_ptr<const SortformerModel> model_;
};
GoldenSet* SortformerStreaming::golden_ = nullptr;
std::shared_ptr<const SortformerModel> SortformerStreaming::model_;

TEST_F(SortformerStreaming, MatchesNeMosStreamingOutputsAndState) {
  ops::Context ctx = ops::Context::cpu(2);
  const nlohmann::json& configs = golden_->meta().at("configs");
  ASSERT_EQ(configs.size(), 4u);
  for (const auto& [name, _] : configs.items()) {
    const SortformerModulesConfig params = golden_params(name);
    for (int i = 0; i < golden_->num_clips(); ++i) {
      const std::string key = name + ".clip" + std::to_string(i);
      SortformerStream stream(*model_, params);
      std::vector<float> probs = stream.push(ctx, golden_->clip(i));
      const std::vector<float> rest = stream.finish(ctx);
      probs.insert(probs.end(), rest.begin(), rest.end());
      const std::vector<float> want = golden_->floats(key + ".preds");
      ASSERT_EQ(probs.size(), want.size()) << key;
      EXPECT_LT(relative_max_error(probs, want), kTolerance) << key;
      EXPECT_EQ(stream.chunks_done(), static_cast<int64_t>(golden_->ints(key + ".chunk_frames").size())) << key;

      // The state after the last chunk: what the next chunk would have been encoded with.
      const StreamingSortformerState& st = stream.state();
      const auto expect_state = [&](const std::string& part, const FrameMatrix& got) {
        if (!golden_->has(key + "." + part)) {  // NeMo's part is empty (no compression yet, or no FIFO)
          EXPECT_EQ(got.rows(), 0) << key << "." << part;
          return;
        }
        const std::vector<float> ref = golden_->floats(key + "." + part);
        ASSERT_EQ(got.values.size(), ref.size()) << key << "." << part;
        EXPECT_LT(relative_max_error(got.values, ref), kTolerance) << key << "." << part;
      };
      expect_state("spkcache", st.spkcache);
      expect_state("spkcache_preds", st.spkcache_preds);
      expect_state("fifo", st.fifo);
      expect_state("fifo_preds", st.fifo_preds);
      EXPECT_LT(relative_max_error(st.mean_sil_emb, golden_->floats(key + ".mean_sil_emb")), kTolerance) << key;
      EXPECT_EQ(st.n_sil_frames, golden_->ints(key + ".n_sil_frames")[0]) << key;
    }
  }
}

TEST_F(SortformerStreaming, ShorterThanOneChunkEqualsOffline) {
  ops::Context ctx = ops::Context::cpu(2);
  const SortformerModulesConfig params = golden_params("onechunk");
  for (int i = 0; i < golden_->num_clips(); ++i) {
    const std::span<const float> clip = golden_->clip(i);
    ASSERT_LT(model_->output_frames(static_cast<int64_t>(clip.size())), params.chunk_len);
    const StreamingDiarization s = diarize_streaming(*model_, ctx, clip, params);
    EXPECT_EQ(s.chunks, 1);
    // Streaming takes the audio as it is (NeMo's streaming mode): compare with the offline pass unnormalised.
    const SortformerOutput offline = model_->forward(ctx, {clip}, {.skip_peak_normalisation = true});
    ASSERT_EQ(s.frames, offline.lengths[0]);
    EXPECT_LT(relative_max_error(s.probs, offline.probs.to_vector()), kTolerance) << "clip " << i;
  }
}

// The tiny model with a front end that does not normalise (Sortformer v2's "NA"): chunk-wise features. Its copy
// lives in a folder of this test process's own, removed once loaded: ctest runs this suite's tests side by side,
// and one test overwriting a shared copy while another loaded it failed a CI run.
std::shared_ptr<const SortformerModel> load_unnormalised_copy() {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("sortformer-tiny-no-norm-" + std::to_string(::getpid()) + "-" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::create_directories(dir);
  fs::copy_file(kPrepared / "sortformer-tiny" / "model.safetensors", dir / "model.safetensors",
                fs::copy_options::overwrite_existing);
  std::ifstream in(kPrepared / "sortformer-tiny" / "config.json");
  nlohmann::ordered_json cfg = nlohmann::ordered_json::parse(in);
  cfg["preprocessor"]["normalize"] = "none";
  std::ofstream(dir / "config.json") << cfg.dump(1);
  auto model = SortformerModel::load(dir.string());
  fs::remove_all(dir);
  return model;
}

TEST_F(SortformerStreaming, ChunkwiseFeaturesInBoundedMemoryEqualTheWholeRecordings) {
  ops::Context ctx = ops::Context::cpu(2);
  const auto model = load_unnormalised_copy();
  const SortformerModulesConfig params = golden_params("small");
  const std::span<const float> clip = golden_->clip(2);  // 19.4 s: 21 chunks

  SortformerStream whole(*model, params, /*whole_recording_features=*/true);
  std::vector<float> want = whole.push(ctx, clip);
  EXPECT_TRUE(want.empty());  // nothing is computed before the end in this mode
  want = whole.finish(ctx);

  SortformerStream chunked(*model, params);
  std::vector<float> got;
  int64_t most_buffered = 0;
  const size_t block = 5923;  // 0.37 s: chunk boundaries fall anywhere inside a push
  for (size_t at = 0; at < clip.size(); at += block) {
    const std::vector<float> p = chunked.push(ctx, clip.subspan(at, std::min(block, clip.size() - at)));
    got.insert(got.end(), p.begin(), p.end());
    most_buffered = std::max(most_buffered, chunked.samples_buffered());
  }
  EXPECT_GT(got.size(), want.size() / 2);  // most frames were final before the end
  const std::vector<float> rest = chunked.finish(ctx);
  got.insert(got.end(), rest.begin(), rest.end());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LT(relative_max_error(got, want), 1e-5);
  // Left context + chunk + right context + margins, plus one push: about 2.1 s here, never the whole clip.
  EXPECT_LT(most_buffered, 3 * model->sample_rate());
  EXPECT_THROW(chunked.push(ctx, clip), Error);
}

TEST_F(SortformerStreaming, AudioShorterThanAFrameGivesNoFramesAndEmptyPushesAreFine) {
  ops::Context ctx = ops::Context::cpu(2);
  const auto model = load_unnormalised_copy();
  SortformerStream stream(*model, golden_params("small"));
  EXPECT_TRUE(stream.push(ctx, {}).empty());
  const std::vector<float> blip(100, 0.1f);  // 6 ms: no 10 ms feature frame
  EXPECT_TRUE(stream.push(ctx, blip).empty());
  EXPECT_TRUE(stream.finish(ctx).empty());
  EXPECT_EQ(stream.frames_done(), 0);
  EXPECT_EQ(stream.chunks_done(), 0);
  EXPECT_THROW(stream.finish(ctx), Error);
}

TEST(StreamingParameters, PresetsAndSettersNameWhatTheyChange) {
  SortformerModulesConfig base;
  base.fc_d_model = 512;
  base.tf_d_model = 192;
  const SortformerModulesConfig fast = streaming_preset(base, "1.04s");
  EXPECT_EQ(fast.chunk_len, 6);
  EXPECT_EQ(fast.chunk_right_context, 7);
  EXPECT_EQ(fast.fifo_len, 188);
  EXPECT_EQ(fast.spkcache_update_period, 144);
  EXPECT_NEAR(streaming_latency_seconds(fast, 0.08), 1.04, 1e-9);
  const SortformerModulesConfig slow = streaming_preset(base, "30.4s");
  EXPECT_EQ(slow.chunk_len, 340);
  EXPECT_EQ(slow.fifo_len, 40);
  EXPECT_NEAR(streaming_latency_seconds(slow, 0.08), 30.4, 1e-9);
  EXPECT_EQ(streaming_preset(base, "model"), base);
  EXPECT_THROW(streaming_preset(base, "2s"), Error);

  SortformerModulesConfig p = base;
  set_streaming_parameter(p, "chunk_len=12");
  set_streaming_parameter(p, "sil_threshold=0.3");
  EXPECT_EQ(p.chunk_len, 12);
  EXPECT_DOUBLE_EQ(p.sil_threshold, 0.3);
  for (const char* bad : {"chunk_len", "chunk_len=", "chunk_len=1.5", "nope=3", "sil_threshold=x", "=4"})
    EXPECT_THROW(set_streaming_parameter(p, bad), Error) << bad;
}

TEST_F(SortformerStreaming, RefusesParametersNeMoRefuses) {
  SortformerModulesConfig params = model_->config().sortformer_modules;
  params.spkcache_len = 8;  // below (1 + 3 silence frames) x 4 speakers
  EXPECT_THROW(SortformerStream(*model_, params), Error);
  params = model_->config().sortformer_modules;
  params.chunk_len = 0;
  EXPECT_THROW(SortformerStream(*model_, params), Error);
}

// Two speakers, six frames, spkcache_len 4 with one silence slot per speaker: per speaker 4/2 - 1 = 1 frame,
// strong boost floor(0.75) = 0 frames, weak boost floor(1.5) = 1, min positives floor(0.5) = 0.
//   t0 [0.9, 0.1]  speaker 0 alone:       score(0) = ln.9 - ln.25 + (ln.25 + ln.9) - ln.5 = 0.4824
//   t1 [0.1, 0.1]  silence:               both -inf (no speech)
//   t2 [0.8, 0.7]  overlap:               -0.7340 / -1.0498: non-positive, disabled (min positives 0)
//   t3 [0.2, 0.95] speaker 1:             score(1) = 0.4187
//   t4 [0.6, 0.1]  speaker 0, newest:     0.0770 + 0.05 (frames >= spkcache_len are boosted) = 0.1270
//   t5 [0.1, 0.9]  speaker 1, newest:     0.4824 + 0.05 = 0.5324
// Weak boost (+ln 2) to each speaker's best: t0 for speaker 0 (1.1756), t5 for speaker 1 (1.2256). The four picks
// are the two +inf silence slots and those two, in speaker-then-time order: [t0, silence, t5, silence].
TEST(SpeakerCacheCompression, KeepsEachSpeakersBestFramesAndSilenceSlots) {
  SortformerModulesConfig params;
  params.num_spks = 2;
  params.spkcache_len = 4;
  params.spkcache_sil_frames_per_spk = 1;
  FrameMatrix preds{2, {0.9f, 0.1f, 0.1f, 0.1f, 0.8f, 0.7f, 0.2f, 0.95f, 0.6f, 0.1f, 0.1f, 0.9f}};
  FrameMatrix embs{3, {}};
  for (int t = 0; t < 6; ++t) embs.append(std::vector<float>{10.0f * t, 10.0f * t + 1, 10.0f * t + 2});
  const std::vector<float> sil{-1.0f, -2.0f, -3.0f};
  compress_speaker_cache(params, embs, preds, sil);
  EXPECT_EQ(embs.values, (std::vector<float>{0, 1, 2, -1, -2, -3, 50, 51, 52, -1, -2, -3}));
  EXPECT_EQ(preds.values, (std::vector<float>{0.9f, 0.1f, 0, 0, 0.1f, 0.9f, 0, 0}));
}

// The same six frames and five of silence with spkcache_len 10: 4 frames per speaker, min positives 2, which both
// speakers have (t0, t4 and t3, t5), so the overlap t2 is still dropped. Six usable picks (four frames, two
// silence slots) for ten slots: the other four are -inf picks, kept as silence after everything else.
TEST(SpeakerCacheCompression, DisabledPicksBecomeSilence) {
  SortformerModulesConfig params;
  params.num_spks = 2;
  params.spkcache_len = 10;  // more slots than usable frames: the rest are silence
  params.spkcache_sil_frames_per_spk = 1;
  FrameMatrix preds{2, {0.9f, 0.1f, 0.1f, 0.1f, 0.8f, 0.7f, 0.2f, 0.95f, 0.6f, 0.1f, 0.1f, 0.9f,
                        0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f}};
  FrameMatrix embs{1, {}};
  for (int t = 0; t < 11; ++t) embs.append(std::vector<float>{static_cast<float>(t)});
  compress_speaker_cache(params, embs, preds, std::vector<float>{-1.0f});
  // Kept: speaker 0's t0, t4, its silence slot; speaker 1's t3, t5, its silence slot; four disabled picks last.
  EXPECT_EQ(embs.values, (std::vector<float>{0, 4, -1, 3, 5, -1, -1, -1, -1, -1}));
  ASSERT_EQ(preds.rows(), 10);
  EXPECT_FLOAT_EQ(preds.row(1)[0], 0.6f);
  EXPECT_FLOAT_EQ(preds.row(9)[1], 0.0f);
}

}  // namespace
}  // namespace steno::diar
