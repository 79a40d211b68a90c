/* A stand-in for a compiled language-model training step over a batch of 2
 * windows of 3 tokens: its loss, bias + sum(tokens) + 1000 * sum(targets),
 * shows exactly which windows a step saw, and each step adds 0.5 to bias. */
#include <stdint.h>

enum { kWindows = 2, kTokens = 3 };

void tessera_entry(void **args) {
  const float *bias = (const float *)args[0];
  const int32_t *tokens = (const int32_t *)args[1];
  const int64_t *targets = (const int64_t *)args[2];
  float *loss = (float *)args[3];
  float *biasNext = (float *)args[4];
  int64_t sumTokens = 0, sumTargets = 0;
  for (int i = 0; i < kWindows * kTokens; ++i) {
    sumTokens += tokens[i];
    sumTargets += targets[i];
  }
  *loss = *bias + (float)sumTokens + 1000.0f * (float)sumTargets;
  *biasNext = *bias + 0.5f;
}
