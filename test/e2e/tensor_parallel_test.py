#!/usr/bin/env python3
"""Tensor parallelism found on unannotated models, against one process.

Two models, each compiled with ``tessera-compile --mode=grad`` once for one
process and with ``--mesh tp=N`` (N = 2 and 4), with and without
``--sequence-parallel``, where
tsr-sharding-propagation decides the layout and tsr-sharding-partition
rewrites the loss function per rank before autodiff:

* the GPT block of make_models.py (MSE on its output): attention with
  MatMul+Add projections and heads by Reshape/Transpose, a GELU MLP, two
  LayerNorms, residuals;
* a 2-layer GPT exported by PyTorch (make_torch_gpt.py: nn.Linear, heads by
  view/transpose, an additive causal mask buffer of -inf, token and
  position embeddings, an untied LM head; cross-entropy on its logits).

Checked:

* the layout is Megatron's: the Q, K, V and FC1 weights split by columns
  (with their biases), the attention output and FC2 weights by rows, the
  norms and the row-parallel biases whole; the token embedding split by
  vocabulary rows and the LM head by vocabulary columns (manifest
  ``sharding``);
* the communication is Megatron's: forward, two all-reduces of the [batch,
  seq, d_model] activations per layer, one after the vocabulary-parallel
  embedding, and for the vocabulary-parallel loss the all-reduced maximum
  and sum of exponentials over [batch, seq] plus the scalar loss, never an
  all-gather (the logits are never gathered); with sequence parallelism
  (Korthikanti et al. 2022) each activation all-reduce becomes a
  reduce-scatter along the sequence, the norms and residuals run on
  sequence blocks, and an all-gather along the sequence precedes every
  column-parallel block and the LM head (the position embedding then
  splits by sequence positions); backward, exactly the transposes of the
  forward collectives (all-gather and reduce-scatter swapped) plus one
  all-reduce per gradient of a whole (replicated) parameter;
* per-rank parameter bytes: the ONNX initializers' sizes, divided by N for
  the split ones, equal what each rank's program takes;
* bytes: ``--explain`` reports 2(N-1)/N·B per rank for every activation
  all-reduce and (N-1)/N·B for every all-gather and reduce-scatter of
  activations, B the activation's bytes (Megatron's formulas);
* numbers: under ``mpirun -np N`` (the runtime's Python binding builds the
  artifact's mesh and its tp group), every rank's loss equals the single process's, and every
  gradient (this rank's block of a split parameter, all of a whole one)
  equals the matching part of the single process's gradient.

Tolerance: float32, rtol 2e-5 and atol 1e-6 relative to the largest
element of any gradient of the model (the key projection's bias has an
analytically zero gradient, softmax being shift-invariant: float32 noise of
1e-10 there is no error). Splitting a contraction or the log-sum-exp over N
ranks sums the same terms in another order: the difference is a few float32
ulps (2^-24 ≈ 6e-8) of the summed magnitudes, measured at most 4.0e-7 (GPT block)
and 7.9e-6 (PyTorch GPT, on its loss of 4.6) of the largest gradient
element; a wrong layout or a missing reduction errs by
O(1).

Usage: tensor_parallel_test.py BUILD_DIR REPO_ROOT
(the worker mode, --worker ARTIFACT INPUTS OUT, is what mpirun runs).
Exits 1 on a failed check, 2 on a setup error.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np

RTOL, ATOL = 2e-5, 1e-6
TORCH_PYTHON = "/usr/bin/python3"

ACT = "tensor<2x16x64xf32>"  # [batch, seq, d_model] of both models


def blk(n):
    """This rank's sequence block of an activation."""
    return f"tensor<2x{16 // n}x64xf32>"


# The vocabulary-parallel loss on its 2 x 16 positions, one row each: the
# maximum (no gradient, so no transpose), the sum of exponentials and the
# loss itself.
LOSS_MAX = ("all_reduce", "tensor<32x1xf32>")
LOSS = [LOSS_MAX, ("all_reduce", "tensor<32xf32>"),
        ("all_reduce", "tensor<f32>")]


def gpt_block_forward(n, sp):
    if not sp:  # two all-reduces
        return [("all_reduce", ACT)] * 2
    # gathered before the column-parallel matmuls, scattered after the
    # row-parallel ones; the MSE's sum over sequence blocks
    return [("all_gather", blk(n)), ("reduce_scatter", ACT)] * 2 + \
        [("all_reduce", "tensor<f32>")]


def torch_gpt_forward(n, sp, layers=2):
    if not sp:  # the embedding's sum, two per layer, the loss
        return [("all_reduce", ACT)] * (2 * layers + 1) + LOSS
    # the embedding's sum scattered over the sequence, per layer gathered
    # and scattered twice, gathered before the LM head, the loss
    return [("reduce_scatter", ACT)] * (2 * layers + 1) + \
        [("all_gather", blk(n))] * (2 * layers + 1) + LOSS


