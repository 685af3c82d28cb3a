#include "steno/core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace steno {

void init_logging(const std::string& level) {
  std::string chosen = level;
  if (const char* env = std::getenv("STENO_LOG_LEVEL")) chosen = env;
  auto logger = spdlog::get("steno");
  if (!logger) logger = spdlog::stderr_color_mt("steno");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(chosen));
}

}  // namespace steno
