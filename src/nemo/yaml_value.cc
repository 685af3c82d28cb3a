#include "nemo/yaml_value.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <regex>
#include <sstream>

#include "steno/core/error.h"

namespace steno::nemo {
namespace {

constexpr const char* kYamlTag = "tag:yaml.org,2002:";

// PyYAML's implicit resolvers (yaml/resolver.py), tried in its order for a plain scalar's first character.
const std::regex& bool_re() {
  static const std::regex re("^(yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$");
  return re;
}
const std::regex& float_re() {
  static const std::regex re(
      "^([-+]?([0-9][0-9_]*)\\.[0-9_]*([eE][-+][0-9]+)?|\\.[0-9][0-9_]*([eE][-+][0-9]+)?"
      "|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN))$");
  return re;
}
const std::regex& int_re() {
  static const std::regex re(
      "^([-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+)$");
  return re;
}

class Builder {
 public:
  Builder(const std::string& what, const YamlLimits& limits) : what_(what), limits_(limits) {}

  YamlValue build(const YAML::Node& node, int depth) {
    if (++nodes_ > limits_.max_nodes)
      bad(fmt::format("more than {} values once its aliases are expanded (a YAML bomb?)", limits_.max_nodes));
    if (depth > limits_.max_depth) bad(fmt::format("nested deeper than {} levels", limits_.max_depth));
    const std::string& tag = node.Tag();
    YamlValue v;
    switch (node.Type()) {
      case YAML::NodeType::Null:
        if (tag == std::string(kYamlTag) + "str") v.kind = YamlValue::Kind::kStr;
        return v;
      case YAML::NodeType::Scalar:
        return scalar(node.Scalar(), tag);
      case YAML::NodeType::Sequence:
        check_collection_tag(tag, "seq");
        v.kind = YamlValue::Kind::kList;
        for (const YAML::Node& item : node) v.items.push_back(build(item, depth + 1));
        return v;
      case YAML::NodeType::Map:
        check_collection_tag(tag, "map");
        v.kind = YamlValue::Kind::kMap;
        for (const auto& kv : node) add_entry(v, build(kv.first, depth + 1), build(kv.second, depth + 1));
        return v;
      case YAML::NodeType::Undefined:
        break;
    }
    bad("an undefined node");
  }

 private:
  [[noreturn]] void bad(const std::string& why) const { fail(ErrorCode::kInvalidArgument, "{}: {}", what_, why); }

  void count_bytes(size_t n) {
    string_bytes_ += n;
    if (string_bytes_ > limits_.max_string_bytes)
      bad(fmt::format("more than {} bytes of strings once its aliases are expanded (a YAML bomb?)",
                      limits_.max_string_bytes));
  }

  void check_collection_tag(const std::string& tag, const char* kind) const {
    if (!tag.empty() && tag != "?" && tag != "!" && tag != std::string(kYamlTag) + kind)
      bad(fmt::format("unsupported tag '{}'", tag));
  }

  // A key given twice keeps its first position and takes the last value (a Python dict filled in order).
  void add_entry(YamlValue& map, YamlValue key, YamlValue value) const {
    const bool is_str = key.kind == YamlValue::Kind::kStr;
    const std::string text = is_str ? key.s : std::string("<") + key.kind_name() + ">";
    if (is_str)
      for (size_t k = 0; k < map.keys.size(); ++k)
        if (map.string_key[k] && map.keys[k] == text) {
          map.items[k] = std::move(value);
          return;
        }
    map.keys.push_back(text);
    map.string_key.push_back(is_str);
    map.items.push_back(std::move(value));
  }

  YamlValue scalar(const std::string& text, const std::string& tag) {
    count_bytes(text.size());
    YamlValue v;
    v.kind = YamlValue::Kind::kStr;
    v.s = text;
    if (tag == "!" || tag == std::string(kYamlTag) + "str") return v;  // quoted, or !!str
    if (tag == "?" || tag.empty()) {
      // PyYAML's merge key; NeMo never writes one, and this reader does not implement it.
      if (text == "<<") bad("a merge key (<<), which steno does not read");
      const char c = text.empty() ? '\0' : text[0];
      if (std::string_view("yYnNtTfFoO").find(c) != std::string_view::npos && std::regex_match(text, bool_re()))
        return boolean(text);
      if (std::string_view("-+0123456789.").find(c) != std::string_view::npos && std::regex_match(text, float_re()))
        return real(text);
      if (std::string_view("-+0123456789").find(c) != std::string_view::npos && std::regex_match(text, int_re()))
        return integer(text);
      if (text == "=") bad("a plain '=' (YAML's value key), which safe_load refuses");
      return v;  // yaml-cpp gives null scalars (~, null, empty) as Null nodes
    }
    if (tag == std::string(kYamlTag) + "int") return integer(text);
    if (tag == std::string(kYamlTag) + "float") return real(text);
    if (tag == std::string(kYamlTag) + "bool") return boolean(text);
    if (tag == std::string(kYamlTag) + "null") return YamlValue{};
    bad(fmt::format("unsupported tag '{}' on '{}'", tag, text));
  }

  YamlValue boolean(const std::string& text) const {
    std::string low;
    for (char c : text) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    YamlValue v;
    v.kind = YamlValue::Kind::kBool;
    if (low == "yes" || low == "true" || low == "on") v.b = true;
    else if (low != "no" && low != "false" && low != "off") bad(fmt::format("'{}' is not a boolean", text));
    return v;
  }

