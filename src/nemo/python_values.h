// What Python does with the values yaml.safe_load returns, where tools/convert_nemo.py relies on it: int() and
// float() of numbers, booleans and numeric strings, truthiness (`x or default`), str() and ==. Each conversion
// that Python would refuse throws steno::Error(kInvalidArgument) naming `what` (the field, e.g.
// "model_config.yaml: encoder.d_model").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "nemo/yaml_value.h"

namespace steno::nemo {

YamlValue py_none();
YamlValue py_int_value(int64_t i);
YamlValue py_float_value(double f);
YamlValue py_str_value(std::string s);
YamlValue py_list_value(std::initializer_list<YamlValue> items);

int64_t py_int(const YamlValue& v, const std::string& what);  // int(v); a float is truncated
double py_float(const YamlValue& v, const std::string& what);
bool py_truthy(const YamlValue& v);
YamlValue py_or(const YamlValue& a, const YamlValue& b);  // `a or b`
// str(v) of a scalar (repr for floats, "None", "True"); "" for a list or mapping.
std::string py_str(const YamlValue& v);
// v == other for scalars as Python compares them (True == 1 == 1.0; NaN equals nothing).
bool py_equal(const YamlValue& v, const YamlValue& other);
// What json.dump writes for v (keys that were not strings keep their text).
nlohmann::ordered_json py_to_json(const YamlValue& v);

// A mapping's field in Python's terms. `map` must be a mapping (else an error naming `path`, a "model_config.yaml:
// encoder"-like prefix); get() returns (a copy of) the value or `fallback` when absent, at() refuses an absent key.
YamlValue py_get(const YamlValue& map, const std::string& path, const std::string& key,
                        const YamlValue& fallback);
const YamlValue& py_at(const YamlValue& map, const std::string& path, const std::string& key);

}  // namespace steno::nemo
