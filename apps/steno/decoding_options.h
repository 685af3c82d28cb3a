// How the ASR decodes: NeMo's greedy decoding (the default) or beam search, with a token LM fused or not
// (steno/asr/tdt_beam.h). Registered on a command as --decoding, --beam-size, --lm, --lm-alpha, --lm-beta.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "steno/asr/tdt_beam.h"

namespace steno::cli {

struct DecodingOptions {
  std::string decoding;  // "greedy", "beam"; empty: beam when --lm is given, else greedy
  int beam_size = 8;
  std::string lm;  // token LM, ARPA or ARPA.gz (tools/lm/token_lm.py)
  std::optional<double> lm_alpha, lm_beta;

  void add_to(CLI::App* cmd);
  // The beam settings these options ask for (nullopt: greedy), the LM loaded for a tokenizer of vocab_size
  // tokens. Options that contradict each other throw naming them.
  std::optional<asr::BeamOptions> beam(int vocab_size) const;
};

}  // namespace steno::cli
