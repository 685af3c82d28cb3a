// Method + path-pattern routing: "/v2/models/{model}/infer" matches "/v2/models/parakeet/infer" and captures
// model = "parakeet" (percent-decoded). Literal segments are compared case-sensitively, as KServe requires.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/http/message.h"

namespace steno::serve::http {

using Handler = std::function<void(HttpRequest& request, Responder respond)>;

struct RouteOptions {
  // Run the handler on the worker pool instead of the I/O thread: for handlers that parse large bodies or decode
  // audio, so that they never stall the connections sharing that I/O thread.
  bool offload = false;
  // Whether a request (by its head) is an audio upload: its body may be as large as max_upload_mb (not
  // max_body_mb) and is spooled to a temporary file past upload_buffer_mb instead of being held in memory. Only
  // for bodies whose parse keeps views into them (multipart, KServe's binary extension), never a JSON DOM.
  std::function<bool(const HttpRequest& head)> upload{};
  // Served without the API key (health probes from load balancers and orchestrators).
  bool public_route = false;
  // Looks at the start of a large body before the rest arrives (RequestHandler::check_body_start): an answer
  // refuses the request from it.
  std::function<std::optional<HttpResponse>(const HttpRequest& head, std::string_view body_start,
                                            uint64_t content_length)>
      check_body_start{};
};

struct Route {
  std::string method;
  std::vector<std::string> segments;  // "{name}" segments capture
  Handler handler;
  RouteOptions options;
};

class Router {
 public:
  // Throws kInvalidArgument for a pattern that does not start with '/'.
  void add(std::string method, std::string_view pattern, Handler handler, RouteOptions options = {});

  struct Match {
    const Route* route = nullptr;               // null: no route for this method and path
    std::map<std::string, std::string> params;  // captured path parameters
    std::vector<std::string> allowed_methods;   // when route is null: methods the path has (empty -> 404, else 405)
  };
  // A trailing '/' is ignored ("/v2/" is "/v2"). A segment with a malformed %-escape matches nothing.
  Match match(std::string_view method, std::string_view path) const;

 private:
  std::vector<Route> routes_;
};

// Decodes %XX escapes; returns false on a malformed escape or an encoded '/' or NUL (never valid in a name).
bool percent_decode(std::string_view in, std::string& out);

}  // namespace steno::serve::http
