// Error helpers shared by the launchers: formatted failures and the post-launch error check.
#include <cstdarg>
#include <cstdio>

#include "hal/cuda/kernels/launchers.h"

namespace cai::gpu {

int fail(CaiError* err, int code, const char* fmt, ...) {
  if (err) {
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(err->message, sizeof(err->message), fmt, args);
    va_end(args);
  }
  return code;
}

int check_launch(CaiError* err, const char* op) {
  const gpuError_t e = gpuGetLastError();
  if (e == gpuSuccess) return CAI_OK;
  return fail(err, CAI_ERR_INTERNAL, "%s: kernel launch failed: %s", op, gpuGetErrorString(e));
}

}  // namespace cai::gpu
