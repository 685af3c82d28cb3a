// `steno serve`: every flag from the option table (steno/serve/options.h), the server built from the resulting
// configuration (steno/serve/server.h), and the process's signals.
// Settings come from --config FILE.json, then $STENO_API_KEY, then flags (each layer overrides the one before).
// SIGTERM or SIGINT: both front ends stop accepting and answer the requests in flight, the core drains, exit 0.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "commands.h"
#include "steno/serve/config.h"
#include "steno/serve/options.h"
#include "steno/serve/server.h"

namespace steno::cli {
namespace {

using serve::ServeConfig;

struct ServeCommand {
  std::string config_file;
  bool options_reference = false;
  // Each option's flag, as given: its texts in order (a flag given twice: each applied, the last wins; --model
  // asr=A --model diarizer=B sets both), or "true" for a flag that is set.
  struct Given {
    const serve::Option* option;
    CLI::Option* flag;
    std::vector<std::string> texts;
    bool set = false;
  };
  std::vector<std::unique_ptr<Given>> given;

  ServeConfig resolve() const {
    ServeConfig config;
    if (!config_file.empty()) serve::apply_config_file(config, config_file);
    if (const char* key = std::getenv("STENO_API_KEY"); key && *key) config.api_key = key;
    for (const auto& g : given) {
      if (g->flag->count() == 0) continue;
      if (g->option->kind == serve::OptionKind::kFlag) {
        g->option->parse(config, "true");
        continue;
      }
      for (const std::string& text : g->texts) g->option->parse(config, text);
    }
    // A .nemo is imported into the model cache here, once, so that the server, its workers and their restarts
    // all see a directory.
    config.model.dir = resolve_model_dir(config.model.dir);
    if (!config.diarizer.dir.empty()) config.diarizer.dir = model_path(config.diarizer.dir);
    return config;
  }
};

// Blocks SIGINT and SIGTERM in this thread and in every thread started after it, so that sigwait() below is the
// only place they are delivered (no async-signal-safety concerns in a handler).
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Each connection holds a file descriptor; the usual soft limit (1,024) is far below what a server with
// thousands of clients needs, while the hard limit is usually generous. Raise the soft limit to the hard one.
void raise_descriptor_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  const rlim_t before = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) == 0)
    spdlog::info("file descriptor limit raised from {} to {}", before, lim.rlim_cur);
}

int run_serve(const ServeCommand& command) {
  if (command.options_reference) {
    std::fputs(serve::options_reference_markdown().c_str(), stdout);
    return 0;
  }
  const ServeConfig config = command.resolve();
  const sigset_t stop_signals = block_stop_signals();
  raise_descriptor_limit();
  std::unique_ptr<serve::Server> server = serve::build_server(config);
  server->start();
  std::fprintf(stderr, "steno: %s\n", server->banner().c_str());

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "steno: %s received; finishing the requests in flight\n",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  server->stop();
  std::fprintf(stderr, "steno: stopped\n");
  return 0;
}

// "--max-batch", "-p,--port", "--executors,--lanes": the option's names as CLI11 takes them.
std::string flag_names(const serve::Option& o) {
  std::string names = "--" + o.name;
  for (const std::string& other : o.other_names) names += (other.size() == 1 ? ",-" : ",--") + other;
  return names;
}

}  // namespace

Run add_serve_command(CLI::App& app) {
  auto command = std::make_shared<ServeCommand>();
  CLI::App* cmd =
      app.add_subcommand("serve", "Serve the OpenAI transcription API and KServe v2 over HTTP (and gRPC)");
  cmd->add_option("-c,--config", command->config_file,
                  "JSON file of settings (keys: the long flag names, '_' for '-'; docs/serve-options.md)");
  cmd->add_flag("--options-reference", command->options_reference,
                "Print the option reference (docs/serve-options.md) and exit")
      ->group("");
  const ServeConfig defaults;
  for (const serve::Option& o : serve::serve_options()) {
    auto g = std::make_unique<ServeCommand::Given>();
    g->option = &o;
    if (o.kind == serve::OptionKind::kFlag) {
      g->flag = cmd->add_flag(flag_names(o), g->set, o.help);
    } else {
      g->flag = cmd->add_option(flag_names(o), g->texts, o.help)
                    ->type_name(o.value_name)
                    ->default_str(o.show(defaults))
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                    ->expected(1)
                    ->allow_extra_args(false);
    }
    g->flag->group(o.group);
    command->given.push_back(std::move(g));
  }
  return [command] { return run_serve(*command); };
}

}  // namespace steno::cli
