#include "steno/nemo/stored_zip.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <limits>

#include "steno/core/error.h"

namespace steno::nemo {
namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kCentralEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint64_t kMax32 = 0xffffffff;

[[noreturn]] void bad_zip(const std::string& why) { fail(ErrorCode::kInvalidArgument, "checkpoint archive: {}", why); }

// Little-endian fields at checked offsets.
class Bytes {
 public:
  explicit Bytes(std::span<const uint8_t> b) : b_(b) {}
  uint64_t size() const { return b_.size(); }
  void need(uint64_t at, uint64_t n, const char* what) const {
    if (at > b_.size() || n > b_.size() - at)
      bad_zip(fmt::format("{} at byte {} ({} bytes) reaches past the archive's end ({} bytes): truncated?", what, at, n,
                          b_.size()));
  }
  uint64_t le(uint64_t at, int n) const {
    need(at, static_cast<uint64_t>(n), "a field");
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | b_[at + static_cast<uint64_t>(k)];
    return v;
  }
  std::span<const uint8_t> span(uint64_t at, uint64_t n, const char* what) const {
    need(at, n, what);
    return b_.subspan(at, n);
  }

 private:
  std::span<const uint8_t> b_;
};

// The ZIP64 extra field's values that replace the 0xffffffff ones, in the order the format gives them.
void apply_zip64(const Bytes& z, uint64_t extra, uint64_t extra_len, uint64_t& size, uint64_t& csize,
                 uint64_t& offset) {
  for (uint64_t at = extra; at + 4 <= extra + extra_len;) {
    const uint64_t id = z.le(at, 2), len = z.le(at + 2, 2);
    if (at + 4 + len > extra + extra_len) bad_zip("an extra field reaches past its entry's");
    if (id == 0x0001) {
      uint64_t p = at + 4;
      const auto next = [&](uint64_t& field) {
        if (field != kMax32) return;
        if (p + 8 > at + 4 + len) bad_zip("a ZIP64 extra field shorter than its entry needs");
        field = z.le(p, 8);
        p += 8;
      };
      next(size);
      next(csize);
      next(offset);
    }
    at += 4 + len;
  }
}

}  // namespace

std::vector<ZipEntry> read_stored_zip(std::span<const uint8_t> archive, bool check_crc) {
  const Bytes z(archive);
  if (z.size() < 22) bad_zip(fmt::format("{} bytes: too short for a ZIP archive", z.size()));
  // The end-of-central-directory record: the last 22 bytes, or earlier by a comment of up to 65,535 bytes.
  uint64_t eocd = std::numeric_limits<uint64_t>::max();
  const uint64_t lowest = z.size() >= 22 + 65535 ? z.size() - 22 - 65535 : 0;
  for (uint64_t at = z.size() - 22;; --at) {
    if (z.le(at, 4) == kEndOfCentralDirectory && at + 22 + z.le(at + 20, 2) == z.size()) {
      eocd = at;
      break;
    }
    if (at == lowest) break;
  }
  if (eocd == std::numeric_limits<uint64_t>::max())
    bad_zip("no end-of-central-directory record: not a ZIP archive (a PyTorch checkpoint is one), or truncated");
  uint64_t count = z.le(eocd + 10, 2), dir_size = z.le(eocd + 12, 4), dir_at = z.le(eocd + 16, 4);
  if ((count == 0xffff || dir_size == kMax32 || dir_at == kMax32) && eocd >= 20 &&
      z.le(eocd - 20, 4) == kZip64Locator) {
    const uint64_t record = z.le(eocd - 20 + 8, 8);
    if (z.le(record, 4) != kZip64EndOfCentralDirectory) bad_zip("the ZIP64 locator points at no ZIP64 record");
    count = z.le(record + 32, 8);
    dir_size = z.le(record + 40, 8);
    dir_at = z.le(record + 48, 8);
  }
  z.need(dir_at, dir_size, "the central directory");
  if (count > dir_size / 46)
    bad_zip(fmt::format("{} entries cannot fit a central directory of {} bytes", count, dir_size));

  std::vector<ZipEntry> out;
  out.reserve(count);
  uint64_t at = dir_at;
  for (uint64_t k = 0; k < count; ++k) {
    if (z.le(at, 4) != kCentralEntry) bad_zip(fmt::format("central directory entry {} has no signature", k));
    const uint64_t flags = z.le(at + 8, 2), method = z.le(at + 10, 2), crc = z.le(at + 16, 4);
    uint64_t csize = z.le(at + 20, 4), size = z.le(at + 24, 4), offset = z.le(at + 42, 4);
    const uint64_t name_len = z.le(at + 28, 2), extra_len = z.le(at + 30, 2), comment_len = z.le(at + 32, 2);
    const auto name_bytes = z.span(at + 46, name_len, "an entry's name");
    std::string name(name_bytes.begin(), name_bytes.end());
    apply_zip64(z, at + 46 + name_len, extra_len, size, csize, offset);
    if (flags & 0x1) bad_zip(fmt::format("entry '{}' is encrypted", name));
    if (method != 0)
      bad_zip(fmt::format("entry '{}' is compressed (method {}): PyTorch stores checkpoint entries uncompressed", name,
                          method));
    if (csize != size) bad_zip(fmt::format("entry '{}': stored {} bytes but {} uncompressed", name, csize, size));
    if (z.le(offset, 4) != kLocalHeader)
      bad_zip(fmt::format("entry '{}' has no local header at byte {}", name, offset));
    const uint64_t data_at = offset + 30 + z.le(offset + 26, 2) + z.le(offset + 28, 2);
    ZipEntry e{std::move(name), z.span(data_at, size, "an entry's data")};
    if (check_crc) {
      uLong c = crc32(0L, Z_NULL, 0);
      for (uint64_t done = 0; done < e.data.size();) {  // zlib takes at most 4 GiB a call
        const uInt n = static_cast<uInt>(std::min<uint64_t>(e.data.size() - done, 1u << 30));
        c = crc32(c, e.data.data() + done, n);
        done += n;
      }
      if (c != crc)
        bad_zip(fmt::format("entry '{}' is corrupt: CRC-32 {:08x}, its directory says {:08x}", e.name, c, crc));
    }
    out.push_back(std::move(e));
    at += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

}  // namespace steno::nemo
