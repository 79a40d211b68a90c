/* A stand-in for a compiled program whose allocations depend on an input:
 * `pattern` picks one of the scripts below, run through the allocation
 * functions compiled code calls. Every block is filled with its own byte
 * when allocated, and every live block is checked before each free, so
 * `intact` is 0 if the runtime ever handed out memory that a live block
 * still held. `addresses` are the blocks' pointers in allocation order. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

void *_mlir_memref_to_llvm_alloc(size_t size);
void _mlir_memref_to_llvm_free(void *ptr);

enum { kBlocks = 6 };

/* Positive: allocate that many bytes (the next block); negative: free block
 * -1 - n; 0 ends. Pattern 1 repeats pattern 0's first three events. */
static const int64_t kScripts[2][2 * kBlocks + 1] = {
    {1000, 3000, -1, 500, 2000, -2, -3, 4000, -4, -5, 0},
    {1000, 3000, -1, -2, 6000, 700, -3, 3000, -4, -5, 0},
};

void tessera_entry(void **args) {
  int64_t pattern = *(const int64_t *)args[0];
  int64_t *intact = (int64_t *)args[1];
  int64_t *addresses = (int64_t *)args[2];
  unsigned char *blocks[kBlocks] = {0};
  size_t sizes[kBlocks] = {0};
  int live[kBlocks] = {0};
  int count = 0;
  *intact = 1;
  memset(addresses, 0, sizeof(int64_t) * kBlocks);
  for (const int64_t *op = kScripts[pattern != 0]; *op; ++op) {
    if (*op > 0) {
      sizes[count] = (size_t)*op;
      blocks[count] = _mlir_memref_to_llvm_alloc(sizes[count]);
      memset(blocks[count], count + 1, sizes[count]);
      addresses[count] = (int64_t)(intptr_t)blocks[count];
      live[count++] = 1;
      continue;
    }
    for (int b = 0; b < count; ++b)
      for (size_t i = 0; live[b] && i < sizes[b]; ++i)
        if (blocks[b][i] != b + 1)
          *intact = 0;
    int block = (int)(-1 - *op);
    _mlir_memref_to_llvm_free(blocks[block]);
    live[block] = 0;
  }
}
