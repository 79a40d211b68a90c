# Lit configuration of Tessera's tests: pass tests (.mlir), tool tests (.test).
import os
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "Tessera"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessera_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.tessera_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Every test ends within this many seconds or fails as timed out (lit's
# --timeout, which takes precedence when given): 120 s in an ordinary
# build, 480 s in a sanitizer build. The slowest files,
# tools/tessera-compile-cuda.test and
# Transforms/Remat/tsr-print-remat-solvers-block.test, take about 30 s in
# a Release build; in the ASan build, with lit's two workers next to the
# sanitizer round's other test (ctest -j2) on 2 cores, they took 100 to
# 150 s, and both timed out at 120 s. The limits are four times those
# figures, and still end a hung tool within minutes.
# lit needs psutil for this (Debian's python3-psutil, for /usr/bin/python3):
# if it is missing, lit stops with an error saying so.
if lit_config.maxIndividualTestTime == 0:
    lit_config.maxIndividualTestTime = 480 if config.tessera_sanitizers else 120

# The tests that make ONNX models and data run scripts/setup.sh's venv:
# without it, or without numpy and onnx in it, nothing runs, with a message.
venv_python = os.path.join(config.tessera_src_root, ".venv", "bin", "python")
try:
    subprocess.run([venv_python, "-c", "import numpy, onnx"], check=True,
                   capture_output=True)
except (OSError, subprocess.CalledProcessError) as e:
    lit_config.fatal(f"{venv_python} cannot import numpy and onnx ({e}): "
                     f"run scripts/setup.sh")
config.substitutions.append(("%venv_python", venv_python))
config.substitutions.append(("%srcroot", config.tessera_src_root))
config.substitutions.append(("%onnx_testdata", "/usr/share/libonnx-testdata/data"))

tools = ["tessera-opt", "tessera-translate", "tessera-compile", "tessera-run"]
llvm_config.add_tool_substitutions(
    [t for t in tools if os.path.exists(os.path.join(config.tessera_tools_dir, t))],
    [config.tessera_tools_dir])

# The CUDA target compiles with the toolkit's ptxas, fatbinary and libdevice
# (no GPU needed); tests of it say `REQUIRES: cuda-toolkit`.
if os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("cuda-toolkit")

# A machine with NVIDIA's driver: tests that fake a GPU-less machine's
# runtime (the toolkit's stub libcuda, a fake libcudart) do not run there.
try:
    has_driver = b"libcuda.so.1 " in subprocess.run(
        ["ldconfig", "-p"], capture_output=True).stdout
except OSError:
    has_driver = False
if has_driver or os.path.exists("/dev/nvidiactl"):
    config.available_features.add("nvidia-driver")
# The runtime tests' fake CUDA runtime (runtime/test/FakeCudart.c): device
# memory that is host memory, for the paths past device allocation.
config.substitutions.append(
    ("%fake_cudart_dir",
     os.path.join(config.tessera_obj_root, "runtime", "test", "fake-cuda")))
