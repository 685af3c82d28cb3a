#include "steno/asr/lexicon.h"

#include <algorithm>

#include "gzip_text.h"
#include "steno/core/error.h"

namespace steno::asr {
namespace {

// A bound on what an untrusted list may make us hold: a real one is hundreds of KB (the bundled model's, 55,160
// words, 0.5 MB of text).
constexpr size_t kMaxListBytes = size_t{64} << 20;
// Longer than any word of a dictionary (the corpus's longest, a chemical name, is 78 bytes).
constexpr size_t kMaxWordBytes = 256;
constexpr std::string_view kWordStart = "\xe2\x96\x81";  // U+2581, SentencePiece's word boundary

bool has_space(std::string_view w) {
  return std::any_of(w.begin(), w.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; });
}

}  // namespace

Lexicon Lexicon::load(const std::filesystem::path& path, std::span<const std::string> pieces) {
  return parse(read_text_maybe_gzip(path, kMaxListBytes, "word list", 3), pieces, path.string());
}

Lexicon Lexicon::parse(std::string_view text, std::span<const std::string> pieces, const std::string& name) {
  STENO_CHECK(!pieces.empty(), "word list {}: the model has no pieces", name);
  Lexicon lex;
  int64_t line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.size() > kMaxWordBytes || has_space(line))
      fail(ErrorCode::kDataLoss, "word list {}, line {}: one word of at most {} bytes per line, got '{}'", name,
           line_no, kMaxWordBytes, std::string(line.substr(0, kMaxWordBytes)));
    lex.words_.emplace_back(line);
  }
  if (lex.words_.empty()) fail(ErrorCode::kDataLoss, "word list {}: no words", name);
  std::sort(lex.words_.begin(), lex.words_.end());
  lex.words_.erase(std::unique(lex.words_.begin(), lex.words_.end()), lex.words_.end());
  for (const std::string& piece : pieces) {
    const bool starts = std::string_view(piece).starts_with(kWordStart);
    lex.starts_.push_back(starts ? 1 : 0);
    lex.spellings_.push_back(starts ? piece.substr(kWordStart.size()) : piece);
  }
  return lex;
}

int Lexicon::id(std::string_view w) const {
  const auto it = std::lower_bound(words_.begin(), words_.end(), w, std::less<>());
  return it != words_.end() && *it == w ? static_cast<int>(it - words_.begin()) : -1;
}

bool Lexicon::is_prefix(std::string_view w) const {
  const auto it = std::lower_bound(words_.begin(), words_.end(), w, std::less<>());
  return it != words_.end() && std::string_view(*it).starts_with(w);
}

}  // namespace steno::asr
