// OpenAI-compatible routes: POST /v1/audio/transcriptions (multipart; with speakers when a diarizer is served),
// POST /v1/audio/diarizations, GET /v1/models[/{model}], and a clear refusal for /v1/audio/translations. Which request fields are honoured, ignored or refused: docs/http-api.md.
#pragma once

#include <memory>

#include "api_context.h"

namespace steno::serve::http {

void add_openai_routes(Router& router, const std::shared_ptr<ApiContext>& ctx);

}  // namespace steno::serve::http
