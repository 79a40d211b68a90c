#!/usr/bin/env python3
"""Run ONNX's backend node tests (Debian libonnx-testdata) through Tessera.

For every case directory ``<testdata>/<case>/`` (``model.onnx`` plus
``test_data_set_0/{input,output}_<i>.pb``):

1. ``tessera-compile <case>/model.onnx --mode=infer --target=cpu -o <tmp>/art``
   (time limit ``--timeout``, default 60 s);
2. ``tessera-run <tmp>/art --inputs-dir <case>/test_data_set_0 --outputs-dir <tmp>/out``
   (same limit);
3. every expected ``output_<i>.pb`` is compared with Tessera's using numpy and
   the ONNX backend-test tolerances: floating point ``|a - b| <= atol + rtol*|b|``
   element-wise with rtol=1e-3, atol=1e-7, NaNs equal when in the same places;
   integers, bools and strings exactly; element type and shape must match.
   Sequence and optional outputs are compared element by element.

Each case gets exactly one result:

``passed``       compiled, ran, all outputs match;
``unsupported``  tessera-compile failed cleanly with an ``error:`` line that
                 contains the word "unsupported";
``failed``       any other clean error (an ``error:`` line and a non-zero exit,
                 or a missing artifact/output) or a numerical mismatch; the first
                 error line is recorded;
``CRASH``        a tool was killed by a signal, or printed an assertion,
                 sanitizer report, ``Stack dump`` or ``PLEASE submit a bug
                 report``, or exited non-zero without any ``error:`` line;
``HANG``         a tool ran past the time limit (its process group is killed).

The markdown report (``--out``) holds the summary, a table per ONNX op type and
the list of failing cases with their first error line. The op type of a case
comes from its model, not its name: the distinct op types of the graph's nodes,
ignoring ``Constant`` when other ops are present; a function-expanded case
(``*_expanded``, whose node outputs are named ``<Op>_<graph>_function_*``) is
counted under ``<Op> (expanded)``. A case with several main ops counts under
each of them.

Expectations. Every case's outcome is one line ``<case> <outcome> [<message>]``
(see EXPECTATIONS_HEADER): ``pass``; ``unsupported`` with the error line;
``<stage>-error`` (stage ``setup``, ``compile`` or ``run``) with the first
error line; ``mismatch`` with what differs; ``<stage>-crash`` and
``<stage>-hang`` also exist but can never be expected. ``--outcomes FILE``
writes the run's outcomes in that format; ``--expected FILE`` (the committed
``test/conformance/expected.txt``) makes any case whose outcome differs from
its line fail the run, a newly passing case included, so that the file always
states what the build does. ``--report-from FILE`` writes the markdown report
from such a file without running anything (``scripts/gen-docs.sh`` writes
``docs/onnx-conformance.md`` that way); a run whose outcomes equal the file
writes the very same report.

Prints ``conformance: P passed, F failed, U unsupported, C crashed, H hung (of N)``
on stdout. Exit status: 0 when no case crashed or hung and, with
``--expected``, every case had its expected outcome; 1 otherwise; 2 for a usage
error (tools, test data or expectations missing or malformed).

Example::

    test/conformance/run_node_tests.py --tessera-bin build/bin \\
        --out /tmp/conformance.md --jobs 2 --filter 'test_(add|relu)' \\
        --expected test/conformance/expected.txt
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_TESTDATA = "/usr/share/libonnx-testdata/data/node"
RTOL, ATOL = 1e-3, 1e-7  # onnx/backend/test/runner: assert_allclose(rtol=1e-3, atol=1e-7)

PASSED, FAILED, UNSUPPORTED, CRASH, HANG = "passed", "failed", "unsupported", "CRASH", "HANG"
RESULTS = (PASSED, FAILED, UNSUPPORTED, CRASH, HANG)

# Text that marks a crash even when the exit status looks clean.
CRASH_PATTERNS = re.compile(
    r"Assertion .* failed|Assertion failed|assertion failed"
    r"|AddressSanitizer|LeakSanitizer|MemorySanitizer|ThreadSanitizer|UndefinedBehaviorSanitizer"
    r"|:\d+:\d+: runtime error: "  # UBSan's 'file:line:col: runtime error: ...'
    r"|Stack dump|PLEASE submit a bug report"
    r"|LLVM ERROR:|terminate called|Segmentation fault|core dumped"
)
ERROR_LINE = re.compile(r"error:")
UNSUPPORTED_WORD = re.compile(r"\bunsupported\b", re.IGNORECASE)


@dataclasses.dataclass
class CaseResult:
    case: str
    ops: list[str]
    result: str
    stage: str = ""  # compile | run | compare | setup
    message: str = ""  # first error line, or why it failed


# --------------------------------------------------------------------------- #
# Expectations: one outcome line per case
# --------------------------------------------------------------------------- #
EXPECTATIONS_HEADER = """\
# The outcome of every ONNX backend node test (libonnx-testdata) through
# Tessera, one line per case, <case> <outcome> [<message>], with <outcome>:
#   pass            compiled, ran, and every output matched
#   unsupported     tessera-compile refused the model; its error line
#   <stage>-error   a clean error at stage setup, compile or run; the first error line
#   mismatch        it ran but an output differs or is missing; what differs
# A crash or a hang is never an expected outcome. The onnx-conformance test
# fails when a case's outcome differs from its line here, a newly passing case
# included. After an intended change, take the outcomes that test wrote and
# regenerate docs/onnx-conformance.md from them:
#   cp build/test/conformance/outcomes.txt test/conformance/expected.txt
#   scripts/gen-docs.sh
"""
EXPECTABLE = re.compile(r"pass|unsupported|mismatch|(setup|compile|run)-error")


def one_line(text: str) -> str:
    return " ".join(text.split())


def outcome(r: CaseResult) -> str:
    """A result as its expectations line after the case name."""
    if r.result == PASSED:
        return "pass"
    if r.result == UNSUPPORTED:
        word = "unsupported"
    elif r.result == FAILED:
        word = "mismatch" if r.stage == "compare" else f"{r.stage}-error"
    else:
        word = f"{r.stage}-{r.result.lower()}"
    return f"{word} {r.message}" if r.message else word


def result_from_outcome(case: str, ops: list[str], text: str) -> CaseResult:
    """The inverse of outcome() for the outcomes EXPECTABLE accepts."""
    word, _, message = text.partition(" ")
    if word == "pass":
        return CaseResult(case, ops, PASSED)
    if word == "unsupported":
        return CaseResult(case, ops, UNSUPPORTED, "compile", message)
    if word == "mismatch":
        return CaseResult(case, ops, FAILED, "compare", message)
    return CaseResult(case, ops, FAILED, word.removesuffix("-error"), message)


def read_expectations(path: str) -> dict[str, str]:
    """case -> outcome text; ValueError naming the line if one is malformed."""
    expected: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            case, _, text = line.partition(" ")
            word, _, message = text.partition(" ")
            where = f"{path}:{n}"
            if word.endswith(("-crash", "-hang")):
                raise ValueError(f"{where}: {case}: a crash or a hang is never an expected outcome")
            if not EXPECTABLE.fullmatch(word):
                raise ValueError(f"{where}: expected '<case> <outcome> [<message>]' with outcome "
                                 f"pass, unsupported, mismatch or <setup|compile|run>-error: {line}")
            if (word == "pass") != (message == ""):
                raise ValueError(f"{where}: {case}: 'pass' has no message, every other outcome one")
            if case in expected:
                raise ValueError(f"{where}: {case} listed twice")
            expected[case] = text
    return expected


def write_outcomes(path: str, results: list[CaseResult]) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(EXPECTATIONS_HEADER)
        for r in sorted(results, key=lambda r: r.case):
            f.write(f"{r.case} {outcome(r)}\n")


def differences(results: list[CaseResult], expected: dict[str, str],
                existing: set[str]) -> list[str]:
    """One entry per case whose outcome is not the expected one, and per
    expected case that the test data no longer has."""
    diffs = []
    for r in sorted(results, key=lambda r: r.case):
        got, want = outcome(r), expected.get(r.case)
        if want is None:
            diffs.append(f"{r.case}: not in the expectations file\n    got:      {got}")
        elif got != want:
            now = " (it now passes)" if got == "pass" else ""
            diffs.append(f"{r.case}{now}:\n    expected: {want}\n    got:      {got}")
    for case in sorted(set(expected) - existing):
        diffs.append(f"{case}: in the expectations file, but the test data has no such case")
    return diffs


# --------------------------------------------------------------------------- #
# Op types of a case
# --------------------------------------------------------------------------- #
def op_key(node: onnx.NodeProto) -> str:
    if node.domain in ("", "ai.onnx"):
        return node.op_type
    return f"{node.domain}.{node.op_type}"


def main_ops(model: onnx.ModelProto) -> list[str]:
    """The op type(s) a case exercises, derived from its graph (see module doc)."""
    g = model.graph
    if g.name:
        pat = re.compile(r"^([A-Za-z][A-Za-z0-9]*)_" + re.escape(g.name) + r"_function_")
        for n in g.node:
            for o in n.output:
                m = pat.match(o)
                if m:
                    return [f"{m.group(1)} (expanded)"]
    ops: list[str] = []
    for n in g.node:
        k = op_key(n)
        if k not in ops:
            ops.append(k)
    if len(ops) > 1 and "Constant" in ops:
        ops.remove("Constant")
    return ops or ["(no nodes)"]


# --------------------------------------------------------------------------- #
# Running the tools
# --------------------------------------------------------------------------- #
@dataclasses.dataclass
class ToolRun:
    rc: int | None  # None: timed out
    stderr: str
    stdout: str


def run_tool(cmd: list[str], timeout: float) -> ToolRun:
    """Run cmd in its own process group; kill the whole group on timeout."""
    p = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        rc = None
    return ToolRun(rc, err.decode("utf-8", "replace"), out.decode("utf-8", "replace"))


def first_line(text: str, pattern: re.Pattern | None = None) -> str:
    for line in text.splitlines():
        if line.strip() and (pattern is None or pattern.search(line)):
            return line.strip()
    return ""


def classify_tool(tool: str, r: ToolRun, timeout: float, allow_unsupported: bool) -> tuple[str, str] | None:
    """None if the tool succeeded, else (result, first error line)."""
    if r.rc is None:
        return HANG, f"{tool} timed out after {timeout:g} s"
    crash_line = first_line(r.stderr, CRASH_PATTERNS)
    if r.rc < 0:
        try:
            sig = signal.Signals(-r.rc).name
        except ValueError:
            sig = f"signal {-r.rc}"
        return CRASH, f"{tool} killed by {sig}" + (f": {crash_line}" if crash_line else "")
    if crash_line:
        return CRASH, f"{tool} (exit {r.rc}): {crash_line}"
    if r.rc == 0:
        return None
    err = first_line(r.stderr, ERROR_LINE)
    if not err:
        tail = first_line(r.stderr) or first_line(r.stdout) or "no output"
        return CRASH, f"{tool} exited {r.rc} without an error: line ({tail})"
    if allow_unsupported:
        for line in r.stderr.splitlines():
            if ERROR_LINE.search(line) and UNSUPPORTED_WORD.search(line):
                return UNSUPPORTED, line.strip()
    return FAILED, err


# --------------------------------------------------------------------------- #
# Comparing outputs
# --------------------------------------------------------------------------- #
def read_proto(path: str, kind: str):
    proto = {"tensor": onnx.TensorProto, "sequence": onnx.SequenceProto,
             "optional": onnx.OptionalProto}.get(kind, onnx.TensorProto)()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return proto


def bfloat16_as_uint16(t: onnx.TensorProto) -> bool:
    """libonnx-testdata 1.12 stores bfloat16 test data as UINT16 tensors of the
    same bit patterns (numpy had no bfloat16 when it was generated)."""
    return t.data_type == onnx.TensorProto.UINT16


def bfloat16_values(t: onnx.TensorProto) -> np.ndarray:
    """The float32 values of a BFLOAT16 (or quirk UINT16) tensor's bits."""
    if t.raw_data:
        bits = np.frombuffer(t.raw_data, dtype="<u2")
    else:
        bits = np.array(t.int32_data, dtype=np.uint32).astype(np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32).reshape(tuple(t.dims))


