// The CUDA front end (CudaFeatureExtractor) against the CPU one (FeatureExtractor, itself tested against NeMo's
// outputs): both NeMo variants, 80 and 128 mels, batches of mixed lengths of real speech (the committed test
// clips), clips too short for a frame or two, and the bundled model through the Transcriber.
//
// Tolerance: both sides compute in f32 and sum the DFT and mel GEMMs in different orders; the log turns a tiny
// absolute error in a near-silent bin into a larger one, and the normalisation divides by the channel's spread.
// Measured differences are ~1e-5 typically; the test allows 2e-3 at any element and 2e-5 on average. Clips of one
// or two frames are the exception: a channel whose two log-mel values are nearly equal has std ~1e-7, and NeMo's
// (x - mean) / (std + 1e-5) then amplifies an f32 rounding difference ~1e5-fold (measured 0.027 on the H200 for a
// 160-sample clip, 128 mels, front end 2.4); their elements are held to 0.1, which a real error still exceeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <vector>

#include "cuda_features.h"
#include "steno/asr/features.h"
#include "steno/asr/model.h"
#include "steno/audio/decode.h"
#include "steno/core/cuda.h"
#include "steno/ops/copy.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;

std::vector<std::vector<float>> test_clips(int n) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(STENO_SOURCE_DIR) / "tests/data/testset/espeak/audio"))
    files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::vector<float>> out;
  for (int i = 0; i < n && i < static_cast<int>(files.size()); ++i)
    out.push_back(audio::load_audio_file(files[i].string()).samples);
  return out;
}

PreprocessorConfig config(int n_mels, FrontendVersion version) {
  PreprocessorConfig c;
  c.features = n_mels;
  c.n_fft = 512;
  c.highfreq = c.sample_rate / 2.0;  // what ModelConfig resolves NeMo's null highfreq to
  c.frontend_version = version;
  return c;
}

// Features of `clips` on both sides; expects equal lengths and values within the tolerance.
void expect_same_features(const FeatureExtractor& cpu, const std::vector<std::span<const float>>& clips) {
  ops::Context host = ops::Context::cpu();
  ops::Context gpu = ops::Context::cuda(0);
  const CudaFeatureExtractor cuda_fe(cpu, gpu);
  const Features want = cpu.compute(host, clips);
  const Features got_dev = cuda_fe.compute(gpu, clips);
  EXPECT_EQ(got_dev.lengths, want.lengths);
  ASSERT_EQ(got_dev.values.shape(), want.values.shape());
  Tensor got = Tensor::empty(got_dev.values.shape());
  ops::copy(gpu, got_dev.values, got);  // the download runs on the GPU context's stream
  gpu.synchronize();
  const float* a = got.data<float>();
  const float* b = want.values.data<float>();
  const int64_t per_clip = clips.empty() ? 0 : got.numel() / static_cast<int64_t>(clips.size());
  double max_diff = 0, sum_diff = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(a[i])) << "element " << i;
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    if (want.lengths[static_cast<size_t>(i / per_clip)] <= 2) {  // ill-conditioned: see the top of the file
      EXPECT_LE(d, 0.1) << "element " << i << " of a clip of " << want.lengths[static_cast<size_t>(i / per_clip)]
                        << " frame(s)";
      continue;
    }
    max_diff = std::max(max_diff, d);
    sum_diff += d;
  }
  const double mean_diff = got.numel() ? sum_diff / got.numel() : 0;
  EXPECT_LE(max_diff, 2e-3);
  EXPECT_LE(mean_diff, 2e-5);
  std::printf("[ measured ] %zu clips, %lld values: max |diff| %.2e, mean %.2e\n", clips.size(),
              static_cast<long long>(got.numel()), max_diff, mean_diff);
}

