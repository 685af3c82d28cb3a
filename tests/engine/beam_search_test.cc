// Beam search (tdt_beam.h) over a batch: the clips are searched side by side on the pool's threads, and each
// clip's transcript must be what it is alone (the transcripts' equality with the PyTorch reference's beam search
// is BundledModel.*WithBeamAndLm's).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"
#include "steno/audio/decode.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;

const std::string kBundledDir = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en";

TEST(BeamSearch, ABatchOfClipsDecodesAsEachClipAlone) {
  // Six flite clips (the LM changes most there), of different lengths: the batch pads them to the longest.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(std::string(STENO_TEST_DATA) + "/testset/flite/audio"))
    files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  files.resize(6);
  std::vector<std::vector<float>> audio;
  for (const std::string& f : files) audio.push_back(audio::load_audio_file(f).samples);

  ops::Context ctx = ops::Context::cpu(2);
  const auto model = AsrModel::load(kBundledDir);
  Transcriber transcriber(model, ctx);
  DecodingRequest request;
  request.lm = kBundledDir + "/lm.arpa.gz";
  transcriber.set_beam(request.resolve(model->config().decoder.vocab_size));
  const std::vector<std::span<const float>> batch(audio.begin(), audio.end());
  const std::vector<Transcript> together = transcriber.transcribe(batch);
  ASSERT_EQ(together.size(), audio.size());
  for (size_t i = 0; i < audio.size(); ++i) {
    const Transcript alone = transcriber.transcribe({audio[i]}).front();
    EXPECT_FALSE(alone.text.empty()) << files[i];
    EXPECT_EQ(together[i].text, alone.text) << files[i];
    ASSERT_EQ(together[i].tokens.size(), alone.tokens.size()) << files[i];
    for (size_t t = 0; t < alone.tokens.size(); ++t) {
      EXPECT_EQ(together[i].tokens[t].id, alone.tokens[t].id) << files[i] << " token " << t;
      EXPECT_EQ(together[i].tokens[t].start_frame, alone.tokens[t].start_frame) << files[i] << " token " << t;
      EXPECT_EQ(together[i].tokens[t].end_frame, alone.tokens[t].end_frame) << files[i] << " token " << t;
    }
  }
}

}  // namespace
}  // namespace steno::asr