def transposes(forward, n):
    """The backward collectives the forward ones imply."""
    out = []
    for kind, operand in forward:
        if (kind, operand) == LOSS_MAX:
            continue
        if kind == "all_gather":
            out.append(("reduce_scatter", ACT))
        elif kind == "reduce_scatter":
            out.append(("all_gather", blk(n)))
        else:
            out.append((kind, operand))
    return out


# Per model: how to make it (with which Python), the compile flags, its
# forward collectives by tp size and sequence parallelism, and the expected
# layout: column- and row-parallel layers by name (None: checked by count,
# the exporter renaming the weights), parameters that stay whole, the
# embedding split by vocabulary rows.
MODELS = {
    "gpt_block": dict(
        make=["python/tessera_examples/make_models.py", "--only", "gpt_block",
              "--no-verify"],
        python=sys.executable, file="gpt_block.onnx",
        flags=["--loss=mse", "--logits=y"], forward=gpt_block_forward,
        column=["attn.q", "attn.k", "attn.v", "mlp.fc1"],
        row=["attn.out", "mlp.fc2"], whole=["ln1.weight", "ln2.bias", "x"],
        layers=1, vocab_rows=None, vocab=None),
    "torch_gpt": dict(
        make=["python/tessera_examples/make_torch_gpt.py"],
        python=TORCH_PYTHON, file="torch_gpt.onnx",
        flags=["--loss=cross_entropy", "--logits=logits", "--batch-size=2"],
        forward=torch_gpt_forward,
        # nn.Linear weights are exported transposed as onnx::MatMul_*: the
        # layout is checked through the biases' names and counts
        column=None, row=None,
        whole=["blocks.0.ln1.weight", "blocks.1.ln2.bias", "ln_f.weight",
               "blocks.0.proj.bias", "blocks.1.fc2.bias"],
        layers=2, vocab_rows="embed.weight", vocab=96),
}


def fail(msg, code=1):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(code)


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        fail(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n"
             f"{done.stdout}{done.stderr}", 2)
    return done


def block(array, sharding, rank, size):
    """This rank's block of `array` laid out as `sharding` over one axis."""
    for d, axes in enumerate(sharding):
        if axes:
            n = array.shape[d] // size
            array = np.take(array, range(rank * n, (rank + 1) * n), axis=d)
    return array


def worker(artifact, inputs, out):
    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "python"))
    from tessera.runtime import Artifact, Communicator

    world = Communicator.world()
    art = Artifact(artifact)
    mesh = world.mesh(art)
    size, coordinate = mesh.axes["tp"]
    manifest = json.loads((pathlib.Path(artifact) / "manifest.json").read_text())
    specs = manifest["programs"][0]["inputs"]
    arrays = np.load(inputs)
    local = [block(arrays[s["name"]], s.get("sharding", []), coordinate, size)
             for s in specs]
    outputs = art(*local)
    np.savez(out.replace("RANK", str(world.rank)),
             **{f"out{i}": o for i, o in enumerate(outputs)})
    mesh.close()
    art.close()
    world.close()
    return 0


def check_ir(ir, n, sp, model):
    """Megatron's collectives in the per-rank program of --emit=tsr."""
    spec = MODELS[model]
    forward, backward = [], []
    for line in ir.splitlines():
        m = re.search(r"tsr\.(all_reduce|all_gather|reduce_scatter|all_to_all"
                      r"|broadcast_from) .*\{(.*)\} : \((tensor<[^)]*>)\)", line)
        if m:
            (backward if "tsr.backward" in line else forward).append(
                (m.group(1), m.group(2), m.group(3)))
    problems = []
    label = f"{model} tp={n}{' sp' if sp else ''}"
    expected = spec["forward"](n, sp)
    if sorted((k, t) for k, _, t in forward) != sorted(expected):
        problems.append(f"{label}: forward collectives "
                        f"{[(k, t) for k, _, t in forward]}, expected "
                        f"{expected}")
    if any(k != "all_reduce" for k, a, _ in backward if "serves = [" in a):
        problems.append(f"{label}: a gradient is reduced by other than an "
                        f"all_reduce: {backward}")
    back = [(k, t) for k, a, t in backward if "serves = [" not in a]
    if sorted(back) != sorted(transposes(expected, n)):
        problems.append(f"{label}: backward activation collectives {back}, "
                        f"expected {transposes(expected, n)}")
    print(f"{label}: forward {len(forward)} collectives "
          f"({', '.join(sorted(set(k for k, _, _ in forward)))}); backward "
          f"{len(back)} transposes + {len(backward) - len(back)} gradient "
          f"all-reduces of whole values")
    return problems


