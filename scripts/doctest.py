#!/usr/bin/env python3
"""Runs the command blocks of Markdown pages and compares their output.

usage: doctest.py [--self-test] [--build DIR] [--root DIR] [--list] [--keep] PAGE.md ...

A fenced block is a doc test when the line right before its opening fence
is the marker

    <!-- doctest -->

and is left out, with its reason, when that line is

    <!-- doctest: skip (needs a GPU) -->

Both are HTML comments, invisible in rendered Markdown. A page may also hold
setup comments, run in page order among its blocks, whose lines are bash
commands (their output is not shown and not compared, but each must exit 0):

    <!-- doctest-setup
    python3 "$TESSERA_ROOT/test/Import/ONNX/Inputs/make_model.py" mlp mlp.onnx
    -->

All setup comments and marked blocks of one page run in order, in one fresh
temporary directory (removed afterwards unless --keep), so a block sees the
files that setup and earlier blocks made. Nothing is written anywhere else.

Inside a marked block, a line starting with `$ ` is a command; the lines up
to the next command or the fence are its expected output. A command goes
on while its line ends with a backslash or a quote is still open (`$ python
-c "` ... `"`). Each command runs as `bash -c COMMAND` in the page's
directory, with stdout and stderr merged, `$?` set to the status of the
previous command of the page (so `$ echo $?` shows it), and in the
environment:

    PATH           BUILD/bin, then the caller's PATH
    TESSERA_ROOT   the repository root
    TESSERA_BUILD  the build directory
    PYTHON         ROOT/.venv/bin/python (numpy, onnx, onnxruntime)

A command's status is not checked by itself: a block that claims one shows
`$ echo $?`. Expected and actual output are compared line by line, trailing
whitespace and trailing empty lines ignored, with these placeholders in the expected lines:

    ...        a line holding only `...` (indentation allowed) matches any
               number of lines, none included
    {n}        inside a line: one number (optional sign, digits, optional
               fraction and exponent, or nan/inf), e.g. a time or a rate
    {*}        inside a line: any text, possibly empty

Everything else on a line is literal (an inline `...`, as in tessera-run's
`[1, 2, ... (2048 values)]`, is the tool's own text). A mismatch prints the
page, the line of the block's fence, the command and a unified diff of the
expected and actual output, and the exit status is 1.

--list prints every marked block (run or skipped, with its reason) and, per
page, the fenced blocks holding `$ ` commands that carry no marker; the pages
given to a run must have none (every documented command runs or states why
not). --self-test checks the matcher and the parser on built-in cases (a
deliberately broken expected output among them) before any pages.
"""
import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

MARK_RE = re.compile(r"^ *<!--\s*doctest(?::\s*(?P<arg>.*?))?\s*-->\s*$")
SKIP_RE = re.compile(r"^skip\s*\((?P<reason>.+)\)$")
SETUP_OPEN = "<!-- doctest-setup"
FENCE_RE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})")
NUMBER = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
TOKEN_RE = re.compile(r"\{n\}|\{\*\}")


@dataclass
class Command:
    text: str
    expected: list = field(default_factory=list)


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    kind: str  # "run", "skip", "setup" or "unmarked"
    reason: str = ""
    commands: list = field(default_factory=list)
    setup: str = ""


class DocError(Exception):
    pass


def command_complete(text):
    if text.endswith("\\"):
        return False
    try:
        shlex.split(text, comments=True)
    except ValueError:  # a quote still open
        return False
    return True


def parse_commands(lines, where):
    """Splits a block's lines into commands with their expected output."""
    commands = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if not commands:
                raise DocError(f"{where}: output before the first `$ ` command: {line!r}")
            commands[-1].expected.append(line)
            i += 1
            continue
        text = line[2:]
        i += 1
        while not command_complete(text):
            if i >= len(lines):
                raise DocError(f"{where}: command never ends: {text!r}")
            text += "\n" + lines[i]
            i += 1
        commands.append(Command(text))
    return commands


