#!/usr/bin/env python3
"""Compare Tessera's outputs for an ONNX model with onnxruntime's.

Runs onnxruntime (CPUExecutionProvider) on ``D/input_<i>.pb`` -- the i-th
non-initializer graph input, as ONNX TensorProto files, the same layout
``tessera-run --inputs-dir`` reads -- loads Tessera's ``O/output_<i>.pb`` for
every graph output and prints, per output, its name, dtype, shape, the
maximum absolute and relative error and the first values side by side.

Error measures, per output (a = Tessera, b = onnxruntime)::

    max abs err = max |a - b|
    max rel err = max |a - b| / max(max |b|, tiny)      (tiny = 1e-30)

i.e. the relative error is normalised by the largest reference magnitude of
that output, not element by element, so values near zero do not blow it up.
A floating-point output passes when ``max abs err <= atol + rtol * max(max|b|,
tiny)`` -- equivalently, when the max rel err is within rtol (atol adds
an absolute slack). NaNs must sit in the same places, infinities must match
exactly; integer and bool outputs must match exactly; dtype and shape must
match.

Exit status: 0 all outputs match, 1 some output differs (or is missing or has
the wrong dtype/shape), 2 usage or I/O error (model or input missing,
onnxruntime failed).

Example::

    compare.py build/examples/gpt_block.onnx \\
        --inputs-dir build/examples/gpt_block_inputs \\
        --outputs-dir build/examples/gpt_block_out --rtol 1e-4
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

TINY = 1e-30


class UsageError(Exception):
    """An input problem (exit 2), as opposed to a numerical mismatch (exit 1)."""


def load_tensor(path: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def graph_inputs(model: onnx.ModelProto) -> list[str]:
    inits = {i.name for i in model.graph.initializer}
    inits |= {i.name for i in model.graph.sparse_initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def run_onnxruntime(model_path: str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def is_float(dtype: np.dtype) -> bool:
    # ml_dtypes' bfloat16/float8 types are not np.floating subclasses; treat
    # anything numpy can't call integer/bool/string/object as floating point.
    return not (
        np.issubdtype(dtype, np.integer)
        or np.issubdtype(dtype, np.bool_)
        or dtype.kind in "OSU"
    )


def compare_one(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> tuple[bool, float, float, str]:
    """Return (ok, max_abs_err, max_rel_err, note) for Tessera `a` vs reference `b`."""
    if a.dtype != b.dtype:
        return False, float("nan"), float("nan"), f"dtype mismatch: tessera {a.dtype}, onnxruntime {b.dtype}"
    if a.shape != b.shape:
        return False, float("nan"), float("nan"), f"shape mismatch: tessera {list(a.shape)}, onnxruntime {list(b.shape)}"
    if a.size == 0:
        return True, 0.0, 0.0, "empty"
    if b.dtype.kind in "OSU":
        ok = bool(np.array_equal(a, b))
        return ok, float("nan"), float("nan"), "" if ok else "string values differ"
    if not is_float(b.dtype):
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        mabs = float(diff.max())
        mrel = mabs / max(float(np.abs(b.astype(np.float64)).max()), TINY)
        ok = mabs == 0.0
        return ok, mabs, mrel, "" if ok else f"{int(np.count_nonzero(diff))} integer values differ (exact match required)"

    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    notes = []
    ok = True
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    if not np.array_equal(nan_a, nan_b):
        ok = False
        notes.append(f"NaN positions differ ({int(nan_a.sum())} vs {int(nan_b.sum())} NaNs)")
    inf_a, inf_b = np.isinf(a64), np.isinf(b64)
    if not (np.array_equal(inf_a, inf_b) and np.array_equal(a64[inf_b], b64[inf_b])):
        ok = False
        notes.append("infinities differ")
    finite = np.isfinite(a64) & np.isfinite(b64)
    if finite.any():
        mabs = float(np.abs(a64[finite] - b64[finite]).max())
        mref = float(np.abs(b64[finite]).max())
    else:
        mabs, mref = 0.0, 0.0
    mrel = mabs / max(mref, TINY)
    if mabs > atol + rtol * max(mref, TINY):
        ok = False
        notes.append(f"max abs err {mabs:.3g} > atol + rtol*max|ref| = {atol + rtol * max(mref, TINY):.3g}")
    return ok, mabs, mrel, "; ".join(notes)


def fmt_val(x) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (bytes, str)):
        return repr(x)[:14]
    return f"{float(x):.8g}"


def print_table(idx: int, name: str, a: np.ndarray | None, b: np.ndarray,
                ok: bool, mabs: float, mrel: float, note: str, show: int) -> None:
    status = "OK" if ok else "MISMATCH"
    print(f"output {idx}: {name}")
    print(f"  {'':14} {'tessera':>18} {'onnxruntime':>18}")
    print(f"  {'dtype':14} {str(a.dtype) if a is not None else '-':>18} {str(b.dtype):>18}")
    print(f"  {'shape':14} {str(list(a.shape)) if a is not None else '-':>18} {str(list(b.shape)):>18}")
    print(f"  max abs err  {mabs:.3e}    max rel err  {mrel:.3e}    {status}" + (f"  ({note})" if note else ""))
    if a is None:
        print()
        return
    af, bf = a.reshape(-1), b.reshape(-1)
    n = min(show, af.size, bf.size)
    if n:
        print(f"  {'index':>14} {'tessera':>18} {'onnxruntime':>18} {'abs err':>12}")
        for i in range(n):
            try:
                err = f"{abs(float(af[i]) - float(bf[i])):.3e}"
            except (TypeError, ValueError):
                err = "-"
            print(f"  {i:>14} {fmt_val(af[i]):>18} {fmt_val(bf[i]):>18} {err:>12}")
        if bf.size > n:
            print(f"  {'...':>14} ({bf.size - n} more)")
    print()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Run onnxruntime on MODEL with the inputs in --inputs-dir and compare its "
        "outputs with Tessera's --outputs-dir/output_<i>.pb.",
        epilog="Relative error is measured as max|a-b| / max(max|b|, tiny) per output "
        "(a = Tessera, b = onnxruntime, tiny = 1e-30). A float output passes when "
        "max|a-b| <= atol + rtol * max(max|b|, tiny); NaNs must be in the same places; "
        "integer/bool outputs must match exactly; dtype and shape must match. "
        "Exit 0 = all match, 1 = mismatch, 2 = usage/I-O error.",
    )
    ap.add_argument("model", metavar="MODEL.onnx")
    ap.add_argument("--inputs-dir", required=True, metavar="D",
                    help="directory with input_<i>.pb for the i-th non-initializer graph input")
    ap.add_argument("--outputs-dir", required=True, metavar="O",
                    help="directory with Tessera's output_<i>.pb, one per graph output")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="relative tolerance, relative to max|onnxruntime output| (default 1e-4)")
    ap.add_argument("--atol", type=float, default=0.0,
                    help="absolute tolerance added to rtol*max|ref| (default 0)")
    ap.add_argument("--show", type=int, default=8, metavar="N",
                    help="print the first N values of each output (default 8)")
    args = ap.parse_args(argv)

    try:
        if not os.path.isfile(args.model):
            raise UsageError(f"model not found: {args.model}")
        model = onnx.load(args.model, load_external_data=False)
        names = graph_inputs(model)
        feeds = {}
        for i, name in enumerate(names):
            path = os.path.join(args.inputs_dir, f"input_{i}.pb")
            try:
                feeds[name] = load_tensor(path)
            except FileNotFoundError:
                raise UsageError(f"missing input {i} ({name!r}): {path}") from None
        try:
            refs = run_onnxruntime(args.model, feeds)
        except Exception as e:  # onnxruntime raises its own exception types
            raise UsageError(f"onnxruntime failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    except UsageError as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return 2

    print(f"model {args.model}: {len(refs)} output(s), rtol {args.rtol:g}, atol {args.atol:g}\n")
    all_ok = True
    for i, (out, b) in enumerate(zip(model.graph.output, refs)):
        b = np.asarray(b)
        path = os.path.join(args.outputs_dir, f"output_{i}.pb")
        try:
            a = load_tensor(path)
        except FileNotFoundError:
            print_table(i, out.name, None, b, False, float("nan"), float("nan"),
                        f"missing Tessera output {path}", args.show)
            all_ok = False
            continue
        except Exception as e:
            print_table(i, out.name, None, b, False, float("nan"), float("nan"),
                        f"cannot read {path}: {e}", args.show)
            all_ok = False
            continue
        ok, mabs, mrel, note = compare_one(a, b, args.rtol, args.atol)
        print_table(i, out.name, a, b, ok, mabs, mrel, note, args.show)
        all_ok &= ok

    extra = os.path.join(args.outputs_dir, f"output_{len(refs)}.pb")
    if os.path.exists(extra):
        print(f"unexpected extra Tessera output {extra} (model has {len(refs)} outputs)")
        all_ok = False

    print("compare: all outputs match onnxruntime" if all_ok else "compare: MISMATCH against onnxruntime")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
