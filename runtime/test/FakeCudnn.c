/* A stand-in for cuDNN 9, built as libcudnn.so.9, for testing the runtime's
 * fused attention plans (runtime/lib/GpuAttention.cpp) on machines without
 * a GPU. It defines the entry points GpuAttention.cpp resolves, with their
 * C signatures, and keeps every backend descriptor and attribute set. When
 * an operation graph is finalized it checks that the graph is exactly the
 * composite SDPA forward or backward the runtime means (the operations,
 * their wiring by tensor, the dims, strides and data types of every tensor,
 * which are virtual and which by value, the causal mask's pieces) and
 * refuses anything else with CUDNN_STATUS_NOT_SUPPORTED, or BAD_PARAM for a
 * malformed descriptor. On execute it computes the attention on the host
 * (with FakeCudart.c "device" memory is host memory) from the variant
 * pack's pointers and the recorded strides: math in float, bf16 and f16
 * read exactly and written rounded to nearest even, P and dS rounded to the
 * I/O type where the graph declares them so (the matmul operands), as
 * cuDNN's kernels do.
 *
 * Its heuristics give two engine configs: the first never makes an
 * execution plan (so the runtime must try the next), the second does. A
 * graph with sq == 24 gets none, so that the tests can see the runtime
 * report a shape cuDNN has no engine for. */
#include "FakeCudnn.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { kSuccess = 0, kBadParam = 2000, kNotSupported = 3000 };
enum { kFloat = 0, kHalf = 2, kInt32 = 4, kBfloat16 = 9, kBoolean = 11 };
enum {
  kAdd = 0,
  kMul = 1,
  kDiv = 6,
  kSub = 9,
  kExp = 13,
  kLog = 15,
  kIdentity = 21,
  kCmpGe = 303,
  kGenIndex = 501,
  kBinarySelect = 601
};
enum { kReduceAdd = 0, kReduceMax = 3, kHeurModeA = 3 };
enum {
  kTypeHandle = 0,
  kTypeDataType = 1,
  kTypeBoolean = 2,
  kTypeInt64 = 3,
  kTypeFloat = 4,
  kTypeVoidPtr = 6,
  kTypeHeurMode = 8,
  kTypePointwiseMode = 14,
  kTypeDescriptor = 15,
  kTypeReductionOperator = 18
};
enum {
  kPointwise = 0,
  kEngineConfig = 3,
  kEngineHeur = 4,
  kPlan = 5,
  kOpPointwise = 13,
  kGraph = 15,
  kPack = 16,
  kTensor = 17,
  kMatmul = 18,
  kOpMatmul = 19,
  kReduction = 21,
  kOpReduction = 22,
  kOpReshape = 31
};
enum {
  aPwMode = 0,
  aPwPrec = 1,
  aPwAxis = 9,
  aHeurMode = 200,
  aHeurGraph = 201,
  aHeurResults = 202,
  aPlanHandle = 400,
  aPlanConfig = 401,
  aPlanWorkspace = 402,
  aOpPwDesc = 750,
  aOpPwX = 751,
  aOpPwB = 752,
  aOpPwY = 753,
  aOpPwAlpha1 = 754,
  aOpPwAlpha2 = 755,
  aOpPwT = 758,
  aGraphHandle = 800,
  aGraphOps = 801,
  aTensorAlignment = 900,
  aTensorType = 901,
  aTensorDims = 902,
  aTensorStrides = 903,
  aTensorUid = 906,
  aTensorVirtual = 907,
  aTensorByValue = 908,
  aPackUids = 1000,
  aPackPointers = 1001,
  aPackWorkspace = 1003,
  aMatmulComp = 1500,
  aOpMatmulA = 1520,
  aOpMatmulB = 1521,
  aOpMatmulC = 1522,
  aOpMatmulDesc = 1523,
  aReductionOp = 1600,
  aReductionComp = 1601,
  aOpReductionX = 1610,
  aOpReductionY = 1611,
  aOpReductionDesc = 1612,
  aOpReshapeX = 2200,
  aOpReshapeY = 2201
};

/* Which attributes each descriptor kind takes, and of which type. */
static const struct {
  int kind, name, type;
} kAttributes[] = {
    {kTensor, aTensorUid, kTypeInt64},
    {kTensor, aTensorType, kTypeDataType},
    {kTensor, aTensorDims, kTypeInt64},
    {kTensor, aTensorStrides, kTypeInt64},
    {kTensor, aTensorAlignment, kTypeInt64},
    {kTensor, aTensorVirtual, kTypeBoolean},
    {kTensor, aTensorByValue, kTypeBoolean},
    {kPointwise, aPwMode, kTypePointwiseMode},
    {kPointwise, aPwPrec, kTypeDataType},
    {kPointwise, aPwAxis, kTypeInt64},
    {kOpPointwise, aOpPwDesc, kTypeDescriptor},
    {kOpPointwise, aOpPwX, kTypeDescriptor},
    {kOpPointwise, aOpPwB, kTypeDescriptor},
    {kOpPointwise, aOpPwY, kTypeDescriptor},
    {kOpPointwise, aOpPwT, kTypeDescriptor},
    {kOpPointwise, aOpPwAlpha1, kTypeFloat},
    {kOpPointwise, aOpPwAlpha2, kTypeFloat},
    {kMatmul, aMatmulComp, kTypeDataType},
    {kOpMatmul, aOpMatmulA, kTypeDescriptor},
    {kOpMatmul, aOpMatmulB, kTypeDescriptor},
    {kOpMatmul, aOpMatmulC, kTypeDescriptor},
    {kOpMatmul, aOpMatmulDesc, kTypeDescriptor},
    {kReduction, aReductionOp, kTypeReductionOperator},
    {kReduction, aReductionComp, kTypeDataType},
    {kOpReduction, aOpReductionX, kTypeDescriptor},
    {kOpReduction, aOpReductionY, kTypeDescriptor},
    {kOpReduction, aOpReductionDesc, kTypeDescriptor},
    {kOpReshape, aOpReshapeX, kTypeDescriptor},
    {kOpReshape, aOpReshapeY, kTypeDescriptor},
    {kGraph, aGraphHandle, kTypeHandle},
    {kGraph, aGraphOps, kTypeDescriptor},
    {kEngineHeur, aHeurMode, kTypeHeurMode},
    {kEngineHeur, aHeurGraph, kTypeDescriptor},
    {kPlan, aPlanHandle, kTypeHandle},
    {kPlan, aPlanConfig, kTypeDescriptor},
    {kPack, aPackUids, kTypeInt64},
    {kPack, aPackPointers, kTypeVoidPtr},
    {kPack, aPackWorkspace, kTypeVoidPtr},
};

