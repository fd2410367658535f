// load_symbol: one function pointer from a library opened with dlopen (the vendor telemetry libraries).
#pragma once

#include <dlfcn.h>

namespace cai::gpu {

// Sets *out to `name` in `lib`; false when the library lacks it.
template <class Fn>
bool load_symbol(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace cai::gpu
