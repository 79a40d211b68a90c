/* A stand-in for a compiled model with zero-element tensors: counts how many
 * of its five buffers are non-null and 64-byte aligned, and copies h. */
#include <stdint.h>

void tessera_entry(void **args) {
  int64_t aligned = 0;
  for (int i = 0; i < 5; ++i)
    aligned += args[i] != 0 && (uintptr_t)args[i] % 64 == 0;
  *(int64_t *)args[2] = aligned;
  const uint16_t *h = (const uint16_t *)args[1];
  uint16_t *copy = (uint16_t *)args[3];
  copy[0] = h[0];
  copy[1] = h[1];
}
