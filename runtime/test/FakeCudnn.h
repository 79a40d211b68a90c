/* What FakeCudnn.c records, shared with the tests that read it
 * (GpuAttentionTest.cpp): each tensor of the last executed SDPA graph as its
 * descriptor set it, with the data pointer the variant pack gave its uid,
 * and what else the last cudnnBackendExecute saw. */
#ifndef TESSERA_RUNTIME_TEST_FAKECUDNN_H
#define TESSERA_RUNTIME_TEST_FAKECUDNN_H

#include <stdint.h>

typedef struct {
  int present; /* 0: the graph has no such tensor */
  int64_t uid;
  int type; /* CUDNN_DATA_* */
  int byValue;
  int64_t dims[4], strides[4];
  void *data;
} FakeCudnnTensor;

typedef struct {
  int executes; /* cudnnBackendExecute calls that ran so far */
  int backward, causal;
  int64_t b, h, sq, skv, d;
  /* k is Kᵀ ([b, h, d, skv]) as the graph holds it; v is Vᵀ in the
   * backward. */
  FakeCudnnTensor q, k, v, o, stats, scale, bias, negativeInfinity;
  FakeCudnnTensor dO, dQ, dK, dV, softmaxSum, dQAccumulator, one;
  float negativeInfinityValue, oneValue;
  int engine; /* the heuristics' result the plan was made from */
  void *workspace;
  int64_t workspaceBytes; /* what the plan asked for */
  void *stream;
} FakeCudnnRecord;

#endif /* TESSERA_RUNTIME_TEST_FAKECUDNN_H */