enum { kMaxAttributes = 16, kMaxNodes = 64 };

typedef struct {
  int name, type;
  int64_t count;
  void *values;
} Attribute;

typedef FakeCudnnRecord Record;
typedef FakeCudnnTensor Tensor;

/* One SDPA graph as the matcher found it: its tensors by role. */
typedef struct Sdpa Sdpa;

typedef struct Desc {
  int kind, finalized;
  Attribute attributes[kMaxAttributes];
  int attributeCount;
  /* A finalized tensor. */
  Tensor tensor;
  bool isVirtual;
  /* A finalized operation graph. */
  Sdpa *sdpa;
  /* An engine config from the heuristics, or an execution plan. */
  struct Desc *graph;
  int engine;
  int64_t workspaceBytes;
} Desc;

struct Sdpa {
  int backward, causal;
  int64_t b, h, sq, skv, d;
  int io;
  Desc *q, *k, *v, *o, *stats, *scale, *bias, *negativeInfinity;
  Desc *dO, *dQ, *dK, *dV, *softmaxSum, *dQAccumulator, *one;
};

typedef struct {
  void *stream;
} Handle;

static Record last;
static int graphs, live;
static const char *refusal = "";

const Record *fakeCudnnLast(void) { return &last; }
/* Operation graphs finalized: one per plan the runtime made. */
int fakeCudnnGraphs(void) { return graphs; }
/* Descriptors created and not destroyed. */
int fakeCudnnLive(void) { return live; }
/* Why the last refused operation graph is not the SDPA pattern, or "". */
const char *fakeCudnnRefusal(void) { return refusal; }

size_t cudnnGetVersion(void) { return 91900; }

const char *cudnnGetErrorString(int status) {
  switch (status) {
  case kSuccess:
    return "CUDNN_STATUS_SUCCESS";
  case kBadParam:
    return "CUDNN_STATUS_BAD_PARAM";
  case kNotSupported:
    return "CUDNN_STATUS_NOT_SUPPORTED";
  default:
    return "CUDNN_STATUS_INTERNAL_ERROR";
  }
}

int cudnnCreate(Handle **handle) {
  *handle = calloc(1, sizeof(Handle));
  return kSuccess;
}

int cudnnSetStream(Handle *handle, void *stream) {
  handle->stream = stream;
  return kSuccess;
}

int cudnnBackendCreateDescriptor(int kind, Desc **out) {
  switch (kind) {
  case kPointwise:
  case kEngineConfig:
  case kEngineHeur:
  case kPlan:
  case kOpPointwise:
  case kGraph:
  case kPack:
  case kTensor:
  case kMatmul:
  case kOpMatmul:
  case kReduction:
  case kOpReduction:
  case kOpReshape:
    break;
  default:
    return kNotSupported;
  }
  Desc *d = calloc(1, sizeof(Desc));
  d->kind = kind;
  *out = d;
  ++live;
  return kSuccess;
}

int cudnnBackendDestroyDescriptor(Desc *d) {
  if (!d)
    return kBadParam;
  for (int i = 0; i < d->attributeCount; ++i)
    free(d->attributes[i].values);
  free(d->sdpa);
  free(d);
  --live;
  return kSuccess;
}

static size_t elementSize(int type) {
  switch (type) {
  case kTypeBoolean:
    return sizeof(bool);
  case kTypeDataType:
  case kTypeFloat:
  case kTypeHeurMode:
  case kTypePointwiseMode:
  case kTypeReductionOperator:
    return 4;
  default:
    return 8;
  }
}

int cudnnBackendSetAttribute(Desc *d, int name, int type, int64_t count,
                             const void *values) {
  size_t i = 0, n = sizeof(kAttributes) / sizeof(kAttributes[0]);
  while (i < n &&
         (kAttributes[i].kind != d->kind || kAttributes[i].name != name))
    ++i;
  if (i == n || kAttributes[i].type != type || d->finalized || count < 1 ||
      !values)
    return kBadParam;
  Attribute *a = NULL;
  for (int j = 0; j < d->attributeCount; ++j)
    if (d->attributes[j].name == name)
      a = &d->attributes[j];
  if (!a) {
    if (d->attributeCount == kMaxAttributes)
      return kBadParam;
    a = &d->attributes[d->attributeCount++];
    a->name = name;
  } else {
    free(a->values);
  }
  a->type = type;
  a->count = count;
  a->values = malloc(elementSize(type) * count);
  memcpy(a->values, values, elementSize(type) * count);
  return kSuccess;
}

static const Attribute *find(const Desc *d, int name) {
  for (int i = 0; i < d->attributeCount; ++i)
    if (d->attributes[i].name == name)
      return &d->attributes[i];
  return NULL;
}

/* A one-element attribute as an int64 (enums widened), or `fallback`. */
static int64_t number(const Desc *d, int name, int64_t fallback) {
  const Attribute *a = find(d, name);
  if (!a || a->count != 1)
    return fallback;
  if (elementSize(a->type) == 8)
    return *(const int64_t *)a->values;
  if (a->type == kTypeBoolean)
    return *(const bool *)a->values;
  return *(const int32_t *)a->values;
}

/* A one-descriptor attribute, finalized, of `kind`; else NULL. */
static Desc *descriptor(const Desc *d, int name, int kind) {
  const Attribute *a = find(d, name);
  if (!a || a->count != 1)
    return NULL;
  Desc *x = *(Desc *const *)a->values;
  return x && x->finalized && x->kind == kind ? x : NULL;
}

