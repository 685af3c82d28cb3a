// libFuzzer target: a safetensors file (steno/core/safetensors.h) on any bytes. The reader maps a file, so each
// input is written to one scratch file of this process first. Opening must succeed or throw steno::Error; then every
// tensor it lists must read back with the byte count its header promised. Built and run by fuzz/run.sh.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "steno/core/error.h"
#include "steno/core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/steno-safetensors-fuzz-" + std::to_string(getpid()) + ".safetensors";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const auto file = steno::SafeTensorsFile::open(path);
    for (const std::string& name : file.names()) {
      const steno::Tensor t = file.get(name);
      if (t.nbytes() != file.info(name).nbytes()) std::abort();
    }
  } catch (const steno::Error&) {
  }
  return 0;
}
