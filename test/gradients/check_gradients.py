#!/usr/bin/env python3
"""Finite-difference check of Tessera's gradients, op by op and on models.

For every ONNX op that imports to a differentiable tsr op, a float64 model is
built with onnx.helper (opset 17, IR version 8; Mish needs 18, Gelu 20) holding
several cases of the op (shapes, attributes, broadcasting), each reduced to
ReduceSum(op(x...) * R) with R a random Constant so that the seed gradient is
not uniform; the model's only output is the sum of those losses. It is
compiled once with `tessera-compile --mode=grad`, whose artifact returns the
loss followed by its gradient with respect to every float input, and every
element of every gradient is compared with a central difference of the
compiled loss itself:

    num = (L(x + h·e) − L(x − h·e)) / (2h),   h = STEP · max(1, |x|).

Then three small end-to-end models (an MLP, a CNN and a GPT-style block,
with trainable initializers and a scalar loss output) are checked the same
way.

Tolerance: an element passes if |num − grad| ≤ ATOL + RTOL·|grad|. In
float64 a central difference errs by O(h²·|L'''|) from truncation (≈ 1e-12
here) plus O(ε·S/h) from rounding, ε = 2.2e-16 and S the magnitude of the
terms summed into the loss (≤ ~100 in these models): ≈ 2e-8 at most, and
typically 1e-10. RTOL = 1e-6 and ATOL = 1e-7 leave that an order of
magnitude of room, while a wrong rule errs by O(|grad|) (a missed factor,
sign or term). The table reports, per op, the largest |num − grad| /
max(|grad|, ATOL/RTOL).

Inputs are drawn away from kinks (relu, abs, max/min, clip, pooling and top-k
ties, the zero of a divisor, the domain edges of log/sqrt/pow) by more than
the step, so the central difference measures the one-sided derivative both
sides agree on. Ops that cannot be checked are listed with the reason, and
XFAIL lists known-wrong rules that are reported but do not fail the run.

Run: .venv/bin/python test/gradients/check_gradients.py [--build build]
[--only OP,...] [--keep DIR] [--compile-flag FLAG...]; ctest runs it as the
`gradients` test, and with --compile-flag=--gpu-mapping=shuffle (the CUDA
target's kernels run on the CPU, blocks and threads shuffled) as
`gradients-gpu-mapping`.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

# An ASan build preloads its sanitizer runtime into this interpreter and
# turns leak checking off for it (TESSERA_PYTHON_TEST_ENV); the tools it runs
# link their own copy and keep leak checking on.
os.environ.pop("LD_PRELOAD", None)
os.environ.pop("ASAN_OPTIONS", None)


ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from tessera.runtime import Artifact  # noqa: E402

RTOL = 1e-6
ATOL = 1e-7
STEP = 1e-6

# Known-wrong rules: ONNX op or case name -> reason. Reported, not failing the
# run; an XFAIL that passes is reported as XPASS.
XFAIL = {}

# What cannot be checked, and why.
UNSUPPORTED = [
    ("ScatterElements reduction=mul/max/min",
     "no gradient rule (tsr-autodiff reports an error): the adjoint depends "
     "on the order of colliding updates"),
    ("Einsum with a repeated output label (e.g. i->ii)",
     "no gradient rule (tsr-autodiff reports an error)"),
    ("Pad mode=reflect wider than the cropped dimension",
     "no gradient rule (the forward op reflects only once there)"),
    ("Celu", "ONNX defines it for float32 only (libonnx rejects a float64 "
     "model); it imports to div, exp, sub, mul, min and max, checked here"),
    ("MeanVarianceNormalization",
     "libonnx 1.12's shape inference of its function body fails for float64 "
     "(float32 constants); it imports to reductions checked here"),
]

# Every tsr op of TsrOps.td and TsrGradOps.td, by whether it carries a
# gradient (the collectives of TsrCommOps.td are checked over MPI by
# check_collective_gradients.py). A new op must be added to
# one of the two sets (the check fails otherwise), and every differentiable
# op must be exercised by some checked model.
DIFFERENTIABLE_TSR_OPS = {
    "neg", "abs", "relu", "identity", "exp", "log", "sqrt", "reciprocal",
    "tanh", "sigmoid", "erf", "sin", "cos", "tan", "atan", "softplus",
    "softsign", "gelu", "leaky_relu", "elu", "selu", "hard_sigmoid", "clip",
    "add", "sub", "mul", "div", "pow", "max", "min", "prelu", "where", "cast",
    "matmul", "conv", "einsum", "max_pool", "avg_pool", "batch_norm",
    "layer_norm", "softmax", "log_softmax", "reduce_sum", "reduce_mean",
    "reduce_max", "reduce_min", "reduce_prod", "cumsum", "topk", "reshape",
    "transpose", "broadcast", "concat", "slice", "gather", "gather_elements",
    "scatter_elements", "tile", "pad", "trilu", "dropout",
    "softmax_cross_entropy_loss", "nll_loss", "mod", "moe_dispatch",
    "moe_combine",
}
NON_DIFFERENTIABLE_TSR_OPS = {
    # Piecewise constant, boolean or integer-valued: zero gradient.
    "sign", "floor", "ceil", "round", "is_nan", "not", "and", "or", "xor",
    "equal", "less", "less_equal", "greater", "greater_equal", "argmax",
    "argmin", "one_hot", "constant", "stop_gradient", "moe_assign",
    # Draws with no operand to differentiate (a seed offset at most).
    "random_uniform",
    # The backward ops themselves (no second derivatives), and the barrier
    # tsr-remat puts in the backward pass after autodiff.
    "conv_backward_data", "conv_backward_filter", "max_pool_grad",
    "moe_gather_dot", "remat_barrier",
}


# ---------------------------------------------------------------------------
# Model building
# ---------------------------------------------------------------------------

class Model:
    """An ONNX graph under construction whose output is a sum of losses."""

    def __init__(self, name, rng, opset=17):
        self.name = name
        self.rng = rng
        self.opset = opset
        self.domains = {}       # other domains the model imports: version
        self.nodes = []
        self.inputs = []        # graph inputs: ValueInfoProto
        self.feeds = {}         # graph input name -> array
        self.initializers = []  # TensorProto
        self.losses = []
        self.cases = 0
        self.counter = 0

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def input(self, array, prefix="x"):
        """A graph input fed with `array` (float64 ones are differentiated)."""
        array = np.asarray(array)
        name = self.fresh(prefix)
        dtype = helper.np_dtype_to_tensor_dtype(array.dtype)
        self.inputs.append(helper.make_tensor_value_info(name, dtype,
                                                         array.shape))
        self.feeds[name] = array
        return name

    def param(self, array, prefix="w"):
        """A trainable initializer."""
        name = self.fresh(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(array),
                                                         name))
        self.feeds[name] = np.asarray(array)
        return name

    def const(self, array, prefix="c"):
        """A Constant node."""
        name = self.fresh(prefix)
        self.nodes.append(helper.make_node(
            "Constant", [], [name],
            value=numpy_helper.from_array(np.asarray(array))))
        return name

    def node(self, op, inputs, outputs=1, domain="", **attrs):
        names = [self.fresh(op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, list(inputs), names,
                                           domain=domain, **attrs))
        if domain:
            self.domains[domain] = 1
        return names[0] if outputs == 1 else names

    def graph(self, outputs):
        return helper.make_graph(self.nodes, self.name, self.inputs, outputs,
                                 initializer=self.initializers)

    def proto(self, outputs):
        return helper.make_model(
            self.graph(outputs),
            opset_imports=[helper.make_opsetid("", self.opset)] + [
                helper.make_opsetid(d, v) for d, v in self.domains.items()],
            ir_version=8)

    def shape(self, value):
        out = helper.make_tensor_value_info(value, TensorProto.UNDEFINED, None)
        inferred = shape_inference.infer_shapes(self.proto([out]),
                                                strict_mode=True)
        for info in list(inferred.graph.output) + list(
                inferred.graph.value_info):
            if info.name == value:
                dims = info.type.tensor_type.shape.dim
                return tuple(d.dim_value for d in dims)
        raise RuntimeError(f"{self.name}: no shape inferred for {value}")

    def loss(self, value, shape=None):
        """Adds ReduceSum(value * R) to the loss: one case. `shape` is the
        value's, for ops that onnx's Python shape inference does not know."""
        r = self.rng.standard_normal(shape or self.shape(value))
        weighted = self.node("Mul", [value, self.const(r, "r")])
        self.losses.append(self.node("ReduceSum", [weighted], keepdims=0))
        self.cases += 1

    def scalar_loss(self, value):
        """Adds an existing scalar (a loss op's output) to the loss."""
        self.losses.append(value)
        self.cases += 1

    def finish(self):
        total = self.losses[0]
        if len(self.losses) > 1:
            total = self.node("Sum", self.losses)
        self.nodes.append(helper.make_node("Identity", [total], ["loss"]))
        out = helper.make_tensor_value_info("loss", TensorProto.DOUBLE, [])
        return self.proto([out])


# Random inputs away from kinks.

def normal(rng, shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def away_from(rng, shape, points, gap=0.05, low=-2.0, high=2.0):
    """Uniform in [low, high], at least `gap` from every point in `points`."""
    x = rng.uniform(low, high, shape)
    for p in points:
        near = np.abs(x - p) < gap
        x = np.where(near, p + np.sign(x - p + 1e-12) * gap * 2, x)
    return x


def nonzero(rng, shape, low=0.3, high=2.0):
    return rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)


def positive(rng, shape, low=0.5, high=2.0):
    return rng.uniform(low, high, shape)


def distinct(rng, shape, spacing=0.02):
    """Values at least `spacing` apart from each other (no ties)."""
    n = int(np.prod(shape))
    values = (rng.permutation(n) - n / 2) * spacing * 1.5
    values = values + rng.uniform(-0.2, 0.2, n) * spacing
    return values.reshape(shape)


def separated_pair(rng, a_shape, b_shape, gap=0.05):
    """Two arrays whose broadcast elements differ by at least `gap`."""
    for _ in range(1000):
        a, b = normal(rng, a_shape), normal(rng, b_shape)
        if np.min(np.abs(a - b)) > gap:
            return a, b
    raise RuntimeError("no separated pair")


# ---------------------------------------------------------------------------
# The op cases
# ---------------------------------------------------------------------------

OPS = {}


def op(name, opset=17, step=None):
    def register(fn):
        OPS[name] = (fn, opset, step)
        return fn
    return register


BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 1, 4), (2, 1)), ((2, 3), (3,)),
                    ((4,), ())]


