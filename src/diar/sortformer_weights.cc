#include "steno/diar/sortformer_weights.h"

#include <fmt/format.h>

namespace steno::diar {

using asr::add_affine;
using asr::add_norm;
using asr::WeightSpec;

std::vector<WeightSpec> expected_weights(const SortformerConfig& config) {
  std::vector<WeightSpec> w = asr::encoder_weights(config.preprocessor, config.encoder);
  const SortformerModulesConfig& m = config.sortformer_modules;
  const int64_t fc = m.fc_d_model, tf = m.tf_d_model, spk = m.num_spks;
  add_affine(w, "sortformer_modules.hidden_to_spks", {spk, 2 * tf}, 2 * tf, true);
  w[w.size() - 2].optional = w[w.size() - 1].optional = true;
  add_affine(w, "sortformer_modules.first_hidden_to_hidden", {tf, tf}, tf, true);
  add_affine(w, "sortformer_modules.single_hidden_to_spks", {spk, tf}, tf, true);
  if (m.has_encoder_proj()) add_affine(w, "sortformer_modules.encoder_proj", {tf, fc}, fc, true);

  const TransformerConfig& t = config.transformer_encoder;
  const int64_t h = t.hidden_size, inner = t.inner_size;
  for (int i = 0; i < t.num_layers; ++i) {
    const std::string l = fmt::format("transformer_encoder.layers.{}.", i);
    add_norm(w, l + "layer_norm_1", h);
    for (const char* net : {"query_net", "key_net", "value_net", "out_projection"})
      add_affine(w, l + "first_sub_layer." + net, {h, h}, h, true);
    add_norm(w, l + "layer_norm_2", h);
    add_affine(w, l + "second_sub_layer.dense_in", {inner, h}, h, true);
    add_affine(w, l + "second_sub_layer.dense_out", {h, inner}, inner, true);
  }
  return w;
}

int64_t parameter_count(const SortformerConfig& config) { return asr::parameter_count(expected_weights(config)); }

}  // namespace steno::diar