def check_bytes(explained, n, label):
    """--explain's bytes per rank against Megatron's formulas for the
    activations, B = 2·16·64·4 bytes: an all-reduce sends 2(N-1)/N·B, an
    all-gather or reduce-scatter (N-1)/N·B."""
    b = 2 * 16 * 64 * 4
    want = {"all_reduce": 2 * (n - 1) * b // n,
            "all_gather": (n - 1) * b // n,
            "reduce_scatter": (n - 1) * b // n}
    problems, seen = [], 0
    # The activations' collectives: an op's operand (not the scalar loss,
    # which the function's result needs).
    for m in re.finditer(r"#\d+ (\w+) over tp, (\d+) bytes per rank, forward"
                         r".*: '[a-z_.]+' at .*(needs the pending sum|takes "
                         r"the pending sum|needs dimension 1 of)", explained):
        kind, sent = m.group(1), int(m.group(2))
        seen += 1
        if sent != want[kind]:
            problems.append(f"{label}: {kind} sends {sent} bytes per rank, "
                            f"Megatron's formula gives {want[kind]}")
    if not seen:
        problems.append(f"{label}: --explain lists no activation collective")
    return problems


def check_layout(specs, n, sp, model):
    spec = MODELS[model]
    label = f"{model} tp={n}{' sp' if sp else ''}"
    problems = []
    if spec["column"]:
        for prefix in spec["column"]:
            if specs[prefix + ".weight"] != [[], ["tp"]] or \
                    specs[prefix + ".bias"] != [["tp"]]:
                problems.append(f"{label}: {prefix} is not column-"
                                f"parallel: {specs[prefix + '.weight']}, "
                                f"{specs[prefix + '.bias']}")
        for prefix in spec["row"]:
            if specs[prefix + ".weight"] != [["tp"], []] or \
                    specs[prefix + ".bias"]:
                problems.append(f"{label}: {prefix} is not row-"
                                f"parallel: {specs[prefix + '.weight']}, "
                                f"{specs[prefix + '.bias']}")
    else:
        # The exported nn.Linear weights are transposed initializers with
        # generated names: every block's column-parallel biases are split,
        # and exactly 4 weights per layer are split by columns and 2 by
        # rows, plus the LM head by columns.
        for layer in range(spec["layers"]):
            for name in ("q", "k", "v", "fc1"):
                bias = f"blocks.{layer}.{name}.bias"
                if specs[bias] != [["tp"]]:
                    problems.append(f"{label}: {bias} is not split: "
                                    f"{specs[bias]}")
        columns = sum(1 for v in specs.values() if v == [[], ["tp"]])
        rows = sum(1 for v in specs.values() if v == [["tp"], []])
        # the embedding by vocabulary rows; with sequence parallelism the
        # position embedding follows the activations it is added to, split
        # by sequence positions
        want_rows = 2 * spec["layers"] + (1 if spec["vocab_rows"] else 0) + \
            (1 if sp else 0)
        if specs["pos"] != ([["tp"], []] if sp else []):
            problems.append(f"{label}: the position embedding is "
                            f"{specs['pos']}")
        if columns != 4 * spec["layers"] + 1 or rows != want_rows:
            problems.append(f"{label}: {columns} weights split by "
                            f"columns and {rows} by rows, expected "
                            f"{4 * spec['layers'] + 1} and {want_rows}")
    if spec["vocab_rows"] and specs[spec["vocab_rows"]] != [["tp"], []]:
        problems.append(f"{label}: the embedding is not split by "
                        f"vocabulary rows: {specs[spec['vocab_rows']]}")
    for other in spec["whole"]:
        if specs[other]:
            problems.append(f"{label}: {other} is split: "
                            f"{specs[other]}")
    return problems


def run_model(tmp, model_name, spec, bin_dir, repo, tools_env, forward,
              onnx, numpy_helper, Artifact):
    problems = []
    out = tmp / model_name
    out.mkdir()
    run([spec["python"], repo / spec["make"][0], "--out", out] +
        spec["make"][1:])
    model = out / spec["file"]
    compile_args = [bin_dir / "tessera-compile", model, "--mode=grad"] + \
        spec["flags"]
    run(compile_args + ["-o", out / "single"], env=tools_env)
    single = Artifact(str(out / "single"))
    rng = np.random.default_rng(7)
    init = {i.name: numpy_helper.to_array(i)
            for i in onnx.load(model).graph.initializer}
    arrays = {}
    for info in single.inputs:
        if info.name in init:
            arrays[info.name] = init[info.name]
        elif info.dtype == "int64":  # tokens and labels
            arrays[info.name] = rng.integers(0, spec["vocab"], info.shape)
        else:
            arrays[info.name] = rng.standard_normal(info.shape).astype(
                np.float32)
    np.savez(out / "inputs.npz", **arrays)
    reference = single(*[arrays[i.name] for i in single.inputs])
    names = [o.name for o in single.outputs]
    single.close()
    scale = max(float(np.abs(r).max()) for r in reference[1:])

    for n, sp in ((2, False), (4, False), (2, True), (4, True)):
        label = f"{model_name} tp={n}{' sp' if sp else ''}"
        art = out / f"tp{n}{'sp' if sp else ''}"
        mesh = [f"--mesh=tp={n}"] + (["--sequence-parallel"] if sp else [])
        explained = run(compile_args + mesh + ["-o", art, "--explain"],
                        env=tools_env).stdout
        problems += check_bytes(explained, n, label)
        ir = run(compile_args + mesh + ["--emit=tsr"], env=tools_env).stdout
        problems += check_ir(ir, n, sp, model_name)
        manifest = json.loads((art / "manifest.json").read_text())
        input_specs = manifest["programs"][0]["inputs"]
        problems += check_layout({s["name"]: s.get("sharding", [])
                                  for s in input_specs}, n, sp, model_name)
        # Per-rank parameter bytes: every initializer's bytes, divided by n
        # where it is split, against the shapes this rank's program takes.
        expected = sum(init[s["name"]].nbytes // (n if s.get("sharding") else 1)
                       for s in input_specs if s.get("role") == "param")
        held = sum(4 * int(np.prod(s["shape"])) for s in input_specs
                   if s.get("role") == "param")
        whole = sum(init[s["name"]].nbytes for s in input_specs
                    if s.get("role") == "param")
        if held != expected:
            problems.append(f"{label}: the program takes {held} parameter "
                            f"bytes per rank, the initializers split as the "
                            f"manifest says give {expected}")
        print(f"{label}: parameters {held} bytes per rank of {whole}")
        done = subprocess.run(
            ["mpirun", "-np", str(n)] + forward +
            [sys.executable, __file__, "--worker", str(art),
             str(out / "inputs.npz"), str(art) + ".RANK.npz"],
            capture_output=True, text=True, env=tools_env, timeout=600)
        if done.returncode != 0:
            fail(f"{label}: mpirun -np {n} exited {done.returncode}:\n"
                 f"{done.stdout}{done.stderr}")
        worst, worst_name = 0.0, ""
        grad_specs = manifest["programs"][0]["outputs"]
        for rank in range(n):
            got = np.load(str(art) + f".{rank}.npz")
            for i, name in enumerate(names):
                value = got[f"out{i}"]
                sharding = []
                if "of" in grad_specs[i]:
                    sharding = input_specs[grad_specs[i]["of"]].get(
                        "sharding", [])
                want = block(reference[i], sharding, rank, n)
                diff = float(np.max(np.abs(value - want)))
                if diff / scale > worst:
                    worst, worst_name = diff / scale, name
                worst = max(worst, diff / scale)
                if np.any(np.abs(value - want) >
                          ATOL * scale + RTOL * np.abs(want)):
                    problems.append(
                        f"{label} rank {rank}: {name} differs "
                        f"from one process by {diff:.3g} (largest gradient "
                        f"element {scale:.3g})")
        print(f"{label}: loss and {len(names) - 1} gradients on "
              f"{n} ranks match one process; largest difference "
              f"{worst:.2e} of the largest gradient element ({worst_name})")
    return problems


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        return worker(*sys.argv[2:])
    if len(sys.argv) != 3:
        fail("usage: tensor_parallel_test.py BUILD_DIR REPO_ROOT", 2)
    build, repo = map(pathlib.Path, sys.argv[1:])
    bin_dir = build / "bin"
    sys.path.insert(0, str(repo / "python"))
    import onnx
    from onnx import numpy_helper
    from tessera.runtime import Artifact

    tools_env = {k: v for k, v in os.environ.items()
                 if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    forward = []
    for name in ("LD_PRELOAD", "ASAN_OPTIONS"):
        if name in os.environ:
            forward += ["-x", f"{name}={os.environ[name]}"]
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch, onnx"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        fail(f"{TORCH_PYTHON} cannot import torch and onnx (Debian "
             f"python3-torch, python3-onnx; scripts/setup.sh installs them):"
             f"\n{probe.stderr}", 2)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for model_name, spec in MODELS.items():
            problems += run_model(tmp, model_name, spec, bin_dir, repo,
                                  tools_env, forward, onnx, numpy_helper,
                                  Artifact)
    if problems:
        for p in problems:
            print(f"FAIL: {p}", file=sys.stderr)
        return 1
    print("tensor parallelism matches one process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