def binary(onnx_op, sample=None):
    def cases(m):
        for a_shape, b_shape in BROADCAST_SHAPES:
            if sample:
                a, b = sample(m.rng, a_shape, b_shape)
            else:
                a, b = normal(m.rng, a_shape), normal(m.rng, b_shape)
            m.loss(m.node(onnx_op, [m.input(a), m.input(b)]))
    op(onnx_op)(cases)


binary("Add")
binary("Sub")
binary("Mul")
binary("Div", lambda r, a, b: (normal(r, a), nonzero(r, b, 0.5)))
binary("Pow", lambda r, a, b: (positive(r, a), normal(r, b)))
binary("Max", separated_pair)
binary("Min", separated_pair)


@op("Mod")
def _(m):
    a = m.input(np.array([2.3, -1.7, 4.1, -3.0]))
    b = m.input(np.array([0.9, 1.1, -1.3, 1.6]))
    m.loss(m.node("Mod", [a, b], fmod=1))


@op("PRelu")
def _(m):
    for x_shape, s_shape in [((3, 4), (4,)), ((2, 3, 4), (3, 1)), ((5,), (1,))]:
        m.loss(m.node("PRelu", [m.input(nonzero(m.rng, x_shape)),
                                m.input(normal(m.rng, s_shape))]))


