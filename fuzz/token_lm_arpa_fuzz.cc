// libFuzzer target: a token LM's ARPA text on any bytes, read as steno transcribe --lm reads it
// (steno/asr/token_lm.h), then queried after a few histories. Reading must return or throw steno::Error: never
// crash, hang or take memory out of proportion to the input. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "steno/asr/token_lm.h"
#include "steno/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr int kVocab = 64;
  try {
    const steno::asr::TokenLm lm = steno::asr::TokenLm::parse(text, kVocab, "fuzz");
    std::vector<double> out(kVocab);
    for (const std::vector<int>& h : {std::vector<int>{lm.bos()}, std::vector<int>{lm.bos(), 5, 6},
                                      std::vector<int>{33, 60, 63, 0}, std::vector<int>{}})
      lm.ln_probs(h, out);
  } catch (const steno::Error&) {
  }
  return 0;
}
