// cpWER on cases counted by hand: the best speaker assignment, words with the wrong speaker, speakers without a
// partner on either side, and the text normalisation.
#include <gtest/gtest.h>

#include "steno/diar/speaker_wer.h"

namespace steno::diar {
namespace {

TEST(SpeakerWer, PerfectUnderAnyLabelsIsZero) {
  const SpeakerWer w = cp_wer({{"A", {"hello", "there"}}, {"B", {"hi"}}}, {{"spk1", {"hi"}}, {"spk0", {"hello", "there"}}});
  EXPECT_EQ(w.errors(), 0);
  EXPECT_EQ(w.reference_words, 3);
  EXPECT_EQ(w.mapping.at("spk0"), "A");
  EXPECT_EQ(w.mapping.at("spk1"), "B");
}

TEST(SpeakerWer, AWordWithTheWrongSpeakerCostsTwo) {
  // "yes" belongs to B but is given to speaker x (mapped to A): one insertion into A, one deletion from B.
  const SpeakerWer w = cp_wer({{"A", {"good", "morning"}}, {"B", {"yes", "indeed"}}},
                              {{"x", {"good", "morning", "yes"}}, {"y", {"indeed"}}});
  EXPECT_EQ(w.insertions, 1);
  EXPECT_EQ(w.deletions, 1);
  EXPECT_EQ(w.substitutions, 0);
  EXPECT_DOUBLE_EQ(w.wer(), 0.5);
}

TEST(SpeakerWer, UnpairedSpeakersAreScoredAgainstNothing) {
  // Three hypothesis speakers for two reference speakers: pairing y with B and leaving "z" unpaired costs 2
  // insertions; pairing z with B instead would cost 1 substitution + 1 insertion + y's word.
  SpeakerWer w = cp_wer({{"A", {"how", "are", "you"}}, {"B", {"fine"}}},
                        {{"x", {"how", "are", "you"}}, {"y", {"fine"}}, {"z", {"uh", "huh"}}});
  EXPECT_EQ(w.substitutions, 0);
  EXPECT_EQ(w.insertions, 2);
  EXPECT_EQ(w.deletions, 0);
  EXPECT_EQ(w.mapping.count("z"), 0u);
  // One hypothesis speaker for two reference speakers: the other's words are all deleted.
  w = cp_wer({{"A", {"how", "are", "you"}}, {"B", {"fine", "thanks"}}}, {{"x", {"how", "are", "you"}}});
  EXPECT_EQ(w.deletions, 2);
  EXPECT_EQ(w.errors(), 2);
  EXPECT_DOUBLE_EQ(cp_wer({}, {}).wer(), 0.0);
}

TEST(SpeakerWer, NormalisesCaseAndPunctuation) {
  EXPECT_EQ(normalized_words("Hello, it's me... Really?"),
            (std::vector<std::string>{"hello", "it's", "me", "really"}));
  EXPECT_TRUE(normalized_words(" ,. ").empty());
}

}  // namespace
}  // namespace steno::diar
