// The Sortformer engine against NeMo's own outputs for tests/data/sortformer-tiny (converted by the
// prepare_sortformer_tiny fixture): every stage within 1e-4 of NeMo's (relative to the reference's largest value),
// one clip at a time and batched, and the segments after post-processing identical to NeMo's lines.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "golden.h"
#include "sortformer_testdata.h"
#include "steno/diar/segments.h"
#include "steno/diar/sortformer_model.h"
#include "steno/diar/sortformer_weights.h"

namespace steno::diar {
namespace {

namespace fs = std::filesystem;
using testing::GoldenSet;
using testing::relative_max_error;

using testdata::kPrepared;
using testdata::kTolerance;

// [B, T, C] (steno, time-major) item b's first `frames` rows.
std::vector<float> rows(const Tensor& t, int64_t b, int64_t frames) {
  const Tensor c = t.to(DType::kF32);
  const float* p = c.data<float>() + b * t.dim(1) * t.dim(2);
  return std::vector<float>(p, p + frames * t.dim(2));
}

// NeMo's [B, C, T] (channel-major) item b's first `frames` frames, transposed to time-major.
std::vector<float> nemo_channel_major(const Tensor& t, int64_t b, int64_t frames) {
  const int64_t c = t.dim(1), total = t.dim(2);
  const float* p = t.data<float>() + b * c * total;
  std::vector<float> out(frames * c);
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t k = 0; k < c; ++k) out[f * c + k] = p[k * total + f];
  return out;
}

// NeMo's [B, T, C] item b's first `frames` frames.
std::vector<float> nemo_rows(const Tensor& t, int64_t b, int64_t frames) { return rows(t, b, frames); }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

class SortformerFidelity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    golden_ = new GoldenSet((kPrepared / "golden-sortformer-tiny").string());
    model_ = SortformerModel::load((kPrepared / "sortformer-tiny").string());
    callhome_ = SortformerModel::load((kPrepared / "sortformer-tiny-callhome").string());
  }
  static void TearDownTestSuite() {
    delete golden_;
    model_.reset();
    callhome_.reset();
  }

  // Compares item b of `out` with NeMo's run `run`, item `nemo_b`.
  static void expect_matches(const SortformerOutput& out, int64_t b, const std::string& run, int64_t nemo_b) {
    const GoldenSet& g = *golden_;
    const int64_t t = g.ints(run + ".encoded_lengths")[nemo_b];
    const int64_t f = g.ints(run + ".features_lengths")[nemo_b];
    ASSERT_EQ(out.lengths[b], t);
    ASSERT_EQ(out.features.lengths[b], f);
    const std::vector<std::pair<std::string, double>> errors = {
        {"features", relative_max_error(rows(out.features.values, b, f),
                                        nemo_channel_major(g.tensor(run + ".features"), nemo_b, f))},
        {"pre_encode", relative_max_error(rows(out.encoder.pre_encode, b, t),
                                          nemo_rows(g.tensor(run + ".pre_encode"), nemo_b, t))},
        {"encoded", relative_max_error(rows(out.encoder.encoded, b, t),
                                       nemo_channel_major(g.tensor(run + ".encoded"), nemo_b, t))},
        {"encoder_proj", relative_max_error(rows(out.projected, b, t),
                                            nemo_rows(g.tensor(run + ".encoder_proj"), nemo_b, t))},
        {"transformer", relative_max_error(rows(out.transformer, b, t),
                                           nemo_rows(g.tensor(run + ".transformer"), nemo_b, t))},
        {"logits", relative_max_error(rows(out.logits, b, t), nemo_rows(g.tensor(run + ".logits"), nemo_b, t))},
        {"preds", relative_max_error(rows(out.probs, b, t), nemo_rows(g.tensor(run + ".preds"), nemo_b, t))},
    };
    for (const auto& [stage, err] : errors) EXPECT_LE(err, kTolerance) << run << " item " << nemo_b << ": " << stage;
  }

  static std::vector<std::string> lines_of(const SortformerModel& model, const SortformerOutput& out, int64_t b) {
    const int spk = model.num_speakers();
    const std::vector<float> probs = rows(out.probs, b, out.lengths[b]);
    std::vector<std::string> lines;
    for (const SpeakerSegment& s : speaker_segments(probs, out.lengths[b], spk, model.config().encoder.subsampling_factor,
                                                    model.config().postprocessing))
      lines.push_back(nemo_line(s));
    return lines;
  }

  static GoldenSet* golden_;
  static std::shared_ptr<const SortformerModel> model_, callhome_;
};

GoldenSet* SortformerFidelity::golden_ = nullptr;
std::shared_ptr<const SortformerModel> SortformerFidelity::model_, SortformerFidelity::callhome_;