@op("Where")
def _(m):
    for c_shape, a_shape, b_shape in [((3, 4), (3, 4), (3, 4)),
                                      ((3, 1), (1, 4), (3, 4)),
                                      ((2, 3), (3,), ())]:
        cond = m.const(m.rng.random(c_shape) < 0.5)
        m.loss(m.node("Where", [cond, m.input(normal(m.rng, a_shape)),
                                m.input(normal(m.rng, b_shape))]))


def unary(onnx_op, sample=normal, opset=17, label=None,
          **attrs):
    def cases(m):
        for shape in [(3, 4), (2, 3, 2), ()]:
            m.loss(m.node(onnx_op, [m.input(sample(m.rng, shape))], **attrs))
    op(onnx_op if label is None else f"{onnx_op} ({label})", opset)(cases)


unary("Neg")
unary("Abs", nonzero)
unary("Relu", nonzero)
unary("Exp")
unary("Log", positive)
unary("Sqrt", positive)
unary("Reciprocal", nonzero)
unary("Tanh")
unary("Sigmoid")
unary("Erf")
unary("Sin")
unary("Cos")
unary("Tan", lambda r, s: r.uniform(-1.2, 1.2, s))
unary("Atan")
unary("Softplus")
unary("Softsign", nonzero)
unary("Identity")
unary("Gelu", opset=20)
unary("Gelu", opset=20, label="tanh", approximate="tanh")
unary("LeakyRelu", nonzero, alpha=0.1)
unary("Elu", nonzero, alpha=0.7)
unary("Selu", nonzero)
unary("HardSigmoid", lambda r, s: away_from(r, s, [-2.5, 2.5], low=-4, high=4))
unary("HardSwish", lambda r, s: away_from(r, s, [-3, 3], low=-4, high=4))
unary("Mish", opset=18)
unary("ThresholdedRelu", lambda r, s: away_from(r, s, [1.0], low=-3, high=3))
unary("Shrink", lambda r, s: away_from(r, s, [-0.5, 0.5]), lambd=0.5,
      bias=0.2)
unary("Sinh")
unary("Cosh")
unary("Asinh")
unary("Acosh", lambda r, s: positive(r, s, 1.2, 3.0))
unary("Atanh", lambda r, s: r.uniform(-0.8, 0.8, s))
unary("Asin", lambda r, s: r.uniform(-0.8, 0.8, s))
unary("Acos", lambda r, s: r.uniform(-0.8, 0.8, s))
# Piecewise constant: zero gradient away from the steps.
unary("Floor", lambda r, s: r.integers(-3, 3, s) + r.uniform(0.1, 0.9, s))
unary("Ceil", lambda r, s: r.integers(-3, 3, s) + r.uniform(0.1, 0.9, s))
unary("Round", lambda r, s: r.integers(-3, 3, s) + r.uniform(0.1, 0.4, s))
unary("Sign", nonzero)


@op("Clip")
def _(m):
    lo, hi = m.const(np.array(-1.0)), m.const(np.array(0.8))
    for shape in [(3, 4), (5,)]:
        x = away_from(m.rng, shape, [-1.0, 0.8])
        m.loss(m.node("Clip", [m.input(x), lo, hi]))
    m.loss(m.node("Clip", [m.input(away_from(m.rng, (4,), [-1.0])), lo]))


@op("Cast", step=2.0 ** -6)
def _(m):
    # Through float32 and back: values and steps exact in float32.
    x = np.round(normal(m.rng, (3, 4)) * 64) / 64
    f = m.node("Cast", [m.input(x)], to=TensorProto.FLOAT)
    m.loss(m.node("Cast", [f], to=TensorProto.DOUBLE))
    m.loss(m.node("Cast", [m.input(np.round(normal(m.rng, (5,)) * 64) / 64)],
                  to=TensorProto.DOUBLE))


@op("Sum")
def _(m):
    m.loss(m.node("Sum", [m.input(normal(m.rng, (3, 4))),
                          m.input(normal(m.rng, (4,))),
                          m.input(normal(m.rng, (3, 1)))]))


@op("Mean")
def _(m):
    m.loss(m.node("Mean", [m.input(normal(m.rng, (3, 4))),
                           m.input(normal(m.rng, (1, 4)))]))


@op("MatMul")
def _(m):
    for a, b in [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)),
                 ((3, 4), (4,)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4,))]:
        m.loss(m.node("MatMul", [m.input(normal(m.rng, a)),
                                 m.input(normal(m.rng, b))]))


@op("Gemm")
def _(m):
    for a, b, c, attrs in [((3, 4), (4, 5), (5,), {}),
                           ((4, 3), (5, 4), (3, 5),
                            dict(transA=1, transB=1, alpha=0.7, beta=1.3)),
                           ((3, 4), (5, 4), (3, 1), dict(transB=1)),
                           ((2, 3), (3, 2), None, {})]:
        ins = [m.input(normal(m.rng, a)), m.input(normal(m.rng, b))]
        if c:
            ins.append(m.input(normal(m.rng, c)))
        m.loss(m.node("Gemm", ins, **attrs))


@op("Conv")
def _(m):
    cases = [
        ((1, 2, 7), (3, 2, 3), True, dict(strides=[2], pads=[1, 0])),
        ((2, 4, 6), (4, 2, 2), False,
         dict(group=2, dilations=[2], pads=[1, 1])),
        ((1, 2, 5, 5), (4, 1, 3, 3), True,
         dict(group=2, strides=[2, 2], pads=[1, 1, 0, 0])),
        ((2, 3, 6, 5), (2, 3, 2, 3), True,
         dict(strides=[3, 2], dilations=[2, 1], pads=[0, 1, 2, 0])),
        ((1, 2, 4, 3, 4), (2, 2, 2, 1, 3), True,
         dict(strides=[2, 1, 1], pads=[1, 0, 1, 0, 0, 1])),
    ]
    for x, w, bias, attrs in cases:
        ins = [m.input(normal(m.rng, x)), m.input(normal(m.rng, w))]
        if bias:
            ins.append(m.input(normal(m.rng, w[:1])))
        m.loss(m.node("Conv", ins, **attrs))


