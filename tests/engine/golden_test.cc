// The engine against reference outputs: NeMo's own modules (nemo-tiny, both front ends) and the project's PyTorch
// reference (tests/data/golden: 80 mels, biases, xscaling, one LSTM layer, local attention). fp32 must agree
// within 1e-4 of each tensor's largest value, and every decoding decision must be identical.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <cstdio>
#include <map>
#include <span>

#include "golden.h"
#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"

namespace steno::testing {
namespace {

constexpr double kTolerance = 1e-4;

// Rows [0, frames) of clip b from a time-major [B, F, C] tensor, flattened.
std::vector<float> time_major_rows(const Tensor& t, int64_t b, int64_t frames) {
  const int64_t f = t.dim(1), c = t.dim(2);
  const float* p = t.data<float>() + b * f * c;
  return std::vector<float>(p, p + frames * c);
}

// The same rows from a channel-first [B, C, F] tensor (NeMo's layout), transposed to time-major.
std::vector<float> channel_first_rows(const Tensor& t, int64_t b, int64_t frames) {
  const int64_t c = t.dim(1), f = t.dim(2);
  const float* p = t.data<float>() + b * c * f;
  std::vector<float> out(static_cast<size_t>(frames * c));
  for (int64_t ti = 0; ti < frames; ++ti)
    for (int64_t ci = 0; ci < c; ++ci) out[ti * c + ci] = p[ci * f + ti];
  return out;
}

// Golden [B, C, F] -> time-major [B, F, C] tensor (the engine's layout).
Tensor to_time_major(const Tensor& t) {
  const int64_t b = t.dim(0), c = t.dim(1), f = t.dim(2);
  Tensor out = Tensor::empty({b, f, c});
  for (int64_t i = 0; i < b; ++i) {
    const auto rows = channel_first_rows(t, i, f);
    std::copy(rows.begin(), rows.end(), out.data<float>() + i * f * c);
  }
  return out;
}

std::vector<float> log_softmax(std::vector<float> x) {
  const float max = *std::max_element(x.begin(), x.end());
  double sum = 0;
  for (float v : x) sum += std::exp(static_cast<double>(v - max));
  const float log_sum = max + static_cast<float>(std::log(sum));
  for (float& v : x) v -= log_sum;
  return x;
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {
 protected:
  void SetUp() override {
    golden_ = std::make_unique<GoldenSet>(GetParam().golden_dir);
    model_ = asr::AsrModel::load(GetParam().model_dir);
  }
  std::vector<std::span<const float>> clips(int only = -1) const {
    std::vector<std::span<const float>> out;
    for (int i = 0; i < golden_->num_clips(); ++i)
      if (only < 0 || i == only) out.emplace_back(golden_->clip(i));
    return out;
  }

  // The durations a hypothesis actually jumped by. NeMo's batched label-looping records, for an utterance that
  // found its token before others in the batch, the duration argmax of a later step instead (its search loop
  // overwrites every element's duration); steno records the jump it took, which is what NeMo records for a
  // single utterance. So batch durations are checked against `durations_used` (project goldens) or derived
  // from NeMo's per-step joint outputs; single runs are checked against NeMo's record as is.
  std::optional<std::vector<int>> expected_durations(const std::string& run, size_t b) const {
    const std::string h = run + ".hyp" + std::to_string(b);
    if (run != "batch") return golden_->ints32(h + ".durations");
    if (golden_->has(h + ".durations_used")) return golden_->ints32(h + ".durations_used");
    if (!golden_->has(h + ".align_logits")) return std::nullopt;
    const Tensor logits = golden_->tensor(h + ".align_logits");
    const auto labels = golden_->ints32(h + ".align_labels");
    const auto& durations = model_->config().decoding.durations;
    const int64_t width = logits.dim(1), first = width - static_cast<int64_t>(durations.size());
    std::vector<int> out;
    for (size_t s = 0; s < labels.size(); ++s) {
      if (labels[s] == model_->decoder().blank_id()) continue;
      const float* row = logits.data<float>() + s * width;
      out.push_back(durations[std::max_element(row + first, row + width) - (row + first)]);
    }
    return out;
  }

  // Checks one comparison against the tolerance and keeps the worst error per quantity, printed at the end
  // of each test so a run shows how close the engine is, not only that it is close enough.
  ::testing::AssertionResult close(const std::string& what, double err) {
    worst_[what] = std::max(worst_[what], err);
    if (err <= kTolerance) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << ": max error " << err << " relative to the reference's largest "
                                         << "value, over the tolerance " << kTolerance;
  }
  void TearDown() override {
    if (worst_.empty()) return;
    std::string line = "[ measured ] " + GetParam().name + ":";
    for (const auto& [what, err] : worst_) line += " " + what + " " + fmt::format("{:.2g}", err);
    std::printf("%s\n", line.c_str());
  }

  std::map<std::string, double> worst_;
  std::unique_ptr<GoldenSet> golden_;
  std::shared_ptr<const asr::AsrModel> model_;
  ops::Context ctx_ = ops::Context::cpu(2);
};

TEST_P(GoldenTest, FeaturesMatch) {
  for (int single = -1; single < golden_->num_clips(); ++single) {
    const std::string run = single < 0 ? "batch" : "single" + std::to_string(single);
    if (!golden_->has(run + ".features")) continue;  // project goldens keep features for the batch only
    const asr::Features f = model_->features().compute(ctx_, clips(single));
    const auto lengths = golden_->ints(run + ".features_lengths");
    ASSERT_EQ(f.lengths, lengths) << run;
    const Tensor ref = golden_->tensor(run + ".features");
    for (size_t b = 0; b < lengths.size(); ++b) {
      const double err = relative_max_error(time_major_rows(f.values, b, lengths[b]),
                                            channel_first_rows(ref, b, lengths[b]));
      EXPECT_TRUE(close("features", err)) << run << " clip " << b;
    }
  }
}

TEST_P(GoldenTest, EncoderMatchesOnReferenceFeatures) {
  // Fed the reference's own features, so encoder error is measured alone.
  const Tensor feats = to_time_major(golden_->tensor("batch.features"));
  const auto feat_lengths = golden_->ints("batch.features_lengths");
  const asr::EncoderOutput out = model_->encoder().forward(ctx_, feats, feat_lengths, /*keep_layer_outputs=*/true);
  const auto lengths = golden_->ints("batch.encoded_lengths");
  ASSERT_EQ(out.lengths, lengths);
  const Tensor ref = golden_->tensor("batch.encoded");
  ASSERT_EQ(out.encoded.dim(1), ref.dim(2)) << "encoder output width";
  for (size_t b = 0; b < lengths.size(); ++b) {
    EXPECT_TRUE(close("encoded", relative_max_error(time_major_rows(out.encoded, b, lengths[b]),
                                                    channel_first_rows(ref, b, lengths[b]))))
        << "clip " << b;
  }
  // Padded frames too: NeMo computes them deterministically (masked attention rows are zero), and so do we.
  EXPECT_TRUE(close("encoded_with_padding", relative_max_error(out.encoded.to_vector(), to_time_major(ref).to_vector())));
  // Braces around gtest assertions under an `if`: the macros expand to an if/else of their own, and g++ warns
  // (-Wdangling-else) without them.
  if (golden_->has("batch.pre_encode")) {
    for (size_t b = 0; b < lengths.size(); ++b)
      EXPECT_TRUE(close("pre_encode", relative_max_error(time_major_rows(out.pre_encode, b, lengths[b]),
                                                         time_major_rows(golden_->tensor("batch.pre_encode"), b,
                                                                         lengths[b]))))
          << "clip " << b;
  }
  for (size_t k = 0; k < out.layer_outputs.size(); ++k) {
    const std::string key = "batch.layer" + std::to_string(k);
    if (!golden_->has(key)) continue;
    for (size_t b = 0; b < lengths.size(); ++b)
      EXPECT_TRUE(close("layers", relative_max_error(time_major_rows(out.layer_outputs[k], b, lengths[b]),
                                                     time_major_rows(golden_->tensor(key), b, lengths[b]))))
          << key << " clip " << b;
  }
}

TEST_P(GoldenTest, DecoderMatchesOnReferenceEncoding) {
  const Tensor enc = to_time_major(golden_->tensor("batch.encoded"));
  const auto lengths = golden_->ints("batch.encoded_lengths");
  const auto hyps = model_->decoder().decode(ctx_, enc, lengths, /*keep_alignments=*/true);
  for (size_t b = 0; b < hyps.size(); ++b) {
    const std::string h = "batch.hyp" + std::to_string(b);
    EXPECT_EQ(hyps[b].tokens, golden_->ints32(h + ".tokens")) << h;
    EXPECT_EQ(hyps[b].timestamps, golden_->ints32(h + ".timestamps")) << h;
    if (auto d = expected_durations("batch", b)) {  // braces: see -Wdangling-else above
      EXPECT_EQ(hyps[b].durations, *d) << h;
    }
    if (!golden_->has(h + ".align_logits")) continue;
    const Tensor ref = golden_->tensor(h + ".align_logits");
    ASSERT_EQ(static_cast<int64_t>(hyps[b].step_logits.size()), ref.dim(0)) << h << " decoding steps";
    EXPECT_EQ(hyps[b].step_labels, golden_->ints32(h + ".align_labels")) << h;
    EXPECT_EQ(hyps[b].step_frames, golden_->ints32(h + ".align_frames")) << h;
    // NeMo on the CPU log-softmaxes the joint output over all of it (tokens, blank and durations).
    const int64_t width = ref.dim(1);
    for (int64_t s = 0; s < ref.dim(0); ++s) {
      const float* row = ref.data<float>() + s * width;
      EXPECT_TRUE(close("joint", relative_max_error(log_softmax(hyps[b].step_logits[s]),
                                                    std::vector<float>(row, row + width))))
          << h << " step " << s;
    }
  }
}

TEST_P(GoldenTest, EndToEndBatchedAndSingle) {
  asr::Transcriber transcriber(model_, ctx_);
  for (int single = -1; single < golden_->num_clips(); ++single) {
    const std::string run = single < 0 ? "batch" : "single" + std::to_string(single);
    if (!golden_->has(run + ".hyp0.tokens")) continue;
    const asr::Features f = model_->features().compute(ctx_, clips(single));
    const asr::EncoderOutput enc = model_->encoder().forward(ctx_, f.values, f.lengths);
    const auto ref_lengths = golden_->ints(run + ".encoded_lengths");
    ASSERT_EQ(enc.lengths, ref_lengths) << run;
    if (golden_->has(run + ".encoded")) {
      const Tensor ref = golden_->tensor(run + ".encoded");
      for (size_t b = 0; b < ref_lengths.size(); ++b)
        EXPECT_TRUE(close("encoded_end_to_end", relative_max_error(time_major_rows(enc.encoded, b, ref_lengths[b]),
                                                                   channel_first_rows(ref, b, ref_lengths[b]))))
            << run << " clip " << b;
    }
    const auto hyps = model_->decoder().decode(ctx_, enc.encoded, enc.lengths);
    for (size_t b = 0; b < hyps.size(); ++b) {
      const std::string h = run + ".hyp" + std::to_string(b);
      EXPECT_EQ(hyps[b].tokens, golden_->ints32(h + ".tokens")) << h;
      EXPECT_EQ(hyps[b].timestamps, golden_->ints32(h + ".timestamps")) << h;
      if (auto d = expected_durations(run, b)) {  // braces: see -Wdangling-else above
        EXPECT_EQ(hyps[b].durations, *d) << h;
      }
      EXPECT_EQ(model_->tokenizer().decode_plain(hyps[b].tokens), golden_->text(h + ".text")) << h;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenTest, ::testing::ValuesIn(all_golden_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return info.param.name; });

}  // namespace
}  // namespace steno::testing
