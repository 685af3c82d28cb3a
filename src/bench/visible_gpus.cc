#include "bench/visible_gpus.h"

#include <algorithm>
#include <cctype>

namespace steno::bench {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The NVML index an entry names, or nullopt when it names none (or more than one, for an ambiguous UUID prefix).
std::optional<unsigned> resolve(std::string_view entry, const std::vector<std::string>& uuids) {
  if (entry.empty()) return std::nullopt;
  if (std::all_of(entry.begin(), entry.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (entry.size() > 9) return std::nullopt;
    const unsigned ordinal = static_cast<unsigned>(std::stoul(std::string(entry)));
    if (ordinal < uuids.size()) return ordinal;
    return std::nullopt;
  }
  if (!entry.starts_with("GPU-")) return std::nullopt;
  std::optional<unsigned> found;
  for (unsigned i = 0; i < uuids.size(); ++i)
    if (std::string_view(uuids[i]).starts_with(entry)) {
      if (found) return std::nullopt;
      found = i;
    }
  return found;
}

}  // namespace

std::vector<unsigned> visible_nvml_devices(std::optional<std::string_view> cuda_visible_devices,
                                           const std::vector<std::string>& nvml_uuids) {
  std::vector<unsigned> out;
  if (!cuda_visible_devices) {
    for (unsigned i = 0; i < nvml_uuids.size(); ++i) out.push_back(i);
    return out;
  }
  std::string_view rest = *cuda_visible_devices;
  while (true) {
    const size_t comma = rest.find(',');
    const std::optional<unsigned> index = resolve(trim(rest.substr(0, comma)), nvml_uuids);
    if (!index) break;
    if (std::find(out.begin(), out.end(), *index) == out.end()) out.push_back(*index);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace steno::bench
