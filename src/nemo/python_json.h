// JSON text exactly as Python's json module writes it (ensure_ascii=False), so that files steno writes equal
// tools/convert_nemo.py's byte for byte: floats as Python's repr (shortest round trip: 0.025, 8000.0, 1e-05),
// NaN and Infinity as Python spells them, strings with Python's escapes, keys in the object's order.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace steno::nemo {

// json.dumps(v, indent=2, ensure_ascii=False): one item a line, ", " never, ": " after keys.
std::string python_json_indented(const nlohmann::ordered_json& v);
// json.dumps(v, separators=(",", ":"), ensure_ascii=False): no whitespace at all.
std::string python_json_compact(const nlohmann::ordered_json& v);
// repr(x) of a Python float.
std::string python_float_repr(double x);

}  // namespace steno::nemo
