// Host memory facts and pinning: this process's resident set, and mlock (checked against RLIMIT_MEMLOCK first) with
// an error that names the limit.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/status.h"

namespace cai {

// Resident set size of this process in bytes (/proc/self/statm), 0 if unknown.
size_t resident_bytes();

// Whether n more bytes may be locked under RLIMIT_MEMLOCK (CAP_IPC_LOCK lifts it; bytes locked already count). Checked
// before locking so the error comes before any page is faulted in, and so a sandbox whose mlock ignores the limit still
// honours what the operator set. The error reads like lock_pages's.
Status check_lockable(size_t n, std::string_view what);

// mlock the pages of [p, p + n) (faulting them in). On failure the error names `what` (say what and how many bytes)
// and the RLIMIT_MEMLOCK soft limit, and says how to raise it.
Status lock_pages(const void* p, size_t n, std::string_view what);

}  // namespace cai
