#!/usr/bin/env python3
"""GPU benchmark of the CUDA target: its matrix products against cuBLAS
alone, its generated memory-bound kernels against PyTorch and a device copy,
and a GPT training step against PyTorch eager, on the same GPU in the same
run.

Two phases, so that the compiling machine need not be the one with the GPU
(the same split as test/e2e/gpu_test.py):

* ``--prepare DIR`` (no GPU: tessera-compile and the venv's onnx) writes
  one ONNX model per GEMM shape, ``y = MatMul(x, w)`` with both operands
  graph inputs (the inputs are made on the GPU machine: 4096 x 4096 f32
  operands would not travel), and compiles each with ``--target=cuda``, in
  f32 and with ``--precision=bf16`` (the operands rounded to bf16 by a
  generated kernel, the product summed in f32);
* ``--run DIR`` (tessera-run, Python with numpy and PyTorch) writes random
  inputs, times ``tessera-run --repeat N`` on each artifact (the program
  alone: launches, the cuBLASLt call, the pool's allocation, one stream
  synchronization) and the same product through ``torch.matmul`` (cuBLAS,
  TF32 off for f32; bf16 operands with a bf16 result), both the minimum
  over N, and prints a table.

The training row: the GPT of python/tessera_examples/make_torch_gpt.py
(4 layers, d_model 256, 8 heads, 128 tokens, vocabulary 96; about 3.2M
parameters), exported by PyTorch at ``--prepare`` (with /usr/bin/python3's
PyTorch) and compiled with ``--mode=train --target=cuda``, cross-entropy,
Adam, batch 16, in f32; at ``--run`` 30 steps of ``tessera-run --train``
and 30 steps of the same module in PyTorch eager (the same class, loss,
optimizer and batch, TF32 off), each the median step of steps 11 to 30.
The same step in bf16 too (``--precision=bf16``: products in bf16 with f32
accumulation, attention and its backward pass through cuDNN's fused SDPA)
against PyTorch eager under ``torch.autocast(dtype=torch.bfloat16)``. Then
a GPT-2-small-shaped step (GPT2: 12 layers, d_model 768, 12 heads, 1024
tokens, vocabulary 50304; 163M parameters, batch 8, AdamW) in bf16 the
same way. Each training row gives the model FLOP rate (bench/common.py's
gpt_step_flops) and, in bf16, the MFU (of the GPU's dense bf16 peak,
PEAK_BF16_TFLOPS or --peak-tflops) and the fraction of torch.matmul's bf16
rate on the first GEMM shape, measured above. The training artifacts leave
--prepare without their params' values (thin_artifact) and --run draws
them again (restore_artifact): GPT-2's are 650 MB, too many to carry to a
GPU machine without a compiler.

The memory-bound rows: an elementwise chain (``x * sigmoid(x) + x``, one
fused kernel), a row softmax (warp reductions) and a column sum (block
reductions) of a 8192 x 4096 f32 tensor, each the minimum of N runs of
``tessera-run --repeat`` against the same op in PyTorch, as GB/s of the
bytes the op must move (its input read once, its output written once)
and as a fraction of a device-to-device copy of the input measured in the
same run (``torch.Tensor.copy_``), the bandwidth a kernel can reach.

The GEMM rows give TFLOP/s (2·M·N·K per product) and the ratio to
torch.matmul on the same shape: what the library path costs beyond cuBLAS
itself. In bf16 the Tessera program also rounds both f32 operands to bf16
before the product, which the torch baseline (given bf16 tensors) does not.

Usage:
  .venv/bin/python bench/gpu.py --prepare DIR      # here
  python3 bench/gpu.py --run DIR [--bin DIR] [--repeat 20] [--peak-tflops T]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (M, N, K): square, then the GPT-2-small MLP and QKV projections of a
# 8 x 1024-token batch.
SHAPES = [(4096, 4096, 4096), (8192, 3072, 768), (8192, 768, 3072),
          (8192, 2304, 768)]
PRECISIONS = {"f32": [], "bf16": ["--precision=bf16"]}
TORCH_PYTHON = "/usr/bin/python3"
GPT = {"layers": 4, "d_model": 256, "heads": 8, "seq": 128, "vocab": 96}
# GPT-2 small's shape, with nanoGPT's vocabulary padded to a multiple of 64
# (50304: the loss's kernels get 128-bit accesses, which 50257 would not).
GPT2 = {"layers": 12, "d_model": 768, "heads": 12, "seq": 1024,
        "vocab": 50304}
# name: the model, the step's batch, optimizer and learning rate, and the
# precisions it is compiled in. Each artifact travels without its params'
# values (thin_artifact).
TRAIN = {
    "gpt": {"config": GPT, "batch": 16, "optimizer": "adam", "lr": 3e-3,
            "precisions": ("f32", "bf16")},
    "gpt2": {"config": GPT2, "batch": 8, "optimizer": "adamw", "lr": 6e-4,
             "weight_decay": 0.1, "precisions": ("bf16",)},
}
STEPS = 30
# Dense bf16 tensor-core TFLOP/s (NVIDIA's data sheets, without sparsity),
# by a substring of torch.cuda.get_device_name(), first match.
PEAK_BF16_TFLOPS = [("H200", 989.4), ("H100 PCIe", 756.5),
                    ("H100 NVL", 835.5), ("H100", 989.4), ("A100", 312.0)]
# name: (ONNX nodes from x to y, y's shape for x of BANDWIDTH_SHAPE).
BANDWIDTH_SHAPE = (8192, 4096)
BANDWIDTH = {
    "elementwise": ([("Sigmoid", ["x"], ["s"], {}), ("Mul", ["x", "s"], ["m"], {}),
                     ("Add", ["m", "x"], ["y"], {})], list(BANDWIDTH_SHAPE)),
    "softmax": ([("Softmax", ["x"], ["y"], {"axis": 1})], list(BANDWIDTH_SHAPE)),
    "column_sum": ([("ReduceSum", ["x", "axes"], ["y"], {"keepdims": 0})],
                   [BANDWIDTH_SHAPE[1]]),
}


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"gpu.py: error: {' '.join(cmd)} exited {proc.returncode}:\n"
                 f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def name_of(shape, precision):
    return f"gemm_{shape[0]}x{shape[1]}x{shape[2]}_{precision}"


def prepare(work, bin_dir):
    import onnx
    from onnx import TensorProto, helper
    os.makedirs(work, exist_ok=True)
    plan = []
    for m, n, k in SHAPES:
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])], "gemm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k]),
             helper.make_tensor_value_info("w", TensorProto.FLOAT, [k, n])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])])
        model = os.path.join(work, f"gemm_{m}x{n}x{k}.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[
            helper.make_opsetid("", 17)]), model)
        for precision, flags in PRECISIONS.items():
            name = name_of((m, n, k), precision)
            run([os.path.join(bin_dir, "tessera-compile"), model,
                 "--target=cuda", "-o", os.path.join(work, name), *flags])
            plan.append({"name": name, "shape": [m, n, k],
                         "precision": precision})
    import numpy as np
    from onnx import numpy_helper
    for name, (nodes, out_shape) in BANDWIDTH.items():
        axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
        graph = helper.make_graph(
            [helper.make_node(op, ins, outs, **attrs)
             for op, ins, outs, attrs in nodes], name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                           list(BANDWIDTH_SHAPE))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
            [axes] if name == "column_sum" else [])
        model = os.path.join(work, f"{name}.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[
            helper.make_opsetid("", 17)]), model)
        run([os.path.join(bin_dir, "tessera-compile"), model, "--target=cuda",
             "-o", os.path.join(work, f"bw_{name}")])
    for model, train in TRAIN.items():
        prepare_training(work, bin_dir, model, train)
    with open(os.path.join(work, "plan.json"), "w") as f:
        json.dump(plan, f)
    print(f"gpu.py: prepared {len(plan)} artifacts in {work}; run it with "
          f"--run on a machine with a GPU")


def artifact_name(model, precision):
    return f"{model}_train" + ("" if precision == "f32" else f"_{precision}")


def prepare_training(work, bin_dir, model, train):
    """Exports `model` with PyTorch, compiles its training step in each of
    its precisions and writes its token stream (uint16 ids, enough windows
    for STEPS steps)."""
    import numpy as np
    config = train["config"]
    out = os.path.join(work, model)
    run([TORCH_PYTHON, os.path.join(ROOT, "python", "tessera_examples",
                                    "make_torch_gpt.py"), "--out", out,
         *[f"--{k.replace('_', '-')}={v}" for k, v in config.items()]])
    onnx_path = os.path.join(out, "torch_gpt.onnx")
    for precision in train["precisions"]:
        art = os.path.join(work, artifact_name(model, precision))
        run([os.path.join(bin_dir, "tessera-compile"), onnx_path,
             "--mode=train", "--loss=cross_entropy", "--logits=logits",
             f"--batch-size={train['batch']}",
             f"--optimizer={train['optimizer']}", f"--lr={train['lr']}",
             f"--weight-decay={train.get('weight_decay', 0.0)}",
             "--target=cuda", "-o", art, *PRECISIONS[precision]])
        thin_artifact(art)
    shutil.rmtree(out)
    np.random.default_rng(0).integers(
        0, config["vocab"], train["batch"] * (config["seq"] + 1) * (STEPS + 1),
        dtype=np.uint16).tofile(os.path.join(work, f"tokens_{model}.bin"))


def thin_artifact(art):
    """Drops the values of a training artifact's trained params from the
    ONNX model it starts from, keeping each one's dims, type, mean and standard
    deviation in ART/thinned.json, so that the artifact can travel to a GPU
    machine without a compiler (GPT-2's 163M f32 params are 650 MB; the
    artifact without them a few MB). restore_artifact fills them back."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    # The trained params: a frozen one may be structured (a mask, a table)
    # and keeps its values.
    frozen = manifest.get("frozen", {})
    params = {t["name"] for program in manifest["programs"]
              for t in program["inputs"]
              if t.get("role") == "param" and t["name"] not in frozen}
    path = os.path.join(art, manifest["onnx"])
    model = onnx.load(path)
    thinned = []
    for tensor in model.graph.initializer:
        if tensor.name not in params:
            continue
        values = numpy_helper.to_array(tensor).astype(np.float64)
        thinned.append({"name": tensor.name, "dims": list(tensor.dims),
                        "data_type": tensor.data_type,
                        "mean": float(values.mean()),
                        "std": float(values.std())})
        for field in ("raw_data", "float_data", "int32_data", "int64_data",
                      "double_data"):
            tensor.ClearField(field)
    if len(thinned) != len(params):
        sys.exit(f"gpu.py: error: {path} holds {len(thinned)} of the "
                 f"{len(params)} params of {art}/manifest.json")
    onnx.save(model, path)
    with open(os.path.join(art, "thinned.json"), "w") as f:
        json.dump(thinned, f)


