// libFuzzer target: a PyTorch checkpoint's ZIP archive and its pickle (steno/nemo/checkpoint.h) on any bytes,
// without the CRC check (so that mutated archives reach the code past it). It must return tensors or throw
// steno::Error. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <span>

#include "steno/core/error.h"
#include "steno/nemo/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    steno::nemo::read_checkpoint(std::span<const uint8_t>(data, size), /*check_crc=*/false);
  } catch (const steno::Error&) {
  }
  return 0;
}
