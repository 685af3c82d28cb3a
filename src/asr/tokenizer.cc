#include "steno/asr/tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <filesystem>

#include "asr/unicode_punct.h"
#include "steno/core/error.h"

namespace steno::asr {

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;

Tokenizer::Tokenizer(const std::string& model_path) : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  if (!std::filesystem::exists(model_path)) fail(ErrorCode::kNotFound, "tokenizer not found: {}", model_path);
  const auto status = sp_->Load(model_path);
  if (!status.ok()) fail(ErrorCode::kDataLoss, "cannot load SentencePiece model {}: {}", model_path, status.ToString());
  const int n = sp_->GetPieceSize();
  for (int id = 0; id < n; ++id) {
    pieces_.push_back(sp_->IdToPiece(id));
    piece_texts_.push_back(sp_->DecodeIds({id}));
  }
  // NeMo's extract_punctuation_from_vocab: skip special pieces ([..], <..>, ##.., ▁..), collect category-P chars.
  for (int id = 0; id < n; ++id) {
    const std::string& p = pieces_[id];
    const bool special = sp_->IsControl(id) || sp_->IsUnknown(id) ||
                         (p.size() >= 2 && p.front() == '[' && p.back() == ']') ||
                         (p.size() >= 2 && p.front() == '<' && p.back() == '>') || p.rfind("##", 0) == 0 ||
                         p.rfind("\xE2\x96\x81", 0) == 0;
    if (special) continue;
    for (const std::string& ch : utf8_chars(p))
      if (is_unicode_punctuation(ch) && std::find(punctuation_.begin(), punctuation_.end(), ch) == punctuation_.end())
        punctuation_.push_back(ch);
  }
  is_punct_.resize(n);
  for (int id = 0; id < n; ++id)
    is_punct_[id] = std::find(punctuation_.begin(), punctuation_.end(), piece_texts_[id]) != punctuation_.end();
}

int Tokenizer::vocab_size() const { return static_cast<int>(pieces_.size()); }

const std::string& Tokenizer::piece(int id) const {
  STENO_CHECK(id >= 0 && id < vocab_size(), "token id {} outside the vocabulary of {}", id, vocab_size());
  return pieces_[id];
}

const std::string& Tokenizer::piece_text(int id) const {
  STENO_CHECK(id >= 0 && id < vocab_size(), "token id {} outside the vocabulary of {}", id, vocab_size());
  return piece_texts_[id];
}

bool Tokenizer::is_punctuation(int id) const { return id >= 0 && id < vocab_size() && is_punct_[id]; }

std::string Tokenizer::decode_plain(const std::vector<int>& ids) const {
  std::vector<int> kept;
  for (int id : ids)
    if (id >= 0 && id < vocab_size()) kept.push_back(id);
  return sp_->DecodeIds(kept);
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  const std::string text = decode_plain(ids);
  // Remove one whitespace immediately before any supported punctuation mark.
  std::string out;
  out.reserve(text.size());
  const auto chars = utf8_chars(text);
  for (size_t i = 0; i < chars.size(); ++i) {
    const bool space = chars[i] == " ";
    if (space && i + 1 < chars.size() &&
        std::find(punctuation_.begin(), punctuation_.end(), chars[i + 1]) != punctuation_.end())
      continue;
    out += chars[i];
  }
  return out;
}

std::string Tokenizer::decode_pieces(const std::vector<std::string>& pieces) const {
  return sp_->DecodePieces(pieces);
}

}  // namespace steno::asr
