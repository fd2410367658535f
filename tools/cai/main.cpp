// `cai`: the command-line entry point. Results go to stdout, logs to stderr.
#include <cstdio>

#include "core/log.h"
#include "verbs.h"

int main(int argc, char** argv) {
  cai::init_logging();
  CLI::App app{"CAI: chip-agnostic inference for DeepSeek-R1 and its distills"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cai 0.1.0");
  int exit_code = 0;
  cai::cli::register_run(app, exit_code);
  cai::cli::register_tokenize(app, exit_code);
  cai::cli::register_eval(app, exit_code);
  cai::cli::register_bench(app, exit_code);
  cai::cli::register_serve(app, exit_code);
  cai::cli::register_plan(app, exit_code);
  cai::cli::register_detect(app, exit_code);
  cai::cli::register_chat(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  std::fflush(stdout);
  return exit_code;
}
