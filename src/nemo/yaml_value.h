// A YAML document (a .nemo's model_config.yaml, a NeMo post-processing yaml) read as Python's yaml.safe_load reads
// it, so that steno's import makes what tools/convert_nemo.py makes: plain scalars are typed by PyYAML's YAML 1.1
// rules (`on` is true, `1e-5` is a string, `0x10` is 16, `1_000` is 1000), quoted ones are strings, a key given
// twice keeps its first place and its last value.
//
// The input is untrusted. yaml-cpp keeps an alias as a second reference to its anchor's node, so a "billion
// laughs" document is small in memory but vast when walked; this reader builds its tree with every alias expanded
// and stops at a budget of nodes, bytes and depth, refusing the document instead of expanding it without bound.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace steno::nemo {

struct YamlLimits {
  size_t max_bytes = 16u << 20;        // the document's text
  size_t max_nodes = 200'000;          // values once aliases are expanded (a Parakeet config has ~5,000)
  size_t max_string_bytes = 64u << 20;  // all strings once aliases are expanded
  int max_depth = 64;
};

struct YamlValue {
  enum class Kind { kNull, kBool, kInt, kFloat, kStr, kList, kMap };
  Kind kind = Kind::kNull;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<YamlValue> items;    // kList: the items; kMap: the values, in key order
  std::vector<std::string> keys;   // kMap: the keys (a key that is not a string in YAML: its text, never found)
  std::vector<bool> string_key;    // kMap: whether keys[k] is a string

  bool is_map() const { return kind == Kind::kMap; }
  // The value under string key `key` of a mapping, or nullptr (also when this is not a mapping).
  const YamlValue* find(std::string_view key) const;
  // "mapping", "string", ... as Python would call the type (for messages).
  const char* kind_name() const;
};

// Parses one YAML document; an empty document is null. Throws steno::Error(kInvalidArgument) naming `what` (e.g.
// "model_config.yaml") for malformed YAML, more than one document, a tag safe_load refuses, a merge key (`<<`), an
// integer outside int64, and a document over `limits` (naming the limit).
YamlValue parse_yaml(std::string_view text, const std::string& what, const YamlLimits& limits = {});

}  // namespace steno::nemo
