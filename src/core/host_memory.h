// Host memory facts and pinning: this process's resident set, and mlock with an error that names RLIMIT_MEMLOCK.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/status.h"

namespace cai {

// Resident set size of this process in bytes (/proc/self/statm), 0 if unknown.
size_t resident_bytes();

// mlock the pages of [p, p + n) (faulting them in). On failure the error names `what` (say what and how many bytes)
// and the RLIMIT_MEMLOCK soft limit, and says how to raise it.
Status lock_pages(const void* p, size_t n, std::string_view what);

}  // namespace cai