POOL_CASES = [
    ((1, 2, 7), dict(kernel_shape=[3], strides=[2])),
    ((1, 2, 6), dict(kernel_shape=[2], strides=[2], pads=[1, 1])),
    ((2, 1, 5, 6), dict(kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1)),
    ((1, 2, 5, 5), dict(kernel_shape=[3, 3], strides=[2, 1],
                        pads=[1, 1, 1, 0])),
    ((1, 1, 4, 3, 5), dict(kernel_shape=[2, 2, 2], strides=[2, 1, 2],
                           ceil_mode=1)),
]


@op("MaxPool")
def _(m):
    for x, attrs in POOL_CASES:
        m.loss(m.node("MaxPool", [m.input(distinct(m.rng, x))], **attrs))
    m.loss(m.node("MaxPool", [m.input(distinct(m.rng, (1, 2, 6, 6)))],
                  kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1]))


@op("AveragePool")
def _(m):
    for x, attrs in POOL_CASES:
        for include in (0, 1):
            m.loss(m.node("AveragePool", [m.input(normal(m.rng, x))],
                          count_include_pad=include, **attrs))


@op("GlobalAveragePool")
def _(m):
    for x in [(2, 3, 4, 5), (1, 2, 3)]:
        m.loss(m.node("GlobalAveragePool", [m.input(normal(m.rng, x))]))


@op("GlobalMaxPool")
def _(m):
    for x in [(2, 3, 4, 5), (1, 2, 3)]:
        m.loss(m.node("GlobalMaxPool", [m.input(distinct(m.rng, x))]))


@op("BatchNormalization")
def _(m):
    for x, c in [((2, 3, 4, 5), 3), ((4, 2), 2), ((2, 3, 4), 3)]:
        ins = [m.input(normal(m.rng, x)), m.input(normal(m.rng, (c,))),
               m.input(normal(m.rng, (c,))), m.input(normal(m.rng, (c,))),
               m.input(positive(m.rng, (c,)))]
        m.loss(m.node("BatchNormalization", ins, epsilon=1e-3))
    # training_mode = 1: normalized with the batch's statistics, so the
    # gradient with respect to x flows through its mean and variance too;
    # the updated running statistics (outputs 1 and 2) are in the loss too.
    for x, c in [((4, 3, 2, 2), 3), ((5, 2), 2), ((3, 2, 4), 2)]:
        ins = [m.input(normal(m.rng, x)), m.input(normal(m.rng, (c,))),
               m.input(normal(m.rng, (c,))), m.input(normal(m.rng, (c,))),
               m.input(positive(m.rng, (c,)))]
        for out in m.node("BatchNormalization", ins, outputs=3,
                          epsilon=1e-3, momentum=0.8, training_mode=1):
            m.loss(out)


@op("LayerNormalization")
def _(m):
    for x, axis, s, bias in [((3, 5), -1, (5,), True),
                             ((2, 3, 4), 1, (3, 4), True),
                             ((2, 3, 4), -1, (4,), False)]:
        ins = [m.input(normal(m.rng, x)), m.input(normal(m.rng, s))]
        if bias:
            ins.append(m.input(normal(m.rng, s)))
        m.loss(m.node("LayerNormalization", ins, axis=axis, epsilon=1e-3))


@op("InstanceNormalization")
def _(m):
    m.loss(m.node("InstanceNormalization",
                  [m.input(normal(m.rng, (2, 3, 4))),
                   m.input(normal(m.rng, (3,))), m.input(normal(m.rng, (3,)))],
                  epsilon=1e-3))


def softmax_like(onnx_op):
    def cases(m):
        for x, axis in [((3, 5), -1), ((2, 3, 4), 1), ((4,), 0)]:
            m.loss(m.node(onnx_op, [m.input(normal(m.rng, x))], axis=axis))
    op(onnx_op)(cases)


softmax_like("Softmax")
softmax_like("LogSoftmax")


def reduce(onnx_op, sample=normal, axes_as_input=True):
    def cases(m):
        for x, axes, keep in [((3, 4), [1], 1), ((2, 3, 4), [0, 2], 0),
                              ((2, 3), None, 0), ((3, 2, 2), [-1], 1)]:
            ins = [m.input(sample(m.rng, x))]
            attrs = dict(keepdims=keep)
            if axes is not None:
                if axes_as_input:
                    ins.append(m.const(np.array(axes, dtype=np.int64)))
                else:
                    attrs["axes"] = axes
            m.loss(m.node(onnx_op, ins, **attrs))
    op(onnx_op)(cases)


reduce("ReduceSum")
reduce("ReduceMean", axes_as_input=False)
reduce("ReduceMax", distinct, axes_as_input=False)
reduce("ReduceMin", distinct, axes_as_input=False)
reduce("ReduceProd", lambda r, s: nonzero(r, s, 0.5, 1.5), axes_as_input=False)
reduce("ReduceSumSquare", axes_as_input=False)
reduce("ReduceLogSum", positive, axes_as_input=False)
reduce("ReduceLogSumExp", axes_as_input=False)
reduce("ReduceL1", nonzero, axes_as_input=False)
reduce("ReduceL2", axes_as_input=False)


@op("CumSum")
def _(m):
    for x, axis, exclusive, reverse in [((5,), 0, 0, 0), ((3, 4), 1, 1, 0),
                                        ((3, 4), 0, 0, 1), ((2, 3, 2), -2, 1, 1)]:
        m.loss(m.node("CumSum", [m.input(normal(m.rng, x)),
                                 m.const(np.array(axis, dtype=np.int64))],
                      exclusive=exclusive, reverse=reverse))


