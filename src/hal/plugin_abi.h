// The one versioned C entry point every backend plugin exports (libcai-backend-<name>.so).
#pragma once

#include <cstdint>

#define CAI_BACKEND_ABI_VERSION 1u
#define CAI_BACKEND_ENTRY_SYMBOL "cai_backend_entry_v1"

namespace cai::hal {
class Backend;
}

extern "C" {
struct CaiBackendEntry {
  uint32_t abi_version;  // CAI_BACKEND_ABI_VERSION the plugin was built against
  const char* name;      // backend name, e.g. "cuda"
  // Creates the backend, or returns null and fills `error` (a static or plugin-owned string).
  cai::hal::Backend* (*create)(const char** error);
};
// Exported by each plugin under CAI_BACKEND_ENTRY_SYMBOL.
typedef const CaiBackendEntry* (*CaiBackendEntryFn)(void);
}