def restore_artifact(art):
    """The inverse of thin_artifact, where the benchmark runs: each param
    drawn from a normal distribution of its recorded mean and standard
    deviation (seeded by its position). Only the scale of the weights can
    change a step's time (through non-finite values or denormals), not
    their values. Does nothing to an artifact that was not thinned."""
    import numpy as np
    import onnx
    from onnx import helper
    record = os.path.join(art, "thinned.json")
    if not os.path.exists(record):
        return
    with open(record) as f:
        thinned = {t["name"]: t for t in json.load(f)}
    with open(os.path.join(art, "manifest.json")) as f:
        path = os.path.join(art, json.load(f)["onnx"])
    model = onnx.load(path)
    for index, tensor in enumerate(model.graph.initializer):
        entry = thinned.get(tensor.name)
        if entry is None:
            continue
        dtype = helper.tensor_dtype_to_np_dtype(entry["data_type"])
        values = np.random.default_rng(index).normal(
            entry["mean"], entry["std"], entry["dims"]).astype(dtype)
        tensor.raw_data = values.tobytes()
    onnx.save(model, path)
    os.remove(record)


def torch_ms(m, n, k, precision, repeat):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = torch.float32 if precision == "f32" else torch.bfloat16
    x = torch.randn(m, k, device="cuda").to(dtype)
    w = torch.randn(k, n, device="cuda").to(dtype)
    for _ in range(3):
        torch.matmul(x, w)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
    best = float("inf")
    for _ in range(repeat):
        start.record()
        torch.matmul(x, w)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    return best


