#include "nemo/python_json.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "steno/core/error.h"

namespace steno::nemo {
namespace {

// json.encoder's escapes without ensure_ascii: '"', '\\', the five short forms, other controls as \u00XX.
void append_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        else out += c;
    }
  }
  out += '"';
}

void append(std::string& out, const nlohmann::ordered_json& v, int indent, int level) {
  const auto newline = [&](int depth) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * depth), ' ');
  };
  switch (v.type()) {
    case nlohmann::json::value_t::null: out += "null"; return;
    case nlohmann::json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; return;
    case nlohmann::json::value_t::number_integer: out += std::to_string(v.get<int64_t>()); return;
    case nlohmann::json::value_t::number_unsigned: out += std::to_string(v.get<uint64_t>()); return;
    case nlohmann::json::value_t::number_float: out += python_float_repr(v.get<double>()); return;
    case nlohmann::json::value_t::string: append_string(out, v.get_ref<const std::string&>()); return;
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object: {
      const bool object = v.is_object();
      out += object ? '{' : '[';
      if (v.empty()) {
        out += object ? '}' : ']';
        return;
      }
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ',';
        first = false;
        newline(level + 1);
        if (object) {
          append_string(out, it.key());
          out += indent < 0 ? ":" : ": ";
        }
        append(out, *it, indent, level + 1);
      }
      newline(level);
      out += object ? '}' : ']';
      return;
    }
    default: break;
  }
  fail(ErrorCode::kInternal, "python_json: a value of type {} has no Python JSON form", v.type_name());
}

}  // namespace

// float_repr_style 'short': the shortest digits that read back to x; fixed notation when the decimal exponent
// lies in [-4, 16), else d.ddde±XX with at least two exponent digits.
std::string python_float_repr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // [-]d[.ddd]e±XX
  const size_t e = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t k = negative ? 1 : 0; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  const int exp10 = std::stoi(sci.substr(e + 1));  // x = d.ddd * 10^exp10
  std::string out = negative ? "-" : "";
  if (exp10 >= -4 && exp10 < 16) {
    const int point = exp10 + 1;  // digits before the decimal point
    if (point <= 0) {
      out.append("0.").append(static_cast<size_t>(-point), '0').append(digits);
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out.append(digits, 0, static_cast<size_t>(point)).append(".").append(digits, static_cast<size_t>(point));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out.append(".").append(digits, 1);
  out += fmt::format("e{}{:02d}", exp10 < 0 ? '-' : '+', std::abs(exp10));
  return out;
}

std::string python_json_indented(const nlohmann::ordered_json& v) {
  std::string out;
  append(out, v, 2, 0);
  return out;
}

std::string python_json_compact(const nlohmann::ordered_json& v) {
  std::string out;
  append(out, v, -1, 0);
  return out;
}

}  // namespace steno::nemo
