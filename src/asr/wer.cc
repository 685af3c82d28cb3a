#include "asr/wer.h"

#include <algorithm>
#include <cctype>

namespace steno::asr {

std::string normalize_for_wer(std::string_view text) {
  std::string out;
  bool space = true;  // drop leading spaces
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool keep = u >= 0x80 || std::isalnum(u) || c == '\'';
    if (keep) {
      out += static_cast<char>(u < 0x80 ? std::tolower(u) : u);
      space = false;
    } else if (!space) {
      out += ' ';
      space = true;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> split_words(std::string_view normalized) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < normalized.size()) {
    while (i < normalized.size() && normalized[i] == ' ') ++i;
    const size_t start = i;
    while (i < normalized.size() && normalized[i] != ' ') ++i;
    if (i > start) words.emplace_back(normalized.substr(start, i - start));
  }
  return words;
}

WordErrors& WordErrors::operator+=(const WordErrors& o) {
  substitutions += o.substitutions;
  deletions += o.deletions;
  insertions += o.insertions;
  reference_words += o.reference_words;
  return *this;
}

WordErrors word_errors(const std::vector<std::string>& ref, const std::vector<std::string>& hyp) {
  // Dynamic programming over (reference prefix, hypothesis prefix); each cell keeps its edit counts so the
  // breakdown comes out of the same pass.
  const size_t n = ref.size(), m = hyp.size();
  struct Cell {
    int cost = 0, sub = 0, del = 0, ins = 0;
  };
  std::vector<Cell> prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = {static_cast<int>(j), 0, 0, static_cast<int>(j)};
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = {static_cast<int>(i), 0, static_cast<int>(i), 0};
    for (size_t j = 1; j <= m; ++j) {
      const bool same = ref[i - 1] == hyp[j - 1];
      Cell diag = prev[j - 1];
      diag.cost += same ? 0 : 1;
      diag.sub += same ? 0 : 1;
      Cell del = prev[j];
      del.cost += 1;
      del.del += 1;
      Cell ins = cur[j - 1];
      ins.cost += 1;
      ins.ins += 1;
      cur[j] = diag;
      if (del.cost < cur[j].cost) cur[j] = del;
      if (ins.cost < cur[j].cost) cur[j] = ins;
    }
    std::swap(prev, cur);
  }
  WordErrors e;
  e.substitutions = prev[m].sub;
  e.deletions = prev[m].del;
  e.insertions = prev[m].ins;
  e.reference_words = static_cast<int>(n);
  return e;
}

WordErrors word_errors(std::string_view reference, std::string_view hypothesis) {
  return word_errors(split_words(normalize_for_wer(reference)), split_words(normalize_for_wer(hypothesis)));
}

}  // namespace steno::asr
