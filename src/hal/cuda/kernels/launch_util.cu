// The launchers' post-launch error check.
#include "hal/cuda/kernels/launchers.h"

namespace cai::gpu {

int check_launch(CaiError* err, const char* op) {
  const gpuError_t e = gpuGetLastError();
  if (e == gpuSuccess) return CAI_OK;
  return fail(err, CAI_ERR_INTERNAL, "%s: kernel launch failed: %s", op, gpuGetErrorString(e));
}

}  // namespace cai::gpu
