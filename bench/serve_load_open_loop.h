// serve_load --open-loop: the benchmark protocol's `mix` workload (docs/benchmarks.md): clips of the mix's
// lengths arriving as a Poisson process, whatever the server's answers, at each rate of a sweep.
//
// 1. The clips: the mix's 1,000 lengths (bench/mix_workload.h: log-normal around a 5.8 s median, clipped to
//    [1.3, 35] s, fixed seed; the same lengths as cuda_engine_bench's `offline` workload) in the order drawn, a
//    random order. Only the first --mix-clips (default 100) are sent, cycled: request n of a point is mix clip
//    (n mod N), where N is --mix-clips or, when fewer requests arrive in the busiest point, that many. Mix clip i of
//    n samples is stream[(i * 7 s + k) mod S], k < n, of the --testset FLAC clips decoded with steno's audio library
//    and concatenated in name order (S samples; the rule cuda_engine_bench cuts its clips by), sent as a 16-bit PCM
//    mono 16 kHz WAV built in memory.
// 2. The references: each of those N clips sent alone, one after another on one connection; its answer's text
//    (200, JSON {"text"}) is what every later answer to that clip must equal.
// 3. For each rate r of --rates (requests/s, spaces or commas), one point: arrivals at Poisson times (exponential
//    gaps of mean 1/r from a fixed seed, the same draws at every rate: the schedule at rate r is the one at rate 1
//    compressed r times) over --warmup-s + --duration-s; each arrival sends its request at once on an idle
//    keep-alive connection, or on a new one (the pool grows as needed; a connection idle for 5 s is closed rather
//    than reused, well inside the server's idle timeout), never waiting for an earlier answer. At most
//    --max-in-flight (default 2,000) requests are under way: an arrival beyond that fails at once with reason
//    "client_overload" (the client's descriptors stay bounded however slow the server). After the last arrival the
//    requests under way are waited for (the drain, bounded by --timeout-s per request).
// 4. Per point, over the requests that arrived inside the window [warm-up end, + --duration-s): arrivals and the
//    offered rate they make, ok, wrong (a 200 with another text; with --accept-differing-text ok instead, and counted
//    as differs, examples in differs_examples), failed by reason, latency of the ok ones from the scheduled arrival to
//    the whole answer (connecting included; mean, nearest-rank p50/p90/p95/p99, max; the client's own lag behind the
//    schedule apart), meets_sla (p99 < --sla-p99-ms, and mean < --sla-mean-ms only when that flag is given; at least
//    one ok request, none wrong or failed). requests/s and audio seconds/s count the ok answers that completed inside
//    the window (what the server delivered while loaded at r). Also server_metrics over the window (/metrics at its
//    start and end, scraped off the event loop), the window's wall-clock bounds (Unix seconds), the warm-up's tally,
//    per-request rows. A progress line every second on stderr (requests/s in the last second, p99 so far) and one per
//    point; --out is rewritten after every point.
// 5. The headline: the point with the highest offered rate among those meeting the SLA (null when none).
// Exit status 0 only when every reference request and every request of every point (warm-up included) was answered
// 200 with its clip's reference text (any text, with --accept-differing-text); 1 otherwise (client_overload
// included); 2 for bad usage.
#pragma once

#include "serve_load_common.h"

namespace serve_load {

// Runs the sweep and prints/writes its result; `out` holds the result's opening fields (tool, command, server, ...).
int run_open_loop(const Options& o, Json out);

}  // namespace serve_load
