// Beam search (tdt_beam.h) over a batch: the clips are searched side by side on the pool's threads, and each
// clip's transcript must be what it is alone (the transcripts' equality with the PyTorch reference's beam search
// is BundledModel.*TestSet's); how a decoding request meets the model's default decoding; what the lexicon does.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "steno/asr/model.h"
#include "steno/asr/tdt_beam.h"
#include "steno/asr/transcriber.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

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

// The model's config with no default decoding named, as every converted NeMo checkpoint has.
ModelConfig greedy_model_of(const ModelConfig& model) {
  ModelConfig greedy = model;
  greedy.decoding = DecodingConfig{};
  greedy.decoding.durations = model.decoding.durations;
  greedy.decoding.max_symbols = model.decoding.max_symbols;
  return greedy;
}

// A request naming no decoding gets the model's default (config.json decoding.strategy): the bundled model's is
// beam search with its own LM; the request's beam size and LM weights replace the model's, and a request for
// greedy decoding or for another LM sets the default aside.
TEST(DecodingRequest, TheModelsDefaultAppliesToARequestThatNamesNone) {
  const ModelConfig bundled = AsrModel::read_config(kBundledDir);
  ASSERT_EQ(bundled.decoding.strategy, "beam");
  DecodingRequest none;
  const std::optional<BeamOptions> by_default = none.resolve(bundled, kBundledDir);
  ASSERT_TRUE(by_default);
  EXPECT_EQ(by_default->beam, bundled.decoding.beam_size);
  ASSERT_NE(by_default->lm, nullptr);
  EXPECT_EQ(by_default->lm_alpha, bundled.decoding.lm_alpha);
  EXPECT_EQ(by_default->lm_beta, bundled.decoding.lm_beta);
  ASSERT_NE(by_default->lexicon, nullptr);
  EXPECT_GT(by_default->lexicon->size(), 50000u);
  EXPECT_EQ(by_default->unknown_word_penalty, bundled.decoding.unknown_word_penalty);
  EXPECT_GT(by_default->unknown_word_penalty, 0.0);

  DecodingRequest tuned;
  tuned.beam_size = 3;
  tuned.lm_alpha = 0.25;
  const std::optional<BeamOptions> t = tuned.resolve(bundled, kBundledDir);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->beam, 3);
  EXPECT_EQ(t->lm_alpha, 0.25);
  EXPECT_EQ(t->lm_beta, bundled.decoding.lm_beta);

  DecodingRequest greedy;
  greedy.decoding = "greedy";
  EXPECT_FALSE(greedy.resolve(bundled, kBundledDir));
  DecodingRequest beam_alone;  // beam search without an LM: the user's choice, not the model's LM
  beam_alone.decoding = "beam";
  const std::optional<BeamOptions> b = beam_alone.resolve(bundled, kBundledDir);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->lm, nullptr);
  EXPECT_EQ(b->lexicon, nullptr);
  EXPECT_EQ(b->beam, BeamOptions{}.beam);

  const ModelConfig greedy_model = greedy_model_of(bundled);
  EXPECT_FALSE(none.resolve(greedy_model, kBundledDir));
  EXPECT_THROW(tuned.resolve(greedy_model, kBundledDir), Error);  // LM weights without an LM

  ModelConfig missing_lm = bundled;  // the default's LM must be there: no silent fall back to greedy
  missing_lm.decoding.lm = "no-such-lm.arpa.gz";
  EXPECT_THROW(none.resolve(missing_lm, kBundledDir), Error);
  DecodingRequest own_lexicon;  // a request's lexicon replaces the model's, at the default penalty unless given
  own_lexicon.lexicon = (fs::path(STENO_TEST_DATA) / "lm" / "words.txt").string();
  const std::optional<BeamOptions> own = own_lexicon.resolve(bundled, kBundledDir);
  ASSERT_TRUE(own && own->lexicon && own->lm);
  EXPECT_EQ(own->lexicon->size(), 3u);
  EXPECT_EQ(own->unknown_word_penalty, kDefaultUnknownWordPenalty);
  DecodingRequest lexicon_alone = own_lexicon;  // implies beam search, as an LM does, without the model's LM
  lexicon_alone.decoding = "";
  lexicon_alone.unknown_word_penalty = 5.0;
  const std::optional<BeamOptions> alone = lexicon_alone.resolve(greedy_model_of(bundled), kBundledDir);
  ASSERT_TRUE(alone && alone->lexicon);
  EXPECT_EQ(alone->lm, nullptr);
  EXPECT_EQ(alone->unknown_word_penalty, 5.0);
  DecodingRequest greedy_lexicon = own_lexicon;
  greedy_lexicon.decoding = "greedy";
  EXPECT_THROW(greedy_lexicon.resolve(bundled, kBundledDir), Error);
  DecodingRequest penalty_alone;
  penalty_alone.decoding = "beam";
  penalty_alone.unknown_word_penalty = 1.0;
  EXPECT_THROW(penalty_alone.resolve(greedy_model_of(bundled), kBundledDir), Error);
  EXPECT_THROW(own_lexicon.resolve(bundled.decoder.vocab_size), Error);  // no tokenizer: no lexicon

  ModelConfig missing_lexicon = bundled;
  missing_lexicon.decoding.lexicon = "no-such-words.txt";
  EXPECT_THROW(none.resolve(missing_lexicon, kBundledDir), Error);
}

// The lexicon at work: flite says "bleakness desolation plastic forks", which the token LM alone begins with a
// word no dictionary has ("leakness"); with the lexicon every word is one of its own.
TEST(BeamSearch, TheLexiconKeepsSpellingsToItsWords) {
  const std::vector<float> audio =
      audio::load_audio_file(std::string(STENO_TEST_DATA) + "/testset/flite/audio/flite-test-0000036.flac").samples;
  ops::Context ctx = ops::Context::cpu(2);
  const auto model = AsrModel::load(kBundledDir);
  const std::optional<BeamOptions> with = DecodingRequest{}.resolve(model->config(), kBundledDir);
  ASSERT_TRUE(with && with->lexicon);
  BeamOptions without = *with;
  without.lexicon = nullptr;
  without.unknown_word_penalty = 0.0;
  Transcriber transcriber(model, ctx);
  const auto words_of = [&](const BeamOptions& o) {
    transcriber.set_beam(o);
    std::vector<std::string> words;
    std::istringstream in(transcriber.transcribe({audio}).front().text);
    for (std::string w; in >> w;) words.push_back(w);
    return words;
  };
  const std::vector<std::string> plain = words_of(without), listed = words_of(*with);
  EXPECT_TRUE(std::any_of(plain.begin(), plain.end(), [&](const std::string& w) { return !with->lexicon->is_word(w); }))
      << "the clip no longer shows what the lexicon is for: choose another";
  ASSERT_FALSE(listed.empty());
  for (const std::string& w : listed) EXPECT_TRUE(with->lexicon->is_word(w)) << w;
}

}  // namespace
}  // namespace steno::asr
