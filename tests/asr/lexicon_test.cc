// The lexicon (steno/asr/lexicon.h): what a beam search asks of it (words, prefixes, the pieces' word starts and
// letters), plain and gzip files, and its refusals of malformed ones.
#include "steno/asr/lexicon.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include "steno/core/error.h"
#include "test_util.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

const std::vector<std::string> kPieces = {"<unk>", "\xe2\x96\x81" "the", "re", "\xe2\x96\x81", "n", "'s"};

TEST(Lexicon, AnswersWordsAndPrefixesOfTheList) {
  const Lexicon lex = Lexicon::parse("there\nthe\r\n\nthen\nthe\nit's\n", kPieces, "test");
  EXPECT_EQ(lex.size(), 4u);  // the repeated "the" once
  EXPECT_TRUE(lex.is_word("the"));
  EXPECT_TRUE(lex.is_word("it's"));
  EXPECT_FALSE(lex.is_word("th"));
  EXPECT_FALSE(lex.is_word("theres"));
  EXPECT_TRUE(lex.is_prefix(""));
  EXPECT_TRUE(lex.is_prefix("th"));
  EXPECT_TRUE(lex.is_prefix("there"));
  EXPECT_FALSE(lex.is_prefix("therea"));
  EXPECT_FALSE(lex.is_prefix("x"));
  EXPECT_EQ(lex.id("it's"), 0);  // sorted: it's, the, then, there
  EXPECT_EQ(lex.id("there"), 3);
  EXPECT_EQ(lex.id("thereby"), -1);
}

TEST(Lexicon, KnowsWhichPiecesStartAWordAndTheirLetters) {
  const Lexicon lex = Lexicon::parse("the\n", kPieces, "test");
  ASSERT_EQ(lex.vocab_size(), 6);
  EXPECT_TRUE(lex.starts_word(1));
  EXPECT_EQ(lex.spelling(1), "the");
  EXPECT_FALSE(lex.starts_word(2));
  EXPECT_EQ(lex.spelling(2), "re");
  EXPECT_TRUE(lex.starts_word(3));  // the word boundary alone: a word with no letters yet
  EXPECT_EQ(lex.spelling(3), "");
  EXPECT_FALSE(lex.starts_word(0));
  EXPECT_EQ(lex.spelling(5), "'s");
}

class LexiconFiles : public testing::TempDirTest {};

TEST_F(LexiconFiles, ReadsPlainAndGzipFiles) {
  const std::string text = "alpha\nbeta\n";
  std::ofstream(dir_ / "words.txt") << text;
  gzFile gz = gzopen((dir_ / "words.txt.gz").c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(gz);
  for (const char* name : {"words.txt", "words.txt.gz"}) {
    const Lexicon lex = Lexicon::load(dir_ / name, kPieces);
    EXPECT_EQ(lex.size(), 2u) << name;
    EXPECT_TRUE(lex.is_word("beta")) << name;
  }
}

TEST_F(LexiconFiles, RefusesMalformedListsNamingTheLine) {
  expect_error([] { Lexicon::parse("one\ntwo words\n", kPieces, "w"); }, ErrorCode::kDataLoss,
               {"w, line 2", "one word"});
  expect_error([] { Lexicon::parse("a\tb\n", kPieces, "w"); }, ErrorCode::kDataLoss, {"line 1"});
  expect_error([] { Lexicon::parse(std::string(300, 'x'), kPieces, "w"); }, ErrorCode::kDataLoss,
               {"at most 256 bytes"});
  expect_error([] { Lexicon::parse("\n\r\n", kPieces, "w"); }, ErrorCode::kDataLoss, {"no words"});
  expect_error([&] { Lexicon::load(dir_ / "absent.txt", kPieces); }, ErrorCode::kNotFound, {"cannot open"});
}

}  // namespace
}  // namespace steno::asr
