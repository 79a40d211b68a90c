#!/usr/bin/env python3
"""Builds the Python package's wheel from the repository and a build tree.

    scripts/build_wheel.py BUILD_DIR OUT_DIR      (or: cmake --build BUILD_DIR --target python-wheel)

The wheel, OUT_DIR/tessera-VERSION-py3-none-linux_x86_64.whl, holds the
packages python/tessera and python/tessera_examples, the tools
tessera-compile and tessera-run (tessera/_bin) and the runtime library with
its NCCL plugin (tessera/_lib) that CMake built in BUILD_DIR, and the
commands tessera-compile, tessera-run and tessera-plot. It is for this
platform: the tools link LLVM/MLIR 22, OpenMPI, OpenBLAS and oneDNN from the
system (scripts/setup.sh installs them). numpy and onnx are its
dependencies. Standard library only: a wheel is a zip file with a
manifest of hashes (PEP 427), so no build backend is needed.
"""

import base64
import hashlib
import pathlib
import re
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TAG = "py3-none-linux_x86_64"


def version():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*tessera\b[^)]*VERSION\s+([0-9.]+)", cmake)
    if not match:
        raise SystemExit("build_wheel.py: error: no VERSION in the project() "
                         "of CMakeLists.txt")
    return match.group(1)


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: scripts/build_wheel.py BUILD_DIR OUT_DIR")
    build, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    v = version()
    files = {}  # archive name -> (source path, executable)
    for package in ("tessera", "tessera_examples"):
        for source in sorted((ROOT / "python" / package).glob("*.py")):
            files[f"{package}/{source.name}"] = (source, False)
    for tool in ("tessera-compile", "tessera-run"):
        files[f"tessera/_bin/{tool}"] = (build / "bin" / tool, True)
    for lib in ("libtessera_runtime.so", "libtessera_comm_nccl.so"):
        if (build / "lib" / lib).exists() or lib == "libtessera_runtime.so":
            files[f"tessera/_lib/{lib}"] = (build / "lib" / lib, False)
    missing = [str(s) for s, _ in files.values() if not s.exists()]
    if missing:
        raise SystemExit("build_wheel.py: error: not built: " +
                         ", ".join(missing) + " (run scripts/build.sh)")

    info = f"tessera-{v}.dist-info"
    metadata = {
        f"{info}/METADATA": (
            "Metadata-Version: 2.1\nName: tessera\n"
            f"Version: {v}\n"
            "Summary: An MLIR-based compiler for distributed neural-network "
            "training\nRequires-Python: >=3.11\nRequires-Dist: numpy\n"
            "Requires-Dist: onnx\n"),
        f"{info}/WHEEL": ("Wheel-Version: 1.0\nGenerator: "
                          "tessera build_wheel.py\nRoot-Is-Purelib: false\n"
                          f"Tag: {TAG}\n"),
        f"{info}/entry_points.txt": (
            "[console_scripts]\n"
            "tessera-compile = tessera._cli:compile_main\n"
            "tessera-run = tessera._cli:run_main\n"
            "tessera-plot = tessera._cli:plot_main\n"),
        f"{info}/top_level.txt": "tessera\ntessera_examples\n",
    }
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"tessera-{v}-{TAG}.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        def add(name, data, executable=False):
            entry = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            # A regular file (S_IFREG), executable or not: pip restores
            # the executable bits only on regular files.
            entry.external_attr = (0o100755 if executable else 0o100644) << 16
            z.writestr(entry, data)
            digest = base64.urlsafe_b64encode(
                hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        for name, (source, executable) in sorted(files.items()):
            add(name, source.read_bytes(), executable)
        for name, text in metadata.items():
            add(name, text.encode())
        record.append(f"{info}/RECORD,,")
        add(f"{info}/RECORD", ("\n".join(record) + "\n").encode())
    print(wheel)


if __name__ == "__main__":
    main()
