#include "steno/asr/token_lm.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string>
#include <string_view>

#include "gzip_text.h"
#include "steno/core/error.h"

namespace steno::asr {
namespace {

// A decompressed ARPA file larger than this is refused: a token LM that fits a model directory is tens of MB.
constexpr size_t kMaxArpaBytes = size_t{1} << 30;
constexpr float kUnlistedLog10 = -100.0f;  // a token neither listed nor covered by <unk>: never chosen

// Splits on ASCII spaces and tabs only: NeMo's token characters include U+0085 and U+00A0, which other
// definitions of white space would split on.
// `out` is reused from line to line (a file has hundreds of thousands).
void split_fields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
}

// The one code point a word of UTF-8 holds, or -1 when it holds none, several, or malformed bytes.
int32_t single_code_point(std::string_view w) {
  if (w.empty()) return -1;
  const auto b = [&](size_t i) { return static_cast<unsigned char>(w[i]); };
  const unsigned char c0 = b(0);
  size_t len = c0 < 0x80 ? 1 : (c0 & 0xE0) == 0xC0 ? 2 : (c0 & 0xF0) == 0xE0 ? 3 : (c0 & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || w.size() != len) return -1;
  int32_t cp = len == 1 ? c0 : len == 2 ? (c0 & 0x1F) : len == 3 ? (c0 & 0x0F) : (c0 & 0x07);
  for (size_t i = 1; i < len; ++i) {
    if ((b(i) & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b(i) & 0x3F);
  }
  static constexpr int32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  return cp < kMin[len] || cp > 0x10FFFF ? -1 : cp;
}

// `where` names the place, made only for the message.
template <class Where>
float parse_float(std::string_view s, const Where& where) {
  float v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    fail(ErrorCode::kDataLoss, "{}: '{}' is not a number", where(), std::string(s));
  return v;
}

}  // namespace

int64_t TokenLm::ngram_count() const {
  int64_t n = std::count(uni_listed_.begin(), uni_listed_.end(), char{1});
  for (const Order& o : orders_) n += static_cast<int64_t>(o.keys.size());
  return n;
}

int64_t TokenLm::find(std::span<const int> tokens) const {
  if (tokens.empty() || tokens[0] < 0 || tokens[0] > vocab_ || !uni_listed_[static_cast<size_t>(tokens[0])]) return -1;
  int64_t idx = tokens[0];
  for (size_t j = 1; j < tokens.size(); ++j) {
    if (j - 1 >= orders_.size()) return -1;
    const std::vector<uint64_t>& keys = orders_[j - 1].keys;
    const uint64_t key = static_cast<uint64_t>(idx) << 32 | static_cast<uint32_t>(tokens[j]);
    const auto it = std::lower_bound(keys.begin(), keys.end(), key);
    if (it == keys.end() || *it != key) return -1;
    idx = it - keys.begin();
  }
  return idx;
}

TokenLm TokenLm::load(const std::filesystem::path& path, int vocab_size) {
  return parse(read_text_maybe_gzip(path, kMaxArpaBytes, "token LM"), vocab_size, path.string());
}

TokenLm TokenLm::parse(std::string_view text, int vocab_size, const std::string& name) {
  STENO_CHECK(vocab_size >= 1 && vocab_size < (1 << 20), "token LM: vocabulary size {} is out of range", vocab_size);
  // KenLM's binary files (build_binary's output, what NeMo's scripts often keep) start with this line.
  if (text.starts_with("mmap lm http://kheafield.com/code"))
    fail(ErrorCode::kUnimplemented,
         "token LM {}: a KenLM binary file; steno reads ARPA text (plain or gzip): give it the .arpa file the binary "
         "was built from",
         name);
  TokenLm lm;
  lm.vocab_ = vocab_size;
  lm.uni_logp_.assign(static_cast<size_t>(vocab_size) + 1, kUnlistedLog10);
  lm.uni_bow_.assign(static_cast<size_t>(vocab_size) + 1, 0.0f);
  lm.uni_listed_.assign(static_cast<size_t>(vocab_size) + 1, 0);

  std::vector<int64_t> declared;  // header counts, order 1 first
  int section = 0;                // the order whose entries are being read; 0: header
  int64_t seen = 0;               // entries of that section so far
  int64_t line_no = 0;
  bool in_data = false, ended = false;
  float unk_logp = kUnlistedLog10;
  struct Pending {
    uint64_t key;
    float logp, bow;
  };
  std::vector<Pending> pending;
  std::vector<int> ids;
  std::vector<std::string_view> f;  // the line's fields

  // Closes the section being read: the count checked, the entries sorted into place.
  auto finish_section = [&]() {
    if (section == 0) return;
    if (seen != declared[static_cast<size_t>(section) - 1])
      fail(ErrorCode::kDataLoss, "token LM {}: {} {}-grams where the header says {}", name, seen, section,
           declared[static_cast<size_t>(section) - 1]);
    if (section >= 2) {
      std::sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) { return a.key < b.key; });
      Order o;
      o.keys.reserve(pending.size());
      for (const Pending& p : pending) {
        if (!o.keys.empty() && o.keys.back() == p.key)
          fail(ErrorCode::kDataLoss, "token LM {}: a {}-gram is listed twice", name, section);
        o.keys.push_back(p.key);
        o.logp.push_back(p.logp);
        o.bow.push_back(p.bow);
      }
      lm.orders_.push_back(std::move(o));
      pending.clear();
    }
  };

  size_t pos = 0;
  while (pos < text.size() && !ended) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto where = [&] { return fmt::format("token LM {} line {}", name, line_no); };
    split_fields(line, f);
    if (f.empty()) continue;
    if (line == "\\data\\") {
      if (in_data) fail(ErrorCode::kDataLoss, "{}: a second \\data\\", where());
      in_data = true;
      continue;
    }
    if (!in_data) fail(ErrorCode::kDataLoss, "{}: not an ARPA file (no \\data\\ before it)", where());
    if (line == "\\end\\") {
      finish_section();
      ended = true;
      continue;
    }
    if (line.size() > 8 && line.front() == '\\' && line.ends_with("-grams:")) {
      int k = 0;
      const auto [end, ec] = std::from_chars(line.data() + 1, line.data() + line.size(), k);
      if (ec != std::errc() || std::string_view(end, static_cast<size_t>(line.data() + line.size() - end)) != "-grams:" ||
          k != section + 1 ||
          k > static_cast<int>(declared.size()))
        fail(ErrorCode::kDataLoss, "{}: section '{}' out of place", where(), std::string(line));
      finish_section();
      section = k;
      seen = 0;
      continue;
    }
    if (section == 0) {  // header: "ngram K=COUNT", K = 1, 2, ...
      const size_t eq = line.find('=');
      int k = 0;
      int64_t count = -1;
      if (f.size() != 2 || f[0] != "ngram" || eq == std::string_view::npos ||
          std::from_chars(f[1].data(), f[1].data() + f[1].find('='), k).ec != std::errc() ||
          std::from_chars(line.data() + eq + 1, line.data() + line.size(), count).ec != std::errc() ||
          k != static_cast<int>(declared.size()) + 1 || count < 0)
        fail(ErrorCode::kDataLoss, "{}: expected 'ngram {}=COUNT'", where(), declared.size() + 1);
      if (k > kMaxOrder) fail(ErrorCode::kUnimplemented, "{}: order {} (steno reads up to {})", where(), k, kMaxOrder);
      declared.push_back(count);
      continue;
    }
    // An entry: log10 p, `section` words, and a backoff weight below the highest order.
    const size_t k = static_cast<size_t>(section);
    const bool has_bow = f.size() == k + 2;
    if (f.size() != k + 1 && !has_bow) fail(ErrorCode::kDataLoss, "{}: expected {} words", where(), k);
    if (++seen > declared[k - 1])
      fail(ErrorCode::kDataLoss, "{}: more {}-grams than the header's {}", where(), k, declared[k - 1]);
    const float logp = parse_float(f[0], where);
    const float bow = has_bow ? parse_float(f[k + 1], where) : 0.0f;
    ids.clear();
    bool skip = false;
    for (size_t j = 1; j <= k; ++j) {
      if (f[j] == "<s>") {
        ids.push_back(vocab_size);
      } else if (f[j] == "</s>" || f[j] == "<unk>") {
        if (k == 1 && f[j] == "<unk>") unk_logp = logp;
        skip = true;
      } else {
        const int32_t cp = single_code_point(f[j]);
        const int32_t id = cp - kTokenOffset;
        if (cp < 0 || id < 0 || id >= vocab_size)
          fail(ErrorCode::kDataLoss,
               "{}: '{}' is not a token of this model: a token LM writes token i as the character U+(i + {}), "
               "i < {}",
               where(), std::string(f[j]), kTokenOffset, vocab_size);
        ids.push_back(id);
      }
    }
    if (skip) continue;
    if (k == 1) {
      lm.uni_logp_[static_cast<size_t>(ids[0])] = logp;
      lm.uni_bow_[static_cast<size_t>(ids[0])] = bow;
      lm.uni_listed_[static_cast<size_t>(ids[0])] = 1;
      continue;
    }
    const int64_t ctx = lm.find(std::span<const int>(ids).first(k - 1));
    if (ctx < 0) fail(ErrorCode::kDataLoss, "{}: the n-gram's context is not listed", where());
    pending.push_back({static_cast<uint64_t>(ctx) << 32 | static_cast<uint32_t>(ids.back()), logp, bow});
  }
  if (!ended) fail(ErrorCode::kDataLoss, "token LM {}: no \\end\\ (truncated?)", name);
  if (section != static_cast<int>(declared.size()) || declared.empty())
    fail(ErrorCode::kDataLoss, "token LM {}: the header declares {} orders, {} were read", name, declared.size(),
         section);
  // Tokens the file does not list are <unk> to it (as KenLM maps unknown words).
  for (int w = 0; w < vocab_size; ++w)
    if (!lm.uni_listed_[static_cast<size_t>(w)]) lm.uni_logp_[static_cast<size_t>(w)] = unk_logp;
  return lm;
}