def parse_page(path):
    """Returns the page's setup comments and fenced blocks, in order."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = []
    marker = None  # (kind, reason, line) of a marker on the previous line
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == SETUP_OPEN:
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "-->":
                body.append(lines[i])
                i += 1
            if i >= len(lines):
                raise DocError(f"{path}:{start}: doctest-setup comment never closes")
            blocks.append(Block(start, "setup", setup="\n".join(body)))
            i += 1
            marker = None
            continue
        m = MARK_RE.match(line)
        if m:
            arg = (m.group("arg") or "").strip()
            if not arg:
                marker = ("run", "", i + 1)
            elif SKIP_RE.match(arg):
                marker = ("skip", SKIP_RE.match(arg).group("reason").strip(), i + 1)
            else:
                raise DocError(f"{path}:{i + 1}: unknown doctest marker {line.strip()!r} "
                               "(expected <!-- doctest --> or <!-- doctest: skip (REASON) -->)")
            i += 1
            continue
        f = FENCE_RE.match(line)
        if f:
            fence = f.group("fence")
            indent = len(f.group("indent"))
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(fence):
                # A fence after text on its line does not close the block
                # (CommonMark), which would hide the blocks after it.
                if lines[i].rstrip().endswith(fence[:3]):
                    raise DocError(f"{path}:{i + 1}: a fence after text on its line "
                                   "does not close the block; put it on a line of its own")
                # A block in a list item: its lines lose the fence's indentation.
                strip = len(lines[i]) - len(lines[i].lstrip(" "))
                body.append(lines[i][min(indent, strip):])
                i += 1
            i += 1
            if marker and marker[2] == start - 1:
                kind, reason = marker[0], marker[1]
            else:
                if marker:
                    raise DocError(f"{path}:{marker[2]}: doctest marker not directly above a fence")
                kind, reason = "unmarked", ""
            marker = None
            where = f"{path}:{start}"
            if kind == "run":
                commands = parse_commands(body, where)
                if not commands:
                    raise DocError(f"{where}: a doctest block without `$ ` commands")
                blocks.append(Block(start, kind, commands=commands))
            elif kind == "skip" or any(b.startswith("$ ") for b in body):
                blocks.append(Block(start, kind, reason=reason))
            continue
        if marker and line.strip():
            raise DocError(f"{path}:{marker[2]}: doctest marker not directly above a fence")
        i += 1
    if marker:
        raise DocError(f"{path}:{marker[2]}: doctest marker not directly above a fence")
    return blocks


def line_regex(expected):
    parts = []
    pos = 0
    for m in TOKEN_RE.finditer(expected):
        parts.append(re.escape(expected[pos:m.start()]))
        parts.append(NUMBER if m.group() == "{n}" else ".*?")
        pos = m.end()
    parts.append(re.escape(expected[pos:]))
    return re.compile("".join(parts) + r"\Z")


def trim(lines):
    while lines and not lines[-1]:
        lines = lines[:-1]
    return lines


def matches(expected, actual):
    """True when the actual lines match the expected lines with placeholders."""
    expected = trim([e.rstrip() for e in expected])
    actual = trim([a.rstrip() for a in actual])
    regexes = [None if e.strip() == "..." else line_regex(e) for e in expected]
    # reach[j] after row i: expected[:i] can match actual[:j]
    reach = [True] + [False] * len(actual)
    for rx in regexes:
        nxt = [False] * (len(actual) + 1)
        if rx is None:
            seen = False
            for j in range(len(actual) + 1):
                seen = seen or reach[j]
                nxt[j] = seen
        else:
            for j in range(len(actual)):
                if reach[j] and rx.match(actual[j]):
                    nxt[j + 1] = True
        reach = nxt
    return reach[len(actual)]


def output_lines(text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def run_page(path, blocks, env, keep):
    workdir = tempfile.mkdtemp(prefix="doctest-")
    failures = 0
    status = 0
    try:
        for block in blocks:
            if block.kind == "setup":
                r = subprocess.run(["bash", "-e", "-c", block.setup], cwd=workdir, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if r.returncode != 0:
                    print(f"FAIL {path}:{block.line}: doctest-setup exited {r.returncode}:\n"
                          f"{r.stdout}")
                    return 1
                continue
            if block.kind != "run":
                continue
            for cmd in block.commands:
                script = f"(exit {status})\n{cmd.text}"
                r = subprocess.run(["bash", "-c", script], cwd=workdir, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace")
                status = r.returncode
                actual = output_lines(r.stdout)
                if not matches(cmd.expected, actual):
                    failures += 1
                    print(f"FAIL {path}:{block.line}: $ {cmd.text}")
                    diff = difflib.unified_diff(cmd.expected, actual, "expected (doc)",
                                                "actual", lineterm="")
                    print("\n".join(diff))
        return 1 if failures else 0
    finally:
        if keep:
            print(f"kept {workdir} for {path}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def list_page(path, blocks):
    unmarked = 0
    for b in blocks:
        if b.kind == "run":
            print(f"{path}:{b.line}: run, {len(b.commands)} command(s)")
        elif b.kind == "skip":
            print(f"{path}:{b.line}: skip ({b.reason})")
        elif b.kind == "setup":
            print(f"{path}:{b.line}: setup")
        else:
            unmarked += 1
            print(f"{path}:{b.line}: UNMARKED command block")
    runs = sum(b.kind == "run" for b in blocks)
    skips = sum(b.kind == "skip" for b in blocks)
    print(f"{path}: {runs} run, {skips} skipped, {unmarked} unmarked command block(s)")
    return unmarked


def self_test():
    ok = True

    def check(name, got, want):
        nonlocal ok
        if got != want:
            ok = False
            print(f"self-test FAIL: {name}: got {got!r}, want {want!r}")

    check("literal", matches(["a b", "c"], ["a b", "c"]), True)
    check("literal differs", matches(["a b"], ["a c"]), False)
    check("trailing space", matches(["a  "], ["a"]), True)
    check("missing line", matches(["a", "b"], ["a"]), False)
    check("extra line", matches(["a"], ["a", "b"]), False)
    check("trailing empty lines", matches(["a", ""], ["a"]) and matches(["a"], ["a", ""]), True)
    check("number", matches(["t {n} ms"], ["t 0.05 ms"]), True)
    check("number exp", matches(["{n}"], ["-1.5e-07"]), True)
    check("number nan", matches(["loss {n}"], ["loss nan"]), True)
    check("number rejects text", matches(["t {n} ms"], ["t fast ms"]), False)
    check("number whole token", matches(["t {n} ms"], ["t 5 5 ms"]), False)
    check("star", matches(["a {*} z"], ["a anything at all z"]), True)
    check("star empty", matches(["a{*}z"], ["az"]), True)
    check("star one line", matches(["a {*}"], ["a b", "c"]), False)
    check("regex chars literal", matches(["[1, 2] (x)*"], ["[1, 2] (x)*"]), True)
    check("inline dots literal", matches(["[1, ... (9 values)]"], ["[1, 2, 3]"]), False)
    check("ellipsis none", matches(["a", "...", "b"], ["a", "b"]), True)
    check("ellipsis many", matches(["a", "...", "b"], ["a", "x", "y", "b"]), True)
    check("ellipsis indented", matches(["  ...", "end"], ["x", "end"]), True)
    check("ellipsis at end", matches(["a", "..."], ["a", "b", "c"]), True)
    check("ellipsis backtracks", matches(["...", "b", "c"], ["b", "b", "c"]), True)
    check("ellipsis still needs tail", matches(["a", "...", "b"], ["a", "x"]), False)
    check("empty", matches([], []), True)
    check("empty vs line", matches([], ["x"]), False)
    check("output_lines", output_lines("a\nb\n"), ["a", "b"])
    check("output_lines blank kept", output_lines("a\n\n"), ["a", ""])
    cmds = parse_commands(['$ echo "a', 'b"', "a", "b", "$ x \\", "  --y", "out"], "t")
    check("parse commands", [(c.text, c.expected) for c in cmds],
          [('echo "a\nb"', ["a", "b"]), ("x \\\n  --y", ["out"])])
    cmds = parse_commands(['$ echo "it\'s" # it\'s', "it's"], "t")
    check("quote in comment", [c.text for c in cmds], ['echo "it\'s" # it\'s'])
    with tempfile.TemporaryDirectory() as d:
        page = os.path.join(d, "p.md")
        with open(page, "w") as f:
            f.write("x\n<!-- doctest-setup\necho hi > f\n-->\n<!-- doctest -->\n```\n$ cat f\n"
                    "hi\n```\n<!-- doctest: skip (slow) -->\n```\n$ sleep 99\n```\n"
                    "```\n$ unmarked\n```\n```\nno command\n```\n"
                    "1. item\n   ```\n   $ indented unmarked\n   ```\n")
        blocks = parse_page(page)
        check("parse page", [(b.kind, b.line, b.reason) for b in blocks],
              [("setup", 2, ""), ("run", 6, ""), ("skip", 11, "slow"), ("unmarked", 14, ""),
               ("unmarked", 21, "")])
        blocks = blocks[:4]
        with open(os.path.join(d, "q.md"), "w") as f:
            f.write("- item\n\n  <!-- doctest -->\n  ```\n  $ echo a\n    a\n  ```\n")
        check("list item block", [(c.text, c.expected) for c in
                                  parse_page(os.path.join(d, "q.md"))[0].commands],
              [("echo a", ["  a"])])
        with open(os.path.join(d, "r.md"), "w") as f:
            f.write("```\n$ x\n}```\n<!-- doctest -->\n```\n$ y\n```\n")
        try:
            parse_page(os.path.join(d, "r.md"))
            check("fence after text", "parsed", "error")
        except DocError as e:
            check("fence after text", "does not close" in str(e), True)
        env = dict(os.environ)
        check("run page", run_page(page, blocks, env, False), 0)
        blocks[1].commands[0].expected = ["ho"]
        print("self-test: the next FAIL is expected")
        check("run page broken", run_page(page, blocks, env, False), 1)
    print("self-test: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("pages", nargs="*", metavar="PAGE.md")
    ap.add_argument("--root", default=root, help="repository root (default: this script's)")
    ap.add_argument("--build", help="build directory (default: ROOT/build)")
    ap.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    ap.add_argument("--keep", action="store_true", help="keep each page's directory")
    ap.add_argument("--self-test", action="store_true",
                    help="check the matcher and parser first (then run the pages, if any)")
    args = ap.parse_args(argv)
    if args.self_test:
        if self_test() != 0:
            return 1
        if not args.pages:
            return 0
    if not args.pages:
        ap.error("no pages given")
    root = os.path.abspath(args.root)
    build = os.path.abspath(args.build or os.path.join(root, "build"))
    pages = {}
    try:
        for page in args.pages:
            pages[page] = parse_page(page)
    except DocError as e:
        print(f"doctest: error: {e}")
        return 1
    if args.list:
        for page, blocks in pages.items():
            list_page(page, blocks)
        return 0
    env = dict(os.environ)
    env.update(PATH=os.path.join(build, "bin") + os.pathsep + env.get("PATH", ""),
               TESSERA_ROOT=root, TESSERA_BUILD=build,
               PYTHON=os.path.join(root, ".venv", "bin", "python"))
    failed = 0
    for page, blocks in pages.items():
        unmarked = [b for b in blocks if b.kind == "unmarked"]
        for b in unmarked:
            print(f"FAIL {page}:{b.line}: a command block without a doctest marker "
                  "(<!-- doctest --> or <!-- doctest: skip (REASON) -->)")
        rc = run_page(page, blocks, env, args.keep)
        runs = [b for b in blocks if b.kind == "run"]
        ncmd = sum(len(b.commands) for b in runs)
        nskip = sum(b.kind == "skip" for b in blocks)
        verdict = "FAIL" if rc or unmarked else "ok"
        print(f"{verdict:4} {page}: {len(runs)} blocks ({ncmd} commands) run, {nskip} skipped")
        failed += bool(rc or unmarked)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
