// The server's side of a run: /metrics scraped before and after, and the increase of its counters as JSON
// (batches, mean batch size and histogram, nv_inference_*, stage durations, padding waste).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "serve_load_common.h"
#include "serve_load_http.h"

namespace serve_load {

// The Prometheus text of /metrics, as {"name{labels but model and version}": value}.
using Scrape = std::map<std::string, double>;

std::optional<Scrape> scrape_metrics(const tcp::endpoint& ep, const Options& o, std::string& error);

// The increase of /metrics's counters from `before` to `after`.
Json server_side(const Scrape& before, const Scrape& after);

}  // namespace serve_load
