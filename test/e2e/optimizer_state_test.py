#!/usr/bin/env python3
"""Low-precision optimizer states (--optimizer-state=bf16|int8) on the
bundled character LM, against the f32 states and a numpy model of 8-bit
Adam.

Generates the charlm of precision_train_test.py (1 layer, d_model 64, 4
heads, seq 32, batch 16) and compiles its Adam training step with f32,
bf16 and int8 moments. Checks:

- the layout: with int8 every weight of at least 4096 elements keeps its
  moments as int8 codes plus one f32 maximum per block of 256
  (`<state>.absmax`), the embedding table (read by a gather) and the small
  tensors keep f32 moments; with bf16 every moment is bf16;
- 8-bit Adam's arithmetic, against numpy written from the paper (Dettmers
  et al. 2022: the dynamic tree map, block-wise absmax, nearest code).
  After step 1 both runs hold the same parameters and f32 computed the
  same m1 = (1-b1)·g1 and v1 = (1-b2)·g1² as int8 did before storing it:
  the int8 checkpoint's codes and maxima must be numpy's quantization of
  f32's m1 and v1, every one. Step 2 starts from equal parameters, so the
  gradient g2 is the same too; numpy recovers (1-b1)·g2 = m2 - b1·m1 from
  f32's states, adds b1·dequant(q1) and requantizes. The recovery rounds
  (the f32 sum was rounded once), which can move a value across a code
  midpoint: at least 99.9% of the codes must agree and the rest be a
  neighbour. The step-2 parameters must match numpy's Adam update from
  those moments to 1e-6 absolute (updates are 3e-3·O(1); the recovery
  error is ~1e-7 relative);
- the run: 760 steps with int8 and with bf16 moments end within 2% of the
  f32 moments' mean loss over the last 76 steps (the figure
  precision_train_test.py explains);
- resuming: an int8 run checkpointed at step 50 and resumed to 100 ends
  with exactly the uninterrupted run's loss;
- ZeRO-2 on dp=2 (mpirun): each rank quantizes its shard in its own
  blocks, the checkpoint holds the maxima as [2, blocks per shard], the
  codes as the whole tensor, and the loss tracks the single process's
  (mean of steps 51-100 within 1%; block boundaries differ, so values
  differ by a code now and then). Resuming that checkpoint on one process,
  whose blocks differ, is refused with a message naming the checkpoint.

Run: .venv/bin/python test/e2e/optimizer_state_test.py BUILD_DIR [--keep DIR]
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from checks import check, finish  # noqa: E402
from data_parallel_test import checkpoint_tensors, mpirun  # noqa: E402

STEPS = 760
TAIL = 76
BLOCK = 256
LR, B1, B2, EPS = 3e-3, 0.9, 0.999, 1e-8
NP_DTYPE = {"float32": np.float32, "int8": np.int8, "int64": np.int64,
            "bfloat16": np.uint16}


def run(cmd, expect=0):
    result = subprocess.run([str(c) for c in cmd], capture_output=True,
                            text=True)
    if (result.returncode == 0) != (expect == 0):
        print(result.stdout[-2000:], result.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"FAIL: {' '.join(map(str, cmd[:2]))} exited "
                         f"{result.returncode}")
    return result


def losses(log):
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()
            if line.strip()]


def tensors(ckpt):
    return {name: np.frombuffer(data, dtype=NP_DTYPE[dtype]).reshape(shape)
            for name, (dtype, shape, data) in checkpoint_tensors(str(ckpt)).items()}


def dynamic_map(signed):
    """The 256 codes of the dynamic tree map, sorted: for e = 0..6 the
    midpoints of 2^e (unsigned: 2^(e+1)) equal steps of [0.1, 1]·10^(e-6),
    negated too when signed, plus 0 and 1 (bitsandbytes'
    create_dynamic_map)."""
    codes = [0.0, 1.0]
    for e in range(7):
        items = 2 ** e if signed else 2 ** (e + 1)
        edges = np.linspace(0.1, 1.0, items + 1)
        means = (edges[:-1] + edges[1:]) / 2 * 10.0 ** (e - 6)
        codes += list(means) + (list(-means) if signed else [])
    return np.sort(np.array(codes)).astype(np.float32)


def blocks(x):
    flat = x.reshape(-1)
    n = flat.size
    width = n if n <= BLOCK else BLOCK
    padded = np.zeros(-(-n // width) * width, flat.dtype)
    padded[:n] = flat
    return padded.reshape(-1, width)


def quantize(x, signed):
    """Codes (int8, index - 128) and per-block maxima of f32 `x`."""
    b = blocks(x.astype(np.float32))
    absmax = np.abs(b).max(axis=1)
    unit = b * (np.float32(1) / np.where(absmax > 0, absmax,
                                         np.float32(1)))[:, None]
    codes = dynamic_map(signed)
    mids = ((codes[:-1].astype(np.float64) + codes[1:]) / 2).astype(np.float32)
    index = np.searchsorted(mids, unit, side="left")  # midpoints below
    q = (index - 128).astype(np.int8).reshape(-1)[:x.size].reshape(x.shape)
    return q, absmax.astype(np.float32)


def dequantize(q, absmax, signed):
    codes = dynamic_map(signed)
    b = codes[blocks(q).astype(np.int64) + 128] * absmax[:, None]
    return b.reshape(-1)[:q.size].reshape(q.shape).astype(np.float32)


def compile_step(bin_dir, work, out, *flags):
    run([bin_dir / "tessera-compile", work / "charlm.onnx", "--mode=train",
         "--loss=cross_entropy", "--logits=logits", "--labels=targets",
         "--batch-size", 16, "--optimizer=adam", f"--lr={LR}", "-o", out,
         *flags])
    return json.loads((out / "manifest.json").read_text())


def train(bin_dir, work, art, steps, log, *flags, ranks=1):
    run((mpirun(ranks) if ranks > 1 else []) +
        [bin_dir / "tessera-run", art, "--train", "--data",
         work / "tokens.bin", "--steps", steps, "--batch-size", 16,
         "--log-json", log, *flags])
    return losses(log)


def check_layout(manifests):
    inputs = {kind: {t["name"]: t for t in m["programs"][0]["inputs"]}
              for kind, m in manifests.items()}
    params = {n: t for n, t in inputs["fp32"].items() if t.get("role") == "param"}
    quantized = []
    for name, t in params.items():
        size = int(np.prod(t["shape"]))
        want = "float32" if name == "wte" or size < 4096 else "int8"
        got = {inputs["int8"][f"adam.{s}.{name}"]["dtype"] for s in "mv"}
        check(got == {want}, f"int8: {name} ({size} elements) keeps its "
              f"moments as {sorted(got)}, expected {want}")
        if want == "int8":
            quantized.append(name)
            shapes = {tuple(inputs["int8"][f"adam.{s}.{name}.absmax"]["shape"])
                      for s in "mv"}
            check(shapes == {(-(-size // BLOCK),)},
                  f"int8: {name}'s maxima have shape {shapes}")
        bf = {inputs["bf16"][f"adam.{s}.{name}"]["dtype"] for s in "mv"}
        check(bf == {"bfloat16"}, f"bf16: {name}'s moments are {sorted(bf)}")
    return quantized


def check_arithmetic(bin_dir, work, quantized):
    """Steps 1 and 2 of int8 against numpy from the f32 run's states."""
    ck = {}
    for kind in ["fp32", "int8"]:
        ckdir = work / f"ck-{kind}"
        train(bin_dir, work, work / f"{kind}.art", 2, work / f"ck-{kind}.json",
              "--checkpoint-dir", ckdir, "--checkpoint-every", 1)
        ck[kind] = [tensors(ckdir / f"step-0000000{k}") for k in (1, 2)]
    f1, f2 = ck["fp32"]
    i1, i2 = ck["int8"]
    same = all(np.array_equal(f1[n], i1[n]) for n in f1 if n in quantized or
               n == "wte")
    check(same, "after step 1 the f32 and int8 runs hold the same parameters")
    exact, total, near, worst = 0, 0, True, 0.0
    for name in quantized:
        for slot, signed in [("m", True), ("v", False)]:
            key = f"adam.{slot}.{name}"
            q1, a1 = quantize(f1[key], signed)
            check(np.array_equal(q1, i1[key]) and
                  np.array_equal(a1, i1[key + ".absmax"]),
                  f"step 1: {key}'s {q1.size} codes and {a1.size} maxima are "
                  f"numpy's quantization of f32's {slot}1")
            beta = B1 if slot == "m" else B2
            fresh = f2[key] - np.float32(beta) * f1[key]
            m2 = np.float32(beta) * dequantize(i1[key], i1[key + ".absmax"],
                                               signed) + fresh
            q2, a2 = quantize(m2, signed)
            diff = np.abs(q2.astype(int) - i2[key].astype(int))
            exact += int((diff == 0).sum())
            total += diff.size
            near &= bool(diff.max() <= 1)
            np.testing.assert_allclose(a2, i2[key + ".absmax"], rtol=1e-5)
            if slot == "m":
                mom = m2
            else:
                c1, c2 = 1 - B1 ** 2, 1 - B2 ** 2
                update = (mom / c1) / (np.sqrt(m2 / c2) + EPS)
                p2 = f1[name] - np.float32(LR) * update
                worst = max(worst, float(np.abs(p2 - i2[name]).max()))
    check(exact >= 0.999 * total and near,
          f"step 2: {exact} of {total} codes are numpy's, the others a "
          f"neighbour ({100 * exact / total:.3f}%)")
    check(worst <= 1e-6, f"step 2: the parameters are numpy's Adam update "
          f"from the dequantized moments (worst {worst:.2e} <= 1e-6)")


