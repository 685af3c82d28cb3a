// Beam search for the TDT transducer, with optional shallow fusion of a token n-gram LM: an alternative to NeMo's
// greedy decoding that keeps several hypotheses, so that the LM can steer between acoustically close spellings.
// Its own algorithm (not NeMo's default / maes / malsd beams), defined by the PyTorch reference
// tools/steno_ref/beam.py, which it reproduces (docs/engine.md, "Beam search and LM fusion").
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "steno/asr/lexicon.h"
#include "steno/asr/model_config.h"
#include "steno/asr/tdt_decoder.h"
#include "steno/asr/token_lm.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::asr {

struct BeamOptions {
  int beam = kDefaultBeamSize;  // hypotheses kept between rounds (model_config.h: the defaults)
  int token_candidates = 4;  // tokens a hypothesis expands to (its best by the joint)
  double lm_alpha = 0.0;     // weight of the LM's ln probability (0: no LM term)
  double lm_beta = 0.0;      // added per token (offsets the LM's pull towards fewer tokens)
  double prune = 10.0;       // hypotheses trailing the best finished one by more are dropped
  std::shared_ptr<const TokenLm> lm;  // null: no LM (lm_alpha must then be 0)
  // Words outside the lexicon cost this much each (lexicon.h says when); null: every spelling is free.
  std::shared_ptr<const Lexicon> lexicon;
  double unknown_word_penalty = 0.0;
};

// Checks the options against a decoder's vocabulary (the LM's must match); throws kInvalidArgument.
void validate(const BeamOptions& options, int vocab_size);

// How a user asks for decoding (steno transcribe's flags, steno serve's settings): "greedy" or "beam" (empty: beam
// when an LM or a lexicon is given), the beam size (0: the model's, else 8), an LM file and its weights (unset:
// alpha 0.4 and beta 0.6 with an LM, the bundled model's chosen weights; none without), a lexicon (a word list) and
// its unknown-word penalty (unset: 2 with a lexicon). Gives the beam settings, the LM and lexicon loaded for the
// model's tokens, or nullopt for greedy decoding; options that contradict each other throw naming them.
struct DecodingRequest {
  std::string decoding;
  int beam_size = 0;
  std::string lm;
  std::optional<double> lm_alpha, lm_beta;
  std::string lexicon;
  std::optional<double> unknown_word_penalty;
  // A request that names neither a decoding nor an LM gets the model's default (config.decoding.strategy: the
  // bundled model's is beam search with its LM and lexicon), with this request's beam size, LM weights, lexicon
  // and penalty where it gives them; the default's files are the model directory's. A lexicon needs the model's
  // tokenizer (its pieces' letters), which this reads from model_dir.
  std::optional<BeamOptions> resolve(const ModelConfig& model, const std::filesystem::path& model_dir) const;
  // The request alone, for a model of vocab_size tokens whose default is greedy decoding; no lexicon (it needs the
  // tokenizer: the overload above).
  std::optional<BeamOptions> resolve(int vocab_size) const;

 private:
  // The tokens' part (decoding, beam size, LM) of either: what needs no tokenizer.
  std::optional<BeamOptions> resolve_tokens(int vocab_size) const;
};

// Beam-decodes each clip of `encoded` [B, T, d_model] (f32, CPU) up to its length, the clips side by side on
// ctx's threads (one alone gets them all for its products), with the decoder's parameters (f32 CPU). Hypotheses
// carry tokens, their frames and chosen durations, as greedy ones.
std::vector<Hypothesis> beam_decode(ops::Context& ctx, const TdtDecoder::Parameters& p, const Tensor& encoded,
                                    const std::vector<int64_t>& lengths, const BeamOptions& options,
                                    DecodeStats* stats = nullptr);

}  // namespace steno::asr