TEST_F(SortformerFidelity, ConvertedModelHasNeMosShapesAndParameterCount) {
  EXPECT_EQ(parameter_count(model_->config()), 282056);  // NeMo's num_parameters for model.nemo
  EXPECT_EQ(model_->num_speakers(), 4);
  EXPECT_DOUBLE_EQ(model_->frame_seconds(), 0.08);
  EXPECT_EQ(model_->config().postprocessing, PostProcessingParams{});
  const PostProcessingParams& ch = callhome_->config().postprocessing;
  EXPECT_DOUBLE_EQ(ch.onset, 0.53);
  EXPECT_DOUBLE_EQ(ch.min_duration_off, 0.34);
}

TEST_F(SortformerFidelity, EachClipAloneMatchesNeMoAtEveryStage) {
  ops::Context ctx = ops::Context::cpu(2);
  for (int i = 0; i < 3; ++i) {
    const std::string run = "single" + std::to_string(i);
    const SortformerOutput out = model_->forward(ctx, {golden_->clip(i)}, {.keep_intermediates = true});
    EXPECT_NEAR(out.peak_scales[0], golden_->floats(run + ".peak_scale")[0], 1e-6) << run;
    expect_matches(out, 0, run, 0);
  }
}

TEST_F(SortformerFidelity, ABatchGivesEachClipItsOwnResult) {
  // steno normalises each clip on its own, so a batch of the three clips must reproduce NeMo's single runs.
  ops::Context ctx = ops::Context::cpu(2);
  const SortformerOutput out =
      model_->forward(ctx, {golden_->clip(0), golden_->clip(1), golden_->clip(2)}, {.keep_intermediates = true});
  for (int i = 0; i < 3; ++i) expect_matches(out, i, "single" + std::to_string(i), 0);
}

TEST_F(SortformerFidelity, NeMosBatchWidePeakFactorReproducesItsBatchedRun) {
  // NeMo divides the whole padded batch by one factor; given that factor, steno's batch matches NeMo's batch.
  ops::Context ctx = ops::Context::cpu(2);
  const float scale = golden_->floats("batch.peak_scale")[0];
  std::vector<std::vector<float>> scaled;
  for (int i = 0; i < 3; ++i) {
    scaled.push_back(golden_->clip(i));
    for (float& v : scaled.back()) v *= scale;
  }
  const SortformerOutput out = model_->forward(ctx, {scaled[0], scaled[1], scaled[2]},
                                               {.keep_intermediates = true, .skip_peak_normalisation = true});
  for (int i = 0; i < 3; ++i) expect_matches(out, i, "batch", i);
}

TEST_F(SortformerFidelity, SegmentsAreNeMosLinesWithDefaultAndCallhomePostProcessing) {
  ops::Context ctx = ops::Context::cpu(2);
  for (int i = 0; i < 3; ++i) {
    const std::string run = "single" + std::to_string(i);
    const SortformerOutput out = model_->forward(ctx, {golden_->clip(i)});
    EXPECT_EQ(lines_of(*model_, out, 0), split_lines(golden_->text(run + ".seg_default.clip" + std::to_string(i) + ".lines"))) << run;
    const SortformerOutput ch = callhome_->forward(ctx, {golden_->clip(i)});
    EXPECT_EQ(lines_of(*callhome_, ch, 0), split_lines(golden_->text(run + ".seg_callhome.clip" + std::to_string(i) + ".lines"))) << run;
  }
}

TEST_F(SortformerFidelity, PerSpeakerSegmentsBeforeMergingAreNeMos) {
  // NeMo's <run>.seg_*.clip{i}.spk{s} arrays: each speaker's segments after rounding, before merge_float_intervals.
  ops::Context ctx = ops::Context::cpu(2);
  for (int i = 0; i < 3; ++i) {
    const std::string run = "single" + std::to_string(i);
    const SortformerOutput out = callhome_->forward(ctx, {golden_->clip(i)});
    const std::vector<float> probs = rows(out.probs, 0, out.lengths[0]);
    for (int s = 0; s < 4; ++s) {
      std::vector<float> column;
      for (int64_t t = 0; t < out.lengths[0]; ++t) column.push_back(probs[t * 4 + s]);
      const auto segs = post_process_speaker(column, 8, callhome_->config().postprocessing);
      const std::vector<float> want = golden_->floats(run + ".seg_callhome.clip" + std::to_string(i) + ".spk" + std::to_string(s));
      ASSERT_EQ(segs.size() * 2, want.size()) << run << " speaker " << s;
      for (size_t k = 0; k < segs.size(); ++k) {
        // NeMo's arrays hold round(x, 2); ours are the float32 times before rounding.
        EXPECT_NEAR(segs[k][0], want[2 * k], 0.005 + 1e-6) << run << " speaker " << s << " segment " << k;
        EXPECT_NEAR(segs[k][1], want[2 * k + 1], 0.005 + 1e-6) << run << " speaker " << s << " segment " << k;
      }
    }
  }
}

}  // namespace
}  // namespace steno::diar
