// The events of a server-sent event stream as OpenAI's streamed transcription sends them: every `data: <JSON>` up to
// its blank line, parsed, in order. Text before the first event (response headers from curl -D) is skipped. An
// event without its blank line, or whose data is not JSON, is a test failure.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace steno::testing {

inline std::vector<nlohmann::json> sse_events(const std::string& body) {
  std::vector<nlohmann::json> events;
  for (size_t at = body.find("data: "); at != std::string::npos; at = body.find("data: ", at)) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) {
      ADD_FAILURE() << "an event without its blank line: " << body.substr(at, 500);
      break;
    }
    const nlohmann::json event = nlohmann::json::parse(body.substr(at + 6, end - at - 6), nullptr, false);
    if (event.is_discarded()) ADD_FAILURE() << "an event whose data is not JSON: " << body.substr(at, end - at);
    events.push_back(event);
    at = end;
  }
  return events;
}

}  // namespace steno::testing
