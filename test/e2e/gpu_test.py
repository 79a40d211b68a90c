#!/usr/bin/env python3
"""The CUDA target against the CPU target, on a GPU.

Two phases, so that the compiling machine need not be the one with the GPU:

* ``--prepare DIR`` (no GPU needed: tessera-compile, the venv's numpy, onnx
  and onnxruntime, and /usr/bin/python3 with PyTorch for the exported GPT)
  compiles every case for ``--target=cpu`` and ``--target=cuda``, runs the
  CPU artifacts and writes their results and DIR/plan.json;
* ``--run DIR`` (tessera-run and Python with numpy, onnx and onnxruntime)
  runs the CUDA artifacts and compares.

Without either, both phases run in a temporary directory. The cases:

* inference of the bundled GPT block and CNN: outputs against onnxruntime
  (rtol 1e-4, as e2e-examples) and against the CPU target;
* the gradients (``--mode=grad``) of the character LM for its initial
  weights and first batch, every one against the CPU target's;
* 20 Adam steps of the character LM and of a 2-layer GPT exported by
  PyTorch: every loss against the CPU target's.

Tolerance against the CPU target: 1e-5, relative to the largest magnitude of
the compared tensor (or to the loss). The kernels sum in another order than
the CPU target's BLAS and vectorized loops (a serial loop per output
element), so results differ by rounding: f32's 6e-8 unit roundoff times
reductions of up to 256 terms bounds that by about 1.5e-5 in the worst case
and far less in practice (the H200 run in docs/gpu.md measured 7e-7).

Exits 0 when every case passes, 1 on a failure, 2 on a setup error, and 77
(ctest's skip code) when ``--run`` finds no GPU (nvidia-smi lists none).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

TOLERANCE = 1e-5
STEPS = 20
TORCH_PYTHON = "/usr/bin/python3"

failures = []


def check(ok, message):
    print(("PASS " if ok else "FAIL ") + message, flush=True)
    if not ok:
        failures.append(message)


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                            **kw)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise RuntimeError(f"{' '.join(cmd)} exited {result.returncode}")
    return result.stdout


def read_pb(path):
    import onnx
    from onnx import numpy_helper
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(float(np.abs(b).max()), 1e-30)
    return float(np.abs(a - b).max()) / scale


def losses(log):
    with open(log) as f:
        return [json.loads(line)["loss"] for line in f]


def call(root, bin_dir, art, inputs_dir, out_dir):
    """Calls artifact `art` once through the Python binding (tessera-run
    runs no --mode=grad artifact) on inputs_dir's input_<i>.npy, writing
    out_dir/output_<i>.npy."""
    os.environ.setdefault("TESSERA_RUNTIME_LIB", os.path.join(
        bin_dir, "..", "lib", "libtessera_runtime.so"))
    sys.path.insert(0, os.path.join(root, "python"))
    from tessera.runtime import Artifact
    with Artifact(art) as artifact:
        arrays = [np.load(os.path.join(inputs_dir, f"input_{i}.npy"))
                  for i in range(len(artifact.inputs))]
        results = artifact(*arrays)
    os.makedirs(out_dir, exist_ok=True)
    for i, result in enumerate(results):
        np.save(os.path.join(out_dir, f"output_{i}.npy"), result)


def grad_inputs(model_path, manifest, tokens, out_dir):
    """input_<i>.npy for a --mode=grad artifact: initializers by name, the
    first windows of `tokens` for the data and its shifted labels."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(model_path)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    stream = np.fromfile(tokens, dtype="<u2")
    os.makedirs(out_dir, exist_ok=True)
    for i, spec in enumerate(manifest["programs"][0]["inputs"]):
        shape = spec["shape"]
        if spec["name"] in inits:
            value = inits[spec["name"]]
        else:
            count = int(np.prod(shape))
            offset = 1 if spec.get("role") == "label" else 0
            value = stream[offset:offset + count].reshape(shape)
        np.save(os.path.join(out_dir, f"input_{i}.npy"),
                value.astype(np.dtype(spec["dtype"])))


def prepare(root, bin_dir, py, work):
    examples = os.path.join(root, "python", "tessera_examples")
    compile_ = os.path.join(bin_dir, "tessera-compile")
    tessera_run = os.path.join(bin_dir, "tessera-run")
    run([py, os.path.join(examples, "make_models.py"), "--out", work])
    run([py, os.path.join(examples, "make_charlm.py"), "--out",
         os.path.join(work, "lm"), "--seq", "32", "--batch", "16", "--layers",
         "1", "--d-model", "64", "--heads", "4", "--no-verify"])
    run([TORCH_PYTHON, os.path.join(examples, "make_torch_gpt.py"), "--out",
         os.path.join(work, "gpt")])
    tokens = os.path.join(work, "lm", "tokens.bin")
    plan = {"infer": [], "grad": [], "train": []}

    def both(name, model, flags):
        for target in ("cpu", "cuda"):
            run([compile_, model, f"--target={target}", "-o",
                 os.path.join(work, f"{name}.{target}"), *flags])

    for name in ("gpt_block", "cnn"):
        both(name, os.path.join(work, f"{name}.onnx"), [])
        out = os.path.join(work, f"{name}.cpu.out")
        os.makedirs(out, exist_ok=True)
        run([tessera_run, os.path.join(work, f"{name}.cpu"), "--inputs-dir",
             os.path.join(work, f"{name}_inputs"), "--outputs-dir", out])
        plan["infer"].append(name)

    lm = os.path.join(work, "lm", "charlm.onnx")
    train = ["--loss=cross_entropy", "--logits=logits", "--batch-size=16"]
    both("charlm_grad", lm, ["--mode=grad", *train])
    with open(os.path.join(work, "charlm_grad.cpu", "manifest.json")) as f:
        manifest = json.load(f)
    grad_in = os.path.join(work, "charlm_grad_inputs")
    grad_inputs(lm, manifest, tokens, grad_in)
    call(root, bin_dir, os.path.join(work, "charlm_grad.cpu"), grad_in,
         os.path.join(work, "charlm_grad.cpu.out"))
    plan["grad"].append("charlm_grad")

    for name, model, batch in (("charlm", lm, 16),
                               ("gpt", os.path.join(work, "gpt",
                                                    "torch_gpt.onnx"), 8)):
        both(name, model, ["--mode=train", "--loss=cross_entropy",
                           "--logits=logits", f"--batch-size={batch}",
                           "--optimizer=adam", "--lr=3e-3"])
        log = os.path.join(work, f"{name}.cpu.json")
        run([tessera_run, os.path.join(work, f"{name}.cpu"), "--train",
             "--data", tokens, "--steps", str(STEPS), "--threads", "1",
             "--log-json", log])
        plan["train"].append(name)
    shutil.copy(tokens, os.path.join(work, "tokens.bin"))
    with open(os.path.join(work, "plan.json"), "w") as f:
        json.dump(plan, f)