def check_resume(bin_dir, work):
    art = work / "int8.art"
    full = train(bin_dir, work, art, 100, work / "full.json")
    train(bin_dir, work, art, 50, work / "half.json", "--checkpoint-dir",
          work / "ck-half", "--checkpoint-every", 50)
    resumed = train(bin_dir, work, art, 100, work / "resumed.json",
                    "--resume", work / "ck-half")
    check(resumed[-1] == full[-1], f"int8: resumed at step 50, step 100's "
          f"loss is the uninterrupted run's ({resumed[-1]} == {full[-1]})")
    return full


def check_zero(bin_dir, work, single):
    art = work / "int8-zero2.art"
    manifest = compile_step(bin_dir, work, art, "--optimizer-state=int8",
                            "--mesh", "dp=2", "--zero=2")
    specs = {t["name"]: t for t in manifest["programs"][0]["inputs"]}
    spec = specs["adam.m.h0.mlp.fc1.weight.absmax"]
    check(spec["global_shape"] == [2, 32] and spec["shards"] == 2,
          f"dp=2 ZeRO-2: fc1's maxima are {spec['global_shape']} in "
          f"{spec['shards']} shards (8192 elements per rank, 32 blocks)")
    ckdir = work / "ck-zero2"
    losses2 = train(bin_dir, work, art, 100, work / "zero2.json",
                    "--checkpoint-dir", ckdir, "--checkpoint-every", 100,
                    ranks=2)
    mean1, mean2 = np.mean(single[50:]), np.mean(losses2[50:])
    check(abs(mean2 - mean1) <= 0.01 * mean1,
          f"dp=2 ZeRO-2: mean loss of steps 51-100 {mean2:.4f}, one process "
          f"{mean1:.4f}")
    saved = tensors(ckdir / "step-00000100")
    codes = saved["adam.m.h0.mlp.fc1.weight"]
    check(codes.dtype == np.int8 and codes.shape == (64, 256) and
          saved["adam.m.h0.mlp.fc1.weight.absmax"].shape == (2, 32),
          "dp=2 ZeRO-2: the checkpoint holds the whole int8 codes and both "
          "ranks' maxima")
    refused = run([bin_dir / "tessera-run", work / "int8.art", "--train",
                   "--data", work / "tokens.bin", "--steps", 110,
                   "--batch-size", 16, "--resume", ckdir], expect=1)
    check("ck-zero2" in refused.stderr,
          f"resuming the dp=2 int8 checkpoint on one process is refused: "
          f"{refused.stderr.strip()[:160]}")


