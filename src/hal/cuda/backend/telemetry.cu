// Device telemetry where no vendor library reports any (the simt emulator): no readings. CUDA reads NVML
// (telemetry_nvml.cu), HIP the ROCm SMI library (telemetry_rocm_smi.cu).
#include "hal/cuda/backend/gpu_device.h"

#if !defined(CAI_GPU_CUDA) && !defined(CAI_GPU_HIP)

namespace cai::gpu {

void* telemetry_open(int) { return nullptr; }
void telemetry_read(void*, CaiTelemetry*) {}

}  // namespace cai::gpu

#endif
