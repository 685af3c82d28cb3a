// The words a beam search may spell without a penalty: a word list (one word per line, plain or gzip) and the
// model's pieces as text, so that a hypothesis's current word can be followed token by token however the model
// splits it into pieces. A decoder that only knows token statistics (the token LM) happily spells "eglectful" or
// "oblone gotta"; with a lexicon, a hypothesis pays `unknown_word_penalty` (tdt_beam.h) once for each word that is
// not in the list, as soon as its spelling so far begins no listed word, or when it ends as a prefix of one.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace steno::asr {

class Lexicon {
 public:
  // Reads the list for a model whose piece i is pieces[i] (SentencePiece's spelling, "▁" starting a word).
  // Empty lines are skipped; a line with white space inside or of over 256 bytes is an error (kDataLoss, with the
  // line), as is a list of no words.
  static Lexicon load(const std::filesystem::path& path, std::span<const std::string> pieces);
  // The same from the file's text (`name` in messages): what load() does after reading, and what the fuzzer runs.
  static Lexicon parse(std::string_view text, std::span<const std::string> pieces, const std::string& name);

  size_t size() const { return words_.size(); }
  int vocab_size() const { return static_cast<int>(spellings_.size()); }

  // Whether token `id` begins a new word (its piece starts with "▁"), and its letters without that mark.
  bool starts_word(int id) const { return starts_[static_cast<size_t>(id)] != 0; }
  const std::string& spelling(int id) const { return spellings_[static_cast<size_t>(id)]; }

  bool is_word(std::string_view w) const { return id(w) >= 0; }
  // A word's index in the sorted list, -1 if it is not listed.
  int id(std::string_view w) const;
  // Whether some listed word begins with `w` (every word begins with "").
  bool is_prefix(std::string_view w) const;

 private:
  Lexicon() = default;
  std::vector<std::string> words_;  // sorted, unique
  std::vector<std::string> spellings_;
  std::vector<char> starts_;
};

}  // namespace steno::asr
