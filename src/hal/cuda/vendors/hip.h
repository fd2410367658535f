// AMD HIP (Hygon DCU, AMD Instinct): the dialect's names map onto the HIP runtime; warps are 64 lanes on gfx9.
// ROCm 5.x HIP has no *_sync warp intrinsics: its plain shuffles act on the whole wavefront, which is what the
// dialect asks for.
#pragma once

#include <hip/hip_runtime.h>

#define gpuError_t hipError_t
#define gpuSuccess hipSuccess
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuErrorNotReady hipErrorNotReady
#define gpuGetLastError hipGetLastError
#define gpuGetErrorString hipGetErrorString
#define gpuStream_t hipStream_t
#define gpuStreamCreate hipStreamCreate
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuEvent_t hipEvent_t
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventQuery hipEventQuery
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMallocHost hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuMemGetInfo hipMemGetInfo
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemsetAsync hipMemsetAsync
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuSetDevice hipSetDevice
#define gpuDeviceProp hipDeviceProp_t
#define gpuGetDeviceProperties hipGetDeviceProperties

#define GPU_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<(grid), (block), (shared_bytes), (stream)>>>
#define GPU_DYNAMIC_SHARED(type, name) HIP_DYNAMIC_SHARED(type, name)

__device__ __forceinline__ int gpu_warp_size() { return warpSize; }
template <class T>
__device__ __forceinline__ T gpu_shfl_xor(T v, int mask) {
  return __shfl_xor(v, mask);
}
template <class T>
__device__ __forceinline__ T gpu_shfl_down(T v, int delta) {
  return __shfl_down(v, static_cast<unsigned>(delta));
}
template <class T>
__device__ __forceinline__ T gpu_shfl(T v, int src_lane) {
  return __shfl(v, src_lane);
}
__device__ __forceinline__ uint64_t gpu_ballot(int pred) { return __ballot(pred); }
__device__ __forceinline__ bool gpu_any(int pred) { return __any(pred); }
__device__ __forceinline__ bool gpu_all(int pred) { return __all(pred); }
__device__ __forceinline__ void gpu_syncwarp() {}