static int finalizeTensor(Desc *d) {
  const Attribute *dims = find(d, aTensorDims),
                  *strides = find(d, aTensorStrides);
  Tensor *t = &d->tensor;
  if (!find(d, aTensorUid) || !find(d, aTensorType) || !dims || !strides ||
      number(d, aTensorAlignment, 0) <= 0)
    return kBadParam;
  if (dims->count != 4 || strides->count != 4)
    return kNotSupported;
  memcpy(t->dims, dims->values, sizeof(t->dims));
  memcpy(t->strides, strides->values, sizeof(t->strides));
  for (int i = 0; i < 4; ++i)
    if (t->dims[i] < 1 || t->strides[i] < 1)
      return kBadParam;
  t->present = 1;
  t->uid = number(d, aTensorUid, 0);
  t->type = (int)number(d, aTensorType, 0);
  t->byValue = (int)number(d, aTensorByValue, 0);
  d->isVirtual = number(d, aTensorVirtual, 0) != 0;
  return t->byValue && d->isVirtual ? kBadParam : kSuccess;
}

/* The ports of an operation: its inputs (in[0] X or A, in[1] B, in[2] T)
 * and its output, with its mode and compute type. */
typedef struct {
  int kind, mode, precision;
  int64_t axis;
  Desc *in[3], *out;
  int used;
} Node;

static int finalizeOperation(Desc *d, Node *n) {
  memset(n, 0, sizeof(*n));
  n->kind = d->kind;
  n->axis = -1;
  if (d->kind == kOpPointwise) {
    Desc *pw = descriptor(d, aOpPwDesc, kPointwise);
    if (!pw)
      return kBadParam;
    n->mode = (int)number(pw, aPwMode, -1);
    n->precision = (int)number(pw, aPwPrec, -1);
    n->axis = number(pw, aPwAxis, -1);
    n->in[0] = descriptor(d, aOpPwX, kTensor);
    n->in[1] = descriptor(d, aOpPwB, kTensor);
    n->in[2] = descriptor(d, aOpPwT, kTensor);
    n->out = descriptor(d, aOpPwY, kTensor);
    const Attribute *alpha[2] = {find(d, aOpPwAlpha1), find(d, aOpPwAlpha2)};
    for (int i = 0; i < 2; ++i)
      if (alpha[i] && *(const float *)alpha[i]->values != 1.0f)
        return kNotSupported;
  } else if (d->kind == kOpMatmul) {
    Desc *mm = descriptor(d, aOpMatmulDesc, kMatmul);
    if (!mm)
      return kBadParam;
    n->precision = (int)number(mm, aMatmulComp, -1);
    n->in[0] = descriptor(d, aOpMatmulA, kTensor);
    n->in[1] = descriptor(d, aOpMatmulB, kTensor);
    n->out = descriptor(d, aOpMatmulC, kTensor);
    if (!n->in[1])
      return kBadParam;
  } else if (d->kind == kOpReduction) {
    Desc *red = descriptor(d, aOpReductionDesc, kReduction);
    if (!red)
      return kBadParam;
    n->mode = (int)number(red, aReductionOp, -1);
    n->precision = (int)number(red, aReductionComp, -1);
    n->in[0] = descriptor(d, aOpReductionX, kTensor);
    n->out = descriptor(d, aOpReductionY, kTensor);
  } else {
    n->in[0] = descriptor(d, aOpReshapeX, kTensor);
    n->out = descriptor(d, aOpReshapeY, kTensor);
  }
  return n->in[0] && n->out ? kSuccess : kBadParam;
}

/*===-- The SDPA pattern
 * ---------------------------------------------------===*/

typedef struct {
  Node nodes[kMaxNodes];
  int count;
  const char *why;
} Match;

#define REQUIRE(condition, reason)                                             \
  do {                                                                         \
    if (!(condition)) {                                                        \
      m->why = reason;                                                         \
      return 0;                                                                \
    }                                                                          \
  } while (0)

static int same(const Desc *a, const Desc *b) {
  return a && b && a->tensor.uid == b->tensor.uid;
}

/* The unused operation of `kind` (and pointwise or reduction `mode`) that
 * writes `y` (or, with `reads`, whose first input is `y`), marked used. */
static Node *take(Match *m, const Desc *y, int kind, int mode, int reads) {
  for (int i = 0; i < m->count; ++i) {
    Node *n = &m->nodes[i];
    if (n->used || !same(reads ? n->in[0] : n->out, y))
      continue;
    if (n->kind != kind ||
        ((kind == kOpPointwise || kind == kOpReduction) && n->mode != mode))
      return NULL;
    n->used = 1;
    return n;
  }
  return NULL;
}

static Node *producer(Match *m, const Desc *y, int kind, int mode) {
  return take(m, y, kind, mode, 0);
}

static Node *consumer(Match *m, const Desc *x, int kind, int mode) {
  return take(m, x, kind, mode, 1);
}

/* Whether an unused pointwise operation of `mode` writes `y`. */
static int writtenBy(const Match *m, const Desc *y, int mode) {
  for (int i = 0; i < m->count; ++i)
    if (!m->nodes[i].used && same(m->nodes[i].out, y))
      return m->nodes[i].kind == kOpPointwise && m->nodes[i].mode == mode;
  return 0;
}

/* Through the causal mask, when `y` is one: binary_select(x, -inf, r >= c)
 * with r, c the row and column indices of x. Returns x (or y), or NULL. */
static Desc *matchMask(Match *m, Sdpa *s, Desc *y) {
  if (!writtenBy(m, y, kBinarySelect))
    return y;
  Node *select = producer(m, y, kOpPointwise, kBinarySelect);
  Desc *x = select->in[0];
  Node *keep = producer(m, select->in[2], kOpPointwise, kCmpGe);
  if (!keep || !select->in[1]) {
    m->why = "the mask is not binary_select(scores, -inf, row >= column)";
    return NULL;
  }
  Node *row = producer(m, keep->in[0], kOpPointwise, kGenIndex);
  Node *column = producer(m, keep->in[1], kOpPointwise, kGenIndex);
  if (!row || !column || row->axis != 2 || column->axis != 3 ||
      !same(row->in[0], x) || !same(column->in[0], x)) {
    m->why = "the mask does not compare gen_index(scores, 2) >= "
             "gen_index(scores, 3)";
    return NULL;
  }
  s->causal = 1;
  s->negativeInfinity = select->in[1];
  return x;
}

