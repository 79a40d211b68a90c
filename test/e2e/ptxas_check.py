#!/usr/bin/env python3
"""ptxas as a gate on every kernel the CUDA target generates (no GPU needed).

For each case (the bundled GPT block and CNN in inference, the long
reductions of make_model.py that tsr-gpu-split-reductions splits, the
character LM's training step), ``tessera-compile --target=cuda --emit=ptx`` prints the
kernels' PTX, and CUDA's ptxas compiles it for sm_90a with

    -v --warn-on-spills --warn-on-local-memory-usage -Werror

so that a kernel that spills registers or uses local memory (a per-thread
stack array) fails the compile. From ``-v`` every kernel's figures are read:
registers, shared memory, stack frame, spill stores and loads; with the
block size from its ``.maxntid`` and NVIDIA's cuda_occupancy.h
(test/e2e/Inputs/occupancy.cpp) its theoretical occupancy on an sm_90 SM.

Checks:
* ptxas succeeds on every case (no spills, no local memory);
* every kernel launched with full blocks (256 threads: the elementwise and
  row-reduction kernels of tsr-gpu-map) reaches at least 50% occupancy;
  kernels of fewer threads (ops with fewer than 256 output elements, and
  the one-thread kernels of full reductions and scatters) are counted and
  listed, not gated: their occupancy is their block size's;
* the figures equal test/e2e/Inputs/ptxas-golden.txt, line for line: a
  change in what the compiler generates shows up as a diff to review.
  ``--update`` rewrites the file after a deliberate change.

Exits 0 if every check passes, 1 otherwise, 2 on a setup error, 77 (ctest's
skip code) where the CUDA toolkit is missing.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from checks import check, finish

CUDA = "/usr/local/cuda"
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs",
                      "ptxas-golden.txt")
OCCUPANCY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs",
                         "occupancy.cpp")
FULL_BLOCK = 256
MIN_OCCUPANCY = 0.5


def run(cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                            **kw)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {result.returncode}:\n"
                           + result.stdout + result.stderr)
    return result


def kernel_figures(ptxas_log, ptx):
    """{kernel: dict} from ptxas -v's log and the PTX's .maxntid."""
    figures, current = {}, None
    for line in ptxas_log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = m.group(1)
            figures[current] = {"regs": 0, "smem": 0, "stack": 0,
                                "spill_stores": 0, "spill_loads": 0}
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                      r"(\d+) bytes spill loads", line)
        if m:
            figures[current].update(stack=int(m.group(1)),
                                    spill_stores=int(m.group(2)),
                                    spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            figures[current]["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            figures[current]["smem"] = int(s.group(1)) if s else 0
    for m in re.finditer(r"\.entry (\w+)\((?:.|\n)*?\)\s*\.maxntid (\d+)", ptx):
        if m.group(1) in figures:
            figures[m.group(1)]["threads"] = int(m.group(2))
    return figures


def main():
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--python", default=sys.executable,
                    help="Python with numpy and onnx (makes the models)")
    ap.add_argument("--update", action="store_true",
                    help=f"rewrite {os.path.relpath(GOLDEN, root)}")
    args = ap.parse_args()
    ptxas = os.path.join(CUDA, "bin", "ptxas")
    if not os.path.exists(ptxas):
        print(f"ptxas_check.py: no CUDA toolkit ({ptxas} is missing): skipped")
        return 77
    compile_ = os.path.join(args.build, "bin", "tessera-compile")
    examples = os.path.join(root, "python", "tessera_examples")
    lines, small = [], 0
    try:
        with tempfile.TemporaryDirectory(prefix="tessera-ptxas-") as work:
            occupancy = os.path.join(work, "occupancy")
            run(["clang++-22", "-O1", f"-I{CUDA}/include", OCCUPANCY, "-o",
                 occupancy])
            run([args.python, os.path.join(examples, "make_models.py"),
                 "--out", work])
            run([args.python, os.path.join(examples, "make_charlm.py"),
                 "--out", os.path.join(work, "lm"), "--seq", "32", "--batch",
                 "16", "--layers", "1", "--d-model", "64", "--heads", "4",
                 "--no-verify"])
            # Reductions that tsr-gpu-split-reductions splits across blocks.
            run([args.python, os.path.join(root, "test", "Import", "ONNX",
                                           "Inputs", "make_model.py"),
                 "long_reductions", os.path.join(work, "long_reductions.onnx")])
            cases = {
                "gpt_block": [os.path.join(work, "gpt_block.onnx")],
                "long_reductions": [os.path.join(work,
                                                 "long_reductions.onnx")],
                "cnn": [os.path.join(work, "cnn.onnx")],
                "charlm_train": [os.path.join(work, "lm", "charlm.onnx"),
                                 "--mode=train", "--loss=cross_entropy",
                                 "--logits=logits", "--batch-size=16",
                                 "--optimizer=adam"],
            }
            for case, flags in cases.items():
                ptx = run([compile_, *flags, "--target=cuda",
                           "--emit=ptx"]).stdout
                path = os.path.join(work, case + ".ptx")
                with open(path, "w") as f:
                    f.write(ptx)
                gate = subprocess.run(
                    [ptxas, "-arch=sm_90a", "-v", "--warn-on-spills",
                     "--warn-on-local-memory-usage", "-Werror", path, "-o",
                     os.path.join(work, case + ".cubin")],
                    capture_output=True, text=True, timeout=900)
                ok = gate.returncode == 0
                check(ok, f"{case}: ptxas -Werror with spills and local "
                      "memory as errors")
                if not ok:
                    sys.stderr.write(gate.stderr[-3000:])
                    continue
                figures = kernel_figures(gate.stderr + gate.stdout, ptx)
                query = "".join(f"{k} {f['regs']} {f['smem']} {f['threads']}\n"
                                for k, f in figures.items())
                occ = dict(line.split() for line in run(
                    [occupancy], input=query).stdout.splitlines())
                low = []
                for kernel, f in figures.items():
                    f["occupancy"] = float(occ[kernel])
                    if f["threads"] < FULL_BLOCK:
                        small += 1
                    elif f["occupancy"] < MIN_OCCUPANCY:
                        low.append(f"{kernel} ({f['occupancy']:.0%})")
                    lines.append(
                        f"{case} {kernel} regs={f['regs']} smem={f['smem']} "
                        f"stack={f['stack']} spill_stores={f['spill_stores']} "
                        f"spill_loads={f['spill_loads']} "
                        f"threads={f['threads']} "
                        f"occupancy={f['occupancy']:.2f}")
                full = [f for f in figures.values()
                        if f["threads"] >= FULL_BLOCK]
                worst = min((f["occupancy"] for f in full), default=1.0)
                most = max(f["regs"] for f in figures.values())
                check(not low, f"{case}: {len(figures)} kernels, at most "
                      f"{most} registers; {len(full)} with {FULL_BLOCK}-thread "
                      f"blocks, lowest occupancy {worst:.0%} (at least "
                      f"{MIN_OCCUPANCY:.0%})"
                      + (f": {', '.join(low)}" if low else ""))
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"ptxas_check.py: error: {e}", file=sys.stderr)
        return 2
    print(f"{small} kernels run fewer than {FULL_BLOCK} threads (small ops, "
          "full reductions, scatters): listed in the golden file, not gated")
    text = "".join(line + "\n" for line in lines)
    if args.update:
        with open(GOLDEN, "w") as f:
            f.write(text)
        print(f"ptxas_check.py: wrote {GOLDEN} ({len(lines)} kernels)")
    else:
        try:
            with open(GOLDEN) as f:
                golden = f.read()
        except OSError as e:
            golden = ""
            print(f"ptxas_check.py: cannot read {GOLDEN}: {e}")
        check(golden == text, f"the figures of {len(lines)} kernels equal "
              "the golden file" + ("" if golden == text else
                                   " (review the diff below, then rerun with "
                                   "--update)"))
        if golden != text:
            import difflib
            print("\n".join(list(difflib.unified_diff(
                golden.splitlines(), text.splitlines(), "golden", "now",
                lineterm="", n=0))[:60]))
    return finish("ptxas_check.py")


if __name__ == "__main__":
    sys.exit(main())
