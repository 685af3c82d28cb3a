// The peak-memory test's subject, run as a fresh process so that no test's earlier allocations can hide (or add to)
// its growth: `audio_peak_probe load|read FILE` resets its RSS high-water mark, loads the file under a 1200 s limit
// (load) or reads it whole into memory (read, the control), and prints "VmHWM-before VmHWM-after outcome" in kB.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace {

long vm_hwm_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::string load(const std::string& path) {
  try {
    steno::audio::load_audio_file(path, {.max_duration_s = 1200});
    return "decoded";
  } catch (const steno::Error& e) {
    return std::string(steno::error_code_name(e.code())) + ": " + e.what();
  }
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return std::to_string(bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: audio_peak_probe load|read FILE\n");
    return 2;
  }
  const std::string mode = argv[1], path = argv[2];
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := current RSS (Linux >= 4.0)
  const long before = vm_hwm_kb();
  const std::string outcome = mode == "read" ? read_whole(path) : load(path);
  std::printf("%ld %ld %s\n", before, vm_hwm_kb(), outcome.c_str());
  return 0;
}