/* matmul(Q, Kᵀ) · scale (+ bias) = y. */
static int matchScores(Match *m, Sdpa *s, Desc *y) {
  if (writtenBy(m, y, kAdd)) {
    Node *add = producer(m, y, kOpPointwise, kAdd);
    s->bias = add->in[1];
    y = add->in[0];
  }
  Node *scaled = producer(m, y, kOpPointwise, kMul);
  REQUIRE(scaled && scaled->in[1], "the scores are not scaled by a tensor");
  Node *product = producer(m, scaled->in[0], kOpMatmul, 0);
  REQUIRE(product, "the scores are not matmul(Q, K^T)");
  REQUIRE(!s->scale || same(s->scale, scaled->in[1]),
          "the scores and dS are scaled by different tensors");
  REQUIRE(!s->k || same(s->k, product->in[1]),
          "dQ reads another K than the scores");
  s->scale = scaled->in[1];
  s->q = product->in[0];
  s->k = product->in[1];
  return 1;
}

/* O = matmul(exp(S - max S) / sum, V), stats = max S + log(sum). */
static int matchForward(Match *m, Sdpa *s) {
  Node *second = NULL;
  for (int i = 0; i < m->count; ++i)
    if (m->nodes[i].kind == kOpMatmul && m->nodes[i].in[0]->isVirtual)
      second = &m->nodes[i];
  REQUIRE(second, "no matmul of the probabilities by V");
  second->used = 1;
  s->o = second->out;
  s->v = second->in[1];
  Node *div = producer(m, second->in[0], kOpPointwise, kDiv);
  REQUIRE(div && div->in[1], "P is not exp / sum");
  Node *sum = producer(m, div->in[1], kOpReduction, kReduceAdd);
  Node *exp = producer(m, div->in[0], kOpPointwise, kExp);
  REQUIRE(sum && exp && same(sum->in[0], div->in[0]),
          "the sum is not of exp(S - max)");
  Node *sub = producer(m, exp->in[0], kOpPointwise, kSub);
  REQUIRE(sub && sub->in[1], "exp does not read S - max");
  Node *max = producer(m, sub->in[1], kOpReduction, kReduceMax);
  REQUIRE(max && same(max->in[0], sub->in[0]), "S - max is not of max S");
  Desc *scores = matchMask(m, s, sub->in[0]);
  if (!scores || !matchScores(m, s, scores))
    return 0;
  Node *stats = consumer(m, max->out, kOpPointwise, kAdd);
  if (stats) {
    Node *log = producer(m, stats->in[1], kOpPointwise, kLog);
    REQUIRE(log && same(log->in[0], sum->out), "stats is not max + log(sum)");
    s->stats = stats->out;
  }
  return 1;
}

/* The backward graph of GpuAttention.cpp's file comment. */
static int matchBackward(Match *m, Sdpa *s) {
  Node *identity = NULL;
  for (int i = 0; i < m->count; ++i)
    if (m->nodes[i].kind == kOpPointwise && m->nodes[i].mode == kIdentity)
      identity = &m->nodes[i];
  REQUIRE(identity, "no dQ = identity(accumulator)");
  identity->used = 1;
  s->dQ = identity->out;
  s->dQAccumulator = identity->in[0];
  Node *dq = producer(m, s->dQAccumulator, kOpMatmul, 0);
  REQUIRE(dq, "the dQ accumulator is not matmul(dS, K)");
  Node *k = producer(m, dq->in[1], kOpReshape, 0);
  REQUIRE(k, "dQ's K is not a reshape of K^T");
  s->k = k->in[0];
  Desc *dS = dq->in[0];
  Node *scaled = producer(m, dS, kOpPointwise, kMul);
  REQUIRE(scaled && scaled->in[1], "dS is not scaled");
  s->scale = scaled->in[1];
  Node *byP = producer(m, scaled->in[0], kOpPointwise, kMul);
  REQUIRE(byP && byP->in[1], "dS is not (dP - D) * P");
  Desc *p = byP->in[1];
  Node *centered = producer(m, byP->in[0], kOpPointwise, kSub);
  REQUIRE(centered && centered->in[1], "dS is not (dP - D) * P");
  s->softmaxSum = centered->in[1];
  Node *dP = producer(m, centered->in[0], kOpMatmul, 0);
  REQUIRE(dP, "dP is not matmul(dO, V^T)");
  s->dO = dP->in[0];
  s->v = dP->in[1];
  Node *one = producer(m, s->softmaxSum, kOpPointwise, kMul);
  REQUIRE(one && one->in[1], "D is not rowsum(dO * O) * 1");
  s->one = one->in[1];
  Node *rows = producer(m, one->in[0], kOpReduction, kReduceAdd);
  Node *products = rows ? producer(m, rows->in[0], kOpPointwise, kMul) : NULL;
  REQUIRE(products && same(products->in[0], s->dO) && products->in[1],
          "D is not rowsum(dO * O) * 1");
  s->o = products->in[1];
  Node *exp = producer(m, p, kOpPointwise, kExp);
  REQUIRE(exp, "P is not exp(S - stats)");
  Desc *shifted = matchMask(m, s, exp->in[0]);
  if (!shifted)
    return 0;
  Node *stats = producer(m, shifted, kOpPointwise, kSub);
  REQUIRE(stats && stats->in[1], "P is not exp(S - stats)");
  s->stats = stats->in[1];
  if (!matchScores(m, s, stats->in[0]))
    return 0;
  Node *pT = consumer(m, p, kOpReshape, 0);
  Node *dV = pT ? consumer(m, pT->out, kOpMatmul, 0) : NULL;
  REQUIRE(dV && same(dV->in[1], s->dO), "dV is not matmul(reshape(P), dO)");
  s->dV = dV->out;
  Node *dST = consumer(m, dS, kOpReshape, 0);
  Node *dK = dST ? consumer(m, dST->out, kOpMatmul, 0) : NULL;
  REQUIRE(dK && same(dK->in[1], s->q), "dK is not matmul(reshape(dS), Q)");
  s->dK = dK->out;
  return 1;
}

