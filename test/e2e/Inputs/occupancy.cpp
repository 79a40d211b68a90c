//===- occupancy.cpp - Theoretical occupancy of kernels on an H100/H200 ---===//
//
// Reads lines "KERNEL REGISTERS SHARED_BYTES THREADS_PER_BLOCK" and prints
// "KERNEL OCCUPANCY": the resident warps per SM over the most an SM holds,
// from NVIDIA's cuda_occupancy.h (the calculator behind
// cudaOccupancyMaxActiveBlocksPerMultiprocessor) for one sm_90 SM (H100 and
// H200 share it: 64K registers, 2048 threads, 228 KiB of shared memory).
// Used by test/e2e/ptxas_check.py; compiled there with the host compiler.
//
//===----------------------------------------------------------------------===//
#include <cuda_occupancy.h>

#include <cstdio>
#include <iostream>
#include <string>

int main() {
  cudaOccDeviceProp device;
  device.computeMajor = 9;
  device.computeMinor = 0;
  device.maxThreadsPerBlock = 1024;
  device.maxThreadsPerMultiprocessor = 2048;
  device.regsPerBlock = 65536;
  device.regsPerMultiprocessor = 65536;
  device.warpSize = 32;
  device.sharedMemPerBlock = 48 * 1024;
  device.sharedMemPerMultiprocessor = 228 * 1024;
  device.sharedMemPerBlockOptin = 227 * 1024;
  device.reservedSharedMemPerBlock = 1024;
  device.numSms = 132;
  std::string name;
  int registers = 0, shared = 0, threads = 0;
  while (std::cin >> name >> registers >> shared >> threads) {
    cudaOccFuncAttributes kernel;
    kernel.maxThreadsPerBlock = threads;
    kernel.numRegs = registers;
    kernel.sharedSizeBytes = shared;
    kernel.partitionedGCConfig = PARTITIONED_GC_OFF;
    kernel.shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT;
    kernel.maxDynamicSharedSizeBytes = 0;
    kernel.numBlockBarriers = 0;
    cudaOccDeviceState state;
    cudaOccResult result;
    if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &device, &kernel,
                                                &state, threads,
                                                0) != CUDA_OCC_SUCCESS) {
      std::fprintf(stderr, "occupancy: cannot compute %s\n", name.c_str());
      return 1;
    }
    int warps = result.activeBlocksPerMultiprocessor * ((threads + 31) / 32);
    std::printf("%s %.4f\n", name.c_str(),
                warps / (device.maxThreadsPerMultiprocessor / 32.0));
  }
  return 0;
}
