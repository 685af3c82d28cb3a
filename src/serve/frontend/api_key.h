// The API-key check every front end makes when `steno serve` has a key: the client sends
// `Authorization: Bearer <key>` (an HTTP header, or gRPC metadata `authorization`).
#pragma once

#include <string_view>

namespace steno::serve {

// True when `authorization` (the header or metadata value as sent) is "Bearer <key>": the scheme in any case,
// whitespace around the token ignored. The token is compared in constant time, so that response timing does not
// reveal how much of a guessed key was right. An empty `key` matches nothing.
bool bearer_token_matches(std::string_view authorization, std::string_view key);

}  // namespace steno::serve
