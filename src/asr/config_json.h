// Reading config.json field by field with messages that name the field ("config.json: encoder.d_model must be
// an integer, got \"96\""). Shared by every model type's config (asr/model_config.cc, diar/sortformer_config.cc).
#pragma once

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "steno/core/error.h"

namespace steno::asr::config_json {

inline constexpr const char* kPrefix = "config.json: ";

template <typename... Args>
[[noreturn]] void bad(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(ErrorCode::kInvalidArgument, kPrefix + fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void unsupported(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(ErrorCode::kUnimplemented, kPrefix + fmt::format(format, std::forward<Args>(args)...));
}

inline std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// One JSON object of config.json, read field by field. Remembers the keys it was asked for so that unknown keys
// can be reported.
class Section {
 public:
  Section(const nlohmann::json* obj, std::string prefix) : obj_(obj), prefix_(std::move(prefix)) {
    if (obj_ != nullptr && obj_->is_null()) obj_ = nullptr;
    if (obj_ != nullptr && !obj_->is_object())
      bad("{} must be an object, got {}", prefix_.empty() ? "the top level" : prefix_.substr(0, prefix_.size() - 1),
          shown(*obj_));
  }

  std::string field(const char* key) const { return prefix_ + key; }

  // The value of `key`, or null when it is absent or JSON null.
  const nlohmann::json* find(const char* key) {
    seen_.insert(key);
    if (obj_ == nullptr) return nullptr;
    const auto it = obj_->find(key);
    return it == obj_->end() || it->is_null() ? nullptr : &*it;
  }
  bool explicit_null(const char* key) const {
    if (obj_ == nullptr) return false;
    const auto it = obj_->find(key);
    return it != obj_->end() && it->is_null();
  }
  const nlohmann::json& require(const char* key) {
    const nlohmann::json* v = find(key);
    if (v == nullptr) bad("{} is missing", field(key));
    return *v;
  }

  static int as_int(const nlohmann::json& v, const std::string& name) {
    if (!v.is_number_integer()) bad("{} must be an integer, got {}", name, shown(v));
    if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT32_MAX)
                               : (v.get<int64_t>() > INT32_MAX || v.get<int64_t>() < INT32_MIN))
      bad("{} is out of range, got {}", name, shown(v));
    return static_cast<int>(v.get<int64_t>());
  }
  int integer(const char* key, std::optional<int> def = std::nullopt) {
    const nlohmann::json* v = def ? find(key) : &require(key);
    return v == nullptr ? *def : as_int(*v, field(key));
  }
  double number(const char* key, std::optional<double> def = std::nullopt) {
    const nlohmann::json* v = def ? find(key) : &require(key);
    if (v == nullptr) return *def;
    if (!v->is_number()) bad("{} must be a number, got {}", field(key), shown(*v));
    return v->get<double>();
  }
  bool boolean(const char* key, std::optional<bool> def = std::nullopt) {
    const nlohmann::json* v = def ? find(key) : &require(key);
    if (v == nullptr) return *def;
    if (!v->is_boolean()) bad("{} must be true or false, got {}", field(key), shown(*v));
    return v->get<bool>();
  }
  std::string string(const char* key, std::optional<std::string> def = std::nullopt) {
    const nlohmann::json* v = def ? find(key) : &require(key);
    if (v == nullptr) return *def;
    if (!v->is_string()) bad("{} must be a string, got {}", field(key), shown(*v));
    return v->get<std::string>();
  }
  std::vector<int> int_array(const char* key, std::optional<std::vector<int>> def = std::nullopt) {
    const nlohmann::json* v = def ? find(key) : &require(key);
    if (v == nullptr) return *def;
    if (!v->is_array()) bad("{} must be an array of integers, got {}", field(key), shown(*v));
    std::vector<int> out;
    for (size_t i = 0; i < v->size(); ++i) out.push_back(as_int((*v)[i], fmt::format("{}[{}]", field(key), i)));
    return out;
  }

  void warn_unknown() const {
    if (obj_ == nullptr) return;
    for (const auto& [k, v] : obj_->items())
      if (seen_.count(k) == 0) spdlog::warn("{}ignoring unknown field {}{}", kPrefix, prefix_, k);
  }

 private:
  const nlohmann::json* obj_;
  std::string prefix_;
  std::set<std::string> seen_;
};

inline void check_range(const char* name, int v, int lo, int hi) {
  if (v < lo || v > hi) bad("{} must be in [{}, {}], got {}", name, lo, hi, v);
}

inline void check_one_of(const char* name, const std::string& v, std::initializer_list<const char*> allowed,
                  std::initializer_list<const char*> known_unsupported = {}) {
  for (const char* a : allowed)
    if (v == a) return;
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  for (const char* k : known_unsupported)
    if (v == k) unsupported("{} \"{}\" is not implemented by steno (supported: {})", name, v, list);
  bad("{} must be one of {}, got \"{}\"", name, list, v);
}

inline bool is_power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

// ---- what every model type's config.json shares ----

// The top level's "format" ("steno-model") and "format_version" (at most `supported`).
inline void check_format_header(Section& top, int supported) {
  if (const nlohmann::json* v = top.find("format")) {
    if (!v->is_string() || v->get<std::string>() != "steno-model")
      bad("format must be \"steno-model\", got {}", shown(*v));
  }
  if (const nlohmann::json* v = top.find("format_version")) {
    const int version = Section::as_int(*v, "format_version");
    if (version > supported) unsupported("format_version {} is newer than this steno reads ({})", version, supported);
    if (version < 1) bad("format_version must be >= 1, got {}", version);
  }
}

// JSON text -> json (kDataLoss when it is not JSON).
inline nlohmann::json parse_text(std::string_view json_text) {
  try {
    return nlohmann::json::parse(json_text.begin(), json_text.end());
  } catch (const nlohmann::json::exception& ex) {
    throw Error(ErrorCode::kDataLoss, std::string(kPrefix) + "not valid JSON: " + ex.what());
  }
}

// A config file read and given to `parse` (text -> config); its errors name the file instead of "config.json".
template <typename Parse>
auto load_file(const std::filesystem::path& config_json, Parse&& parse) {
  const std::string file = config_json.string();
  std::error_code ec;
  if (!std::filesystem::exists(config_json, ec)) fail(ErrorCode::kNotFound, "{}: no such file", file);
  if (std::filesystem::is_directory(config_json, ec))
    fail(ErrorCode::kInvalidArgument, "{}: is a directory, not a config file", file);
  std::ifstream in(config_json, std::ios::binary);
  if (!in) fail(ErrorCode::kUnavailable, "{}: cannot read", file);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse(text.str());
  } catch (const Error& ex) {
    // "config.json: encoder.d_model ..." -> "<path>: encoder.d_model ..."
    std::string msg = ex.what();
    if (msg.rfind(kPrefix, 0) == 0) msg = file + ": " + msg.substr(std::string(kPrefix).size());
    throw Error(ex.code(), msg);
  }
}

// model_dir/config.json, after checking that the directory is one.
inline std::filesystem::path config_file_of(const std::filesystem::path& model_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(model_dir, ec))
    fail(ErrorCode::kNotFound, "model directory {} does not exist", model_dir.string());
  if (!std::filesystem::is_directory(model_dir, ec))
    fail(ErrorCode::kInvalidArgument, "{} is a file, not a model directory", model_dir.string());
  const std::filesystem::path cfg = model_dir / "config.json";
  if (!std::filesystem::exists(cfg, ec))
    fail(ErrorCode::kNotFound, "{}: no config.json (not a steno model directory?)", model_dir.string());
  return cfg;
}


}  // namespace steno::asr::config_json
