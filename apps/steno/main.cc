// steno: speech to text. One binary, one subcommand per job.
#include <cstdio>

#include "commands.h"
#include "steno/core/error.h"
#include "steno/core/logging.h"

int main(int argc, char** argv) {
  CLI::App app{"steno: speech-to-text (FastConformer-TDT / Parakeet) and speaker diarization (Sortformer)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "steno 0.1.0");
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off (env STENO_LOG_LEVEL wins)");

  const steno::cli::Run transcribe = steno::cli::add_transcribe_command(app);
  const steno::cli::Run diarize = steno::cli::add_diarize_command(app);
  const steno::cli::Run der = steno::cli::add_der_command(app);
  const steno::cli::Run model = steno::cli::add_model_command(app);
  const steno::cli::Run serve = steno::cli::add_serve_command(app);
  const steno::cli::Run worker = steno::cli::add_worker_command(app);
  const steno::cli::Run plan = steno::cli::add_plan_command(app);
  const steno::cli::Run bench = steno::cli::add_bench_command(app);

  CLI11_PARSE(app, argc, argv);
  steno::init_logging(log_level);
  try {
    if (app.got_subcommand("transcribe")) return transcribe();
    if (app.got_subcommand("diarize")) return diarize();
    if (app.got_subcommand("der")) return der();
    if (app.got_subcommand("model")) return model();
    if (app.got_subcommand("serve")) return serve();
    if (app.got_subcommand("worker")) return worker();
    if (app.got_subcommand("plan")) return plan();
    if (app.got_subcommand("bench")) return bench();
  } catch (const steno::Error& e) {
    std::fprintf(stderr, "steno: %s\n", e.what());
    return e.code() == steno::ErrorCode::kInternal ? 70 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "steno: unexpected error: %s\n", e.what());
    return 70;
  }
  return 2;
}
