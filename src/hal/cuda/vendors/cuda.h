// NVIDIA CUDA: the dialect's names map 1:1 onto the CUDA runtime; warp intrinsics use the full-warp mask.
#pragma once

#include <cuda_runtime.h>

#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorNotReady cudaErrorNotReady
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuStream_t cudaStream_t
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuEvent_t cudaEvent_t
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventQuery cudaEventQuery
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemsetAsync cudaMemsetAsync
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuSetDevice cudaSetDevice
#define gpuDeviceProp cudaDeviceProp
#define gpuGetDeviceProperties cudaGetDeviceProperties

#define GPU_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<(grid), (block), (shared_bytes), (stream)>>>
#define GPU_DYNAMIC_SHARED(type, name) extern __shared__ type name[]

#define CAI_GPU_FULL_MASK 0xffffffffu
__device__ __forceinline__ int gpu_warp_size() { return 32; }
template <class T>
__device__ __forceinline__ T gpu_shfl_xor(T v, int mask) {
  return __shfl_xor_sync(CAI_GPU_FULL_MASK, v, mask);
}
template <class T>
__device__ __forceinline__ T gpu_shfl_down(T v, int delta) {
  return __shfl_down_sync(CAI_GPU_FULL_MASK, v, delta);
}
template <class T>
__device__ __forceinline__ T gpu_shfl(T v, int src_lane) {
  return __shfl_sync(CAI_GPU_FULL_MASK, v, src_lane);
}
__device__ __forceinline__ uint64_t gpu_ballot(int pred) { return __ballot_sync(CAI_GPU_FULL_MASK, pred); }
__device__ __forceinline__ bool gpu_any(int pred) { return __any_sync(CAI_GPU_FULL_MASK, pred); }
__device__ __forceinline__ bool gpu_all(int pred) { return __all_sync(CAI_GPU_FULL_MASK, pred); }
__device__ __forceinline__ void gpu_syncwarp() { __syncwarp(); }
