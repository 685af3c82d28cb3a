// NeMo's long-form setting as steno serve runs it (Transcriber::set_long_form): past its threshold a clip runs the
// encoder with local attention over the same weights, and on the CPU its subsampling in time chunks. On 200 s of
// the committed test clips (longer than one subsampling chunk): the chunked subsampling gives the one-piece
// embeddings, and the long-form transcript is the one of the model loaded with local attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "asr/wer.h"
#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"
#include "steno/audio/decode.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en";

// The test set's clips one after another until `seconds` of audio.
std::vector<float> long_audio(double seconds) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(std::string(STENO_TEST_DATA) + "/testset/espeak/audio"))
    files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<float> out;
  const size_t want = static_cast<size_t>(seconds * audio::kSampleRate);
  for (size_t i = 0; out.size() < want; i = (i + 1) % files.size()) {
    const audio::DecodedAudio a = audio::load_audio_file(files[i]);
    out.insert(out.end(), a.samples.begin(), a.samples.end());
  }
  out.resize(want);
  return out;
}

TEST(LongForm, ChunkedSubsamplingGivesTheOnePieceEmbeddings) {
  const auto model = AsrModel::load(kModel);
  ops::Context ctx = ops::Context::cpu(2);
  const std::vector<float> audio = long_audio(200);
  const std::vector<std::span<const float>> one = {audio}, two = {audio, audio};
  // Batch 1 on the CPU takes the chunked path; a batch of two the one-piece path.
  Features f1 = model->features().compute(ctx, one), f2 = model->features().compute(ctx, two);
  std::vector<int64_t> l1 = f1.lengths, l2 = f2.lengths;
  const Tensor chunked = model->encoder().pre_encode(ctx, f1.values, l1);
  const Tensor whole = model->encoder().pre_encode(ctx, f2.values, l2);
  ASSERT_EQ(l1[0], l2[0]);
  ASSERT_EQ(chunked.dim(1), whole.dim(1));
  ASSERT_GT(chunked.dim(1), 2048) << "the clip must span more than one chunk";
  const int64_t n = chunked.dim(1) * chunked.dim(2);
  const float* a = chunked.data<float>();
  const float* b = whole.data<float>();  // clip 0 of the batch
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  std::printf("[ measured ] %lld embedding values, max |chunked - one piece| %.3g\n", static_cast<long long>(n),
              worst);
  EXPECT_LT(worst, 1e-4);
}

TEST(LongForm, PastTheThresholdTheTranscriptIsLocalAttentions) {
  const std::vector<float> audio = long_audio(200);
  ops::Context ctx = ops::Context::cpu(2);
  Transcriber served(AsrModel::load(kModel), ctx);
  served.set_long_form(100, 128);
  ModelOverrides local;
  local.local_attention = 128;
  Transcriber reference(AsrModel::load(kModel, local), ctx);
  const std::string got = served.transcribe({audio}).front().text;
  EXPECT_FALSE(got.empty());
  EXPECT_EQ(got, reference.transcribe({audio}).front().text);
  // Under the threshold the model's own (full) attention runs.
  served.set_long_form(300, 128);
  Transcriber full(AsrModel::load(kModel), ctx);
  EXPECT_EQ(served.transcribe({audio}).front().text, full.transcribe({audio}).front().text);
}

// Beam search with the LM over 20 minutes in one piece: a hypothesis's tokens are shared with its ancestors', so the
// search is linear in the audio (a copy of them per expansion made it quadratic: this test took 95 s with it, 9 s
// without), and the transcript's thousands of tokens are freed without recursing once per token. Its words stay
// close to greedy decoding's (they differed in 12.5 % of them when written; beam search and the LM change ~10 % of
// the test sets' words) and in time order.
TEST(LongForm, BeamSearchWithTheLmOverTwentyMinutes) {
  const double seconds = 1200;
  const std::vector<float> audio = long_audio(seconds);
  ops::Context ctx = ops::Context::cpu(2);
  const auto model = AsrModel::load(kModel);
  Transcriber greedy(model, ctx), beam(model, ctx);
  greedy.set_long_form(100, 128);
  beam.set_long_form(100, 128);
  DecodingRequest request;
  request.lm = kModel + "/lm.arpa.gz";
  beam.set_beam(request.resolve(model->config().decoder.vocab_size));
  const Transcript g = greedy.transcribe({audio}).front(), b = beam.transcribe({audio}).front();
  ASSERT_GT(g.words.size(), 2000u);
  const WordErrors apart = word_errors(g.text, b.text);
  std::printf("[ measured ] %zu words greedy, %zu with the beam and the LM; they differ in %.1f %% of greedy's\n",
              g.words.size(), b.words.size(), 100 * apart.rate());
  EXPECT_LT(apart.rate(), 0.2);
  double last = 0;
  for (const TimedText& w : b.words) {
    EXPECT_GE(w.start, last);
    last = w.start;
  }
  EXPECT_LE(last, seconds);
}

}  // namespace
}  // namespace steno::asr
