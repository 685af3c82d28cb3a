// The files of an uncompressed tar archive held in memory (or mapped), as views into its bytes: how a .nemo file
// (an uncompressed tar of model_config.yaml, the tokenizer and model_weights.ckpt) is read without unpacking it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace steno::nemo {

struct TarMember {
  std::string name;               // as stored, without a leading "./"
  std::span<const uint8_t> data;  // into the archive
};

// The regular files in archive order (ustar and GNU/pax long names understood; directories and pax global headers
// skipped). Throws steno::Error(kInvalidArgument) naming the member at fault: a header whose checksum is wrong, a
// size past the archive's end, an absolute name or one with a ".." component, a link or device (a .nemo has none:
// refused, not followed), a name given twice.
std::vector<TarMember> read_tar(std::span<const uint8_t> tar);

}  // namespace steno::nemo
