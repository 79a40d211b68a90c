#!/usr/bin/env python3
"""The bundled character LM trained in bf16 against the same run in fp32.

Generates the charlm of charlm_train_test.sh (1 layer, d_model 64, 4 heads,
seq 32, batch 16), compiles its Adam training step twice, plain and with
`--precision=bf16`, trains each 760 steps on the same token stream (same
batches in the same order) and checks:

- the bf16 step really computes its matmuls in bf16 through oneDNN:
  model.so calls `tsr_gemm_bf16`, the fp32 one does not (it calls
  `cblas_sgemm`);
- both learned: the last loss is below 2.0 nats;
- bf16 ends where fp32 ends: the mean loss of the last 76 steps (10% of the
  run) is within 2% of fp32's. One step's loss is one batch's, and which
  licence text the batch holds moves it by tenths of a nat; two runs whose
  weights differ by rounding differ per batch by a few percent (measured:
  3.0% at step 760, 0.25% over the last 76 steps), so the mean over the same
  76 batches is the figure that compares the two models;
- the manifest records the precision and parameters stay float32 (master
  weights): the trained parameters are float32 in both.

Run: .venv/bin/python test/e2e/precision_train_test.py BUILD_DIR [--keep DIR]
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from checks import check, finish  # noqa: E402

STEPS = 760
TAIL = 76


def run(cmd, **kw):
    result = subprocess.run([str(c) for c in cmd], capture_output=True,
                            text=True, **kw)
    if result.returncode != 0:
        print(result.stdout[-2000:], result.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"FAIL: {' '.join(map(str, cmd[:2]))} exited "
                         f"{result.returncode}")
    return result.stdout


def losses(log):
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()
            if line.strip() and "loss" in json.loads(line)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--keep")
    args = parser.parse_args()
    bin_dir = pathlib.Path(args.build) / "bin"
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="tessera-bf16."))
    work.mkdir(parents=True, exist_ok=True)
    run([sys.executable, ROOT / "python/tessera_examples/make_charlm.py",
         "--out", work, "--seq", 32, "--batch", 16, "--layers", 1,
         "--d-model", 64, "--heads", 4])
    final = {}
    for precision in ["fp32", "bf16"]:
        art = work / f"{precision}.art"
        run([bin_dir / "tessera-compile", work / "charlm.onnx", "--mode=train",
             "--loss=cross_entropy", "--logits=logits", "--labels=targets",
             "--batch-size", 16, "--optimizer=adam", "--lr=3e-3",
             f"--precision={precision}", "-o", art])
        symbols = run(["nm", "-D", "--undefined-only", art / "model.so"])
        bf16_gemm = "tsr_gemm_bf16" in symbols
        check(bf16_gemm == (precision == "bf16"),
              f"{precision}: model.so {'calls' if bf16_gemm else 'does not call'}"
              f" tsr_gemm_bf16")
        manifest = json.loads((art / "manifest.json").read_text())
        check(manifest.get("precision", "fp32") == precision,
              f"{precision}: the manifest records precision "
              f"{manifest.get('precision', 'fp32')}")
        params = [t for t in manifest["programs"][0]["inputs"]
                  if t.get("role") == "param"]
        check(params and all(t["dtype"] == "float32" for t in params),
              f"{precision}: all {len(params)} parameters are float32 master "
              f"weights")
        log = work / f"{precision}.json"
        run([bin_dir / "tessera-run", art, "--train", "--data",
             work / "tokens.bin", "--steps", STEPS, "--batch-size", 16,
             "--log-json", log])
        curve = losses(log)
        check(len(curve) == STEPS, f"{precision}: {len(curve)} losses logged")
        check(curve[-1] < 2.0, f"{precision}: last loss {curve[-1]:.4f} < 2.0")
        final[precision] = sum(curve[-TAIL:]) / TAIL
        print(f"{precision}: last loss {curve[-1]:.4f}, mean of the last "
              f"{TAIL} {final[precision]:.4f}")
    gap = abs(final["bf16"] - final["fp32"]) / final["fp32"]
    check(gap <= 0.02, f"bf16's mean loss of the last {TAIL} steps is within "
          f"2% of fp32's ({100 * gap:.2f}%)")
    return finish("precision_train_test.py")


if __name__ == "__main__":
    sys.exit(main())
