// libFuzzer target: `steno serve --config FILE`'s JSON (steno/serve/config.h) on any bytes. Applying it must
// succeed or throw steno::Error naming the key; validating what it produced must too. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "steno/core/error.h"
#include "steno/serve/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  steno::serve::ServeConfig config;
  try {
    steno::serve::apply_config_json(config, std::string_view(reinterpret_cast<const char*>(data), size));
    steno::serve::validate(config);
  } catch (const steno::Error&) {
  }
  return 0;
}
