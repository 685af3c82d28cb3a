#include "decoding_options.h"

#include <fmt/format.h>

namespace steno::cli {

void add_decoding_options(CLI::App* cmd, asr::DecodingRequest& r) {
  cmd->add_option("--decoding", r.decoding,
                  "greedy (NeMo's) or beam (beam search; the default with --lm). Without either, the model's own "
                  "default: greedy, or what its config.json names (the bundled model: beam search with its LM)")
      ->check(CLI::IsMember({"greedy", "beam"}));
  cmd->add_option("--beam-size", r.beam_size,
                  fmt::format("Hypotheses beam search keeps (default: the model's, else {})", asr::kDefaultBeamSize))
      ->check(CLI::Range(1, 256));
  cmd->add_option("--lm", r.lm,
                  "Token n-gram LM fused into beam search: ARPA or ARPA.gz over the model's tokens, token i written "
                  "as the character U+(i+100) as NeMo's token LMs are (tools/lm/token_lm.py makes one)");
  cmd->add_option("--lm-alpha", r.lm_alpha,
                  fmt::format("Weight of the LM's log probability (default {} with --lm)", asr::kDefaultLmAlpha));
  cmd->add_option("--lm-beta", r.lm_beta,
                  fmt::format("Score added per token with the LM (default {} with --lm, 0 without)",
                              asr::kDefaultLmBeta));
  cmd->add_option("--lexicon", r.lexicon,
                  "Word list (one word a line, plain or gzip; tools/lm/word_list.py makes one): beam search pays "
                  "--unknown-word-penalty for each word outside it (implies beam search; the bundled model names "
                  "its own)");
  cmd->add_option("--unknown-word-penalty", r.unknown_word_penalty,
                  fmt::format("What each word outside the lexicon costs a hypothesis, in ln-probability units "
                              "(default {} with --lexicon)",
                              asr::kDefaultUnknownWordPenalty))
      ->check(CLI::NonNegativeNumber);
}

}  // namespace steno::cli
