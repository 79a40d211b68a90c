#!/usr/bin/env python3
"""bench/gpu.py's transport of training artifacts without their params'
values, end to end on the CPU target (the GPU benchmark does the same with
--target=cuda artifacts):

* thin_artifact leaves every trained param's initializer of the artifact's
  ONNX model without data and records its dims, type, mean and standard deviation;
* tessera-run refuses the thinned artifact with an error naming the param,
  rather than training on garbage;
* restore_artifact draws each param again (the token embedding, frozen
  with --freeze, keeps its values throughout): its dims and type as recorded,
  its mean and deviation within 6 standard errors of the recorded ones (the
  draw is seeded, so this cannot flake), the frozen initializers untouched;
* the restored artifact trains 3 steps with finite losses.

Usage: gpu_bench_thin_test.py BUILD_DIR SOURCE_DIR (the venv's python).
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

FAILURES = []


def check(ok, what):
    print(f"{'PASS' if ok else 'FAIL'} {what}")
    if not ok:
        FAILURES.append(what)


def run(cmd, expect=0):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if (proc.returncode == 0) != (expect == 0):
        sys.exit(f"error: {' '.join(cmd)} exited {proc.returncode}:\n"
                 f"{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def initializers(path):
    return {t.name: numpy_helper.to_array(t) if t.HasField("raw_data") or
            len(t.float_data) else None
            for t in onnx.load(path).graph.initializer}


def main():
    build, source = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(source, "bench"))
    import gpu  # bench/gpu.py
    bin_dir = os.path.join(build, "bin")
    with tempfile.TemporaryDirectory(prefix="tessera-thin-") as work:
        run([sys.executable, os.path.join(source, "python", "tessera_examples",
                                          "make_charlm.py"), "--out",
             os.path.join(work, "lm"), "--seq", "16", "--batch", "8",
             "--layers", "1", "--d-model", "32", "--heads", "2",
             "--no-verify"])
        art = os.path.join(work, "art")
        run([os.path.join(bin_dir, "tessera-compile"),
             os.path.join(work, "lm", "charlm.onnx"), "--mode=train",
             "--loss=cross_entropy", "--logits=logits", "--batch-size=8",
             "--optimizer=adam", "--freeze=wte", "-o", art])
        with open(os.path.join(art, "manifest.json")) as f:
            manifest = json.load(f)
        params = {t["name"] for p in manifest["programs"] for t in p["inputs"]
                  if t.get("role") == "param"} - set(manifest["frozen"])
        model = os.path.join(art, manifest["onnx"])
        before = initializers(model)
        size_before = os.path.getsize(model)

        gpu.thin_artifact(art)
        thinned = initializers(model)
        with open(os.path.join(art, "thinned.json")) as f:
            record = {t["name"]: t for t in json.load(f)}
        check(set(record) == params,
              f"thinned.json records the {len(params)} params")
        check(all(thinned[n] is None for n in params),
              "no param initializer keeps its data")
        frozen = set(before) - params
        check(set(manifest["frozen"]) == {"wte"} and "wte" in frozen,
              "the frozen embedding is not thinned")
        check(all(np.array_equal(thinned[n], before[n]) for n in frozen),
              f"the {len(frozen)} frozen initializers keep theirs")
        check(all(record[n]["dims"] == list(before[n].shape) and
                  math.isclose(record[n]["mean"], float(before[n].mean()),
                               rel_tol=1e-6, abs_tol=1e-9) and
                  math.isclose(record[n]["std"], float(before[n].std()),
                               rel_tol=1e-6, abs_tol=1e-9) for n in params),
              "each param's dims, mean and deviation are recorded")
        print(f"  model.onnx {size_before} -> {os.path.getsize(model)} bytes")

        data = os.path.join(work, "lm", "tokens.bin")
        out = run([os.path.join(bin_dir, "tessera-run"), art, "--train",
                   "--data", data, "--steps", "3"], expect=1)
        check("error" in out and any(n in out for n in params),
              f"tessera-run refuses the thinned artifact, naming a param: "
              f"{out.strip().splitlines()[-1] if out.strip() else ''}")

        gpu.restore_artifact(art)
        restored = initializers(model)
        check(not os.path.exists(os.path.join(art, "thinned.json")),
              "restore_artifact removes thinned.json")

        def close(n):
            v, r = restored[n].astype(np.float64), record[n]
            count = v.size
            if r["std"] == 0:
                return np.all(v == r["mean"])
            return (abs(v.mean() - r["mean"]) <= 6 * r["std"] / math.sqrt(count)
                    and abs(v.std() / r["std"] - 1) <= 6 / math.sqrt(2 * count))
        check(all(restored[n] is not None and
                  restored[n].shape == before[n].shape and
                  restored[n].dtype == before[n].dtype and close(n)
                  for n in params),
              "each param is drawn again with its dims, type, mean and "
              "deviation (6 standard errors)")
        check(all(np.array_equal(restored[n], before[n]) for n in frozen),
              "the frozen initializers are untouched")

        log = os.path.join(work, "log.json")
        run([os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
             data, "--steps", "3", "--log-json", log])
        with open(log) as f:
            losses = [json.loads(line)["loss"] for line in f if line.strip()]
        check(len(losses) == 3 and all(
            isinstance(x, float) and math.isfinite(x) for x in losses),
            f"the restored artifact trains 3 steps: losses {losses}")
    if FAILURES:
        print(f"gpu_bench_thin_test.py: {len(FAILURES)} checks failed")
        return 1
    print("gpu_bench_thin_test.py: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
