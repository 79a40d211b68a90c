"""Tests python/tessera/runtime.py against the runtime's fake artifacts, and
tessera-run --train against .npz files written by NumPy itself.

Run by ctest (runtime.python.Binding) with TESSERA_RUNTIME_LIB, PYTHONPATH
and the TSR_TEST_* paths set by runtime/test/CMakeLists.txt.
"""

import os
import pathlib
import shutil
import subprocess
import unittest

import numpy as np

from tessera import runtime

# An ASan build preloads its sanitizer runtime into this interpreter and
# turns leak checking off for it (TESSERA_PYTHON_TEST_ENV); the tools it runs
# link their own copy and keep leak checking on.
os.environ.pop("LD_PRELOAD", None)
os.environ.pop("ASAN_OPTIONS", None)


FAKE = os.environ["TSR_TEST_FAKE_ARTIFACT"]
LINEAR = os.environ["TSR_TEST_LINEAR_ARTIFACT"]
TOOL = os.environ["TSR_TEST_RUN_TOOL"]
SCRATCH = pathlib.Path(os.environ["TSR_TEST_SCRATCH"])

X = np.array([[1, 0], [0, 1], [1, 1], [2, 0], [0, 2], [1, -1]], np.float32)
Y = np.array([1, 2, 3, 2, 4, 0], np.float32)


def linear_inputs(w=(0.5, -1.0), b=0.25, step=0):
    return [np.array(w, np.float32), np.array(b, np.float32),
            np.array(0.125, np.float32), np.array(step, np.int64),
            X[:4], Y[:4]]


class InferArtifactTest(unittest.TestCase):
    def test_describes_and_calls(self):
        with runtime.Artifact(FAKE) as art:
            self.assertEqual(art.mode, "infer")
            self.assertEqual([(i.name, i.dtype, i.shape, i.role)
                              for i in art.inputs],
                             [("x", "float32", (2, 3), "data"),
                              ("k", "int64", (), "data")])
            self.assertEqual([(o.name, o.dtype, o.shape, o.role)
                              for o in art.outputs],
                             [("y", "float32", (2, 3), None),
                              ("positive", "bool", (2, 3), None),
                              ("total", "float64", (), None)])
            x = np.array([[1, -2, 3.5], [0, 4, -0.5]], np.float32)
            y, positive, total = art(x, np.array(3, np.int64))
            np.testing.assert_array_equal(y, x * 3)
            self.assertEqual(positive.dtype, np.bool_)
            np.testing.assert_array_equal(positive, x > 0)
            self.assertEqual(total.shape, ())
            self.assertEqual(float(total), 6.0)
            # Non-contiguous arrays are copied into row-major buffers.
            y, _, _ = art(np.asfortranarray(x), np.array(1, np.int64))
            np.testing.assert_array_equal(y, x)

    def test_errors(self):
        art = runtime.Artifact(FAKE)
        x = np.zeros((2, 3), np.float32)
        k = np.array(1, np.int64)
        with self.assertRaisesRegex(
                runtime.TesseraError,
                r"^input 0 'x': expected shape \[2, 3\], got \[3, 2\]$"):
            art(x.T, k)
        with self.assertRaisesRegex(
                runtime.TesseraError,
                r"^input 1 'k': expected dtype int64, got float64$"):
            art(x, 1.0)
        with self.assertRaisesRegex(TypeError, "takes 2 inputs, got 1"):
            art(x)
        with self.assertRaisesRegex(TypeError, "NumPy dtype complex64"):
            art(x.astype(np.complex64), k)
        art.close()
        with self.assertRaisesRegex(runtime.TesseraError, "is closed"):
            art(x, k)
        with self.assertRaisesRegex(runtime.TesseraError, "does not exist"):
            runtime.Artifact(SCRATCH / "nowhere")


