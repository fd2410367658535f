// `cai`: the command-line entry point. Results go to stdout, logs to stderr.
#include <unistd.h>

#include <cstdio>

#include "core/log.h"
#include "hal/process_group.h"
#include "verbs.h"

int main(int argc, char** argv) {
  cai::init_logging();
  // Launched by mpirun with other ranks: join the job. Workers (rank > 0) print nothing to stdout, only the leader
  // writes results; every log line names its rank.
  cai::Result<cai::hal::ProcessGroup*> group = cai::hal::join_process_group(&argc, &argv);
  if (!group.ok()) return cai::cli::fail(group.status());
  if (*group) {
    cai::set_log_rank((*group)->rank());
    if ((*group)->rank() > 0) dup2(STDERR_FILENO, STDOUT_FILENO);
  }
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
  cai::cli::register_doctor(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  std::fflush(stdout);
  // A rank that fails ends the whole job at once (the others may be waiting for it); a clean end leaves it together.
  cai::hal::ProcessGroup* g = cai::hal::process_group();
  if (g && exit_code == 0 && !cai::hal::group_failure().empty()) exit_code = 3;  // the group broke: restart it
  if (g && exit_code != 0) {
    std::fflush(stderr);
    g->abort(exit_code);
  }
  cai::hal::leave_process_group();
  return exit_code;
}
