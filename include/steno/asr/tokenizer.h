// SentencePiece detokenisation with NeMo's text post-processing (docs/engine.md, "Text and timestamps").
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace steno::asr {

class Tokenizer {
 public:
  // Loads a SentencePiece model; kNotFound / kDataLoss with the path on failure.
  explicit Tokenizer(const std::string& model_path);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;

  int vocab_size() const;
  const std::string& piece(int id) const;  // "▁the"
  // The piece as text on its own, as NeMo's decode_tokens_to_str([piece]) gives it ("▁the" -> "the").
  const std::string& piece_text(int id) const;
  bool is_punctuation(int id) const;  // the piece is one "supported punctuation" character

  // SentencePiece's plain decode (ids >= vocab_size, i.e. blank, dropped).
  std::string decode_plain(const std::vector<int>& ids) const;
  // NeMo's transcript text: the plain decode with one space removed before each supported punctuation mark.
  std::string decode(const std::vector<int>& ids) const;
  std::string decode_pieces(const std::vector<std::string>& pieces) const;

  // Every Unicode punctuation character (category P) that occurs in a non-special vocabulary piece.
  const std::vector<std::string>& supported_punctuation() const { return punctuation_; }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::vector<std::string> pieces_, piece_texts_;
  std::vector<bool> is_punct_;
  std::vector<std::string> punctuation_;
};

}  // namespace steno::asr