class TrainArtifactTest(unittest.TestCase):
    def test_describes_roles(self):
        art = runtime.Artifact(LINEAR)
        self.assertEqual(art.mode, "train")
        self.assertEqual([(i.name, i.role) for i in art.inputs],
                         [("w", "param"), ("b", "param"), ("lr", "state"),
                          ("step", "state"), ("x", "data"), ("y", "label")])
        self.assertEqual(art.inputs[2].init, 0.125)
        self.assertIsNone(art.inputs[0].init)
        self.assertEqual([(o.role, o.updates) for o in art.outputs],
                         [("loss", None), ("param", 0), ("param", 1),
                          ("state", 3), ("metric", None)])

    def test_one_step_and_memory(self):
        art = runtime.Artifact(LINEAR)
        current, _ = runtime.memory_stats()
        runtime.reset_memory_peak()
        loss, w, b, step, prediction = art(*linear_inputs())
        self.assertEqual(runtime.memory_stats(), (current, current + 28))
        # The call's block (28 bytes, header and alignment padding) was
        # planned into the arena, a page at least.
        self.assertGreaterEqual(runtime.arena_bytes(), 4096)
        expected = X[:4] @ np.array([0.5, -1.0], np.float32) + 0.25
        np.testing.assert_allclose(prediction, expected, rtol=1e-6)
        np.testing.assert_allclose(loss, np.mean((expected - Y[:4]) ** 2),
                                   rtol=1e-6)
        self.assertEqual(int(step), 1)
        self.assertEqual(w.shape, (2,))
        self.assertEqual(b.shape, ())
        tensors, _ = runtime.tensor_memory_stats()
        self.assertEqual(tensors, 0)

    def test_gradient_by_finite_differences(self):
        # SGD: w_next = w - lr * dloss/dw, so the step reveals the gradient;
        # the loss is quadratic, so central differences match it closely.
        art = runtime.Artifact(LINEAR)
        w0 = np.array([0.5, -1.0], np.float32)
        _, w1, b1, _, _ = art(*linear_inputs(w0))
        gradient = (w0 - w1) / 0.125
        eps = np.float32(1.0 / 64)
        for f in range(2):
            delta = np.zeros(2, np.float32)
            delta[f] = eps
            plus = art(*linear_inputs(w0 + delta))[0]
            minus = art(*linear_inputs(w0 - delta))[0]
            self.assertAlmostEqual(float((plus - minus) / (2 * eps)),
                                   float(gradient[f]), places=4)
        for _ in range(2000):
            art(*linear_inputs())


    def test_trains_through_the_runtime_loop(self):
        scratch = SCRATCH / "loop"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        data = scratch / "data.npz"
        np.savez(data, x=X, y=Y)
        art = runtime.Artifact(LINEAR)
        steps, writes = [], []
        records = art.train(
            data, 4, save_onnx=scratch / "model.onnx",
            checkpoint_dir=scratch / "ckpt", checkpoint_every=2,
            on_step=steps.append,
            on_write=lambda kind, path: writes.append((kind, path)))
        self.assertEqual(steps, records)
        self.assertEqual([(r.step, r.steps, r.unit) for r in records],
                         [(k, 4, "samples") for k in range(1, 5)])
        # The struct's last field reads back (a layout mismatch would not).
        self.assertTrue(all(isinstance(r.page_faults, int) and 0 <= r.page_faults < 1 << 40
                            for r in records), records)
        # The first step matches one call of the artifact.
        loss = art(*linear_inputs())[0]
        self.assertEqual(records[0].loss, float(loss))
        self.assertEqual(writes, [
            ("checkpoint", str(scratch / "ckpt" / "step-00000002")),
            ("checkpoint", str(scratch / "ckpt" / "step-00000004")),
            ("onnx", str(scratch / "model.onnx"))])
        # Resuming after step 2 runs steps 3 and 4 to the same losses.
        resumed = art.train(data, 4, resume=scratch / "ckpt" / "step-00000002")
        self.assertEqual([(r.step, r.loss) for r in resumed],
                         [(r.step, r.loss) for r in records[2:]])

    def test_training_errors(self):
        scratch = SCRATCH / "loop-errors"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        x = X.copy()
        x[4, 0] = np.nan  # Sample 4, first used by step 2.
        np.savez(scratch / "nan.npz", x=x, y=Y)
        art = runtime.Artifact(LINEAR)
        with self.assertRaisesRegex(
                runtime.TesseraError,
                r"^step 2: the loss is nan; training stopped$"):
            art.train(scratch / "nan.npz", 3)
        with self.assertRaisesRegex(runtime.TesseraError,
                                    "save_every needs save_onnx"):
            art.train(scratch / "nan.npz", 3, save_every=1)

        def stop(record):
            raise KeyError(record.step)

        np.savez(scratch / "data.npz", x=X, y=Y)
        with self.assertRaises(KeyError):
            art.train(scratch / "data.npz", 2, on_step=stop)


class NumpyFilesTest(unittest.TestCase):
    def test_trains_on_savez_and_savez_compressed(self):
        shutil.rmtree(SCRATCH, ignore_errors=True)
        SCRATCH.mkdir(parents=True)
        outputs = []
        for save in (np.savez, np.savez_compressed):
            path = SCRATCH / f"{save.__name__}.npz"
            save(path, x=X, y=Y)
            run = subprocess.run(
                [TOOL, LINEAR, "--train", "--data", str(path), "--steps", "3",
                 "--log-json", str(SCRATCH / "log.jsonl")],
                capture_output=True, text=True, check=False)
            self.assertEqual(run.returncode, 0, run.stderr)
            losses = [line.split()[3] for line in run.stdout.splitlines()
                      if line.startswith("step ")]
            self.assertEqual(len(losses), 3, run.stdout)
            outputs.append(losses)
        self.assertEqual(outputs[0], outputs[1])
        expected = X[:4] @ np.array([0.5, -1.0], np.float32) + 0.25
        self.assertAlmostEqual(float(outputs[0][0]),
                               float(np.mean((expected - Y[:4]) ** 2)),
                               places=5)


if __name__ == "__main__":
    unittest.main()