def compare_tensor(got: onnx.TensorProto, want: onnx.TensorProto) -> str:
    """'' if equal within tolerance, else a one-line description."""
    if got.data_type == onnx.TensorProto.BFLOAT16 and bfloat16_as_uint16(want):
        if list(got.dims) != list(want.dims):
            return f"shape {list(got.dims)}, expected {list(want.dims)}"
        a, b = bfloat16_values(got), bfloat16_values(want)
        if np.array_equal(a, b, equal_nan=True):
            return ""
        return f"{int((a != b).sum())} of {b.size} bfloat16 values differ (exact match required)"
    if got.data_type != want.data_type:
        name = onnx.TensorProto.DataType.Name
        return f"element type {name(got.data_type)}, expected {name(want.data_type)}"
    if list(got.dims) != list(want.dims):
        return f"shape {list(got.dims)}, expected {list(want.dims)}"
    a, b = numpy_helper.to_array(got), numpy_helper.to_array(want)
    if a.size == 0:
        return ""
    if b.dtype.kind in "OSUb" or np.issubdtype(b.dtype, np.integer):
        bad = a != b
        if not bad.any():
            return ""
        idx = np.unravel_index(int(np.argmax(bad)), b.shape)
        return (f"{int(bad.sum())} of {b.size} values differ (exact match required); "
                f"first at {tuple(int(i) for i in idx)}: got {a[idx]!r}, expected {b[idx]!r}")
    if b.dtype.kind != "c":
        a, b = a.astype(np.float64), b.astype(np.float64)
    close = np.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
    if close.all():
        return ""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
    diff = np.where(close, 0.0, np.nan_to_num(diff, nan=np.inf, posinf=np.inf))
    idx = np.unravel_index(int(np.argmax(diff)), b.shape)
    return (f"{int((~close).sum())} of {b.size} values differ (rtol {RTOL:g}, atol {ATOL:g}); "
            f"worst at {tuple(int(i) for i in idx)}: got {a[idx]:.7g}, expected {b[idx]:.7g}")


