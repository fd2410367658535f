// Logging: spdlog to stderr (results go to stdout). CAI_LOG_LEVEL=debug|info|warn|error|off.
#pragma once

#include <spdlog/spdlog.h>

namespace cai {
// Configure the default logger once: stderr sink, level from CAI_LOG_LEVEL or `level`.
void init_logging(const char* level = nullptr);
// One process of several (an MPI job): every line names its rank, "[rank 1]".
void set_log_rank(int rank);
}  // namespace cai

#define CAI_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define CAI_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define CAI_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define CAI_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
