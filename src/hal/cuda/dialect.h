// The CUDA dialect CAI's GPU kernels are written in: one source for CUDA, HIP (Hygon DCU, AMD), MUSA (Moore Threads),
// MACA (MetaX), CoreX (Iluvatar) and the `simt` CPU emulator. Kernels use only the names listed here; each vendor
// header (vendors/<vendor>.h) maps them onto its runtime. Exactly one of CAI_GPU_CUDA, CAI_GPU_HIP, CAI_GPU_SIMT is
// defined by the build.
//
// Host runtime (same meaning as the CUDA runtime call of the same name after the prefix):
//   gpuError_t, gpuSuccess, gpuErrorMemoryAllocation, gpuErrorNotReady, gpuGetLastError(), gpuGetErrorString(e)
//   gpuStream_t, gpuStreamCreate(&s), gpuStreamDestroy(s), gpuStreamSynchronize(s)
//   gpuEvent_t, gpuEventCreate(&e), gpuEventDestroy(e), gpuEventRecord(e, s), gpuEventSynchronize(e), gpuEventQuery(e)
//   gpuMalloc(&p, n), gpuFree(p), gpuMallocHost(&p, n), gpuFreeHost(p), gpuMemGetInfo(&free, &total)
//   gpuMemcpyAsync(dst, src, n, kind, s) with kind gpuMemcpyHostToDevice / DeviceToHost / DeviceToDevice,
//   gpuMemsetAsync(p, byte, n, s), gpuGetDeviceCount(&n), gpuSetDevice(i),
//   gpuDeviceProp {name, totalGlobalMem, sharedMemPerBlock, multiProcessorCount, warpSize},
//   gpuGetDeviceProperties(&p, i)
// Launch:  GPU_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...);   (kernel may be a template-id)
// Device code:
//   __global__ __device__ __host__ __forceinline__ __shared__ __restrict__ __launch_bounds__(n)
//   threadIdx blockIdx blockDim gridDim (.x .y .z), dim3, __syncthreads(), __threadfence()
//   GPU_DYNAMIC_SHARED(type, name): the block's dynamic shared memory as `type name[]`
//   gpu_warp_size()            lanes per warp: 32 on NVIDIA, 64 on AMD gfx9 / CoreX, 32 or 64 on simt (CAI_SIMT_WARP).
//                              Never assume 32; size per-warp shared arrays with GPU_MAX_WARPS (= 1024 / 32).
//   gpu_lane_id(), gpu_warp_id()   for 1-D blocks
//   gpu_shfl_xor(v, mask), gpu_shfl_down(v, delta), gpu_shfl(v, src_lane)   float / int / unsigned; whole warp
//   gpu_ballot(pred) -> uint64_t, gpu_any(pred), gpu_all(pred), gpu_syncwarp()                     whole warp
//   atomicAdd (float, int, unsigned), atomicMax / atomicMin (int), atomicCAS (int, unsigned), atomicExch
//   expf logf sqrtf rsqrtf fabsf fmaxf fminf sinf cosf powf tanhf floorf __expf, INFINITY
// Half, bfloat16 and fp8 values are read as raw bits (kernels/convert.cuh), so no vendor half type is needed.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(CAI_GPU_CUDA)
#include "hal/cuda/vendors/cuda.h"
#elif defined(CAI_GPU_HIP)
#include "hal/cuda/vendors/hip.h"
#elif defined(CAI_GPU_SIMT)
#include "hal/cuda/vendors/simt.h"
#else
#error "define one of CAI_GPU_CUDA, CAI_GPU_HIP, CAI_GPU_SIMT"
#endif

#define GPU_MAX_WARPS 32  // most warps a block of up to 1024 threads can have (warp size >= 32)

__device__ __forceinline__ int gpu_lane_id() { return static_cast<int>(threadIdx.x) % gpu_warp_size(); }
__device__ __forceinline__ int gpu_warp_id() { return static_cast<int>(threadIdx.x) / gpu_warp_size(); }
