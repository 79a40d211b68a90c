"""The commands an installed package puts on PATH: ``tessera-compile`` and
``tessera-run`` run the tools it carries (``tessera/_bin``, with its runtime
library ``tessera/_lib``), ``tessera-plot`` is ``python -m tessera.plot``."""

import os
import sys

from .compiler import tool


def _run(name):
    lib = os.path.join(os.path.dirname(__file__), "_lib")
    path = os.environ.get("LD_LIBRARY_PATH")
    os.environ["LD_LIBRARY_PATH"] = lib + (os.pathsep + path if path else "")
    binary = tool(name)
    os.execv(binary, [name, *sys.argv[1:]])


def compile_main():
    _run("tessera-compile")


def run_main():
    _run("tessera-run")


def plot_main():
    from .plot import main
    sys.exit(main())