/*===-- The tensors of a matched graph
 * -------------------------------------===*/

static int dimsAre(const Desc *t, int64_t d0, int64_t d1, int64_t d2,
                   int64_t d3) {
  const int64_t *d = t->tensor.dims;
  return d[0] == d0 && d[1] == d1 && d[2] == d2 && d[3] == d3;
}

static int stridesAre(const Desc *t, int64_t s0, int64_t s1, int64_t s2,
                      int64_t s3) {
  const int64_t *s = t->tensor.strides;
  return s[0] == s0 && s[1] == s1 && s[2] == s2 && s[3] == s3;
}

/* Whether the strides are those of a dense buffer in some order of the
 * dims: each (of a dim longer than 1) the product of the sizes of the dims
 * inside it. */
static int isDense(const Desc *t) {
  const int64_t *dims = t->tensor.dims, *strides = t->tensor.strides;
  int done[4] = {0, 0, 0, 0};
  int64_t expected = 1;
  for (int step = 0; step < 4; ++step) {
    int next = -1;
    for (int i = 0; i < 4; ++i)
      if (!done[i] && dims[i] > 1 && (next < 0 || strides[i] < strides[next]))
        next = i;
    if (next < 0)
      return 1;
    if (strides[next] != expected)
      return 0;
    done[next] = 1;
    expected *= dims[next];
  }
  return 1;
}

/* A non-virtual tensor of `type`, stored (by value: not). */
static int isData(const Desc *t, int type, int byValue) {
  return t && !t->isVirtual && t->tensor.type == type &&
         t->tensor.byValue == byValue;
}

static int isScalar(const Desc *t, int byValue) {
  return isData(t, kFloat, byValue) && dimsAre(t, 1, 1, 1, 1);
}

/* Checks the non-virtual tensors the pattern names, and reads the sizes. */
static int checkOperands(Match *m, Sdpa *s) {
  int64_t b, h, sq, skv, d;
  REQUIRE(s->q &&
              (s->q->tensor.type == kBfloat16 || s->q->tensor.type == kHalf),
          "Q is not bf16 or f16");
  s->io = s->q->tensor.type;
  b = s->b = s->q->tensor.dims[0], h = s->h = s->q->tensor.dims[1];
  sq = s->sq = s->q->tensor.dims[2], d = s->d = s->q->tensor.dims[3];
  skv = s->skv = s->k->tensor.dims[3];
  REQUIRE(isData(s->q, s->io, 0) && isDense(s->q), "Q is not dense data");
  REQUIRE(isData(s->k, s->io, 0) && dimsAre(s->k, b, h, d, skv) &&
              isDense(s->k),
          "K^T is not dense [b, h, d, skv] data");
  REQUIRE(isData(s->v, s->io, 0) && isDense(s->v) &&
              (s->backward ? dimsAre(s->v, b, h, d, skv)
                           : dimsAre(s->v, b, h, skv, d)),
          "V is not dense [b, h, skv, d] data (V^T in the backward)");
  REQUIRE(isData(s->o, s->io, 0) && dimsAre(s->o, b, h, sq, d) && isDense(s->o),
          "O is not dense [b, h, sq, d] data");
  REQUIRE(isScalar(s->scale, 0), "the scale is not one f32 in device memory");
  REQUIRE(!s->causal || isScalar(s->negativeInfinity, 1),
          "the mask value is not one f32 by value");
  if (s->bias) {
    const int64_t *bd = s->bias->tensor.dims;
    REQUIRE(isData(s->bias, s->io, 0) && (bd[0] == b || bd[0] == 1) &&
                (bd[1] == h || bd[1] == 1) && bd[2] == sq && bd[3] == skv &&
                stridesAre(s->bias, bd[1] * sq * skv, sq * skv, skv, 1),
            "the bias is not dense [b or 1, h or 1, sq, skv] data");
  }
  if (s->stats)
    REQUIRE(isData(s->stats, kFloat, 0) && dimsAre(s->stats, b, h, sq, 1) &&
                stridesAre(s->stats, h * sq, sq, 1, 1),
            "stats is not contiguous f32 [b, h, sq, 1]");
  if (!s->backward)
    return 1;
  REQUIRE(s->stats, "the backward has no stats");
  REQUIRE(isData(s->dO, s->io, 0) && dimsAre(s->dO, b, h, sq, d) &&
              isDense(s->dO) && isData(s->dQ, s->io, 0) &&
              dimsAre(s->dQ, b, h, sq, d) && isDense(s->dQ),
          "dO or dQ is not dense [b, h, sq, d] data");
  REQUIRE(isData(s->dK, s->io, 0) && dimsAre(s->dK, b, h, skv, d) &&
              isDense(s->dK) && isData(s->dV, s->io, 0) &&
              dimsAre(s->dV, b, h, skv, d) && isDense(s->dV),
          "dK or dV is not dense [b, h, skv, d] data");
  REQUIRE(isData(s->softmaxSum, kFloat, 0) &&
              dimsAre(s->softmaxSum, b, h, sq, 1) &&
              stridesAre(s->softmaxSum, h * sq, sq, 1, 1),
          "the softmax sum is not contiguous f32 [b, h, sq, 1]");
  REQUIRE(isData(s->dQAccumulator, kFloat, 0) &&
              dimsAre(s->dQAccumulator, b, h, sq, d) &&
              stridesAre(s->dQAccumulator, h * sq * d, sq * d, d, 1),
          "the dQ accumulator is not contiguous f32 [b, h, sq, d]");
  REQUIRE(isScalar(s->one, 1), "D's factor is not one f32 by value");
  return 1;
}

