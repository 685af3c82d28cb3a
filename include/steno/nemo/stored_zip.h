// The entries of a ZIP archive held in memory (or mapped), as views into its bytes, for PyTorch checkpoints
// (`torch.save`'s format, a .nemo's model_weights.ckpt): PyTorch stores every entry uncompressed, so a tensor's
// bytes can be used where they lie. Compressed entries are refused, not inflated: no PyTorch checkpoint has them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace steno::nemo {

struct ZipEntry {
  std::string name;
  std::span<const uint8_t> data;  // into the archive
};

// The archive's entries in central-directory order (ZIP64 included). Throws steno::Error(kInvalidArgument) naming
// what is wrong: no end-of-central-directory record (not a ZIP, or truncated), a record or entry reaching past the
// archive's end, a compressed or encrypted entry, sizes that disagree, a CRC-32 that does not match the data
// (`check_crc`: a corrupt download is caught here, at the cost of reading every byte once).
std::vector<ZipEntry> read_stored_zip(std::span<const uint8_t> archive, bool check_crc = true);

}  // namespace steno::nemo
