// KServe v2 over HTTP: /v2/health/{live,ready}, /v2, /v2/models/{m}[/versions/{v}][/ready|/config|/stats|/infer],
// /v2/models/stats. The model's tensors, and how audio may be sent: docs/http-api.md.
#pragma once

#include <memory>

#include "api_context.h"

namespace steno::serve::http {

void add_kserve_routes(Router& router, const std::shared_ptr<ApiContext>& ctx);

}  // namespace steno::serve::http
