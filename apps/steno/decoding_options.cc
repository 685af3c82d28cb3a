#include "decoding_options.h"

#include "steno/core/error.h"

namespace steno::cli {

// With an LM the weights chosen on the bundled model's validation set (tools/lm/README.md); without, none.
constexpr double kDefaultLmAlpha = 0.4, kDefaultLmBeta = 0.6;

void DecodingOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--decoding", decoding,
                  "greedy (NeMo's, the default) or beam (beam search; the default when --lm is given)")
      ->check(CLI::IsMember({"greedy", "beam"}));
  cmd->add_option("--beam-size", beam_size, "Hypotheses beam search keeps")->check(CLI::Range(1, 256));
  cmd->add_option("--lm", lm,
                  "Token n-gram LM fused into beam search: ARPA or ARPA.gz over the model's tokens, token i written "
                  "as the character U+(i+100) as NeMo's token LMs are (tools/lm/token_lm.py makes one)");
  cmd->add_option("--lm-alpha", lm_alpha, "Weight of the LM's log probability (default 0.4 with --lm)");
  cmd->add_option("--lm-beta", lm_beta, "Score added per token with the LM (default 0.6 with --lm, 0 without)");
}

std::optional<asr::BeamOptions> DecodingOptions::beam(int vocab_size) const {
  const bool beam_search = decoding == "beam" || (decoding.empty() && !lm.empty());
  if (!beam_search) {
    STENO_CHECK(lm.empty() && !lm_alpha && !lm_beta, "--lm, --lm-alpha and --lm-beta need --decoding beam");
    return std::nullopt;
  }
  asr::BeamOptions o;
  o.beam = beam_size;
  if (!lm.empty()) o.lm = std::make_shared<const asr::TokenLm>(asr::TokenLm::load(lm, vocab_size));
  STENO_CHECK(o.lm || !lm_alpha || *lm_alpha == 0.0, "--lm-alpha needs --lm");
  o.lm_alpha = o.lm ? lm_alpha.value_or(kDefaultLmAlpha) : 0.0;
  o.lm_beta = lm_beta.value_or(o.lm ? kDefaultLmBeta : 0.0);
  asr::validate(o, vocab_size);
  return o;
}

}  // namespace steno::cli
