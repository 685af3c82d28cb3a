#include "nemo/python_values.h"

#include <charconv>
#include <cmath>

#include "nemo/python_json.h"
#include "steno/core/error.h"

namespace steno::nemo {
namespace {

using Kind = YamlValue::Kind;

// Python's int("...") / float("...") accept surrounding whitespace and '_' between two digits.
std::string python_numeral(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r\f\v"), e = s.find_last_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return "";
  const std::string t = s.substr(b, e - b + 1);
  std::string out;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k] == '_') {
      if (k == 0 || k + 1 == t.size() || !std::isdigit(static_cast<unsigned char>(t[k - 1])) ||
          !std::isdigit(static_cast<unsigned char>(t[k + 1])))
        return "";  // not a numeral
      continue;
    }
    out += t[k];
  }
  return out;
}

[[noreturn]] void not_a(const char* type, const YamlValue& v, const std::string& what) {
  fail(ErrorCode::kInvalidArgument, "{} must be {}, not the {} '{}'", what, type, v.kind_name(), py_str(v));
}

}  // namespace

YamlValue py_none() { return {}; }
YamlValue py_int_value(int64_t i) {
  YamlValue v;
  v.kind = Kind::kInt;
  v.i = i;
  return v;
}
YamlValue py_float_value(double f) {
  YamlValue v;
  v.kind = Kind::kFloat;
  v.f = f;
  return v;
}
YamlValue py_str_value(std::string s) {
  YamlValue v;
  v.kind = Kind::kStr;
  v.s = std::move(s);
  return v;
}
YamlValue py_list_value(std::initializer_list<YamlValue> items) {
  YamlValue v;
  v.kind = Kind::kList;
  v.items = items;
  return v;
}

int64_t py_int(const YamlValue& v, const std::string& what) {
  switch (v.kind) {
    case Kind::kBool: return v.b ? 1 : 0;
    case Kind::kInt: return v.i;
    case Kind::kFloat:
      if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) not_a("an integer", v, what);
      return static_cast<int64_t>(std::trunc(v.f));
    case Kind::kStr: {
      std::string t = python_numeral(v.s);
      const bool negative = !t.empty() && t[0] == '-';
      if (!t.empty() && (t[0] == '-' || t[0] == '+')) t.erase(0, 1);
      int64_t out = 0;
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size()) not_a("an integer", v, what);
      return negative ? -out : out;
    }
    default: not_a("an integer", v, what);
  }
}

double py_float(const YamlValue& v, const std::string& what) {
  switch (v.kind) {
    case Kind::kBool: return v.b ? 1.0 : 0.0;
    case Kind::kInt: return static_cast<double>(v.i);
    case Kind::kFloat: return v.f;
    case Kind::kStr: {
      std::string t = python_numeral(v.s);
      double sign = 1;
      if (!t.empty() && t[0] == '-') sign = -1;
      if (!t.empty() && (t[0] == '-' || t[0] == '+')) t.erase(0, 1);
      std::string low;
      for (char c : t) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (low == "inf" || low == "infinity") return sign * HUGE_VAL;
      if (low == "nan") return std::nan("");
      double out = 0;
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
      const bool word = low.find_first_of("in") != std::string::npos;  // from_chars' own inf / nan spellings
      if (t.empty() || word || (ec != std::errc() && ec != std::errc::result_out_of_range) ||
          end != t.data() + t.size())
        not_a("a number", v, what);
      return sign * out;
    }
    default: not_a("a number", v, what);
  }
}

bool py_truthy(const YamlValue& v) {
  switch (v.kind) {
    case Kind::kNull: return false;
    case Kind::kBool: return v.b;
    case Kind::kInt: return v.i != 0;
    case Kind::kFloat: return v.f != 0;
    case Kind::kStr: return !v.s.empty();
    case Kind::kList:
    case Kind::kMap: return !v.items.empty();
  }
  return false;
}

YamlValue py_or(const YamlValue& a, const YamlValue& b) { return py_truthy(a) ? a : b; }

std::string py_str(const YamlValue& v) {
  switch (v.kind) {
    case Kind::kNull: return "None";
    case Kind::kBool: return v.b ? "True" : "False";
    case Kind::kInt: return std::to_string(v.i);
    case Kind::kFloat: {
      const std::string r = python_float_repr(v.f);  // Python's repr, but inf / nan as str() spells them
      return r == "Infinity" ? "inf" : r == "-Infinity" ? "-inf" : r == "NaN" ? "nan" : r;
    }
    case Kind::kStr: return v.s;
    default: return "";
  }
}

bool py_equal(const YamlValue& v, const YamlValue& other) {
  const auto numeric = [](const YamlValue& x) {
    return x.kind == Kind::kBool || x.kind == Kind::kInt || x.kind == Kind::kFloat;
  };
  if (numeric(v) && numeric(other)) {
    if (v.kind != Kind::kFloat && other.kind != Kind::kFloat) return py_int(v, "") == py_int(other, "");
    return py_float(v, "") == py_float(other, "");
  }
  if (v.kind != other.kind) return false;
  if (v.kind == Kind::kNull) return true;
  if (v.kind == Kind::kStr) return v.s == other.s;
  return false;  // lists and mappings are never the scalars compared here
}

nlohmann::ordered_json py_to_json(const YamlValue& v) {
  switch (v.kind) {
    case Kind::kNull: return nullptr;
    case Kind::kBool: return v.b;
    case Kind::kInt: return v.i;
    case Kind::kFloat: return v.f;
    case Kind::kStr: return v.s;
    case Kind::kList: {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const YamlValue& item : v.items) out.push_back(py_to_json(item));
      return out;
    }
    case Kind::kMap: {
      nlohmann::ordered_json out = nlohmann::ordered_json::object();
      for (size_t k = 0; k < v.keys.size(); ++k) out[v.keys[k]] = py_to_json(v.items[k]);
      return out;
    }
  }
  return nullptr;
}

YamlValue py_get(const YamlValue& map, const std::string& path, const std::string& key,
                        const YamlValue& fallback) {
  if (!map.is_map()) fail(ErrorCode::kInvalidArgument, "{} must be a mapping, not a {}", path, map.kind_name());
  const YamlValue* v = map.find(key);
  return v ? *v : fallback;
}

const YamlValue& py_at(const YamlValue& map, const std::string& path, const std::string& key) {
  if (!map.is_map()) fail(ErrorCode::kInvalidArgument, "{} must be a mapping, not a {}", path, map.kind_name());
  const YamlValue* v = map.find(key);
  if (!v) fail(ErrorCode::kInvalidArgument, "{}.{} is missing", path, key);
  return *v;
}

}  // namespace steno::nemo
