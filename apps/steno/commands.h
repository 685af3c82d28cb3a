// The `steno` subcommands. Each registers its options on the CLI11 app and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace steno::cli {

using Run = std::function<int()>;

Run add_transcribe_command(CLI::App& app);
Run add_diarize_command(CLI::App& app);
Run add_der_command(CLI::App& app);
Run add_model_command(CLI::App& app);
Run add_serve_command(CLI::App& app);
Run add_worker_command(CLI::App& app);  // internal: a worker process of `steno serve`
Run add_plan_command(CLI::App& app);
Run add_bench_command(CLI::App& app);

// The model used when --model is not given: $STENO_MODEL, else the bundled model beside the binary or in the
// source tree. Throws kNotFound with advice when there is none.
std::string default_model_dir();
// The same for the speaker diarization model: $STENO_DIARIZER, else the bundled diarizer.
std::string default_diarizer_dir();

}  // namespace steno::cli
