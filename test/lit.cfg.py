# Lit configuration of Tessera's tests: pass tests (.mlir), tool tests (.test).
import os

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

venv_python = os.path.join(config.tessera_src_root, ".venv", "bin", "python")
config.substitutions.append(("%venv_python", venv_python))
config.substitutions.append(("%srcroot", config.tessera_src_root))
config.substitutions.append(("%onnx_testdata", "/usr/share/libonnx-testdata/data"))

tools = ["tessera-opt", "tessera-translate", "tessera-compile", "tessera-run"]
llvm_config.add_tool_substitutions(
    [t for t in tools if os.path.exists(os.path.join(config.tessera_tools_dir, t))],
    [config.tessera_tools_dir])
