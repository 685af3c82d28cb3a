// model_config.yaml (and a NeMo post-processing yaml) translated into a steno config.json exactly as
// tools/convert_nemo.py translates it: the same fields, defaults, order and value types, so the JSON text is the
// same. Python's own conversions are followed where the converter relies on them (int() of 16.0 or "16", a
// value's truthiness for `or` defaults, NeMo's ${...} references resolved for Sortformer models).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "nemo/yaml_value.h"

namespace steno::nemo {

struct TranslatedConfig {
  bool sortformer = false;         // told apart as the converter does: a sortformer_modules section
  nlohmann::ordered_json config;   // config.json's content, in the converter's key order
};

// `frontend_version`: "2.4" or "2.5", or nullopt to take it from model_config.yaml's nemo_version (>= 2.5: "2.5").
// `postprocessing`: the parsed post-processing yaml (Sortformer only). Throws steno::Error: kInvalidArgument naming
// the field for a missing or malformed value, kUnimplemented for a model steno cannot run (CTC or RNNT heads,
// another encoder, a front-end option the engine lacks). The result is checked further by the engine's own config
// readers (nemo/import.h), as the converter checks it by building its reference model.
TranslatedConfig translate_config(const YamlValue& model_config, const std::string& name,
                                  const std::optional<std::string>& frontend_version,
                                  const YamlValue* postprocessing);

}  // namespace steno::nemo
