#!/usr/bin/env python3
"""Every bundled model compiles for the CUDA target, for inference and for
the training step, into an artifact with a fatbin and a manifest.

No GPU is needed (ptxas and fatbinary from the toolkit). The models: the
GPT block and the CNN (make_models.py), the character LM (make_charlm.py),
and the GPT, the MoE GPT and the transformer LM that PyTorch exports
(make_torch_gpt.py, make_moe_gpt.py, make_torch_transformer.py), and the
4-layer GPT of bench/gpu.py, whose folded layer cells (``layers0-3``) name
kernels with characters NVPTX refuses unless tsr-gpu-merge-kernels renames
them; the GPTs also in bf16, whose attention must go to cuDNN (model.so
imports tsrt_gpu_attention, and for the PyTorch GPTs' training step
tsrt_gpu_attention_backward too; no f32 artifact imports either). Each
artifact must have a manifest with "target": "cuda" and its mode, and its
model.so one fatbin holding SASS for sm_90a and PTX for sm_90 (the JIT
fallback; test/tools/Inputs/fatbin_images.py reads the images). Each case
is its own check: a model that stops compiling fails by name.

Exits 0 when every case passes, 1 on a failure, 2 on a setup error, and 77
(ctest's skip code) without a CUDA toolkit.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

from checks import check, finish

CUDA = "/usr/local/cuda"
TORCH_PYTHON = "/usr/bin/python3"
EXPECTED_IMAGES = "fatbin: elf sm_90a, ptx sm_90"

# name: (how it is made, the model file, its --input-shape for inference,
# the training flags)
LM_TRAIN = ["--loss=cross_entropy", "--logits=logits", "--batch-size=8"]
MODELS = {
    "gpt_block": ("models", "gpt_block.onnx", [],
                  ["--loss=mse", "--logits=y", "--batch-size=2"]),
    "cnn": ("models", "cnn.onnx", [],
            ["--loss=cross_entropy", "--logits=logits", "--batch-size=8"]),
    "charlm": ("charlm", "lm/charlm.onnx", [], LM_TRAIN),
    "torch_gpt": ("torch_gpt", "gpt/torch_gpt.onnx",
                  ["--input-shape", "tokens=8x16"], LM_TRAIN),
    "moe_gpt": ("moe_gpt", "moe/moe_gpt.onnx",
                ["--input-shape", "tokens=8x16"], LM_TRAIN),
    "torch_lm": ("torch_lm", "tt/torch_lm.onnx",
                 ["--input-shape", "tokens=8x32"], LM_TRAIN),
    "torch_gpt4": ("torch_gpt4", "gpt4/torch_gpt.onnx",
                   ["--input-shape", "tokens=8x128"], LM_TRAIN),
}


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def make(root, py, work):
    examples = os.path.join(root, "python", "tessera_examples")
    makers = {
        "models": [py, os.path.join(examples, "make_models.py"), "--out", work],
        "charlm": [py, os.path.join(examples, "make_charlm.py"), "--out",
                   os.path.join(work, "lm"), "--seq", "32", "--batch", "16",
                   "--layers", "1", "--d-model", "64", "--heads", "4",
                   "--no-verify"],
        "torch_gpt": [TORCH_PYTHON, os.path.join(examples, "make_torch_gpt.py"),
                      "--out", os.path.join(work, "gpt")],
        "moe_gpt": [TORCH_PYTHON, os.path.join(examples, "make_moe_gpt.py"),
                    "--out", os.path.join(work, "moe")],
        "torch_gpt4": [TORCH_PYTHON,
                       os.path.join(examples, "make_torch_gpt.py"), "--out",
                       os.path.join(work, "gpt4"), "--layers", "4",
                       "--d-model", "256", "--heads", "8", "--seq", "128",
                       "--vocab", "96"],
        "torch_lm": [TORCH_PYTHON,
                     os.path.join(examples, "make_torch_transformer.py"),
                     "--out", os.path.join(work, "tt")],
    }
    for name, cmd in makers.items():
        result = run(cmd)
        if result.returncode != 0:
            sys.stderr.write(result.stdout + result.stderr)
            raise RuntimeError(f"{name}: {' '.join(cmd)} exited "
                               f"{result.returncode}")


# The models whose bf16 inference runs its attention through cuDNN
# (tsr-gpu-attention): model.so must import tsrt_gpu_attention there, and
# never in f32 (cuDNN's fused attention has no f32 kernels); and those whose
# bf16 training step runs the backward pass through it too
# (tsrt_gpu_attention_backward; the GPT block's mask and scale are trainable
# parameters, whose gradients cuDNN does not give, so it keeps its ops).
ATTENTION = ("gpt_block", "torch_gpt", "torch_gpt4")
ATTENTION_TRAIN = ("torch_gpt", "torch_gpt4")
NM = "/usr/lib/llvm-22/bin/llvm-nm"


def attention_imports(art):
    symbols = run([NM, "-D", "--undefined-only",
                   os.path.join(art, "model.so")]).stdout.split()
    return [s for s in ("tsrt_gpu_attention", "tsrt_gpu_attention_backward")
            if s in symbols]


def compile_case(root, bin_dir, py, work, name, mode):
    _, model, shape, train = MODELS[name]
    art = os.path.join(work, f"{name}.{mode}")
    flags = [*shape] if mode in ("infer", "bf16") else [
        *shape, "--mode=train", *train, "--optimizer=adam"]
    if mode.startswith("bf16"):
        flags.append("--precision=bf16")
    result = run([os.path.join(bin_dir, "tessera-compile"),
                  os.path.join(work, model), "--target=cuda", "-o", art,
                  *flags])
    if result.returncode != 0:
        last = result.stderr.strip().splitlines()[-1:]
        return f"tessera-compile exited {result.returncode}: " + "".join(last)
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    expected_mode = {"bf16": "infer", "bf16-train": "train"}.get(mode, mode)
    if manifest.get("target") != "cuda" or manifest.get("mode") != expected_mode:
        return (f"manifest says target {manifest.get('target')!r}, mode "
                f"{manifest.get('mode')!r}")
    images = run([py, os.path.join(root, "test", "tools", "Inputs",
                                   "fatbin_images.py"),
                  os.path.join(art, "model.so")]).stdout.strip()
    if images != EXPECTED_IMAGES:
        return f"model.so has {images!r}, not {EXPECTED_IMAGES!r}"
    expected = {"bf16": ["tsrt_gpu_attention"],
                "bf16-train": ["tsrt_gpu_attention",
                               "tsrt_gpu_attention_backward"]}.get(mode, [])
    if attention_imports(art) != expected:
        return (f"model.so imports {attention_imports(art)} of cuDNN's "
                f"attention, not {expected}")
    return None


def main():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--python", default=sys.executable,
                    help="Python with numpy and onnx")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(CUDA, "bin", "ptxas")):
        print(f"cuda_compile_test.py: no CUDA toolkit ({CUDA}/bin/ptxas is "
              "missing): skipped")
        return 77
    bin_dir = os.path.join(args.build, "bin")
    with tempfile.TemporaryDirectory(prefix="tessera-cuda-compile-") as work:
        try:
            make(root, args.python, work)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"cuda_compile_test.py: {e}", file=sys.stderr)
            return 2
        cases = [(name, mode) for name in MODELS for mode in ("infer", "train")]
        cases += [(name, "bf16") for name in ATTENTION]
        cases += [(name, "bf16-train") for name in ATTENTION_TRAIN]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            problems = list(pool.map(
                lambda c: compile_case(root, bin_dir, args.python, work, *c),
                cases))
        for (name, mode), problem in zip(cases, problems):
            what = {"bf16": "bf16 inference, attention through cuDNN",
                    "bf16-train": "bf16 training, attention and its "
                                  "backward through cuDNN"}.get(mode, mode)
            check(problem is None, f"{name} ({what}): --target=cuda artifact "
                  "with a manifest and a fatbin of sm_90a SASS and sm_90 PTX"
                  + (f" ({problem})" if problem else ""))
    return finish("cuda_compile_test.py")


if __name__ == "__main__":
    sys.exit(main())