/* Whether `t` is one of the tensors the pattern names. */
static int named(const Sdpa *s, const Desc *t) {
  const Desc *all[] = {s->q,          s->k,
                       s->v,          s->o,
                       s->stats,      s->scale,
                       s->bias,       s->negativeInfinity,
                       s->dO,         s->dQ,
                       s->dK,         s->dV,
                       s->softmaxSum, s->dQAccumulator,
                       s->one};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i)
    if (same(all[i], t))
      return 1;
  return 0;
}

/* The data type an operation's virtual output must have. */
static int virtualType(const Node *n, int io) {
  if (n->kind == kOpPointwise && n->mode == kGenIndex)
    return kInt32;
  if (n->kind == kOpPointwise && n->mode == kCmpGe)
    return kBoolean;
  if (n->kind == kOpReshape || (n->kind == kOpPointwise && n->mode == kDiv))
    return io;
  return kFloat;
}

/* Shapes, types and compute types of every operation. */
static int checkOperations(Match *m, const Sdpa *s) {
  for (int i = 0; i < m->count; ++i) {
    const Node *n = &m->nodes[i];
    const int64_t *x = n->in[0]->tensor.dims, *y = n->out->tensor.dims;
    REQUIRE(n->used, "an operation the SDPA pattern has no place for");
    for (int j = 0; j < 3; ++j)
      REQUIRE(!n->in[j] || n->in[j]->isVirtual || named(s, n->in[j]),
              "a non-virtual tensor the pattern has no place for");
    REQUIRE(!n->out->isVirtual || n->out->tensor.type == virtualType(n, s->io),
            "a virtual tensor of the wrong data type");
    REQUIRE(!n->out->isVirtual || n->kind == kOpReshape ||
                stridesAre(n->out, y[1] * y[2] * y[3], y[2] * y[3], y[3], 1),
            "a virtual tensor that is not dense");
    if (n->kind == kOpMatmul) {
      const int64_t *b = n->in[1]->tensor.dims;
      REQUIRE(n->precision == kFloat, "a matmul not computed in f32");
      REQUIRE(x[0] == b[0] && x[1] == b[1] && y[0] == x[0] && y[1] == x[1] &&
                  x[3] == b[2] && y[2] == x[2] && y[3] == b[3],
              "a matmul of mismatched dims");
    } else if (n->kind == kOpReshape) {
      REQUIRE(x[0] == y[0] && x[1] == y[1] && x[2] == y[3] && x[3] == y[2],
              "a reshape that is not a transpose of the last two dims");
    } else {
      int precision = n->mode == kGenIndex ? kInt32
                      : n->mode == kCmpGe  ? kBoolean
                                           : kFloat;
      REQUIRE(n->precision == precision,
              "an operation of the wrong compute type");
      for (int j = 0; j < 4; ++j)
        REQUIRE(n->kind == kOpReduction ? y[j] == x[j] || y[j] == 1
                                        : y[j] == x[j],
                "an operation whose output has other dims than its input");
      for (int j = 1; j < 3; ++j)
        for (int k = 0; n->in[j] && k < 4; ++k)
          REQUIRE(n->in[j]->tensor.dims[k] == x[k] ||
                      n->in[j]->tensor.dims[k] == 1,
                  "an operand that does not broadcast");
    }
  }
  return 1;
}

/* Two tensor descriptors with one uid must be one tensor. */
static int checkUids(Match *m) {
  for (int i = 0; i < m->count; ++i)
    for (int j = 0; j < 4; ++j) {
      const Desc *a = j < 3 ? m->nodes[i].in[j] : m->nodes[i].out;
      for (int k = 0; a && k < m->count; ++k)
        for (int l = 0; l < 4; ++l) {
          const Desc *b = l < 3 ? m->nodes[k].in[l] : m->nodes[k].out;
          REQUIRE(!b || a == b || a->tensor.uid != b->tensor.uid,
                  "two tensors with one uid");
        }
    }
  return 1;
}

static int finalizeGraph(Desc *d) {
  const Attribute *ops = find(d, aGraphOps);
  if (!find(d, aGraphHandle) || !ops || ops->count > kMaxNodes)
    return kBadParam;
  Match match = {.count = (int)ops->count, .why = ""};
  Match *m = &match;
  int reshapes = 0;
  for (int i = 0; i < m->count; ++i) {
    Desc *op = ((Desc **)ops->values)[i];
    if (!op || !op->finalized)
      return kBadParam;
    if (finalizeOperation(op, &m->nodes[i]) != kSuccess)
      return kBadParam;
    reshapes += op->kind == kOpReshape;
  }
  Sdpa *s = calloc(1, sizeof(Sdpa));
  s->backward = reshapes > 0;
  int matched = checkUids(m) &&
                (s->backward ? matchBackward(m, s) : matchForward(m, s)) &&
                checkOperands(m, s) && checkOperations(m, s);
  refusal = matched ? "" : m->why;
  if (!matched) {
    free(s);
    return kNotSupported;
  }
  d->sdpa = s;
  ++graphs;
  return kSuccess;
}

static int finalizePlan(Desc *d) {
  Desc *config = descriptor(d, aPlanConfig, kEngineConfig);
  if (!find(d, aPlanHandle) || !config || !config->graph)
    return kBadParam;
  if (config->engine == 0)
    return kNotSupported;
  const Sdpa *s = config->graph->sdpa;
  d->graph = config->graph;
  d->engine = config->engine;
  d->workspaceBytes =
      s->backward ? s->b * s->h * s->sq * s->skv * 4 : s->b * s->h * s->sq * 8;
  return kSuccess;
}

static int finalizePack(Desc *d) {
  const Attribute *uids = find(d, aPackUids),
                  *pointers = find(d, aPackPointers);
  if (!uids || !pointers || uids->count != pointers->count ||
      !find(d, aPackWorkspace))
    return kBadParam;
  return kSuccess;
}

