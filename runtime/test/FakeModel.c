/* A stand-in for a compiled model: y = x * k, positive = x > 0,
 * total = sum(x), over x: float32[2, 3] and k: int64[]. */
#include <stdint.h>

void tessera_entry(void **args) {
  const float *x = (const float *)args[0];
  const int64_t *k = (const int64_t *)args[1];
  float *y = (float *)args[2];
  uint8_t *positive = (uint8_t *)args[3];
  double *total = (double *)args[4];
  *total = 0;
  for (int i = 0; i < 6; ++i) {
    y[i] = x[i] * (float)*k;
    positive[i] = x[i] > 0;
    *total += x[i];
  }
}
