// Logging setup.
#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace cai {

void init_logging(const char* level) {
  static bool done = false;
  if (!done) {
    auto logger = spdlog::stderr_color_mt("cai");
    logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    spdlog::set_default_logger(logger);
    done = true;
  }
  const char* env = std::getenv("CAI_LOG_LEVEL");
  const char* chosen = env ? env : (level ? level : "info");
  spdlog::set_level(spdlog::level::from_str(chosen));
}

void set_log_rank(int rank) {
  spdlog::default_logger()->set_pattern("[%H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%^%l%$] %v");
}

}  // namespace cai