def have_gpu():
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                 text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listing.returncode == 0 and "GPU" in listing.stdout


def run_on_gpu(root, bin_dir, py, work):
    tessera_run = os.path.join(bin_dir, "tessera-run")
    with open(os.path.join(work, "plan.json")) as f:
        plan = json.load(f)
    compare = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                           "..", "python", "tessera_examples", "compare.py")
    for name in plan["infer"]:
        out = os.path.join(work, f"{name}.cuda.out")
        os.makedirs(out, exist_ok=True)
        inputs = os.path.join(work, f"{name}_inputs")
        run([tessera_run, os.path.join(work, f"{name}.cuda"), "--inputs-dir",
             inputs, "--outputs-dir", out])
        ort = subprocess.run([py, compare, os.path.join(work, f"{name}.onnx"),
                              "--inputs-dir", inputs, "--outputs-dir", out,
                              "--rtol", "1e-4"], capture_output=True, text=True)
        check(ort.returncode == 0, f"{name}: the cuda target's outputs match "
              "onnxruntime (rtol 1e-4)")
        for pb in sorted(os.listdir(out)):
            worst = relative(read_pb(os.path.join(out, pb)),
                             read_pb(os.path.join(work, f"{name}.cpu.out", pb)))
            check(worst <= TOLERANCE, f"{name} {pb}: cuda against cpu, "
                  f"{worst:.2e} of the largest magnitude (at most {TOLERANCE:g})")
    for name in plan["grad"]:
        out = os.path.join(work, f"{name}.cuda.out")
        call(root, bin_dir, os.path.join(work, f"{name}.cuda"),
             os.path.join(work, f"{name}_inputs"), out)
        with open(os.path.join(work, f"{name}.cpu", "manifest.json")) as f:
            outputs = json.load(f)["programs"][0]["outputs"]
        worst, where = 0.0, ""
        for i, spec in enumerate(outputs):
            npy = f"output_{i}.npy"
            diff = relative(np.load(os.path.join(out, npy)),
                            np.load(os.path.join(work, f"{name}.cpu.out", npy)))
            if diff >= worst:
                worst, where = diff, spec["name"]
        check(worst <= TOLERANCE, f"{name}: {len(outputs)} outputs (loss and "
              f"gradients) against cpu, worst {worst:.2e} of the largest "
              f"magnitude ({where}; at most {TOLERANCE:g})")
    for name in plan["train"]:
        log = os.path.join(work, f"{name}.cuda.json")
        run([tessera_run, os.path.join(work, f"{name}.cuda"), "--train",
             "--data", os.path.join(work, "tokens.bin"), "--steps",
             str(STEPS), "--log-json", log])
        cuda, cpu = losses(log), losses(os.path.join(work, f"{name}.cpu.json"))
        worst = max(abs(a - b) / abs(b) for a, b in zip(cuda, cpu))
        check(len(cuda) == len(cpu) == STEPS and worst <= TOLERANCE,
              f"{name}: {len(cuda)} Adam steps, losses {cuda[0]:.4f} -> "
              f"{cuda[-1]:.4f}, worst relative difference to cpu {worst:.2e} "
              f"(at most {TOLERANCE:g})")


def main():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(root, "build"),
                    help="the build tree (its bin/ holds the tools)")
    ap.add_argument("--bin", help="where the tools are (default BUILD/bin)")
    ap.add_argument("--python", default=sys.executable,
                    help="Python with numpy, onnx and onnxruntime")
    phase = ap.add_mutually_exclusive_group()
    phase.add_argument("--prepare", metavar="DIR")
    phase.add_argument("--run", metavar="DIR")
    args = ap.parse_args()
    bin_dir = args.bin or os.path.join(args.build, "bin")
    if not args.prepare and not have_gpu():
        print("gpu_test.py: no GPU on this machine (nvidia-smi lists none): "
              "skipped")
        return 77
    try:
        if args.prepare:
            os.makedirs(args.prepare, exist_ok=True)
            prepare(root, bin_dir, args.python, args.prepare)
            print(f"gpu_test.py: prepared {args.prepare}; run it with --run")
            return 0
        if args.run:
            run_on_gpu(root, bin_dir, args.python, args.run)
        else:
            with tempfile.TemporaryDirectory(prefix="tessera-gpu-") as work:
                prepare(root, bin_dir, args.python, work)
                run_on_gpu(root, bin_dir, args.python, work)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"gpu_test.py: error: {e}", file=sys.stderr)
        return 2
    if failures:
        print(f"gpu_test.py: {len(failures)} check(s) failed")
        return 1
    print("gpu_test.py: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