def check_convergence(bin_dir, work):
    final = {}
    for kind in ["fp32", "bf16", "int8"]:
        curve = train(bin_dir, work, work / f"{kind}.art", STEPS,
                      work / f"{kind}.json")
        final[kind] = sum(curve[-TAIL:]) / TAIL
        print(f"{kind} moments: last loss {curve[-1]:.4f}, mean of the last "
              f"{TAIL} {final[kind]:.4f}")
    for kind in ["bf16", "int8"]:
        gap = abs(final[kind] - final["fp32"]) / final["fp32"]
        check(gap <= 0.02, f"{kind} moments: mean loss of the last {TAIL} "
              f"steps within 2% of f32 moments' ({100 * gap:.2f}%)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--keep")
    parser.add_argument("--quick", action="store_true",
                        help=f"leave out the {STEPS}-step runs against f32 "
                        "moments (the sanitizer round)")
    args = parser.parse_args()
    bin_dir = pathlib.Path(args.build) / "bin"
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="tessera-ostate."))
    work.mkdir(parents=True, exist_ok=True)
    run([sys.executable, ROOT / "python/tessera_examples/make_charlm.py",
         "--out", work, "--seq", 32, "--batch", 16, "--layers", 1,
         "--d-model", 64, "--heads", 4])
    manifests = {kind: compile_step(bin_dir, work, work / f"{kind}.art",
                                    f"--optimizer-state={kind}")
                 for kind in ["fp32", "bf16", "int8"]}
    quantized = check_layout(manifests)
    check_arithmetic(bin_dir, work, quantized)
    if args.quick:
        print(f"--quick: the {STEPS}-step runs against f32 moments are left out")
    else:
        check_convergence(bin_dir, work)
    single = check_resume(bin_dir, work)
    check_zero(bin_dir, work, single)
    return finish("optimizer_state_test.py")


if __name__ == "__main__":
    sys.exit(main())