int cudnnBackendFinalize(Desc *d) {
  int status = kSuccess;
  if (!d || d->finalized)
    return kBadParam;
  switch (d->kind) {
  case kTensor:
    status = finalizeTensor(d);
    break;
  case kPointwise:
    if (number(d, aPwMode, -1) < 0 || number(d, aPwPrec, -1) < 0 ||
        (number(d, aPwMode, -1) == kGenIndex && number(d, aPwAxis, -1) < 0))
      status = kBadParam;
    break;
  case kMatmul:
    status = find(d, aMatmulComp) ? kSuccess : kBadParam;
    break;
  case kReduction:
    status =
        find(d, aReductionOp) && find(d, aReductionComp) ? kSuccess : kBadParam;
    break;
  case kOpPointwise:
  case kOpMatmul:
  case kOpReduction:
  case kOpReshape: {
    Node node;
    status = finalizeOperation(d, &node);
    break;
  }
  case kGraph:
    status = finalizeGraph(d);
    break;
  case kEngineHeur:
    status = !descriptor(d, aHeurGraph, kGraph)       ? kBadParam
             : number(d, aHeurMode, -1) != kHeurModeA ? kNotSupported
                                                      : kSuccess;
    break;
  case kPlan:
    status = finalizePlan(d);
    break;
  case kPack:
    status = finalizePack(d);
    break;
  default: /* engine configs come finalized from the heuristics */
    status = kBadParam;
  }
  d->finalized = status == kSuccess;
  return status;
}

int cudnnBackendGetAttribute(const Desc *d, int name, int type,
                             int64_t capacity, int64_t *count, void *values) {
  if (!d || !d->finalized || !count)
    return kBadParam;
  if (d->kind == kPlan && name == aPlanWorkspace && type == kTypeInt64 &&
      capacity >= 1) {
    *count = 1;
    memcpy(values, &d->workspaceBytes, sizeof(int64_t));
    return kSuccess;
  }
  if (d->kind != kEngineHeur || name != aHeurResults || type != kTypeDescriptor)
    return kNotSupported;
  Desc *graph = descriptor(d, aHeurGraph, kGraph);
  int64_t engines = graph->sdpa->sq == 24 ? 0 : 2;
  if (capacity == 0) {
    *count = engines;
    return kSuccess;
  }
  *count = capacity < engines ? capacity : engines;
  for (int64_t i = 0; i < *count; ++i) {
    Desc *config = ((Desc **)values)[i];
    if (!config || config->kind != kEngineConfig)
      return kBadParam;
    config->graph = graph;
    config->engine = (int)i;
    config->finalized = 1;
  }
  return kSuccess;
}

/*===-- Execution
 * ----------------------------------------------------------===*/

