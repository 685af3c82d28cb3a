// The engine on CUDA against the same references as on the CPU: the golden sets (NeMo's nemo-tiny outputs and the
// project's PyTorch goldens) and the bundled model's test set. Skipped on a machine without a CUDA device.
//   - encoder: f32 within the CPU's tolerance, f16 and bf16 within their own stated ones (printed as measured);
//   - end to end on the golden models: f32 transcripts identical. The golden models have random weights, so
//     their greedy decoding sits on near-ties everywhere and a 16-bit encoder flips tokens freely: 16-bit end to
//     end is judged on the trained bundled model instead;
//   - the bundled model (trained): f32 transcripts identical to the CPU engine's on all 55 clips; f16 may differ
//     on at most 2 clips and bf16 on at most 4 (a near-tie between two tokens can flip in a 16-bit format, more
//     often with bf16's 8-bit mantissa: 2 flips with the attention GEMM path's rounding of the probabilities, 4
//     with the flash kernel's, whose espeak WER was the lower), and their espeak WER may exceed the CPU's by at
//     most half a point.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "../golden.h"
#include "device_values.h"
#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"
#include "asr/wer.h"
#include "steno/audio/decode.h"
#include "steno/core/cuda.h"
#include "steno/ops/copy.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;

// Tolerance on max |error| / max |reference| of the encoder output, per compute dtype. f32: the CPU's. f16 has
// 11 significant bits and bf16 8: through a few Conformer layers (layer norms, softmax, residual sums) errors of a
// few units in the last place of the largest values are expected.
double encoder_tolerance(DType dt) {
  switch (dt) {
    case DType::kF16: return 1e-2;
    case DType::kBF16: return 5e-2;
    default: return 1e-4;
  }
}

// Golden [B, C, F] -> time-major [B, F, C] (the engine's layout), on the host in f32.
Tensor to_time_major(const Tensor& t) {
  const int64_t b = t.dim(0), c = t.dim(1), f = t.dim(2);
  Tensor out = Tensor::empty({b, f, c});
  const float* p = t.data<float>();
  float* q = out.data<float>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t ti = 0; ti < f; ++ti) q[(i * f + ti) * c + ci] = p[(i * c + ci) * f + ti];
  return out;
}

std::vector<float> valid_rows(const std::vector<float>& v, int64_t frames_total, int64_t width, int64_t b,
                              int64_t frames) {
  const auto begin = v.begin() + b * frames_total * width;
  return std::vector<float>(begin, begin + frames * width);
}

struct CudaCase {
  GoldenCase golden;
  DType dtype;
};

void PrintTo(const CudaCase& c, std::ostream* os) { *os << c.golden.name << "_" << dtype_name(c.dtype); }

std::vector<CudaCase> cuda_cases(std::initializer_list<DType> dtypes) {
  std::vector<CudaCase> out;
  for (const auto& g : all_golden_cases())
    for (DType dt : dtypes) out.push_back({g, dt});
  return out;
}

class GoldenCudaTest : public ::testing::TestWithParam<CudaCase> {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    golden_ = std::make_unique<GoldenSet>(GetParam().golden.golden_dir);
    asr::ModelOverrides o;
    o.device = Device::cuda(0);
    o.dtype = GetParam().dtype;
    model_ = asr::AsrModel::load(GetParam().golden.model_dir, o);
    ctx_.emplace(ops::Context::cuda(0));
  }
  std::unique_ptr<GoldenSet> golden_;
  std::shared_ptr<const asr::AsrModel> model_;
  std::optional<ops::Context> ctx_;
};

TEST_P(GoldenCudaTest, EncoderMatchesOnReferenceFeatures) {
  ops::Context& ctx = *ctx_;
  const Tensor feats = to_time_major(golden_->tensor("batch.features"));
  const auto feat_lengths = golden_->ints("batch.features_lengths");
  const asr::EncoderOutput out =
      model_->encoder().forward(ctx, ops::to_context(ctx, feats, GetParam().dtype), feat_lengths);
  const auto lengths = golden_->ints("batch.encoded_lengths");
  ASSERT_EQ(out.lengths, lengths);
  const std::vector<float> got = download(ctx, out.encoded);
  const std::vector<float> ref = to_time_major(golden_->tensor("batch.encoded")).to_vector();
  const int64_t frames = out.encoded.dim(1), width = out.encoded.dim(2);
  double worst = 0;
  for (size_t b = 0; b < lengths.size(); ++b)
    worst = std::max(worst, relative_max_error(valid_rows(got, frames, width, b, lengths[b]),
                                               valid_rows(ref, frames, width, b, lengths[b])));
  std::printf("[ measured ] %s %s: encoder max error %.2g (tolerance %.0e)\n", GetParam().golden.name.c_str(),
              dtype_name(GetParam().dtype), worst, encoder_tolerance(GetParam().dtype));
  EXPECT_LE(worst, encoder_tolerance(GetParam().dtype));
}

