// The one table of `steno serve`'s settings (config.h holds their values). Each entry says, once, its name, kind,
// group and help, and how to read it from a flag or the config file and show it; from this table come the
// command-line flags (--max-batch), the config file's keys (max_batch), `--help`, the settings logged at start-up
// and the option reference in docs/serve-options.md, so none of them can drift from another.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "steno/serve/config.h"

namespace steno::serve {

enum class OptionKind { kText, kInteger, kNumber, kFlag, kList };

struct Option {
  std::string name;                      // "max-batch": the flag --max-batch and the config key max_batch
  std::vector<std::string> other_names;  // also accepted: "lanes" for "executors"; one letter is a short flag (-p)
  OptionKind kind = OptionKind::kText;
  std::string group;       // its heading in --help and the reference
  std::string value_name;  // "N", "HOST", ...: how --help names its value
  std::string help;        // one sentence or two, for --help and the reference

  // From a flag's text (kFlag: "true"); kInvalidArgument naming the flag when the text does not parse.
  std::function<void(ServeConfig&, std::string_view text)> parse;
  // From the config file; kInvalidArgument naming the key when the value has the wrong type.
  std::function<void(ServeConfig&, const nlohmann::json& value)> from_json;
  // The value as text: the default in --help and the reference, the settings at start-up.
  std::function<std::string(const ServeConfig&)> show;
};

// Every setting, in the order of --help and the reference.
const std::vector<Option>& serve_options();

// The config file's key of an option or name: '-' becomes '_'.
std::string config_key(std::string_view name);

// docs/serve-options.md: every option by group, with its flag, key, default and help (a test keeps the file equal).
std::string options_reference_markdown();

}  // namespace steno::serve