def compare_value(got, want, kind: str) -> str:
    if kind == "sequence":
        if len(got.tensor_values) != len(want.tensor_values):
            return f"sequence of {len(got.tensor_values)} tensors, expected {len(want.tensor_values)}"
        for j, (g, w) in enumerate(zip(got.tensor_values, want.tensor_values)):
            msg = compare_tensor(g, w)
            if msg:
                return f"element {j}: {msg}"
        return ""
    if kind == "optional":
        if got.elem_type != want.elem_type:
            return f"optional holds element kind {got.elem_type}, expected {want.elem_type}"
        if want.elem_type == onnx.OptionalProto.TENSOR:
            return compare_tensor(got.tensor_value, want.tensor_value)
        if want.elem_type == onnx.OptionalProto.SEQUENCE:
            return compare_value(got.sequence_value, want.sequence_value, "sequence")
        return ""
    return compare_tensor(got, want)


def output_kinds(model: onnx.ModelProto) -> list[str]:
    kinds = []
    for o in model.graph.output:
        v = o.type.WhichOneof("value")
        kinds.append({"tensor_type": "tensor", "sequence_type": "sequence",
                      "optional_type": "optional"}.get(v, "tensor"))
    return kinds


def compare_outputs(model: onnx.ModelProto, data_dir: str, out_dir: str) -> str:
    kinds = output_kinds(model)
    n = 0
    while os.path.exists(os.path.join(data_dir, f"output_{n}.pb")):
        n += 1
    for i in range(n):
        kind = kinds[i] if i < len(kinds) else "tensor"
        name = model.graph.output[i].name if i < len(model.graph.output) else "?"
        got_path = os.path.join(out_dir, f"output_{i}.pb")
        if not os.path.isfile(got_path):
            return f"output_{i} ({name}): tessera-run wrote no output_{i}.pb"
        want = read_proto(os.path.join(data_dir, f"output_{i}.pb"), kind)
        try:
            got = read_proto(got_path, kind)
        except Exception as e:  # protobuf DecodeError and friends
            return f"output_{i} ({name}): cannot parse Tessera's output_{i}.pb as {kind}: {e}"
        msg = compare_value(got, want, kind)
        if msg:
            return f"output_{i} ({name}): {msg}"
    if os.path.exists(os.path.join(out_dir, f"output_{n}.pb")):
        return f"tessera-run wrote more outputs than the {n} expected"
    return ""


