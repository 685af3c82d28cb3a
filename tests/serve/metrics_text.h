// Reads one sample out of Prometheus text: the value of `name` whose labels include all of `labels` (a series
// without labels too, where `labels` is empty).
#pragma once

#include <map>
#include <optional>
#include <sstream>
#include <string>

namespace steno::serve::testing {

inline std::optional<double> metric_value(const std::string& text, const std::string& name,
                                          const std::map<std::string, std::string>& labels) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (labels.empty() && line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
    if (line.rfind(name + "{", 0) != 0) continue;
    const size_t close = line.find('}');
    const std::string label_text = line.substr(name.size() + 1, close - name.size() - 1);
    bool all = true;
    for (const auto& [k, v] : labels) all = all && label_text.find(k + "=\"" + v + "\"") != std::string::npos;
    if (all) return std::stod(line.substr(close + 2));
  }
  return std::nullopt;
}

}  // namespace steno::serve::testing
