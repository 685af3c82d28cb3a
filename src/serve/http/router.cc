#include "serve/http/router.h"

#include <algorithm>

#include "steno/core/error.h"

namespace steno::serve::http {
namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

bool is_capture(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;  // needs two hex digits after '%'
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '/' || c == '\0') return false;
    out.push_back(c);
    i += 2;
  }
  return true;
}

void Router::add(std::string method, std::string_view pattern, Handler handler, RouteOptions options) {
  STENO_CHECK(!pattern.empty() && pattern.front() == '/', "route pattern '{}' must start with '/'", pattern);
  Route r;
  r.method = std::move(method);
  for (std::string_view s : split_path(pattern)) r.segments.emplace_back(s);
  r.handler = std::move(handler);
  r.options = options;
  routes_.push_back(std::move(r));
}

Router::Match Router::match(std::string_view method, std::string_view path) const {
  Match m;
  const std::vector<std::string_view> parts = split_path(path);
  for (const Route& r : routes_) {
    if (r.segments.size() != parts.size()) continue;
    std::map<std::string, std::string> params;
    bool ok = true;
    for (size_t i = 0; i < parts.size() && ok; ++i) {
      const std::string& seg = r.segments[i];
      if (is_capture(seg)) {
        std::string value;
        ok = !parts[i].empty() && percent_decode(parts[i], value);
        if (ok) params[seg.substr(1, seg.size() - 2)] = std::move(value);
      } else {
        ok = seg == parts[i];
      }
    }
    if (!ok) continue;
    if (r.method == method) {
      m.route = &r;
      m.params = std::move(params);
      m.allowed_methods.clear();
      return m;
    }
    if (std::find(m.allowed_methods.begin(), m.allowed_methods.end(), r.method) == m.allowed_methods.end())
      m.allowed_methods.push_back(r.method);
  }
  return m;
}

}  // namespace steno::serve::http
