"""Compiling ONNX models from Python: ``tessera.compile``.

    import tessera
    step = tessera.compile("charlm.onnx", mode="train", loss="cross_entropy",
                           logits="logits", batch_size=16, optimizer="adam",
                           lr=3e-3, eval=True)
    log = step.train("tokens.bin", steps=200, eval_data="valid.bin")
    model = tessera.compile("trained.onnx", mode="infer")
    logits = model.run({"tokens": ids})["logits"]

Every keyword is a flag of ``tessera-compile`` (``docs/cli.md``), spelled
with underscores: ``batch_size=16`` is ``--batch-size=16``, ``eval=True``
is ``--eval`` (False leaves a flag out), a list repeats the flag
(``trainable=["fc*", "head*"]``), and ``mesh={"dp": 2}`` is
``--mesh dp=2``. The compiler is ``$TESSERA_COMPILE`` if set, else the one
an installed package carries (``tessera/_bin``), else ``build/bin`` of the
repository. Its summary and warnings go to stderr as on the command line; a
failure raises CompileError with its message.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

from .runtime import Artifact

__all__ = ["CompileError", "compile", "tool"]


class CompileError(RuntimeError):
    """tessera-compile refused the model or the options; the message is its
    error output."""


def tool(name):
    """The path of the Tessera tool `name` ("tessera-compile", "tessera-run")
    this package uses."""
    override = os.environ.get("TESSERA_" + name.split("-")[1].upper())
    if override:
        return override
    here = pathlib.Path(__file__).resolve().parent
    installed = here / "_bin" / name
    if installed.exists():
        return str(installed)
    return str(here.parents[1] / "build" / "bin" / name)


def _flags(options):
    flags = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            flags.append(flag)
        elif key == "mesh" and isinstance(value, dict):
            flags += [flag, ",".join(f"{a}={n}" for a, n in value.items())]
        elif isinstance(value, (list, tuple)):
            flags += [f"{flag}={item}" for item in value]
        else:
            flags.append(f"{flag}={value}")
    return flags


def compile(model, out=None, **options):  # noqa: A001 (the API's name)
    """Compiles the ONNX model at `model` into the artifact directory `out`
    (a new temporary directory when None, removed with the interpreter) and
    returns it loaded as an Artifact."""
    if out is None:
        holder = tempfile.TemporaryDirectory(prefix="tessera-")
        out = os.path.join(holder.name, "artifact")
        _keep.append(holder)
    command = [tool("tessera-compile"), os.fspath(model), *_flags(options),
               "-o", os.fspath(out)]
    done = subprocess.run(command, capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise CompileError("; ".join(lines) or
                           f"tessera-compile exited {done.returncode}")
    return Artifact(out)


# Temporary artifact directories live as long as the interpreter.
_keep = []