void TokenLm::ln_probs(std::span<const int> history, std::span<double> out) const {
  STENO_CHECK(out.size() == static_cast<size_t>(vocab_), "token LM: {} outputs for {} tokens", out.size(), vocab_);
  for (int w = 0; w < vocab_; ++w) out[static_cast<size_t>(w)] = uni_logp_[static_cast<size_t>(w)];
  // Bottom up: at order k the context is the history's last k - 1 tokens; a continuation listed there replaces
  // the lower orders' value, every other token adds the context's backoff weight.
  for (int k = 2; k <= order() && static_cast<size_t>(k - 1) <= history.size(); ++k) {
    const std::span<const int> ctx = history.last(static_cast<size_t>(k - 1));
    const int64_t idx = find(ctx);
    if (idx < 0) continue;  // an unlisted context: backoff weight 1, no continuations
    const double bow = k == 2 ? uni_bow_[static_cast<size_t>(idx)] : orders_[static_cast<size_t>(k) - 3].bow[idx];
    for (double& v : out) v += bow;
    const Order& o = orders_[static_cast<size_t>(k) - 2];
    const uint64_t lo = static_cast<uint64_t>(idx) << 32, hi = static_cast<uint64_t>(idx + 1) << 32;
    for (auto it = std::lower_bound(o.keys.begin(), o.keys.end(), lo); it != o.keys.end() && *it < hi; ++it)
      out[static_cast<uint32_t>(*it)] = o.logp[static_cast<size_t>(it - o.keys.begin())];
  }
  constexpr double kLn10 = 2.302585092994045684;
  for (double& v : out) v *= kLn10;
}

}  // namespace steno::asr
