// serve_load --closed-loop: the benchmark protocol's `seed` workload (docs/benchmarks.md): one clip, re-sent.
//
// 1. The reference: --clip sent alone on one connection; its answer (200, JSON {"text"}) is the text every later
//    answer must have (the clip has no transcript of its own). --warmup and --requests do not apply.
// 2. For each concurrency c of --concurrency (spaces or commas), one point: c keep-alive connections, each sending
//    the same request (POST /v1/audio/transcriptions, multipart, as in the default mode) again as soon as its answer
//    arrives, for --warmup-s + --duration-s seconds; then no new requests, and those in flight are waited for (the
//    drain). A request counts in the point when it completes inside the measurement window [warm-up end,
//    + duration); warm-up and drain requests are checked and tallied apart. A connection that fails (connect, write
//    or read error, no answer within --timeout-s) is reopened after 100 ms; one the server closes is reopened at
//    once.
// 3. Per point: requests, ok, wrong (a 200 with another text; with --accept-differing-text ok instead, and counted as
//    differs, examples in differs_examples), failed by reason, requests/s (ok / duration), audio seconds/s, latency of
//    the ok requests from first write to whole answer (mean, nearest-rank p50/p90/p95/p99, max), meets_sla (mean <
//    --sla-mean-ms and p99 < --sla-p99-ms, at least one ok request and none wrong or failed), server_metrics over the
//    window (/metrics scraped, off the client's event loop, at the window's start and end), the window's wall-clock
//    bounds (Unix seconds, to line up GPU samples) and per-request rows. A `progress` line per point on stderr; --out
//    is rewritten after every point.
// 4. The headline: the point with the highest requests/s among those meeting the SLA (null when none).
// Exit status 0 only when the reference request and every request of every point (warm-up and drain included)
// were answered 200 with the reference text (any text, with --accept-differing-text); 1 otherwise; 2 for bad usage.
#pragma once

#include "serve_load_common.h"

namespace serve_load {

// Runs the sweep and prints/writes its result; `out` holds the result's opening fields (tool, command, server, ...).
int run_closed_loop(const Options& o, Json out);

}  // namespace serve_load
