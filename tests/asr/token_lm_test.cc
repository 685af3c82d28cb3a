// The token LM reader (steno/asr/token_lm.h) against the estimate that wrote its file (tools/lm/token_lm.py
// golden: tests/data/lm), plain and gzip, and its refusals of malformed files.
#include "steno/asr/token_lm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

const fs::path kLmDir = fs::path(STENO_TEST_DATA) / "lm";

TEST(TokenLm, GivesTheEstimatesProbabilitiesForEveryTokenAfterEveryHistory) {
  std::ifstream in(kLmDir / "toy_expected.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  const int vocab = want["vocab"];
  for (const char* name : {"toy.arpa", "toy.arpa.gz"}) {
    const TokenLm lm = TokenLm::load(kLmDir / name, vocab);
    EXPECT_EQ(lm.order(), want["order"].get<int>());
    EXPECT_EQ(lm.bos(), vocab);
    std::vector<double> got(static_cast<size_t>(vocab));
    for (size_t i = 0; i < want["histories"].size(); ++i) {
      const std::vector<int> history = want["histories"][i];
      lm.ln_probs(history, got);
      double mass = 0;
      for (int w = 0; w < vocab; ++w) {
        // The file holds 4 decimals of log10 a number, and a backoff chain adds up to 3 numbers.
        EXPECT_NEAR(got[w], want["ln_probs"][i][w].get<double>(), 5e-4) << name << " history " << i << " token " << w;
        mass += std::exp(got[w]);
      }
      EXPECT_NEAR(mass, 1.0, 2e-3) << name << " history " << i;
    }
  }
}

TEST(TokenLm, OnlyTheLastOrderMinusOneTokensOfAHistoryCount) {
  const TokenLm lm = TokenLm::load(kLmDir / "toy.arpa", 64);
  std::vector<double> a(64), b(64);
  lm.ln_probs(std::vector<int>{lm.bos(), 9, 3, 4}, a);
  lm.ln_probs(std::vector<int>{3, 4}, b);
  EXPECT_EQ(a, b);
}

class TokenLmFiles : public testing::TempDirTest {
 protected:
  fs::path write(const std::string& text) {
    const fs::path p = dir_ / "lm.arpa";
    std::ofstream(p) << text;
    return p;
  }
};

// "d" and "e" are tokens 0 and 1 (U+0064, U+0065).
constexpr const char* kHeader = "\\data\\\nngram 1=3\nngram 2=1\n\n\\1-grams:\n-1\t<s>\t-0.5\n-0.3\td\t-0.2\n-0.3\te\n";

TEST_F(TokenLmFiles, ReadsAWellFormedFileAndBacksOff) {
  const TokenLm lm = TokenLm::load(write(std::string(kHeader) + "\n\\2-grams:\n-0.1\td e\n\n\\end\\\n"), 2);
  EXPECT_EQ(lm.ngram_count(), 4);
  std::vector<double> p(2);
  lm.ln_probs(std::vector<int>{0}, p);
  EXPECT_NEAR(p[1], -0.1 * std::log(10.0), 1e-6);          // listed
  EXPECT_NEAR(p[0], (-0.2 - 0.3) * std::log(10.0), 1e-6);  // backed off: bow(d) + p(d)
}

TEST_F(TokenLmFiles, RefusesMalformedFilesNamingTheProblem) {
  const std::string ok_tail = "\n\\2-grams:\n-0.1\td e\n\n\\end\\\n";
  expect_error([&] { TokenLm::load(write("ngram 1=3\n"), 2); }, ErrorCode::kDataLoss, {"no \\data\\"});
  expect_error([&] { TokenLm::load(write(std::string(kHeader) + "\n\\2-grams:\n-0.1\td e\n"), 2); },
               ErrorCode::kDataLoss, {"no \\end\\"});
  expect_error([&] { TokenLm::load(write(std::string(kHeader) + "\n\\2-grams:\n\n\\end\\\n"), 2); },
               ErrorCode::kDataLoss, {"0 2-grams where the header says 1"});
  expect_error([&] { TokenLm::load(write(std::string(kHeader) + "\n\\2-grams:\n-0.1\td word\n\n\\end\\\n"), 2); },
               ErrorCode::kDataLoss, {"'word' is not a token of this model", "U+(i + 100)"});
  expect_error([&] { TokenLm::load(write(std::string(kHeader) + "\n\\2-grams:\n-0.1\td f\n\n\\end\\\n"), 2); },
               ErrorCode::kDataLoss, {"'f' is not a token"});  // token 2 of a 2-token model
  expect_error([&] { TokenLm::load(write(std::string(kHeader) + "\n\\2-grams:\nx\td e\n\n\\end\\\n"), 2); },
               ErrorCode::kDataLoss, {"'x' is not a number"});
  expect_error([&] { TokenLm::load(write(std::string(kHeader) + "\n\\2-grams:\n-0.1\td\n\n\\end\\\n"), 2); },
               ErrorCode::kDataLoss, {"expected 2 words"});
  // A context that is not listed: "e" has no unigram here.
  const std::string no_e = "\\data\\\nngram 1=1\nngram 2=1\n\n\\1-grams:\n-0.3\td\t-0.2\n";
  expect_error([&] { TokenLm::load(write(no_e + "\n\\2-grams:\n-0.1\te d\n\n\\end\\\n"), 2); },
               ErrorCode::kDataLoss, {"context is not listed"});
  expect_error([&] { TokenLm::load(write(std::string(kHeader) + "\n\\3-grams:\n" + ok_tail), 2); },
               ErrorCode::kDataLoss, {"out of place"});
  expect_error([&] { TokenLm::load(dir_ / "absent.arpa", 2); }, ErrorCode::kNotFound, {"cannot open"});
  // KenLM's binary format (its first bytes, as build_binary writes them) is named, not read as broken ARPA.
  expect_error([&] { TokenLm::load(write(std::string("mmap lm http://kheafield.com/code format version 5\n") +
                                         std::string(4, '\0')), 2); },
               ErrorCode::kUnimplemented, {"KenLM binary", "ARPA"});
}

}  // namespace
}  // namespace steno::asr