class CudaFeaturesTest : public ::testing::TestWithParam<std::tuple<int, FrontendVersion>> {
 protected:
  void SetUp() override {
    if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaFeaturesTest, MixedLengthBatchMatchesTheCpu) {
  const auto [n_mels, version] = GetParam();
  const FeatureExtractor cpu(config(n_mels, version), Tensor(), Tensor());
  const auto pcm = test_clips(8);
  ASSERT_EQ(pcm.size(), 8u);
  std::vector<std::span<const float>> clips(pcm.begin(), pcm.end());
  expect_same_features(cpu, clips);
  // One clip alone (no batch padding), and the batch with clips of 1 and 160 samples (no frame, one frame).
  expect_same_features(cpu, {clips[3]});
  std::vector<std::span<const float>> with_short = clips;
  with_short.insert(with_short.begin() + 2, std::span<const float>(pcm[0]).first(1));
  with_short.push_back(std::span<const float>(pcm[1]).first(160));
  expect_same_features(cpu, with_short);
}

// 24 clips of the test set's speech repeated to `shortest` + 0..13 s: lengths that are not multiples of a chunk.
std::vector<std::vector<float>> long_speech(int shortest) {
  const auto pcm = test_clips(8);
  std::vector<std::vector<float>> out;
  for (int i = 0; i < 24; ++i) {
    std::vector<float> c;
    const auto& speech = pcm[static_cast<size_t>(i % 8)];
    while (c.size() < static_cast<size_t>(16000 * (shortest + i % 14))) c.insert(c.end(), speech.begin(), speech.end());
    out.push_back(std::move(c));
  }
  return out;
}

// Over 4 MiB of audio the upload packs it in chunks on several threads (audio_upload.cc): 24 clips, 32 MB, chunk
// boundaries falling inside clips, every clip's features checked against the CPU's.
TEST_P(CudaFeaturesTest, ALargeBatchUploadedInChunksMatchesTheCpu) {
  const auto [n_mels, version] = GetParam();
  const FeatureExtractor cpu(config(n_mels, version), Tensor(), Tensor());
  const auto pcm = long_speech(14);
  expect_same_features(cpu, std::vector<std::span<const float>>(pcm.begin(), pcm.end()));
}

// Over 8 Mi samples the upload goes in pieces on a stream of its own and each piece's kernels run as it arrives
// (upload_clips_in_pieces): 24 clips of 30-43 s, 57 MB, three pieces.
TEST_P(CudaFeaturesTest, ABatchUploadedInPiecesMatchesTheCpu) {
  const auto [n_mels, version] = GetParam();
  const FeatureExtractor cpu(config(n_mels, version), Tensor(), Tensor());
  const auto pcm = long_speech(30);
  expect_same_features(cpu, std::vector<std::span<const float>>(pcm.begin(), pcm.end()));
}

INSTANTIATE_TEST_SUITE_P(Configs, CudaFeaturesTest,
                         ::testing::Combine(::testing::Values(80, 128),
                                            ::testing::Values(FrontendVersion::kNeMo25, FrontendVersion::kNeMo24)));

TEST(CudaFeatures, UnnormalisedFeaturesMatchTheCpu) {
  // Sortformer v2's front end: NeMo's normalize "NA", the log-mel as it is.
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  PreprocessorConfig c = config(128, FrontendVersion::kNeMo25);
  c.normalize = "none";
  const FeatureExtractor cpu(c, Tensor(), Tensor());
  const auto pcm = test_clips(4);
  ASSERT_EQ(pcm.size(), 4u);
  expect_same_features(cpu, std::vector<std::span<const float>>(pcm.begin(), pcm.end()));
}

TEST(CudaFeatures, BundledModelLoadsItsFrontEndOnTheDevice) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  ModelOverrides o;
  o.device = Device::cuda(0);
  o.dtype = DType::kBF16;
  const auto model = AsrModel::load((fs::path(STENO_SOURCE_DIR) / "models/steno-tdt-small-en").string(), o);
  ASSERT_NE(model->cuda_features(), nullptr);
  const auto pcm = test_clips(4);
  std::vector<std::span<const float>> clips(pcm.begin(), pcm.end());
  expect_same_features(model->features(), clips);
}

}  // namespace
}  // namespace steno::asr
