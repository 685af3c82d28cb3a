// A token-level n-gram language model for decoding with shallow fusion: an ARPA backoff model (plain or gzip)
// whose words are an ASR model's token ids in NeMo's convention, token i written as the one character U+(i + 100),
// `<s>` the sentence start (tools/lm/token_lm.py writes such files; NeMo's token LMs are the same). Queried for
// the natural-log probability of every token after a history at once, what beam search adds, times alpha.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace steno::asr {

class TokenLm {
 public:
  static constexpr int kTokenOffset = 100;  // NeMo's DEFAULT_TOKEN_OFFSET
  static constexpr int kMaxOrder = 10;

  // Reads the file for a tokenizer of `vocab_size` tokens. Malformed files, words that are not one of its
  // tokens, n-grams whose context is not listed and counts that disagree with the header are errors (kDataLoss,
  // with the line); n-grams that hold </s> or <unk> past the unigrams are skipped (decoding never scores them).
  static TokenLm load(const std::filesystem::path& path, int vocab_size);
  // The same from the file's text (`name` in messages): what load() does after reading, and what the fuzzer runs.
  static TokenLm parse(std::string_view text, int vocab_size, const std::string& name);

  int order() const { return static_cast<int>(orders_.size()) + 1; }
  int vocab_size() const { return vocab_; }
  int bos() const { return vocab_; }  // the id a history starts with
  int64_t ngram_count() const;

  // ln p(w | history) for every token id w < vocab_size into `out` (size vocab_size): the backoff recursion,
  // p(w | h) = P(h w) where listed, else bow(h) * p(w | h without its first token). `history` holds token ids and
  // bos() at the start of a sentence; only its last order() - 1 entries count.
  void ln_probs(std::span<const int> history, std::span<double> out) const;

 private:
  TokenLm() = default;
  // The index of the n-gram `tokens` (its order: their count) among its order's entries, or -1 if not listed.
  int64_t find(std::span<const int> tokens) const;

  int vocab_ = 0;
  // Unigrams, indexed by token id, <s> at vocab_: log10 probability and backoff weight.
  std::vector<float> uni_logp_, uni_bow_;
  std::vector<char> uni_listed_;  // whether the file lists it (an unlisted token's probability is <unk>'s)
  // Orders 2..N: entries sorted by key (the index of the n-gram's context among the order below, << 32, | the
  // token), so a context's continuations are one contiguous run.
  struct Order {
    std::vector<uint64_t> keys;
    std::vector<float> logp, bow;
  };
  std::vector<Order> orders_;
};

}  // namespace steno::asr
