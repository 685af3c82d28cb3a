// Logging facade over spdlog. Library code logs through spdlog's default logger; this sets it up once.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace steno {

// Level names: trace, debug, info, warn, error, off. STENO_LOG_LEVEL overrides the argument. Logs go to stderr
// so that stdout carries only results (transcripts, JSON).
void init_logging(const std::string& level = "warn");

}  // namespace steno
