// libFuzzer target: the restricted state-dict unpickler (steno/nemo/state_dict_pickle.h) on any bytes. It must
// return a state dict or throw steno::Error; anything else (a crash, a sanitizer report, a hang, a huge
// allocation) is a bug. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <span>

#include "steno/core/error.h"
#include "steno/nemo/state_dict_pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    steno::nemo::read_state_dict_pickle(std::span<const uint8_t>(data, size));
  } catch (const steno::Error&) {
  }
  return 0;
}