@op("TopK")
def _(m):
    for x, k, axis, largest in [((3, 5), 2, 1, 1), ((4, 3), 3, 0, 0),
                                ((2, 3, 4), 1, -1, 1)]:
        values, _ = m.node("TopK", [m.input(distinct(m.rng, x)),
                                    m.const(np.array([k], dtype=np.int64))],
                           outputs=2, axis=axis, largest=largest)
        m.loss(values)


@op("Reshape")
def _(m):
    for x, shape in [((3, 4), [2, 6]), ((2, 3, 4), [-1, 4]), ((6,), [1, 2, 3])]:
        m.loss(m.node("Reshape", [m.input(normal(m.rng, x)),
                                  m.const(np.array(shape, dtype=np.int64))]))


@op("Flatten")
def _(m):
    for x, axis in [((2, 3, 4), 1), ((2, 3, 4), 2), ((3, 2), 0)]:
        m.loss(m.node("Flatten", [m.input(normal(m.rng, x))], axis=axis))


@op("Squeeze")
def _(m):
    m.loss(m.node("Squeeze", [m.input(normal(m.rng, (3, 1, 4, 1))),
                              m.const(np.array([1, 3], dtype=np.int64))]))


@op("Unsqueeze")
def _(m):
    m.loss(m.node("Unsqueeze", [m.input(normal(m.rng, (3, 4))),
                                m.const(np.array([0, 2], dtype=np.int64))]))


@op("Transpose")
def _(m):
    for x, perm in [((3, 4), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), None)]:
        attrs = {} if perm is None else dict(perm=perm)
        m.loss(m.node("Transpose", [m.input(normal(m.rng, x))], **attrs))


@op("Expand")
def _(m):
    for x, shape in [((3, 1), [2, 3, 4]), ((4,), [3, 4]), ((), [2, 2])]:
        m.loss(m.node("Expand", [m.input(normal(m.rng, x)),
                                 m.const(np.array(shape, dtype=np.int64))]))


@op("Concat")
def _(m):
    m.loss(m.node("Concat", [m.input(normal(m.rng, (2, 3))),
                             m.input(normal(m.rng, (1, 3))),
                             m.input(normal(m.rng, (3, 3)))], axis=0))
    m.loss(m.node("Concat", [m.input(normal(m.rng, (2, 3, 1))),
                             m.input(normal(m.rng, (2, 3, 2)))], axis=-1))


@op("Split")
def _(m):
    parts = m.node("Split", [m.input(normal(m.rng, (5, 4))),
                             m.const(np.array([2, 3], dtype=np.int64))],
                   outputs=2, axis=0)
    m.loss(parts[0])
    m.loss(parts[1])


@op("Slice")
def _(m):
    i64 = lambda v: m.const(np.array(v, dtype=np.int64))  # noqa: E731
    for x, starts, ends, axes, steps in [
            ((5, 4), [1], [4], [0], None),
            ((6, 5), [0, 1], [6, 5], [0, 1], [2, 3]),
            ((7,), [-1], [-8], [0], [-1]),
            ((6, 5), [5, 4], [0, -10], [0, 1], [-2, -3]),
            ((2, 6, 3), [1, 0], [6, 2], [1, 2], [2, 1])]:
        ins = [m.input(normal(m.rng, x)), i64(starts), i64(ends), i64(axes)]
        if steps:
            ins.append(i64(steps))
        m.loss(m.node("Slice", ins))


@op("Gather")
def _(m):
    for x, idx, axis in [((5, 3), [[0, 4], [2, 0]], 0), ((3, 4), [3, -1, 1], 1),
                         ((2, 3, 2), 1, 1)]:
        m.loss(m.node("Gather", [m.input(normal(m.rng, x)),
                                 m.const(np.array(idx, dtype=np.int64))],
                      axis=axis))


@op("GatherElements")
def _(m):
    for x, idx, axis in [((3, 4), [[0, 2], [1, 1], [3, 0]], 1),
                         ((3, 2), [[2, 0], [2, 1], [0, -1], [1, 1]], 0)]:
        m.loss(m.node("GatherElements",
                      [m.input(normal(m.rng, x)),
                       m.const(np.array(idx, dtype=np.int64))], axis=axis))


@op("ScatterElements")
def _(m):
    # Distinct constant targets; colliding ones (the last update wins); the
    # same collision with the indices as a runtime input; reduction add.
    cases = [((3, 4), [[0, 2], [3, 1], [1, 0]], 1, "none", "const"),
             ((4, 3), [[1, 0, 2], [3, 0, 2], [1, 2, 2]], 0, "none", "const"),
             ((4, 3), [[1, 0, 2], [3, 0, 2], [1, 2, 2]], 0, "none", "input"),
             ((3, 3), [[0, 0], [2, 2], [0, 1]], 1, "add", "const")]
    for x, idx, axis, reduction, source in cases:
        idx = np.array(idx, dtype=np.int64)
        indices = (m.const(idx) if source == "const"
                   else m.input(idx, "indices"))
        m.loss(m.node("ScatterElements",
                      [m.input(normal(m.rng, x)), indices,
                       m.input(normal(m.rng, idx.shape))],
                      axis=axis, reduction=reduction))


@op("Tile")
def _(m):
    for x, repeats in [((2, 3), [2, 1]), ((3,), [3]), ((2, 1, 2), [1, 3, 2])]:
        m.loss(m.node("Tile", [m.input(normal(m.rng, x)),
                               m.const(np.array(repeats, dtype=np.int64))]))


@op("Pad")
def _(m):
    for x, pads, mode in [((3, 4), [1, 0, 2, 1], "constant"),
                          ((3, 5), [0, -1, 1, 2], "constant"),
                          ((3, 4), [2, 1, 1, 3], "edge"),
                          ((4, 3), [-1, 2, 2, -1], "edge"),
                          ((4, 5), [2, 3, 1, 4], "reflect"),
                          ((2, 4, 5), [0, -1, 2, 0, 1, -1], "reflect"),
                          ((3, 1), [1, 2, 1, 0], "edge")]:
        ins = [m.input(normal(m.rng, x)),
               m.const(np.array(pads, dtype=np.int64))]
        if mode == "constant":
            ins.append(m.const(np.array(0.7)))
        m.loss(m.node("Pad", ins, mode=mode))