def write_inputs(directory, m, n, k):
    import numpy as np
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(0)
    np.save(os.path.join(directory, "input_0.npy"),
            rng.standard_normal((m, k), dtype=np.float32))
    np.save(os.path.join(directory, "input_1.npy"),
            rng.standard_normal((k, n), dtype=np.float32))


def torch_step_ms(train, bf16=False):
    import contextlib
    import statistics
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python", "tessera_examples"))
    from make_torch_gpt import GPT as Model
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    config = train["config"]
    model = Model(config["vocab"], config["seq"], config["d_model"],
                  config["heads"], config["layers"]).cuda().train()
    optimizer = (torch.optim.AdamW if train["optimizer"] == "adamw"
                 else torch.optim.Adam)(
        model.parameters(), lr=train["lr"],
        weight_decay=train.get("weight_decay", 0.0))
    tokens = torch.randint(0, config["vocab"],
                           (train["batch"], config["seq"] + 1), device="cuda")
    times = []
    for _ in range(STEPS):
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        start.record()
        with (torch.autocast("cuda", dtype=torch.bfloat16) if bf16
              else contextlib.nullcontext()):
            logits = model(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, config["vocab"]).float(),
                tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    del model, optimizer
    torch.cuda.empty_cache()
    return statistics.median(times[10:])


