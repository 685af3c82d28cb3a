#include "asr/wer.h"

#include <gtest/gtest.h>

namespace steno::asr {
namespace {

TEST(Wer, Normalisation) {
  EXPECT_EQ(normalize_for_wer("  Hello, World!  It's 5 o'clock. "), "hello world it's 5 o'clock");
  EXPECT_EQ(normalize_for_wer("a--b...c"), "a b c");
  EXPECT_EQ(normalize_for_wer(""), "");
  EXPECT_EQ(split_words("one two  three"), (std::vector<std::string>{"one", "two", "three"}));
}

TEST(Wer, HandCountedCases) {
  // Identical after normalisation.
  EXPECT_EQ(word_errors("The cat sat.", "the cat sat").errors(), 0);
  // One substitution in four words.
  WordErrors e = word_errors("the cat sat down", "the hat sat down");
  EXPECT_EQ(e.substitutions, 1);
  EXPECT_EQ(e.errors(), 1);
  EXPECT_DOUBLE_EQ(e.rate(), 0.25);
  // A deletion and an insertion, not two substitutions: "a b c d" -> "a c d e".
  e = word_errors("a b c d", "a c d e");
  EXPECT_EQ(e.deletions, 1);
  EXPECT_EQ(e.insertions, 1);
  EXPECT_EQ(e.substitutions, 0);
  // Empty hypothesis: all deletions; empty reference: rate 0 by definition, insertions counted.
  e = word_errors("one two three", "");
  EXPECT_EQ(e.deletions, 3);
  EXPECT_DOUBLE_EQ(e.rate(), 1.0);
  e = word_errors("", "noise");
  EXPECT_EQ(e.insertions, 1);
  EXPECT_DOUBLE_EQ(e.rate(), 0.0);
  // WER can exceed 1.
  EXPECT_DOUBLE_EQ(word_errors("yes", "no no no").rate(), 3.0);
}

TEST(Wer, CorpusRateSumsErrorsOverWords) {
  WordErrors total;
  total += word_errors("a b c d", "a b c d");  // 0 / 4
  total += word_errors("e f", "e g");          // 1 / 2
  EXPECT_EQ(total.reference_words, 6);
  EXPECT_DOUBLE_EQ(total.rate(), 1.0 / 6);
}

}  // namespace
}  // namespace steno::asr
