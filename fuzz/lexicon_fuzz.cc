// libFuzzer target: a model's word list on any bytes, read as a model's default decoding reads its lexicon
// (steno/asr/lexicon.h), then asked about a few words and prefixes. Reading must return or throw steno::Error:
// never crash, hang or take memory out of proportion to the input. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "steno/asr/lexicon.h"
#include "steno/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> kPieces = {"<unk>", "\xe2\x96\x81the", "re", "\xe2\x96\x81", "s"};
  try {
    const steno::asr::Lexicon lex = steno::asr::Lexicon::parse(text, kPieces, "fuzz");
    const std::string_view first_line = text.substr(0, text.find('\n'));
    for (std::string_view w : {std::string_view(), std::string_view("the"), std::string_view("t"), first_line}) {
      if (lex.is_word(w) && !lex.is_prefix(w)) __builtin_trap();  // a listed word begins itself
      (void)lex.id(w);
    }
    for (int id = 0; id < lex.vocab_size(); ++id) (void)lex.spelling(id);
  } catch (const steno::Error&) {
  }
  return 0;
}
