#!/usr/bin/env python3
"""The Python package installs into a fresh virtual environment and its
example compiles and trains the character LM from Python.

1. scripts/build_wheel.py makes the wheel from this build (the command the
   python-wheel CMake target runs), in a temporary directory.
2. A fresh venv of /usr/bin/python3 with Debian's numpy and onnx
   (--system-site-packages; nothing from the network) installs it with pip
   (--no-index --no-deps). Every command below runs there, from a
   directory outside the repository, without PYTHONPATH: `import tessera`
   must find the installed package and its own tools and library.
3. `python -m tessera_examples.train_charlm --steps 80` compiles the
   training step with its evaluation program (tessera.compile), trains 80
   steps in-process with the validation loss every 20 (Artifact.train),
   saves the trained ONNX model, compiles it for inference and runs it
   (Artifact.run): the loss falls, four evaluations are reported, and the
   files exist.
4. The commands on the venv's PATH: tessera-compile --version, and
   tessera-run training 5 steps with --log-json, which tessera-plot draws.
5. tessera.compile with a wrong option raises CompileError with the
   compiler's message.

Usage: python_package_test.py BUILD_DIR REPO_ROOT
"""

import os
import re
import subprocess
import sys
import tempfile

from checks import check, finish


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {done.returncode}")
    return done


def main():
    build, root = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="tessera-package-") as work:
        wheel = run([sys.executable, os.path.join(root, "scripts", "build_wheel.py"),
                     build, os.path.join(work, "dist")]).stdout.strip()
        check(wheel.endswith("-py3-none-linux_x86_64.whl") and os.path.exists(wheel),
              f"scripts/build_wheel.py wrote {os.path.basename(wheel)}")
        venv = os.path.join(work, "venv")
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        run([os.path.join(venv, "bin", "pip"), "install", "-q", "--no-index",
             "--no-deps", "--disable-pip-version-check", wheel])
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "TESSERA_RUNTIME_LIB",
                            "TESSERA_COMPILE", "TESSERA_RUN")}
        env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env["PATH"]
        python = os.path.join(venv, "bin", "python")
        cwd = os.path.join(work, "cwd")
        os.makedirs(cwd)

        where = run([python, "-c", "import tessera, tessera.compiler as c, "
                     "tessera.runtime as r; print(tessera.__file__); "
                     "print(c.tool('tessera-compile')); print(r._library_path())"],
                    env=env, cwd=cwd).stdout.split()
        check(len(where) == 3 and all(p.startswith(venv) for p in where),
              f"the installed package, its compiler and its runtime library "
              f"are the venv's ({where})")

        out = os.path.join(work, "lm")
        done = run([python, "-m", "tessera_examples.train_charlm", "--out", out,
                    "--steps", "80"], env=env, cwd=cwd)
        text = done.stdout
        losses = re.search(r"trained 80 steps: loss ([0-9.]+) -> ([0-9.]+)", text)
        evals = re.findall(r"validation loss after step (\d+): ([0-9.]+) "
                           r"\(47 batches\)", text)
        check(losses and float(losses.group(2)) < float(losses.group(1)) - 1.0,
              f"train_charlm: 80 steps from Python, the loss falls "
              f"({losses.group(0) if losses else text!r})")
        check([int(s) for s, _ in evals] == [20, 40, 60, 80],
              f"four validation losses, after steps 20, 40, 60 and 80 ({evals})")
        check(all(os.path.exists(os.path.join(out, f))
                  for f in ("trained.onnx", "step/manifest.json",
                            "infer/manifest.json"))
              and "next-character guesses on a validation window" in text,
              "it saved trained.onnx and ran the inference artifact on a batch")

        version = run(["tessera-compile", "--version"], env=env, cwd=cwd).stdout
        check(version.startswith("tessera-compile (Tessera 0.1.0)"),
              f"tessera-compile on the venv's PATH: {version.splitlines()[0]!r}")
        log = os.path.join(work, "log.jsonl")
        run(["tessera-run", os.path.join(out, "step"), "--train", "--data",
             os.path.join(out, "tokens.bin"), "--steps", "5", "--threads", "1",
             "--log-json", log], env=env, cwd=cwd)
        plotted = run(["tessera-plot", log, "-o", os.path.join(work, "loss.svg")],
                      env=env, cwd=cwd).stdout
        check(plotted.startswith(f"wrote {work}/loss.svg: loss against step; log 5 points"),
              f"tessera-run and tessera-plot on the venv's PATH: {plotted.strip()!r}")

        refused = subprocess.run(
            [python, "-c", "import tessera\n"
             "try:\n tessera.compile('missing.onnx', mode='infer')\n"
             "except tessera.CompileError as e:\n print('CompileError:', e)"],
            capture_output=True, text=True, env=env, cwd=cwd)
        check(refused.returncode == 0 and "CompileError:" in refused.stdout
              and "missing.onnx" in refused.stdout,
              f"a model that does not exist raises CompileError "
              f"({refused.stdout.strip()!r})")
    return finish("python_package_test.py")


if __name__ == "__main__":
    sys.exit(main())
