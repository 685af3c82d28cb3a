#include "steno/nemo/tar_members.h"

#include <fmt/format.h>

#include <set>
#include <string_view>

#include "steno/core/error.h"

namespace steno::nemo {
namespace {

constexpr uint64_t kBlock = 512;

[[noreturn]] void bad_tar(const std::string& why) { fail(ErrorCode::kInvalidArgument, ".nemo (tar) archive: {}", why); }

std::string field(std::span<const uint8_t> h, size_t at, size_t len) {
  std::string s(reinterpret_cast<const char*>(h.data() + at), len);
  return s.substr(0, s.find('\0'));
}

// A numeric field: octal digits (space- or NUL-terminated), or base-256 when its first byte has the high bit set.
uint64_t number(std::span<const uint8_t> h, size_t at, size_t len, const std::string& member) {
  if (h[at] & 0x80) {
    uint64_t v = h[at] & 0x7f;
    for (size_t k = 1; k < len; ++k) {
      if (v >> 55) bad_tar(fmt::format("member '{}': a size over 2^63", member));
      v = (v << 8) | h[at + k];
    }
    return v;
  }
  uint64_t v = 0;
  size_t k = 0;
  while (k < len && h[at + k] == ' ') ++k;
  for (; k < len && h[at + k] >= '0' && h[at + k] <= '7'; ++k) {
    if (v >> 60) bad_tar(fmt::format("member '{}': a number too large", member));
    v = v * 8 + (h[at + k] - '0');
  }
  if (k < len && h[at + k] != ' ' && h[at + k] != '\0')
    bad_tar(fmt::format("member '{}': a numeric field holds '{}'", member, static_cast<char>(h[at + k])));
  return v;
}

bool all_zero(std::span<const uint8_t> h) {
  for (uint8_t b : h)
    if (b) return false;
  return true;
}

// "NN path=...\n" records of a pax extended header: the path, if one is given.
std::string pax_path(std::span<const uint8_t> data) {
  std::string_view s(reinterpret_cast<const char*>(data.data()), data.size());
  std::string path;
  while (!s.empty()) {
    const size_t space = s.find(' ');
    if (space == std::string_view::npos) bad_tar("a malformed pax header");
    size_t len = 0;
    for (char c : s.substr(0, space)) {
      if (c < '0' || c > '9' || len > s.size()) bad_tar("a malformed pax header length");
      len = len * 10 + static_cast<size_t>(c - '0');
    }
    if (len <= space + 1 || len > s.size() || s[len - 1] != '\n') bad_tar("a pax record past its header");
    const std::string_view record = s.substr(space + 1, len - space - 2);
    if (record.starts_with("path=")) path = std::string(record.substr(5));
    s.remove_prefix(len);
  }
  return path;
}

std::string checked_name(std::string name) {
  while (name.starts_with("./")) name.erase(0, 2);
  if (name.starts_with('/')) bad_tar(fmt::format("member '{}' has an absolute name", name.substr(0, 256)));
  for (size_t at = 0; at <= name.size();) {
    const size_t slash = std::min(name.find('/', at), name.size());
    if (name.compare(at, slash - at, "..") == 0 && slash - at == 2)
      bad_tar(fmt::format("member '{}' names a parent folder ('..')", name.substr(0, 256)));
    at = slash + 1;
  }
  return name;
}

}  // namespace

std::vector<TarMember> read_tar(std::span<const uint8_t> tar) {
  std::vector<TarMember> out;
  std::set<std::string> seen;
  std::string long_name;  // from a GNU 'L' or pax 'x' header, for the next member
  uint64_t at = 0;
  while (true) {
    if (tar.size() - at < kBlock) {
      if (at == tar.size() && !out.empty()) break;  // no end-of-archive blocks: accepted, as GNU tar does
      bad_tar(fmt::format("truncated at byte {} (a header needs 512 bytes, {} are left)", at, tar.size() - at));
    }
    const std::span<const uint8_t> h = tar.subspan(at, kBlock);
    if (all_zero(h)) break;  // end of archive
    std::string name = field(h, 0, 100);
    const std::string prefix = field(h, 345, 155);
    if (field(h, 257, 5) == "ustar" && !prefix.empty()) name = prefix + "/" + name;
    if (!long_name.empty()) name = std::move(long_name);
    long_name.clear();
    uint64_t sum = 0;
    for (size_t k = 0; k < kBlock; ++k) sum += (k >= 148 && k < 156) ? ' ' : h[k];
    if (sum != number(h, 148, 8, name))
      bad_tar(fmt::format("member '{}': its header's checksum is wrong", name.substr(0, 256)));
    const uint64_t size = number(h, 124, 12, name);
    const uint64_t data_at = at + kBlock;
    if (size > tar.size() - data_at)
      bad_tar(fmt::format("member '{}' declares {} bytes, but only {} follow its header", name.substr(0, 256), size,
                          tar.size() - data_at));
    const std::span<const uint8_t> data = tar.subspan(data_at, size);
    const char type = static_cast<char>(h[156]);
    switch (type) {
      case '0': case '\0': case '7': {  // a regular file
        name = checked_name(name);
        if (!seen.insert(name).second) bad_tar(fmt::format("member '{}' appears twice", name.substr(0, 256)));
        out.push_back({std::move(name), data});
        break;
      }
      case '5': case 'g': break;  // a folder; a pax global header
      case 'L': long_name = field(data, 0, data.size()); break;
      case 'x': long_name = pax_path(data); break;
      case '1': case '2':
        bad_tar(fmt::format("member '{}' is a {} link: refused, not followed",
                            name.substr(0, 256), type == '1' ? "hard" : "symbolic"));
      default:
        bad_tar(fmt::format("member '{}' is of type '{}', not a file", name.substr(0, 256), type));
    }
    at = data_at + (size + kBlock - 1) / kBlock * kBlock;
    if (at > tar.size()) at = tar.size();
  }
  return out;
}

}  // namespace steno::nemo