@op("Trilu")
def _(m):
    for x, upper, k in [((4, 4), 1, 0), ((3, 5), 0, 1), ((2, 4, 3), 1, -1),
                        ((3, 4), 0, -2)]:
        m.loss(m.node("Trilu", [m.input(normal(m.rng, x)),
                                m.const(np.array(k, dtype=np.int64))],
                      upper=upper))


@op("Einsum")
def _(m):
    for equation, shapes in [("ij,jk->ik", [(3, 4), (4, 2)]),
                             ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
                             ("i,j->ij", [(3,), (4,)]),
                             ("ij,ij->i", [(3, 4), (3, 4)]),
                             ("ijk->kji", [(2, 3, 4)]),
                             ("ij->", [(3, 4)]),
                             ("ii->i", [(3, 3)]),
                             ("ii", [(4, 4)]),
                             ("bii,bi->b", [(2, 3, 3), (2, 3)]),
                             ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
                             ("ijj,k->ik", [(2, 3, 3), (4,)])]:
        ins = [m.input(normal(m.rng, s)) for s in shapes]
        m.loss(m.node("Einsum", ins, equation=equation))


@op("Dropout")
def _(m):
    y, _ = m.node("Dropout", [m.input(normal(m.rng, (4, 5))),
                              m.const(np.array(0.3)),
                              m.const(np.array(True))],
                  outputs=2, seed=3)
    m.loss(y)
    m.loss(m.node("Dropout", [m.input(normal(m.rng, (3,)))]))


@op("DepthToSpace")
def _(m):
    m.loss(m.node("DepthToSpace", [m.input(normal(m.rng, (1, 8, 2, 3)))],
                  blocksize=2))


@op("SpaceToDepth")
def _(m):
    m.loss(m.node("SpaceToDepth", [m.input(normal(m.rng, (1, 2, 4, 6)))],
                  blocksize=2))


@op("SoftmaxCrossEntropyLoss")
def _(m):
    for x, target, reduction, weights, ignore in [
            ((4, 5), [0, 3, 4, 1], "mean", False, None),
            ((3, 4, 2), [[0, 3], [1, 1], [2, 0]], "sum", True, None),
            ((4, 3), [0, 2, 1, 2], "none", False, None),
            ((5, 3), [0, 2, 1, 2, 1], "mean", True, 2)]:
        ins = [m.input(normal(m.rng, x)),
               m.const(np.array(target, dtype=np.int64))]
        if weights:
            ins.append(m.const(positive(m.rng, (x[1],))))
        attrs = dict(reduction=reduction)
        if ignore is not None:
            attrs["ignore_index"] = ignore
        out = m.node("SoftmaxCrossEntropyLoss", ins, **attrs)
        if reduction == "none":
            m.loss(out)
        else:
            m.scalar_loss(out)


@op("NegativeLogLikelihoodLoss")
def _(m):
    for x, target, reduction, weights, ignore in [
            ((4, 5), [0, 3, 4, 1], "mean", False, None),
            ((3, 4, 2), [[0, 3], [1, 1], [2, 0]], "sum", True, None),
            ((4, 3), [0, 2, 1, 2], "none", False, None),
            ((5, 3), [0, 2, 1, 2, 1], "mean", True, 1)]:
        ins = [m.input(normal(m.rng, x)),
               m.const(np.array(target, dtype=np.int64))]
        if weights:
            ins.append(m.const(positive(m.rng, (x[1],))))
        attrs = dict(reduction=reduction)
        if ignore is not None:
            attrs["ignore_index"] = ignore
        out = m.node("NegativeLogLikelihoodLoss", ins, **attrs)
        if reduction == "none":
            m.loss(out)
        else:
            m.scalar_loss(out)


def weighted_loss(onnx_op):
    def cases(m):
        m.scalar_loss(m.node(onnx_op, [
            m.input(normal(m.rng, (4, 3))),
            m.const(np.array([0, 2, 1, 2], dtype=np.int64)),
            m.input(positive(m.rng, (3,)))], reduction="mean"))
    op(f"{onnx_op} (weights)")(cases)


weighted_loss("SoftmaxCrossEntropyLoss")
weighted_loss("NegativeLogLikelihoodLoss")


@op("MoE")
def _(m):
    """com.microsoft MoE: gradients reach the input through dispatch and
    combine, the router logits through the gates (softmax, top-k, the
    renormalization), and every expert weight and bias. Logits are distinct
    per token, so the top-k choice does not change within the step."""
    for shape, experts, inter, k, norm, act, biases in [
            ((6, 4), 4, 5, 1, 0, "silu", True),
            ((6, 4), 4, 5, 2, 1, "gelu", False),
            ((2, 3, 4), 3, 5, 2, 0, "identity", True),
            ((5, 4), 4, 3, 2, 1, "swiglu", True)]:
        hidden = shape[-1]
        tokens = int(np.prod(shape[:-1]))
        gated = act == "swiglu"
        width = 2 * inter if gated else inter
        ins = [m.input(normal(m.rng, shape)),
               m.input(np.stack([distinct(m.rng, (experts,), 0.3)
                                 for _ in range(tokens)])),
               m.input(normal(m.rng, (experts, width, hidden), 0.5)),
               m.input(normal(m.rng, (experts, width))) if biases else "",
               m.input(normal(m.rng, (experts, hidden, inter), 0.5)),
               m.input(normal(m.rng, (experts, hidden))) if biases else ""]
        attrs = dict(k=k, normalize_routing_weights=norm, activation_type=act)
        if gated:
            attrs["swiglu_fusion"] = 1
        m.loss(m.node("MoE", ins, domain="com.microsoft", **attrs), shape)


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

MODELS = {}


def model(name, opset=17):
    def register(fn):
        MODELS[name] = (fn, opset)
        return fn
    return register


