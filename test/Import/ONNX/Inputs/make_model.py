"""Writes one small ONNX model for the import tests.

usage: make_model.py KIND OUT.onnx

Models are built with onnx.helper so the tests need no binary fixtures.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=13, domain_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + list(domain_opsets)
    m = helper.make_model(graph, opset_imports=opsets)
    m.ir_version = 8
    return m


def vi(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def mlp():
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
    b = numpy_helper.from_array(np.array([1, 2, 3], dtype=np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="add"),
        helper.make_node("Relu", ["hb"], ["y"], name="relu"),
    ]
    return model(nodes, [vi("x", [2, 4])], [vi("y", [2, 3])], [w, b])


def two_layer(seed, activation, **attrs):
    # y = activation(x·W1 + b1)·W2 + b2, whose training step multiplies the
    # hidden gradient by the activation's derivative.
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1.bias"),
        helper.make_node(activation, ["hb"], ["a"], name=activation.lower(), **attrs),
        helper.make_node("MatMul", ["a", "w2"], ["o"], name="fc2"),
        helper.make_node("Add", ["o", "b2"], ["y"], name="fc2.bias"),
    ]
    return nodes, inits


def mlp2():
    # A hidden ReLU: cuBLASLt's RELU_AUX / DRELU epilogues on the CUDA target.
    nodes, inits = two_layer(3, "Relu")
    return model(nodes, [vi("x", [4, 8])], [vi("y", [4, 4])], inits)


def mlp_gelu():
    # y = Gelu(x·W + b) with GELU's tanh approximation (opset 20's
    # approximate="tanh"): cuBLASLt's GELU_BIAS epilogue on the CUDA target.
    rng = np.random.default_rng(4)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="fc.bias"),
        helper.make_node("Gelu", ["hb"], ["y"], name="gelu", approximate="tanh"),
    ]
    m = model(nodes, [vi("x", [4, 8])], [vi("y", [4, 16])], inits, opset=20)
    m.ir_version = 9
    return m


def mlp2_gelu():
    # A hidden GELU of tanh (opset 20): cuBLASLt's GELU_AUX_BIAS / DGELU
    # epilogues on the CUDA target.
    nodes, inits = two_layer(5, "Gelu", approximate="tanh")
    m = model(nodes, [vi("x", [4, 8])], [vi("y", [4, 4])], inits, opset=20)
    m.ir_version = 9
    return m


def reductions():
    # A row reduction (Softmax over 64 classes: its maximum and sum) and a
    # column reduction (ReduceSum over 64 rows), the two reduction kernels
    # of the GPU mapping.
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], name="softmax", axis=1),
        helper.make_node("ReduceSum", ["c", "axes"], ["s"], name="sum",
                         keepdims=0),
    ]
    return model(nodes, [vi("x", [4, 64]), vi("c", [64, 8])],
                 [vi("p", [4, 64]), vi("s", [8])], [axes])


def long_reductions():
    # Reductions with few outputs and many iterations, which
    # tsr-gpu-split-reductions splits across blocks: a sum of squares of a
    # 1024 x 1024 matrix (one output), a column sum over 16384 rows of 64,
    # and a row maximum of 8 rows of 131072 (each 2^20 elements).
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
    nodes = [
        helper.make_node("ReduceSumSquare", ["x"], ["n"], name="norm",
                         keepdims=0),
        helper.make_node("ReduceSum", ["c", "axes"], ["s"], name="sum",
                         keepdims=0),
        helper.make_node("ReduceMax", ["r"], ["m"], name="max", axes=[1],
                         keepdims=0),
    ]
    return model(nodes, [vi("x", [1024, 1024]), vi("c", [16384, 64]),
                         vi("r", [8, 131072])],
                 [vi("n", []), vi("s", [64]), vi("m", [8])], [axes])


def elementwise():
    # Only elementwise and broadcast ops (Exp, Tanh, Sigmoid, Erf, Sqrt,
    # Div, a broadcast add): the GPU mapping must give the CPU target's bits.
    # The chain runs twice: on x (53x37, a thread per element) and on v
    # (53x40, four elements to a thread with vector loads and stores).
    inits, nodes = [], []
    for x, y, width in (("x", "y", 37), ("v", "z", 40)):
        inits.append(numpy_helper.from_array(
            np.linspace(-1, 1, width, dtype=np.float32).reshape(1, width),
            f"{x}_b"))
        nodes += [
            helper.make_node("Add", [x, f"{x}_b"], [f"{x}_h"], name=f"{x}_add"),
            helper.make_node("Exp", [f"{x}_h"], [f"{x}_e"], name=f"{x}_exp"),
            helper.make_node("Tanh", [f"{x}_h"], [f"{x}_t"], name=f"{x}_tanh"),
            helper.make_node("Sigmoid", [f"{x}_t"], [f"{x}_g"],
                             name=f"{x}_sigmoid"),
            helper.make_node("Erf", [f"{x}_h"], [f"{x}_r"], name=f"{x}_erf"),
            helper.make_node("Mul", [f"{x}_e", f"{x}_g"], [f"{x}_m"],
                             name=f"{x}_mul"),
            helper.make_node("Sqrt", [f"{x}_e"], [f"{x}_q"], name=f"{x}_sqrt"),
            helper.make_node("Div", [f"{x}_m", f"{x}_q"], [f"{x}_d"],
                             name=f"{x}_div"),
            helper.make_node("Add", [f"{x}_d", f"{x}_r"], [y], name=f"{x}_out"),
        ]
    return model(nodes, [vi("x", [53, 37]), vi("v", [53, 40])],
                 [vi("y", [53, 37]), vi("z", [53, 40])], inits)


def mlp_training_info():
    # The MLP whose training_info updates only w: b stays fixed. (The
    # algorithm graph is a placeholder that names the update binding; Tessera
    # builds its own training step and reads only which initializers the
    # model's training updates.)
    m = mlp()
    info = m.training_info.add()
    info.algorithm.CopyFrom(helper.make_graph(
        [helper.make_node("Identity", ["w"], ["w_new"], name="update")], "algorithm",
        [], [vi("w_new", [4, 3])]))
    binding = info.update_binding.add()
    binding.key, binding.value = "w", "w_new"
    return m


def dropout_train():
    # loss = sum(Dropout(x * w, ratio 0.5, training_mode = true)), w [8].
    w = numpy_helper.from_array(np.ones(8, dtype=np.float32), "w")
    ratio = numpy_helper.from_array(np.array(0.5, dtype=np.float32), "ratio")
    train = numpy_helper.from_array(np.array(True), "training_mode")
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["xw"], name="mul"),
        helper.make_node("Dropout", ["xw", "ratio", "training_mode"], ["d"],
                         name="drop"),
        helper.make_node("ReduceSum", ["d"], ["loss"], keepdims=0, name="sum"),
    ]
    return model(nodes, [vi("x", [4, 8])], [vi("loss", [])], [w, ratio, train])


def bn_train(shared=False):
    # y = BatchNormalization(x, training_mode = 1, momentum 0.75) with x
    # [2, 2, 1, 2] and its running-statistics outputs unread, as PyTorch's
    # TrainingMode.TRAINING export leaves them; `shared`: a second such node
    # on y reads the same running statistics.
    inits = [numpy_helper.from_array(np.ones(2, dtype=np.float32), "scale"),
             numpy_helper.from_array(np.zeros(2, dtype=np.float32), "bias"),
             numpy_helper.from_array(np.array([1, 2], dtype=np.float32), "mean"),
             numpy_helper.from_array(np.array([4, 8], dtype=np.float32), "var")]
    nodes = [helper.make_node(
        "BatchNormalization", ["x", "scale", "bias", "mean", "var"],
        ["y", "mean_out", "var_out"], name="bn", training_mode=1,
        momentum=0.75)]
    if shared:
        nodes.append(helper.make_node(
            "BatchNormalization", ["y", "scale", "bias", "mean", "var"],
            ["z", "mean_out2", "var_out2"], name="bn2", training_mode=1))
    return model(nodes, [vi("x", [2, 2, 1, 2])],
                 [vi("z" if shared else "y", [2, 2, 1, 2])], inits, opset=15)


def bn_train_shared():
    return bn_train(shared=True)


def moe_train():
    # One com.microsoft MoE layer (4 experts, top-2, relu) on x [2, 4, 8]
    # (two sequences of 4 tokens), its router logits the data input r
    # [2, 4, 4] reshaped to [tokens, 4]: the test picks the routing.
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(
        rng.standard_normal((4, 6, 8)).astype(np.float32) * 0.3, "w1")
    w2 = numpy_helper.from_array(
        rng.standard_normal((4, 8, 6)).astype(np.float32) * 0.3, "w2")
    shape = numpy_helper.from_array(np.array([-1, 4], dtype=np.int64), "shape")
    nodes = [helper.make_node("Reshape", ["r", "shape"], ["router"],
                              name="flat"),
             helper.make_node("MoE", ["x", "router", "w1", "", "w2"], ["y"],
                              domain="com.microsoft", name="moe0", k=2)]
    return model(nodes, [vi("x", [2, 4, 8]), vi("r", [2, 4, 4])],
                 [vi("y", [2, 4, 8])], [w1, w2, shape], opset=17,
                 domain_opsets=[helper.make_opsetid("com.microsoft", 1)])


def nonfinite():
    # y = x * w + m32 + t32 + Cast(h16) + Cast(b16) + Cast(d64), each [1030]
    # (past one 1024-value block of the importer's scan): w is finite and
    # trained; each other holds one infinity or NaN, in raw_data of each
    # float type or in float_data, so training freezes it.
    n = 1030
    w = numpy_helper.from_array(np.linspace(-1, 1, n).astype(np.float32), "w")
    m32 = np.zeros(n, dtype=np.float32)
    m32[n - 1] = -np.inf
    t32 = [0.0] * n
    t32[5] = float("inf")
    h16 = np.zeros(n, dtype=np.float16)
    h16[n - 1] = np.inf
    b16 = np.full(n, 0x3F80, dtype=np.uint16)  # bfloat16 1.0
    b16[1024] = 0x7FC0  # bfloat16 NaN
    d64 = np.zeros(n)
    d64[0] = np.nan
    inits = [
        w,
        numpy_helper.from_array(m32, "m32"),
        helper.make_tensor("t32", TensorProto.FLOAT, [n], t32, raw=False),
        numpy_helper.from_array(h16, "h16"),
        helper.make_tensor("b16", TensorProto.BFLOAT16, [n], b16.tobytes(), raw=True),
        numpy_helper.from_array(d64, "d64"),
    ]
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["xw"], name="mul"),
        helper.make_node("Add", ["xw", "m32"], ["a1"], name="add_m32"),
        helper.make_node("Add", ["a1", "t32"], ["a2"], name="add_t32"),
        helper.make_node("Cast", ["h16"], ["h"], name="cast_h16", to=TensorProto.FLOAT),
        helper.make_node("Add", ["a2", "h"], ["a3"], name="add_h16"),
        helper.make_node("Cast", ["b16"], ["b"], name="cast_b16", to=TensorProto.FLOAT),
        helper.make_node("Add", ["a3", "b"], ["a4"], name="add_b16"),
        helper.make_node("Cast", ["d64"], ["d"], name="cast_d64", to=TensorProto.FLOAT),
        helper.make_node("Add", ["a4", "d"], ["y"], name="add_d64"),
    ]
    return model(nodes, [vi("x", [2, n])], [vi("y", [2, n])], inits)


def shape_chain():
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape on a symbolic batch.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"], name="unsq"),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], name="cat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "zero1"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus1"),
    ]
    return model(nodes, [vi("x", ["N", 3, 4])], [vi("y", ["N", 12])], inits)


def old_opset():
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)]
    return model(nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], opset=9)


def cycle():
    nodes = [
        helper.make_node("Relu", ["b"], ["a"], name="first"),
        helper.make_node("Relu", ["a"], ["b"], name="second"),
    ]
    return model(nodes, [vi("x", [2])], [vi("b", [2])])


def missing_input():
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])])


def string_input():
    nodes = [helper.make_node("Identity", ["x"], ["y"], name="id")]
    return model(nodes, [vi("x", [2], TensorProto.STRING)],
                 [vi("y", [2], TensorProto.STRING)])


def unknown_domain():
    nodes = [helper.make_node("Frobnicate", ["x"], ["y"], name="frob",
                              domain="com.example")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])],
                 domain_opsets=[helper.make_opsetid("com.example", 1)])


def newer_op():
    # Trilu appeared in opset 14.
    nodes = [helper.make_node("Trilu", ["x"], ["y"], name="tri")]
    return model(nodes, [vi("x", [3, 3])], [vi("y", [3, 3])], opset=13)


def symbolic():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", ["batch", 8])], [vi("y", ["batch", 8])])


def zero_dim():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", [0, 8])], [vi("y", [0, 8])])


def negative_dim():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(nodes, [vi("x", [-2, 8])], [vi("y", [-2, 8])])


def wrong_type():
    # MatMul of a float and an int64 tensor: ONNX requires equal types.
    w = numpy_helper.from_array(np.ones((4, 3), dtype=np.int64), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return model(nodes, [vi("x", [2, 4])], [vi("y", [2, 3])], [w])


def bool_matmul():
    # MatMul is not defined on bool.
    nodes = [helper.make_node("MatMul", ["x", "x"], ["y"], name="mm")]
    return model(nodes, [vi("x", [2, 2], TensorProto.BOOL)],
                 [vi("y", [2, 2], TensorProto.BOOL)])


def unsupported_op():
    nodes = [helper.make_node("NonZero", ["x"], ["y"], name="nz")]
    return model(nodes, [vi("x", [4])], [vi("y", [1, 4], TensorProto.INT64)])


def external(out):
    data = np.arange(6, dtype=np.float32)
    w = numpy_helper.from_array(data.reshape(2, 3), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    name = os.path.basename(out) + ".weights"
    for k, v in (("location", name), ("offset", "0"), ("length", "24")):
        entry = w.external_data.add()
        entry.key, entry.value = k, v
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    m = model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], [w])
    return m, (os.path.join(os.path.dirname(out), name), data.tobytes())


def main():
    kind, out = sys.argv[1], sys.argv[2]
    if kind == "empty":
        open(out, "wb").close()
        return
    if kind == "random":
        rng = np.random.default_rng(7)
        open(out, "wb").write(rng.integers(0, 256, 512, dtype=np.uint8).tobytes())
        return
    if kind == "truncated":
        data = mlp().SerializeToString()
        open(out, "wb").write(data[: len(data) // 2])
        return
    if kind in ("external", "external_short"):
        m, (path, payload) = external(out)
        if kind == "external_short":
            payload = payload[:10]
        open(path, "wb").write(payload)
        open(out, "wb").write(m.SerializeToString())
        return
    m = globals()[kind]()
    open(out, "wb").write(m.SerializeToString())


if __name__ == "__main__":
    main()
