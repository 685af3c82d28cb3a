// libFuzzer target: a .nemo's model_config.yaml on any bytes, read as the importer reads it
// (nemo/yaml_value.h) and translated into a steno config (nemo/import_config.h) as an ASR model and as a Sortformer
// with post-processing (the same document standing in for the post-processing yaml). Each step must return or throw
// steno::Error: never crash, hang or expand an alias bomb. Built and run by fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nemo/import_config.h"
#include "nemo/yaml_value.h"
#include "steno/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const steno::nemo::YamlValue doc = steno::nemo::parse_yaml(text, "model_config.yaml");
    for (const auto& version : {std::optional<std::string>(), std::optional<std::string>("2.4")}) {
      try {
        steno::nemo::translate_config(doc, "fuzz", version, &doc);
      } catch (const steno::Error&) {
      }
    }
  } catch (const steno::Error&) {
  }
  return 0;
}