# --------------------------------------------------------------------------- #
# One case
# --------------------------------------------------------------------------- #
def run_case(case_dir: str, compile_bin: str, run_bin: str, timeout: float,
             work_root: str | None, keep: bool) -> CaseResult:
    case = os.path.basename(case_dir)
    try:
        model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
        ops = main_ops(model)
    except Exception as e:
        return CaseResult(case, ["(unreadable)"], FAILED, "setup",
                          one_line(f"cannot load model.onnx: {e}"))

    tmp = tempfile.mkdtemp(prefix=case + ".", dir=work_root)
    # Paths in messages are made relative so that the report is stable and
    # equal messages group together ("model.onnx:1:1: error: ...").
    def clean(msg: str) -> str:
        return msg.replace(tmp + os.sep, "").replace(tmp, "<tmp>").replace(case_dir + os.sep, "")

    try:
        r = _run_case(case, case_dir, model, ops, tmp, compile_bin, run_bin, timeout)
        r.message = one_line(clean(r.message))
        return r
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def relabel_bfloat16_inputs(model: onnx.ModelProto, data_dir: str, tmp: str) -> str:
    """The inputs directory to run with: `data_dir` itself, or a copy in `tmp`
    whose UINT16 inputs of BFLOAT16 graph inputs are relabelled BFLOAT16 (the
    test data's quirk, see bfloat16_as_uint16)."""
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    fixed = {}
    for i, gi in enumerate(graph_inputs):
        path = os.path.join(data_dir, f"input_{i}.pb")
        if gi.type.tensor_type.elem_type != onnx.TensorProto.BFLOAT16 or not os.path.isfile(path):
            continue
        t = read_proto(path, "tensor")
        if bfloat16_as_uint16(t):
            t.data_type = onnx.TensorProto.BFLOAT16
            fixed[f"input_{i}.pb"] = t
    if not fixed:
        return data_dir
    inputs = os.path.join(tmp, "inputs")
    os.makedirs(inputs)
    for f in os.listdir(data_dir):
        if f in fixed:
            with open(os.path.join(inputs, f), "wb") as out:
                out.write(fixed[f].SerializeToString())
        else:
            shutil.copy(os.path.join(data_dir, f), inputs)
    return inputs


