// How the ASR decodes: NeMo's greedy decoding (the default) or beam search, with a token LM fused or not and a
// lexicon or not (steno/asr/tdt_beam.h). Registered on a command as --decoding, --beam-size, --lm, --lm-alpha,
// --lm-beta, --lexicon, --unknown-word-penalty.
#pragma once

#include <CLI/CLI.hpp>

#include "steno/asr/tdt_beam.h"

namespace steno::cli {

// Registers the flags of `request` (asr::DecodingRequest::resolve gives the beam settings) on `cmd`.
void add_decoding_options(CLI::App* cmd, asr::DecodingRequest& request);

}  // namespace steno::cli