  // PyYAML's construct_yaml_int: underscores dropped, 0b / 0x / 0 (octal) prefixes, base-60 with ':'.
  YamlValue integer(const std::string& text) const {
    std::string t;
    for (char c : text)
      if (c != '_') t += c;
    int64_t sign = 1;
    if (!t.empty() && t[0] == '-') sign = -1;
    if (!t.empty() && (t[0] == '-' || t[0] == '+')) t.erase(0, 1);
    YamlValue v;
    v.kind = YamlValue::Kind::kInt;
    if (t == "0") return v;
    int64_t value = 0;
    if (t.starts_with("0b")) value = parse_int(t.substr(2), 2, text);
    else if (t.starts_with("0x")) value = parse_int(t.substr(2), 16, text);
    else if (t.starts_with("0")) value = parse_int(t, 8, text);
    else if (t.find(':') != std::string::npos) {
      __int128 sum = 0, base = 1;
      for (size_t end = t.size(); end != std::string::npos;) {
        const size_t colon = end == 0 ? std::string::npos : t.rfind(':', end - 1);
        const size_t begin = colon == std::string::npos ? 0 : colon + 1;
        sum += base * parse_int(t.substr(begin, end - begin), 10, text);
        base *= 60;
        if (sum > std::numeric_limits<int64_t>::max() || base > (__int128(1) << 80)) too_big(text);
        end = colon;
      }
      value = static_cast<int64_t>(sum);
    } else value = parse_int(t, 10, text);
    v.i = sign * value;
    return v;
  }

  int64_t parse_int(const std::string& digits, int base, const std::string& text) const {
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (ec == std::errc::result_out_of_range) too_big(text);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      bad(fmt::format("'{}' is not an integer", text));
    return value;
  }

  [[noreturn]] void too_big(const std::string& text) const {
    bad(fmt::format("the integer {} is out of range (an absurd size)", text));
  }

  // PyYAML's construct_yaml_float: underscores dropped, .inf / .nan, base-60 with ':'.
  YamlValue real(const std::string& text) const {
    std::string t;
    for (char c : text)
      if (c != '_') t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double sign = 1;
    if (!t.empty() && t[0] == '-') sign = -1;
    if (!t.empty() && (t[0] == '-' || t[0] == '+')) t.erase(0, 1);
    YamlValue v;
    v.kind = YamlValue::Kind::kFloat;
    if (t == ".inf") v.f = sign * std::numeric_limits<double>::infinity();
    else if (t == ".nan") v.f = std::numeric_limits<double>::quiet_NaN();
    else if (t.find(':') != std::string::npos) {
      double sum = 0, base = 1;
      for (size_t end = t.size(); end != std::string::npos;) {
        const size_t colon = end == 0 ? std::string::npos : t.rfind(':', end - 1);
        const size_t begin = colon == std::string::npos ? 0 : colon + 1;
        sum += parse_double(t.substr(begin, end - begin), text) * base;
        base *= 60;
        end = colon;
      }
      v.f = sign * sum;
    } else v.f = sign * parse_double(t, text);
    return v;
  }

  double parse_double(const std::string& t, const std::string& text) const {
    double value = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    // Out of range is what Python gives too (inf, or 0 for an underflow), not an error.
    if (t.empty() || (ec != std::errc() && ec != std::errc::result_out_of_range) || end != t.data() + t.size())
      bad(fmt::format("'{}' is not a number", text));
    return value;
  }

  const std::string& what_;
  const YamlLimits& limits_;
  size_t nodes_ = 0;
  size_t string_bytes_ = 0;
};

}  // namespace

const YamlValue* YamlValue::find(std::string_view key) const {
  if (kind != Kind::kMap) return nullptr;
  for (size_t k = 0; k < keys.size(); ++k)
    if (string_key[k] && keys[k] == key) return &items[k];
  return nullptr;
}

const char* YamlValue::kind_name() const {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "boolean";
    case Kind::kInt: return "integer";
    case Kind::kFloat: return "float";
    case Kind::kStr: return "string";
    case Kind::kList: return "list";
    case Kind::kMap: return "mapping";
  }
  return "?";
}

namespace {

// Listens to the parser and keeps nothing: counting documents needs no tree.
class IgnoreEvents final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The documents in `text`, counted up to `cap`. Not YAML::LoadAll: yaml-cpp 0.7's parser, given a stray ',' at the
// top level after a document (",", "- a\n,"), reports one more document at every call without moving on, so
// LoadAll loops forever, collecting them until memory runs out (found by fuzz/run.sh model_config_yaml).
int count_documents(const std::string& text, int cap) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  IgnoreEvents events;
  int n = 0;
  while (n < cap && parser.HandleNextDocument(events)) ++n;
  return n;
}

}  // namespace

YamlValue parse_yaml(std::string_view text, const std::string& what, const YamlLimits& limits) {
  if (text.size() > limits.max_bytes)
    fail(ErrorCode::kInvalidArgument, "{}: {} bytes, over the limit of {} (an absurd size)", what, text.size(),
         limits.max_bytes);
  const std::string owned(text);
  YAML::Node doc;
  try {
    if (count_documents(owned, 2) > 1) fail(ErrorCode::kInvalidArgument, "{}: more than one YAML document", what);
    doc = YAML::Load(owned);
  } catch (const YAML::Exception& e) {
    fail(ErrorCode::kInvalidArgument, "{}: not valid YAML: {}", what, e.what());
  }
  if (!doc.IsDefined()) return {};
  try {
    return Builder(what, limits).build(doc, 0);
  } catch (const YAML::Exception& e) {
    fail(ErrorCode::kInvalidArgument, "{}: not valid YAML: {}", what, e.what());
  }
}

}  // namespace steno::nemo
