"""Small training graphs for comparing the rematerialization solvers.

Usage: make_graphs.py chain|block|cnn OUT.onnx

chain: eight MatMul + Tanh layers (a chain: every value feeds the next).
block: a pre-norm transformer block (one head: LayerNorm, Q/K/V, scores,
       softmax, output projection, residual; LayerNorm, MLP, residual).
cnn:   three 3x3 convolutions with ReLU and two skip connections, global
       average pooling and a classifier.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def weight(name, *shape):
    return numpy_helper.from_array(
        (rng.normal(size=shape) / np.sqrt(shape[0])).astype(np.float32), name)


def save(nodes, inputs, outputs, inits, path):
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def chain(path):
    nodes, inits, x = [], [], "x"
    for i in range(8):
        inits.append(weight(f"w{i}", 32, 32))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"]))
        nodes.append(helper.make_node("Tanh", [f"h{i}"], [f"a{i}"]))
        x = f"a{i}"
    inits.append(weight("head", 32, 10))
    nodes.append(helper.make_node("MatMul", [x, "head"], ["logits"]))
    save(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 32])],
         [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, 10])],
         inits, path)


def block(path):
    d, s = 32, 16
    inits = [weight(n, d, d) for n in ("wq", "wk", "wv", "wo")]
    inits += [weight("fc1", d, 4 * d), weight("fc2", 4 * d, d),
              weight("head", d, 10),
              numpy_helper.from_array(np.ones(d, np.float32), "g1"),
              numpy_helper.from_array(np.zeros(d, np.float32), "b1"),
              numpy_helper.from_array(np.ones(d, np.float32), "g2"),
              numpy_helper.from_array(np.zeros(d, np.float32), "b2"),
              numpy_helper.from_array(np.array(d ** -0.5, np.float32), "scale")]
    N = helper.make_node
    nodes = [
        N("LayerNormalization", ["x", "g1", "b1"], ["n1"], axis=-1),
        N("MatMul", ["n1", "wq"], ["q"]),
        N("MatMul", ["n1", "wk"], ["k"]),
        N("MatMul", ["n1", "wv"], ["v"]),
        N("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        N("MatMul", ["q", "kt"], ["qk"]),
        N("Mul", ["qk", "scale"], ["scores"]),
        N("Softmax", ["scores"], ["p"], axis=-1),
        N("MatMul", ["p", "v"], ["att"]),
        N("MatMul", ["att", "wo"], ["proj"]),
        N("Add", ["x", "proj"], ["r1"]),
        N("LayerNormalization", ["r1", "g2", "b2"], ["n2"], axis=-1),
        N("MatMul", ["n2", "fc1"], ["h"]),
        N("Relu", ["h"], ["a"]),
        N("MatMul", ["a", "fc2"], ["m"]),
        N("Add", ["r1", "m"], ["r2"]),
        N("MatMul", ["r2", "head"], ["logits"]),
    ]
    save(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, s, d])],
         [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, s, 10])],
         inits, path)


def cnn(path):
    N = helper.make_node
    inits = [weight("c0", 8, 3, 3, 3), weight("c1", 8, 8, 3, 3),
             weight("c2", 8, 8, 3, 3), weight("fc", 8, 10)]
    pads = [1, 1, 1, 1]
    nodes = [
        N("Conv", ["x", "c0"], ["y0"], pads=pads),
        N("Relu", ["y0"], ["a0"]),
        N("Conv", ["a0", "c1"], ["y1"], pads=pads),
        N("Relu", ["y1"], ["a1"]),
        N("Add", ["a0", "a1"], ["s1"]),
        N("Conv", ["s1", "c2"], ["y2"], pads=pads),
        N("Relu", ["y2"], ["a2"]),
        N("Add", ["s1", "a2"], ["s2"]),
        N("GlobalAveragePool", ["s2"], ["g"]),
        N("Flatten", ["g"], ["f"]),
        N("MatMul", ["f", "fc"], ["logits"]),
    ]
    save(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
         [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 10])],
         inits, path)


if __name__ == "__main__":
    {"chain": chain, "block": block, "cnn": cnn}[sys.argv[1]](sys.argv[2])