// End to end in f32 only (see the top of the file).
class GoldenCudaF32Test : public GoldenCudaTest {};

TEST_P(GoldenCudaF32Test, EndToEndTextsMatch) {
  asr::Transcriber transcriber(model_, *ctx_);
  std::vector<std::span<const float>> clips;
  for (int i = 0; i < golden_->num_clips(); ++i) clips.emplace_back(golden_->clip(i));
  const auto results = transcriber.transcribe(clips);
  for (size_t b = 0; b < results.size(); ++b) {
    const std::string key = "batch.hyp" + std::to_string(b) + ".text";
    if (golden_->has("batch.hyp" + std::to_string(b) + ".tokens")) {
      EXPECT_EQ(results[b].text, golden_->text(key)) << "clip " << b;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<CudaCase>& info) {
  return info.param.golden.name + "_" + dtype_name(info.param.dtype);
}
INSTANTIATE_TEST_SUITE_P(Goldens, GoldenCudaTest,
                         ::testing::ValuesIn(cuda_cases({DType::kF32, DType::kF16, DType::kBF16})), case_name);
INSTANTIATE_TEST_SUITE_P(Goldens, GoldenCudaF32Test, ::testing::ValuesIn(cuda_cases({DType::kF32})), case_name);

// The bundled model's committed test sets: CUDA transcripts against the CPU engine's (reference_transcripts.tsv is
// what the CPU engine must produce, checked by bundled_model_test) and against the truth (the espeak WER).
class BundledCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(BundledCudaTest, TranscriptsEqualTheCpuEngines) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dtype = GetParam();
  asr::ModelOverrides o;
  o.device = Device::cuda(0);
  o.dtype = dtype;
  auto model = asr::AsrModel::load(fs::path(STENO_SOURCE_DIR) / "models" / "steno-tdt-small-en", o);
  ops::Context ctx = ops::Context::cuda(0);
  asr::Transcriber transcriber(model, ctx);
  int compared = 0, equal = 0;
  asr::WordErrors cuda_errors, cpu_errors;  // the espeak set against its true texts
  for (const std::string set : {"espeak", "flite"}) {
    const fs::path dir = fs::path(STENO_TEST_DATA) / "testset" / set;
    std::map<std::string, std::string> truth;
    std::ifstream manifest(dir / "manifest.jsonl");
    for (std::string line; std::getline(manifest, line);) {
      const auto e = nlohmann::json::parse(line);
      truth[e.at("audio_filepath").get<std::string>()] = e.at("text").get<std::string>();
    }
    std::ifstream in(dir / "reference_transcripts.tsv");
    std::vector<std::string> paths, refs;
    for (std::string line; std::getline(in, line);) {
      const auto tab = line.find('\t');
      if (tab == std::string::npos) continue;
      paths.push_back(line.substr(0, tab));
      refs.push_back(line.substr(tab + 1));
    }
    ASSERT_EQ(paths.size(), truth.size()) << set;
    std::vector<std::vector<float>> pcm;
    for (const auto& p : paths) pcm.push_back(audio::load_audio_file((dir / p).string(), {}).samples);
    // Batches of 8 (the CLI's default), so padding and masks are exercised.
    for (size_t start = 0; start < pcm.size(); start += 8) {
      std::vector<std::span<const float>> batch;
      for (size_t i = start; i < std::min(pcm.size(), start + 8); ++i) batch.emplace_back(pcm[i]);
      const auto results = transcriber.transcribe(batch);
      for (size_t j = 0; j < results.size(); ++j) {
        const std::string& path = paths[start + j];
        ++compared;
        equal += results[j].text == refs[start + j];
        if (dtype == DType::kF32) {
          EXPECT_EQ(results[j].text, refs[start + j]) << set << "/" << path;
        } else if (results[j].text != refs[start + j]) {
          std::printf("[ differs  ] %s/%s: CUDA %s \"%s\", CPU \"%s\"\n", set.c_str(), path.c_str(),
                      dtype_name(dtype), results[j].text.c_str(), refs[start + j].c_str());
        }
        if (set == "espeak") {
          cuda_errors += asr::word_errors(truth.at(path), results[j].text);
          cpu_errors += asr::word_errors(truth.at(path), refs[start + j]);
        }
      }
    }
  }
  std::printf("[ measured ] bundled model on CUDA %s: %d of %d transcripts equal the CPU engine's; espeak WER "
              "%.2f %% (CPU %.2f %%)\n",
              dtype_name(dtype), equal, compared, 100 * cuda_errors.rate(), 100 * cpu_errors.rate());
  EXPECT_EQ(compared, 55);
  EXPECT_GE(equal, compared - (dtype == DType::kF32 ? 0 : dtype == DType::kF16 ? 2 : 4));
  EXPECT_LE(cuda_errors.rate(), cpu_errors.rate() + (dtype == DType::kF32 ? 0.0 : 0.005));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BundledCudaTest, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace steno::testing
