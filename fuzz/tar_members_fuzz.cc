// libFuzzer target: a .nemo's tar read in place (steno/nemo/tar_members.h) on any bytes. It must return members
// or throw steno::Error. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <span>

#include "steno/core/error.h"
#include "steno/nemo/tar_members.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    steno::nemo::read_tar(std::span<const uint8_t>(data, size));
  } catch (const steno::Error&) {
  }
  return 0;
}