@model("mlp")
def _(m):
    x = m.input(normal(m.rng, (4, 6)), "x")
    labels = m.input(np.array([0, 2, 1, 2], dtype=np.int64), "labels")
    h = m.node("Gemm", [x, m.param(normal(m.rng, (6, 8), 0.5)),
                        m.param(normal(m.rng, (8,), 0.1))])
    h = m.node("Relu", [h])
    logits = m.node("Gemm", [h, m.param(normal(m.rng, (3, 8), 0.5)),
                             m.param(normal(m.rng, (3,), 0.1))], transB=1)
    m.scalar_loss(m.node("SoftmaxCrossEntropyLoss", [logits, labels]))


@model("cnn")
def _(m):
    x = m.input(normal(m.rng, (2, 3, 8, 8)), "x")
    labels = m.input(np.array([1, 4], dtype=np.int64), "labels")
    h = m.node("Conv", [x, m.param(normal(m.rng, (4, 3, 3, 3), 0.3)),
                        m.param(normal(m.rng, (4,), 0.1))], pads=[1, 1, 1, 1])
    h = m.node("BatchNormalization",
               [h, m.param(positive(m.rng, (4,))),
                m.param(normal(m.rng, (4,), 0.1)),
                m.param(normal(m.rng, (4,), 0.1)),
                m.param(positive(m.rng, (4,)))], epsilon=1e-5)
    h = m.node("Relu", [h])
    h = m.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = m.node("Conv", [h, m.param(normal(m.rng, (6, 4, 3, 3), 0.3))])
    h = m.node("AveragePool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = m.node("Flatten", [h])
    logits = m.node("Gemm", [h, m.param(normal(m.rng, (6, 5), 0.5)),
                             m.param(normal(m.rng, (5,), 0.1))])
    m.scalar_loss(m.node("SoftmaxCrossEntropyLoss", [logits, labels]))


@model("gpt_block", opset=20)
def _(m):
    seq, dim, heads, vocab = 4, 8, 2, 7
    hd = dim // heads
    i64 = lambda v: m.const(np.array(v, dtype=np.int64))  # noqa: E731
    x = m.input(normal(m.rng, (1, seq, dim)), "x")
    labels = m.input(np.array([[3, 0, 6, 2]], dtype=np.int64), "labels")

    def layer_norm(v):
        return m.node("LayerNormalization",
                      [v, m.param(positive(m.rng, (dim,), 0.8, 1.2)),
                       m.param(normal(m.rng, (dim,), 0.1))], axis=-1,
                      epsilon=1e-5)

    def linear(v, n_in, n_out):
        y = m.node("MatMul", [v, m.param(normal(m.rng, (n_in, n_out), 0.4))])
        return m.node("Add", [y, m.param(normal(m.rng, (n_out,), 0.1))])

    def heads_first(v):
        v = m.node("Reshape", [v, i64([1, seq, heads, hd])])
        return m.node("Transpose", [v], perm=[0, 2, 1, 3])

    h = layer_norm(x)
    q = heads_first(linear(h, dim, dim))
    k = heads_first(linear(h, dim, dim))
    v = heads_first(linear(h, dim, dim))
    scores = m.node("MatMul", [q, m.node("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = m.node("Div", [scores, m.const(np.array(np.sqrt(hd)))])
    causal = m.const(np.tril(np.ones((seq, seq), dtype=bool)))
    scores = m.node("Where", [causal, scores, m.const(np.array(-1e9))])
    attn = m.node("MatMul", [m.node("Softmax", [scores], axis=-1), v])
    attn = m.node("Transpose", [attn], perm=[0, 2, 1, 3])
    attn = m.node("Reshape", [attn, i64([1, seq, dim])])
    x = m.node("Add", [x, linear(attn, dim, dim)])
    h = m.node("Gelu", [linear(layer_norm(x), dim, 2 * dim)])
    x = m.node("Add", [x, linear(h, 2 * dim, dim)])
    logits = linear(layer_norm(x), dim, vocab)
    logits = m.node("Transpose", [logits], perm=[0, 2, 1])
    m.scalar_loss(m.node("SoftmaxCrossEntropyLoss", [logits, labels]))


# ---------------------------------------------------------------------------
# Compiling and checking
# ---------------------------------------------------------------------------

def compile_model(bin_dir, path, art, flags):
    result = subprocess.run(
        [str(bin_dir / "tessera-compile"), str(path), "--mode=grad", "-o",
         str(art), *flags], capture_output=True, text=True)
    ops = set()
    if result.returncode == 0:
        tsr = subprocess.run(
            [str(bin_dir / "tessera-compile"), str(path), "--emit=tsr"],
            capture_output=True, text=True)
        if tsr.returncode != 0:
            return tsr, ops
        ops = set(re.findall(r"\btsr\.([a-z_]+)\b(?! *=)", tsr.stdout))
    return result, ops


def central_differences(art, arrays, k, step):
    """The central difference of the loss at every element of input k."""
    x = arrays[k]
    num = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        orig = x[idx]
        h = step * max(1.0, abs(orig))
        x[idx] = orig + h
        plus = art(*arrays)[0]
        upper = x[idx]
        x[idx] = orig - h
        minus = art(*arrays)[0]
        lower = x[idx]
        x[idx] = orig
        num[idx] = (plus - minus) / (upper - lower)
    return num


def check_artifact(art, feeds, step, statistics):
    """Per gradient: (input name, max relative error, passed); problems.
    Inputs in `statistics` (running statistics) must have no gradient."""
    arrays = [np.array(feeds[i.name], dtype=i.dtype) for i in art.inputs]
    outputs = art(*arrays)
    results, problems = [], []
    graded = set()
    for out, grad in zip(art.outputs, outputs):
        if out.role != "grad":
            continue
        k = out.of
        graded.add(k)
        num = central_differences(art, arrays, k, step)
        diff = np.abs(num - grad)
        ok = bool(np.all(diff <= ATOL + RTOL * np.abs(grad)))
        rel = float(np.max(diff / np.maximum(np.abs(grad), ATOL / RTOL),
                           initial=0.0))
        results.append((art.inputs[k].name, rel, ok))
    for k, info in enumerate(art.inputs):
        if k in statistics:
            if k in graded:
                problems.append(f"running statistics {info.name} got a gradient")
        elif info.dtype == "float64" and k not in graded:
            problems.append(f"no gradient output for float input {info.name}")
    return results, problems


def build_all(rng, only):
    """(name, Model, step) for every op and model (or those in `only`)."""
    built = []
    for name, (fn, opset, step) in OPS.items():
        if not only or name.split()[0] in only:
            m = Model(name, rng, opset)
            fn(m)
            built.append((name, m, step or STEP))
    for name, (fn, opset) in MODELS.items():
        if not only or name in only:
            m = Model(name, rng, opset)
            fn(m)
            built.append((name, m, STEP))
    return built


def td_mnemonics():
    names = set()
    for td in ["TsrOps.td", "TsrGradOps.td"]:
        text = (ROOT / "include/tessera/Dialect/Tsr/IR" / td).read_text()
        names |= set(re.findall(r'^def Tsr_\w+ *: *Tsr_\w+<"(\w+)"', text,
                                re.M))
    return names


def check_one(name, m, step, art_dir, result):
    """(max relative error or None, failure message or None)."""
    if result.returncode != 0:
        message = result.stderr.strip().splitlines()
        return None, "tessera-compile failed: " + " | ".join(message[-3:])
    art = Artifact(str(art_dir))
    # Running statistics are parameters that get no gradient.
    manifest = json.loads((pathlib.Path(art_dir) / "manifest.json").read_text())
    (program,) = manifest["programs"]
    statistics = {k for k, t in enumerate(program["inputs"])
                  if t.get("statistics")}
    results, problems = check_artifact(art, m.feeds, step, statistics)
    art.close()
    worst = max((r for _, r, _ in results), default=0.0)
    problems += [f"gradient of {n} differs (max rel {r:.2e})"
                 for n, r, ok in results if not ok]
    return worst, "; ".join(problems) or None


def run(built, bin_dir, workdir, jobs, flags):
    """Compiles and checks everything; returns (rows, failures, notes)."""
    paths = []
    for name, m, _ in built:
        slug = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
        onnx.save(m.finish(), str(workdir / f"{slug}.onnx"))
        paths.append((workdir / f"{slug}.onnx", workdir / f"{slug}.art"))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        compiled = list(pool.map(lambda p: compile_model(bin_dir, *p, flags),
                                 paths))

    rows, failures, notes, covered = [], [], [], set()
    for (name, m, step), (_, art_dir), (result, ops) in zip(built, paths,
                                                           compiled):
        worst, failure = check_one(name, m, step, art_dir, result)
        status = "ok" if not failure else (
            "COMPILE ERROR" if worst is None else "MISMATCH")
        reason = XFAIL.get(name, XFAIL.get(name.split()[0]))
        if reason:
            status = "XFAIL" if failure else "XPASS"
            notes.append(f"{name}: {status}: {reason}")
        elif failure:
            failures.append(f"{name}: {failure}")
        else:
            covered |= ops
        rows.append((name, m.cases, worst, status))
    return rows, failures, notes, covered


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=pathlib.Path, default=ROOT / "build",
                        help="build directory (bin/tessera-compile, "
                             "lib/libtessera_runtime.so)")
    parser.add_argument("--only", default="",
                        help="comma-separated ONNX ops or model names")
    parser.add_argument("--keep", type=pathlib.Path,
                        help="write the models and artifacts here")
    parser.add_argument("--jobs", type=int, default=2,
                        help="concurrent tessera-compile runs")
    parser.add_argument("--compile-flag", action="append", default=[],
                        help="an extra tessera-compile flag (repeatable), "
                             "e.g. --compile-flag=--gpu-mapping=shuffle")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    runtime = args.build / "lib" / "libtessera_runtime.so"
    if "TESSERA_RUNTIME_LIB" not in os.environ and runtime.exists():
        os.environ["TESSERA_RUNTIME_LIB"] = str(runtime)
    start = time.time()
    built = build_all(np.random.default_rng(20240607), only)
    with tempfile.TemporaryDirectory(prefix="tsr-grad-") as tmp:
        workdir = args.keep or pathlib.Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        rows, failures, notes, covered = run(built, args.build / "bin",
                                             workdir, args.jobs,
                                             args.compile_flag)
    if not only:
        unclassified = (td_mnemonics() - DIFFERENTIABLE_TSR_OPS -
                        NON_DIFFERENTIABLE_TSR_OPS)
        if unclassified:
            failures.append("tsr ops in neither DIFFERENTIABLE_TSR_OPS nor "
                            "NON_DIFFERENTIABLE_TSR_OPS: "
                            + ", ".join(sorted(unclassified)))
        missing = DIFFERENTIABLE_TSR_OPS - covered
        if missing:
            failures.append("differentiable tsr ops that no passing model "
                            "exercises: " + ", ".join(sorted(missing)))

    width = max(len(r[0]) for r in rows)
    print(f"{'op / model':<{width}}  cases  max rel error  status")
    for name, cases, worst, status in rows:
        err = "-" if worst is None else f"{worst:.2e}"
        print(f"{name:<{width}}  {cases:>5}  {err:>13}  {status}")
    print("\nNot checked:")
    for what, why in UNSUPPORTED:
        print(f"  {what}: {why}")
    for line in notes:
        print(f"  {line}")
    print(f"\n{len(rows)} models, {sum(r[1] for r in rows)} cases; pass if "
          f"|num - grad| <= {ATOL:g} + {RTOL:g}*|grad|; "
          f"{time.time() - start:.1f} s")
    if failures:
        print("\nFAILED:")
        for f in failures:
            print(f"  {f}")
        return 1
    print("All gradients match their central differences.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