def torch_bandwidth_ms(name, repeat):
    """The minimum over `repeat` runs of the op in PyTorch, and of a
    device-to-device copy of its input."""
    import torch
    x = torch.randn(*BANDWIDTH_SHAPE, device="cuda")
    copy = torch.empty_like(x)
    ops = {"elementwise": lambda: x * torch.sigmoid(x) + x,
           "softmax": lambda: torch.softmax(x, dim=1),
           "column_sum": lambda: x.sum(dim=0)}

    def best(fn):
        fn()
        times = []
        for _ in range(repeat):
            start, end = torch.cuda.Event(True), torch.cuda.Event(True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return min(times)
    return best(ops[name]), best(lambda: copy.copy_(x))


def bandwidth_rows(work, tessera_run, repeat):
    import numpy as np
    inputs = os.path.join(work, "in_bandwidth")
    if not os.path.isdir(inputs):
        os.makedirs(inputs)
        np.save(os.path.join(inputs, "input_0.npy"),
                np.random.default_rng(0).standard_normal(
                    BANDWIDTH_SHAPE, dtype=np.float32))
    print(f"\nMemory-bound kernels, {BANDWIDTH_SHAPE[0]} x "
          f"{BANDWIDTH_SHAPE[1]} f32, minimum of {repeat} runs each")
    print("| op | Tessera ms | Tessera GB/s | torch ms | torch GB/s | "
          "copy GB/s | Tessera / copy (bandwidth) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    elements = BANDWIDTH_SHAPE[0] * BANDWIDTH_SHAPE[1]
    for name, (_, out_shape) in BANDWIDTH.items():
        out = run([tessera_run, os.path.join(work, f"bw_{name}"),
                   "--inputs-dir", inputs, "--repeat", str(repeat)])
        found = re.search(r"min ([0-9.]+) ms", out)
        if not found:
            sys.exit(f"gpu.py: error: unexpected tessera-run output: {out}")
        ours = float(found.group(1))
        theirs, copy = torch_bandwidth_ms(name, repeat)
        moved = 4.0 * (elements + int(np.prod(out_shape)))
        gbs = lambda ms, nbytes=moved: nbytes / ms / 1e6
        copy_gbs = gbs(copy, 8.0 * elements)
        print(f"| {name} | {ours:.3f} | {gbs(ours):.0f} | {theirs:.3f} | "
              f"{gbs(theirs):.0f} | {copy_gbs:.0f} | "
              f"{gbs(ours) / copy_gbs:.2f} |")


def tessera_step_ms(work, tessera_run, model, precision):
    import statistics
    name = artifact_name(model, precision)
    restore_artifact(os.path.join(work, name))
    log = os.path.join(work, f"{name}.log.json")
    run([tessera_run, os.path.join(work, name), "--train", "--data",
         os.path.join(work, f"tokens_{model}.bin"), "--steps", str(STEPS),
         "--log-json", log])
    with open(log) as f:
        steps = [json.loads(line) for line in f if line.strip()]
    return statistics.median(1e3 * s["seconds"] for s in steps[10:])


def peak_bf16_tflops(override):
    """The GPU's dense bf16 peak and where it comes from."""
    import torch
    device = torch.cuda.get_device_name()
    if override:
        return override, f"{device}, --peak-tflops {override:g}"
    for key, tflops in PEAK_BF16_TFLOPS:
        if key in device:
            return tflops, f"{device}'s {tflops:g} dense bf16 TFLOP/s"
    return None, device


def training_rows(work, tessera_run, matmul_bf16_tflops, peak_override):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import common
    peak, peak_source = peak_bf16_tflops(peak_override)
    for model, train in TRAIN.items():
        config = train["config"]
        flops = common.gpt_step_flops(config["d_model"], config["seq"],
                                      config["vocab"], config["layers"],
                                      train["batch"])
        print(f"\n{model} training step ({config['layers']} layers, d_model "
              f"{config['d_model']}, {config['heads']} heads, "
              f"{config['seq']} tokens, vocabulary {config['vocab']}, batch "
              f"{train['batch']}, {train['optimizer']}; "
              f"{flops / 1e12:.2f} model TFLOP a step), median of steps "
              f"11-{STEPS}")
        print("| precision | Tessera ms | PyTorch eager ms | Tessera / PyTorch "
              "(time) | Tessera TFLOP/s | PyTorch TFLOP/s | Tessera MFU | "
              "PyTorch MFU | Tessera / torch.matmul bf16 rate |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for precision in train["precisions"]:
            ours = tessera_step_ms(work, tessera_run, model, precision)
            theirs = torch_step_ms(train, bf16=precision == "bf16")
            rate = lambda ms: flops / ms / 1e9
            bf16 = precision == "bf16"
            mfu = lambda ms: (f"{rate(ms) / peak / 1e3:.1%}" if bf16 and peak
                              else "-")
            of_matmul = (f"{rate(ours) / matmul_bf16_tflops:.2f}"
                         if bf16 and matmul_bf16_tflops else "-")
            print(f"| {precision} | {ours:.2f} | {theirs:.2f} | "
                  f"{ours / theirs:.2f} | {rate(ours):.1f} | "
                  f"{rate(theirs):.1f} | {mfu(ours)} | {mfu(theirs)} | "
                  f"{of_matmul} |")
    print(f"\nMFU: model FLOPs (bench/common.py gpt_step_flops) per second "
          f"over {peak_source if peak else peak_source + ': unknown peak, pass --peak-tflops'}; "
          f"the last column over torch.matmul's bf16 "
          f"{SHAPES[0][0]}^3 rate measured above")


def run_phase(work, bin_dir, repeat, peak_override):
    with open(os.path.join(work, "plan.json")) as f:
        plan = json.load(f)
    tessera_run = os.path.join(bin_dir, "tessera-run")
    matmul_bf16_tflops = None
    print(f"GEMM, minimum of {repeat} runs each")
    print("| M x N x K | precision | Tessera ms | Tessera TFLOP/s | "
          "torch.matmul ms | torch TFLOP/s | Tessera / torch (time) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for entry in plan:
        m, n, k = entry["shape"]
        inputs = os.path.join(work, f"in_{m}x{n}x{k}")
        if not os.path.isdir(inputs):
            write_inputs(inputs, m, n, k)
        out = run([tessera_run, os.path.join(work, entry["name"]),
                   "--inputs-dir", inputs, "--repeat", str(repeat)])
        found = re.search(r"min ([0-9.]+) ms", out)
        if not found:
            sys.exit(f"gpu.py: error: unexpected tessera-run output: {out}")
        ours = float(found.group(1))
        theirs = torch_ms(m, n, k, entry["precision"], repeat)
        flops = 2.0 * m * n * k
        if (m, n, k) == SHAPES[0] and entry["precision"] == "bf16":
            matmul_bf16_tflops = flops / theirs / 1e9
        print(f"| {m} x {n} x {k} | {entry['precision']} | {ours:.3f} | "
              f"{flops / ours / 1e9:.1f} | {theirs:.3f} | "
              f"{flops / theirs / 1e9:.1f} | {ours / theirs:.2f} |")
    bandwidth_rows(work, tessera_run, repeat)
    training_rows(work, tessera_run, matmul_bf16_tflops, peak_override)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    phase = parser.add_mutually_exclusive_group(required=True)
    phase.add_argument("--prepare", metavar="DIR")
    phase.add_argument("--run", metavar="DIR")
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the GPU's dense bf16 TFLOP/s for MFU (default: "
                        "from its name, PEAK_BF16_TFLOPS)")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare, args.bin)
    else:
        run_phase(args.run, args.bin, args.repeat, args.peak_tflops)


if __name__ == "__main__":
    main()
