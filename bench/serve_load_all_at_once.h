// serve_load's default mode: N concurrent OpenAI transcription requests, all in flight at once, each checked
// against the reference transcripts.
//
// 1. Raises RLIMIT_NOFILE's soft limit to the hard limit (one descriptor per connection) and says so when even the
//    hard limit is too low for N connections.
// 2. Warm-up: --warmup requests one after another on one connection (excluded from the measurement).
// 3. Scrapes /metrics (before).
// 4. Opens N connections, all of them, before sending anything.
// 5. Writes N requests at once, one per connection (POST /v1/audio/transcriptions, multipart, the FLAC clips of
//    tests/data/testset/espeak cycled in order), then waits for every answer, up to --timeout-s from the first write.
// 6. Checks each answer: exactly one response, status 200, JSON {"text"} equal to the clip's line in
//    reference_transcripts.tsv. Connections stay open (keep-alive) for --grace-ms after the last answer, so that a
//    second response on any of them is seen and counted as a duplicate answer.
// 7. Scrapes /metrics again: the server's batches, mean batch size and batch-size histogram over the run.
// Prints the result as JSON (without the per-request rows) and writes it, with them, to --out: requests; ok (answered
// exactly once, 200, the right text); wrong (a 200 with another text; with --accept-differing-text it is ok instead,
// and counted as differs, the first 20 in differs_examples); failed, by reason (connect, write or read errors, another
// status, no answer within --timeout-s, answered twice); duplicate_answers (responses beyond the first, over all
// connections: 0 unless the server answered a request twice); wall_s (first write to last answer) and requests/s (ok /
// wall_s); latency from each request's first write to its whole answer (mean and nearest-rank p50/p90/p95/p99, max);
// and server_metrics, the increase of /metrics's counters over the run (steno_batch_size: batches, mean batch size,
// histogram; nv_inference_*; stage durations; padding waste).
// Exit status 0 only when every request was answered exactly once, with status 200 and the right text (any text, with
// --accept-differing-text; the warm-up too); 1 otherwise; 2 for bad usage.
#pragma once

#include "serve_load_common.h"

namespace serve_load {

// Runs the mode and prints/writes its result; `out` holds the result's opening fields (tool, command, server, ...).
int run_all_at_once(const Options& o, Json out);

}  // namespace serve_load
