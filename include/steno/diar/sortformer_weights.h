// The tensors of a Sortformer model of a given config.json: NeMo's state-dict names and shapes, in NeMo's order.
#pragma once

#include <cstdint>
#include <vector>

#include "steno/asr/weight_names.h"
#include "steno/diar/sortformer_config.h"

namespace steno::diar {

// The front end's optional buffers and the encoder (asr::encoder_weights), then sortformer_modules.* (encoder_proj
// unless the widths are equal; first_hidden_to_hidden; single_hidden_to_spks; hidden_to_spks, which NeMo keeps in
// every checkpoint but inference never reads: optional) and transformer_encoder.layers.{i}.*.
std::vector<asr::WeightSpec> expected_weights(const SortformerConfig& config);

// Learned parameters, as PyTorch counts them for NeMo's model (hidden_to_spks included).
int64_t parameter_count(const SortformerConfig& config);

}  // namespace steno::diar
