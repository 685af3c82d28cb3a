// The `steno` subcommands. Each registers its options on the CLI11 app and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

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

// The one place a model given on the command line becomes a directory: a NeMo checkpoint (FILE.nemo) is imported
// into the model cache on first use (steno/nemo/model_cache.h; a line on stderr says so) and its cached
// directory returned; anything else is returned as given.
std::string model_path(const std::string& given);
// model_path() of --model (--diarizer), or of the default above when it is empty.
std::string resolve_model_dir(const std::string& given);
std::string resolve_diarizer_dir(const std::string& given);

}  // namespace steno::cli