def _run_case(case: str, case_dir: str, model: onnx.ModelProto, ops: list[str], tmp: str,
              compile_bin: str, run_bin: str, timeout: float) -> CaseResult:
    model_path = os.path.join(case_dir, "model.onnx")
    data_dir = os.path.join(case_dir, "test_data_set_0")
    art = os.path.join(tmp, "art")
    out = os.path.join(tmp, "out")
    os.makedirs(out)

    r = run_tool([compile_bin, model_path, "--mode=infer", "--target=cpu", "-o", art], timeout)
    bad = classify_tool("tessera-compile", r, timeout, allow_unsupported=True)
    if bad:
        return CaseResult(case, ops, bad[0], "compile", bad[1])
    for f in ("model.so", "manifest.json"):
        if not os.path.isfile(os.path.join(art, f)):
            return CaseResult(case, ops, FAILED, "compile",
                              f"tessera-compile exited 0 but wrote no {f}")

    inputs_dir = relabel_bfloat16_inputs(model, data_dir, tmp)
    r = run_tool([run_bin, art, "--inputs-dir", inputs_dir, "--outputs-dir", out], timeout)
    bad = classify_tool("tessera-run", r, timeout, allow_unsupported=False)
    if bad:
        return CaseResult(case, ops, bad[0], "run", bad[1])

    try:
        msg = compare_outputs(model, data_dir, out)
    except Exception as e:
        msg = f"comparison failed: {type(e).__name__}: {e}"
    if msg:
        return CaseResult(case, ops, FAILED, "compare", msg)
    return CaseResult(case, ops, PASSED)


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #
def md_cell(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def testdata_version() -> str:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libonnx-testdata"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else ""
    except Exception:
        return ""


def summary_line(counts: collections.Counter, total: int) -> str:
    return (f"conformance: {counts[PASSED]} passed, {counts[FAILED]} failed, "
            f"{counts[UNSUPPORTED]} unsupported, {counts[CRASH]} crashed, "
            f"{counts[HANG]} hung (of {total})")


def write_report(path: str, results: list[CaseResult], total: int, args) -> None:
    counts = collections.Counter(r.result for r in results)
    lines: list[str] = []
    w = lines.append
    version = testdata_version()
    w("# ONNX backend conformance: node tests")
    w("")
    w("Generated by `test/conformance/run_node_tests.py`; do not edit by hand. `scripts/gen-docs.sh` "
      "writes it from `test/conformance/expected.txt`, the outcome of every case, which the "
      "`onnx-conformance` test requires of every build.")
    w("")
    w(f"Each case of Debian's libonnx-testdata{' ' + version if version else ''} "
      f"(`{args.testdata}`) is compiled with `tessera-compile --mode=infer --target=cpu`, "
      f"run once with `tessera-run` on `test_data_set_0`, and its outputs compared with the "
      f"expected ones (floating point: rtol {RTOL:g}, atol {ATOL:g}, NaNs equal in the same "
      f"places; integers, bools and strings exactly; element type and shape must match). "
      f"Time limit {args.timeout:g} s per tool.")
    if args.filter:
        w("")
        w(f"Cases restricted to those matching `{args.filter}`.")
    if len(results) < total:
        w("")
        w(f"**Stopped early** (`--no-keep-going`): {total - len(results)} of {total} cases not run.")
    w("")
    w("## Summary")
    w("")
    w("| result | cases |")
    w("|---|---:|")
    for res in RESULTS:
        w(f"| {res} | {counts[res]} |")
    w(f"| **total** | **{total}** |")
    w("")
    w("`unsupported`: tessera-compile refused the model with an error naming something unsupported. "
      "`failed`: any other clean error, or wrong results. `CRASH`: killed by a signal, an assertion, "
      "sanitizer report or LLVM stack dump, or a non-zero exit without an `error:` line. "
      "`HANG`: past the time limit.")
    w("")

    w("## By op type")
    w("")
    w("The op type of a case is read from its model: the distinct op types of its graph nodes "
      "(ignoring `Constant` next to other ops). Function-expanded cases (`*_expanded`) count "
      "under `<Op> (expanded)`; they exercise the ops of the expansion, not `<Op>` itself. "
      "A case with several main ops counts once under each.")
    w("")
    w("| op type | cases | passed | failed | unsupported | crash | hang |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    per_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        for op in r.ops:
            per_op[op][r.result] += 1
    for op in sorted(per_op, key=str.lower):
        c = per_op[op]
        w(f"| {md_cell(op)} | {sum(c.values())} | {c[PASSED]} | {c[FAILED]} | "
          f"{c[UNSUPPORTED]} | {c[CRASH]} | {c[HANG]} |")
    w("")

    bad = [r for r in results if r.result in (CRASH, HANG, FAILED)]
    w("## Failures")
    w("")
    if not bad:
        w("None.")
    else:
        order = {CRASH: 0, HANG: 1, FAILED: 2}
        w("| case | op type | result | stage | first error line |")
        w("|---|---|---|---|---|")
        for r in sorted(bad, key=lambda r: (order[r.result], r.case)):
            w(f"| {r.case} | {md_cell(', '.join(r.ops))} | {r.result} | {r.stage} | {md_cell(r.message)} |")
    w("")

    unsup = [r for r in results if r.result == UNSUPPORTED]
    w("## Unsupported, by message")
    w("")
    if not unsup:
        w("None.")
    else:
        by_msg: dict[str, list[str]] = collections.defaultdict(list)
        for r in unsup:
            by_msg[r.message].append(r.case)
        w("| cases | message | e.g. |")
        w("|---:|---|---|")
        for msg, cases in sorted(by_msg.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            eg = ", ".join(sorted(cases)[:3]) + (", …" if len(cases) > 3 else "")
            w(f"| {len(cases)} | {md_cell(msg)} | {eg} |")
    w("")

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


# --------------------------------------------------------------------------- #
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Run the ONNX backend node tests (libonnx-testdata) through tessera-compile "
        "and tessera-run, compare every case's outcome with its expectation and write a markdown "
        "conformance report.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Results: passed, failed, unsupported (clean compile error mentioning "
        "'unsupported'), CRASH (signal, assertion/sanitizer/'Stack dump'/'PLEASE submit a bug "
        "report', or non-zero exit without an 'error:' line), HANG (timeout). Exit 0 when nothing "
        "crashed or hung and (with --expected) every outcome was the expected one, 1 otherwise, "
        "2 on usage errors.",
    )
    ap.add_argument("--tessera-bin", default="build/bin", metavar="DIR",
                    help="directory holding tessera-compile and tessera-run (default build/bin)")
    ap.add_argument("--out", metavar="FILE", help="markdown report to write")
    ap.add_argument("--expected", metavar="FILE",
                    help="expectations file (test/conformance/expected.txt): fail when a case's "
                    "outcome differs from its line, or a case has none")
    ap.add_argument("--outcomes", metavar="FILE",
                    help="write this run's outcomes in the expectations format")
    ap.add_argument("--report-from", metavar="FILE",
                    help="run nothing: write the --out report from this expectations file")
    ap.add_argument("--testdata", default=DEFAULT_TESTDATA, metavar="DIR",
                    help=f"node test cases (default {DEFAULT_TESTDATA})")
    ap.add_argument("--jobs", "-j", type=int, default=2, metavar="N",
                    help="cases run in parallel (default 2)")
    ap.add_argument("--filter", metavar="REGEX",
                    help="run only cases whose directory name matches REGEX (re.search)")
    ap.add_argument("--timeout", type=float, default=60.0, metavar="S",
                    help="time limit per tool invocation in seconds (default 60)")
    ap.add_argument("--keep-going", action=argparse.BooleanOptionalAction, default=True,
                    help="run every case (default); --no-keep-going stops scheduling new cases "
                    "after the first crashed or hung one, or the first unexpected outcome "
                    "(without --expected: the first failed one)")
    ap.add_argument("--list-failures", action="store_true",
                    help="also print every failed/crashed/hung case with its first error line")
    ap.add_argument("--work-dir", metavar="DIR",
                    help="where per-case temporary directories go (default: system temp)")
    ap.add_argument("--keep-temps", action="store_true",
                    help="keep the per-case artifacts and outputs (with --work-dir)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every case's result to stderr as it finishes")
    args = ap.parse_args(argv)

    def die(msg: str) -> int:
        print(f"run_node_tests.py: error: {msg}", file=sys.stderr)
        return 2

    if not os.path.isdir(args.testdata):
        return die(f"test data not found: {args.testdata} (apt-get install libonnx-testdata)")
    try:
        case_filter = re.compile(args.filter) if args.filter else None
    except re.error as e:
        return die(f"bad --filter regex: {e}")
    existing = {d for d in os.listdir(args.testdata)
                if os.path.isfile(os.path.join(args.testdata, d, "model.onnx"))}
    cases = sorted(d for d in existing if case_filter is None or case_filter.search(d))
    total = len(cases)
    if total == 0:
        return die("no test cases selected")

    if args.report_from:
        if not args.out:
            return die("--report-from needs --out")
        try:
            expected = read_expectations(args.report_from)
        except (OSError, ValueError) as e:
            return die(str(e))
        missing = [c for c in cases if c not in expected]
        if missing:
            return die(f"{args.report_from} has no line for {len(missing)} case(s): "
                       f"{', '.join(missing[:5])}{', …' if len(missing) > 5 else ''}")
        results = []
        for case in cases:
            model = onnx.load(os.path.join(args.testdata, case, "model.onnx"),
                              load_external_data=False)
            results.append(result_from_outcome(case, main_ops(model), expected[case]))
        write_report(args.out, results, total, args)
        print(summary_line(collections.Counter(r.result for r in results), total))
        print(f"report: {args.out}")
        return 0

    compile_bin = os.path.abspath(os.path.join(args.tessera_bin, "tessera-compile"))
    run_bin = os.path.abspath(os.path.join(args.tessera_bin, "tessera-run"))
    for tool in (compile_bin, run_bin):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            return die(f"{tool} not found or not executable (build Tessera first: scripts/build.sh, "
                       f"or pass --tessera-bin)")
    if args.jobs < 1:
        return die("--jobs must be at least 1")
    expected = None
    if args.expected:
        try:
            expected = read_expectations(args.expected)
        except (OSError, ValueError) as e:
            return die(str(e))
    if args.work_dir:
        os.makedirs(args.work_dir, exist_ok=True)

    results: list[CaseResult] = []
    lock = threading.Lock()
    stop = threading.Event()

    def unexpected(r: CaseResult) -> bool:
        if r.result in (CRASH, HANG):
            return True
        if expected is None:
            return r.result == FAILED
        return outcome(r) != expected.get(r.case)

    def work(case: str) -> CaseResult | None:
        if stop.is_set():
            return None
        r = run_case(os.path.join(args.testdata, case), compile_bin, run_bin, args.timeout,
                     args.work_dir, args.keep_temps)
        with lock:
            results.append(r)
            done = len(results)
            bad = unexpected(r)
            if bad and not args.keep_going:
                stop.set()
            if args.verbose or bad:
                line = f"[{done}/{total}] {r.case}: {r.result}"
                if r.message:
                    line += f" ({r.stage}: {r.message})"
                if expected is not None and bad:
                    line += f"; expected: {expected.get(r.case, '(no line)')}"
                print(line, file=sys.stderr, flush=True)
            elif done % 100 == 0:
                print(f"[{done}/{total}] ...", file=sys.stderr, flush=True)
        return r

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        for fut in [pool.submit(work, c) for c in cases]:
            fut.result()
    except KeyboardInterrupt:
        stop.set()
        print("run_node_tests.py: interrupted; writing a partial report", file=sys.stderr)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

    results.sort(key=lambda r: r.case)
    if args.out:
        write_report(args.out, results, total, args)
    if args.outcomes:
        write_outcomes(args.outcomes, results)
    counts = collections.Counter(r.result for r in results)

    if args.list_failures:
        for r in results:
            if r.result in (FAILED, CRASH, HANG):
                print(f"{r.result:7} {r.case} [{r.stage}] {r.message}")
    print(summary_line(counts, total))
    if len(results) < total:
        print(f"(stopped early: {total - len(results)} cases not run)")
    for what, path in (("report", args.out), ("outcomes", args.outcomes)):
        if path:
            print(f"{what}: {path}")

    rc = 0
    if counts[CRASH] or counts[HANG]:
        rc = 1
    if expected is not None:
        diffs = differences(results, expected, existing)
        if diffs:
            rc = 1
            print(f"\nrun_node_tests.py: {len(diffs)} case(s) differ from their expected outcome "
                  f"in {args.expected}:", file=sys.stderr)
            for d in diffs:
                print(f"  {d}", file=sys.stderr)
            if args.outcomes and not args.filter and len(results) == total:
                how = (f"take this run's outcomes and regenerate the report:\n"
                       f"  cp {args.outcomes} {args.expected}\n  scripts/gen-docs.sh")
            else:
                how = (f"write each 'got' line above, after its case name, into {args.expected}, "
                       f"then run scripts/gen-docs.sh")
            print(f"If every change is intended (a case that now passes always is), {how}\n"
                  f"and commit both files.", file=sys.stderr)
        else:
            print(f"every outcome is the one {args.expected} expects")
    return rc


if __name__ == "__main__":
    sys.exit(main())