static float fromBits(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

static uint32_t toBits(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  return bits;
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f,
           mantissa = h & 0x3ff;
  if (exponent == 0x1f)
    return fromBits(sign | 0x7f800000 | (mantissa << 13));
  if (exponent != 0)
    return fromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  /* Zero or a subnormal: mantissa * 2^-24. */
  return (sign ? -1.0f : 1.0f) * ldexpf((float)mantissa, -24);
}

/* Round to nearest, ties to even; overflow to infinity. */
static uint16_t floatToHalf(float f) {
  uint32_t bits = toBits(f), magnitude = bits & 0x7fffffff;
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
  if (magnitude > 0x7f800000)
    return sign | 0x7e00;
  if (magnitude >= 0x477ff000)
    return sign | 0x7c00;
  if (magnitude < 0x38800000) { /* A subnormal: round |f| * 2^24. */
    float scaled = ldexpf(fromBits(magnitude), 24);
    return sign | (uint16_t)nearbyintf(scaled);
  }
  uint32_t half = (magnitude >> 13) - (112u << 10), rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return sign | (uint16_t)half;
}

static uint16_t floatToBfloat16(float f) {
  uint32_t bits = toBits(f);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return (uint16_t)((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return (uint16_t)(bits >> 16);
}

/* `value` rounded to the I/O type `io`. */
static float roundTo(int io, float value) {
  return io == kBfloat16 ? fromBits((uint32_t)floatToBfloat16(value) << 16)
                         : halfToFloat(floatToHalf(value));
}

/* Element (i0, i1, i2, i3) of `t`'s buffer, by its recorded strides (a dim
 * of size 1 broadcasts). */
static int64_t offset(const Tensor *t, int64_t i0, int64_t i1, int64_t i2,
                      int64_t i3) {
  int64_t index[4] = {i0, i1, i2, i3}, at = 0;
  for (int i = 0; i < 4; ++i)
    at += (t->dims[i] == 1 ? 0 : index[i]) * t->strides[i];
  return at;
}

static float load(const Tensor *t, int64_t i0, int64_t i1, int64_t i2,
                  int64_t i3) {
  int64_t at = offset(t, i0, i1, i2, i3);
  if (t->type == kFloat)
    return ((const float *)t->data)[at];
  uint16_t bits = ((const uint16_t *)t->data)[at];
  return t->type == kBfloat16 ? fromBits((uint32_t)bits << 16)
                              : halfToFloat(bits);
}

static void store(const Tensor *t, int64_t i0, int64_t i1, int64_t i2,
                  int64_t i3, float value) {
  int64_t at = offset(t, i0, i1, i2, i3);
  if (t->type == kFloat)
    ((float *)t->data)[at] = value;
  else
    ((uint16_t *)t->data)[at] =
        t->type == kBfloat16 ? floatToBfloat16(value) : floatToHalf(value);
}

/* scale · q_i·k_j + bias_ij, masked: the score the graphs start from. */
static float score(const Record *r, int64_t b, int64_t h, int64_t i,
                   int64_t j) {
  if (r->causal && j > i)
    return r->negativeInfinityValue;
  float dot = 0.0f;
  for (int64_t k = 0; k < r->d; ++k)
    dot += load(&r->q, b, h, i, k) * load(&r->k, b, h, k, j);
  float s = dot * *(const float *)r->scale.data;
  return r->bias.present ? s + load(&r->bias, b, h, i, j) : s;
}

static void forward(const Record *r, int io, float *p) {
  for (int64_t b = 0; b < r->b; ++b)
    for (int64_t h = 0; h < r->h; ++h)
      for (int64_t i = 0; i < r->sq; ++i) {
        float max = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < r->skv; ++j) {
          p[j] = score(r, b, h, i, j);
          max = p[j] > max ? p[j] : max;
        }
        for (int64_t j = 0; j < r->skv; ++j)
          sum += p[j] = expf(p[j] - max);
        for (int64_t j = 0; j < r->skv; ++j)
          p[j] = roundTo(io, p[j] / sum);
        for (int64_t k = 0; k < r->d; ++k) {
          float o = 0.0f;
          for (int64_t j = 0; j < r->skv; ++j)
            o += p[j] * load(&r->v, b, h, j, k);
          store(&r->o, b, h, i, k, o);
        }
        if (r->stats.present)
          store(&r->stats, b, h, i, 0, max + logf(sum));
      }
}

/* One head's dV, dK and dQ from its P and dS (sq x skv, float). */
static void gradients(const Record *r, int io, int64_t b, int64_t h,
                      const float *p, const float *dS) {
  for (int64_t j = 0; j < r->skv; ++j)
    for (int64_t k = 0; k < r->d; ++k) {
      float dv = 0.0f, dk = 0.0f;
      for (int64_t i = 0; i < r->sq; ++i) {
        dv += roundTo(io, p[i * r->skv + j]) * load(&r->dO, b, h, i, k);
        dk += roundTo(io, dS[i * r->skv + j]) * load(&r->q, b, h, i, k);
      }
      store(&r->dV, b, h, j, k, dv);
      store(&r->dK, b, h, j, k, dk);
    }
  for (int64_t i = 0; i < r->sq; ++i)
    for (int64_t k = 0; k < r->d; ++k) {
      float dq = 0.0f;
      for (int64_t j = 0; j < r->skv; ++j)
        dq += dS[i * r->skv + j] * load(&r->k, b, h, k, j);
      store(&r->dQAccumulator, b, h, i, k, dq);
      store(&r->dQ, b, h, i, k, load(&r->dQAccumulator, b, h, i, k));
    }
}

static void backward(const Record *r, int io, float *p, float *dS) {
  float scale = *(const float *)r->scale.data;
  for (int64_t b = 0; b < r->b; ++b)
    for (int64_t h = 0; h < r->h; ++h) {
      for (int64_t i = 0; i < r->sq; ++i) {
        float sum = 0.0f;
        for (int64_t k = 0; k < r->d; ++k)
          sum += load(&r->dO, b, h, i, k) * load(&r->o, b, h, i, k);
        store(&r->softmaxSum, b, h, i, 0, sum * r->oneValue);
        float rowSum = load(&r->softmaxSum, b, h, i, 0),
              stats = load(&r->stats, b, h, i, 0);
        for (int64_t j = 0; j < r->skv; ++j) {
          float s = r->causal && j > i ? r->negativeInfinityValue
                                       : score(r, b, h, i, j) - stats;
          float dP = 0.0f;
          for (int64_t k = 0; k < r->d; ++k)
            dP += load(&r->dO, b, h, i, k) * load(&r->v, b, h, k, j);
          p[i * r->skv + j] = expf(s);
          dS[i * r->skv + j] = (dP - rowSum) * p[i * r->skv + j] * scale;
        }
      }
      gradients(r, io, b, h, p, dS);
    }
}

/* `t`'s descriptor in the record, with the pointer the pack gives its uid;
 * 0 if a non-virtual tensor has none. */
static int bind(const Desc *pack, const Desc *t, Tensor *out) {
  const Attribute *uids = find(pack, aPackUids),
                  *pointers = find(pack, aPackPointers);
  memset(out, 0, sizeof(*out));
  if (!t)
    return 1;
  *out = t->tensor;
  for (int64_t i = 0; i < uids->count; ++i)
    if (((const int64_t *)uids->values)[i] == t->tensor.uid)
      out->data = ((void *const *)pointers->values)[i];
  return out->data != NULL;
}

int cudnnBackendExecute(Handle *handle, const Desc *plan, const Desc *pack) {
  if (!handle || !plan || plan->kind != kPlan || !plan->finalized || !pack ||
      pack->kind != kPack || !pack->finalized)
    return kBadParam;
  const Sdpa *s = plan->graph->sdpa;
  void *workspace = *(void *const *)find(pack, aPackWorkspace)->values;
  if (plan->workspaceBytes > 0 && !workspace)
    return kBadParam;
  Record r;
  memset(&r, 0, sizeof(r));
  int bound = bind(pack, s->q, &r.q) && bind(pack, s->k, &r.k) &&
              bind(pack, s->v, &r.v) && bind(pack, s->o, &r.o) &&
              bind(pack, s->stats, &r.stats) &&
              bind(pack, s->scale, &r.scale) && bind(pack, s->bias, &r.bias) &&
              bind(pack, s->negativeInfinity, &r.negativeInfinity) &&
              bind(pack, s->dO, &r.dO) && bind(pack, s->dQ, &r.dQ) &&
              bind(pack, s->dK, &r.dK) && bind(pack, s->dV, &r.dV) &&
              bind(pack, s->softmaxSum, &r.softmaxSum) &&
              bind(pack, s->dQAccumulator, &r.dQAccumulator) &&
              bind(pack, s->one, &r.one);
  if (!bound)
    return kBadParam;
  r.executes = last.executes + 1;
  r.backward = s->backward, r.causal = s->causal;
  r.b = s->b, r.h = s->h, r.sq = s->sq, r.skv = s->skv, r.d = s->d;
  r.negativeInfinityValue =
      r.negativeInfinity.present ? *(const float *)r.negativeInfinity.data : 0;
  r.oneValue = r.one.present ? *(const float *)r.one.data : 0;
  r.engine = plan->engine;
  r.workspace = workspace;
  r.workspaceBytes = plan->workspaceBytes;
  r.stream = handle->stream;
  last = r;
  /* cuDNN may use all of the workspace it asked for. */
  memset(workspace, 0xee, (size_t)plan->workspaceBytes);
  float *p = malloc(sizeof(float) * (size_t)(r.sq * r.skv));
  float *dS = malloc(sizeof(float) * (size_t)(r.sq * r.skv));
  if (s->backward)
    backward(&r, s->io, p, dS);
  else
    forward(&r, s->io, p);
  free(p);
  free(dS);
  return kSuccess;
}
