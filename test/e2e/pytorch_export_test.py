#!/usr/bin/env python3
"""PyTorch exports, handled (docs/pytorch.md).

1. Merged initializers: a 2-layer nn.TransformerEncoder (its layers built as
   copies of one, so equal-valued) exported in eval mode, PyTorch's default,
   comes out with 9 initializers: the exporter merged equal values and left
   Identity nodes for the dropped names. tessera-compile --mode=train
   still compiles it (exit 0) and warns, naming each merged initializer
   with its other names and the nodes it feeds, and says how to re-export.
   The same model exported with training=TrainingMode.TRAINING keeps its 24
   initializers, trains all 24, and gets no warning.
2. TrainingMode.TRAINING with BatchNorm and Dropout: a CNN (Conv,
   BatchNorm2d, ReLU, MaxPool, Dropout, Linear) exported for training
   compiles and trains: without dropout (p = 0) the first step's loss
   equals PyTorch's train-mode loss on the same batch (batch statistics;
   float32, 1e-5 relative), and after 3 SGD steps the running statistics
   that --save-onnx writes are ONNX's update (momentum 0.9, population
   variance) of the batch statistics PyTorch computes; with p = 0.25 the
   step takes the dropout seed (an rng input) and 30 steps lower the loss.

Torch runs in Debian's /usr/bin/python3 (python3-torch); the checks in the
project's venv. Usage: pytorch_export_test.py BUILD_DIR REPO_ROOT
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

from checks import check, finish, run

TORCH_PYTHON = "/usr/bin/python3"

EXPORT = r'''
import sys, torch
torch.manual_seed(0)
out, what = sys.argv[1], sys.argv[2]
if what.startswith("encoder"):
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2,
        dim_feedforward=32, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2,
                                        enable_nested_tensor=False)
    x = torch.randn(2, 5, 16)
    names = (["x"], ["y"])
else:
    p = float(what.split(":")[1])
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.drop = torch.nn.Dropout(p)
            self.fc = torch.nn.Linear(8 * 8 * 8, 10)
        def forward(self, x):
            h = torch.relu(self.bn(self.conv(x)))
            h = torch.nn.functional.max_pool2d(h, 2)
            return self.fc(self.drop(h.flatten(1)))
    model = Net()
    import numpy as np
    arrays = np.load(sys.argv[3])
    x = torch.from_numpy(arrays["x"][:8])
    y = torch.from_numpy(arrays["labels"][:8])
    names = (["x"], ["logits"])
training = what.endswith("train") or what.startswith("cnn")
if training:
    model.train()
    kw = {"training": torch.onnx.TrainingMode.TRAINING,
          "do_constant_folding": False}
else:
    model.eval()
    kw = {}
if what.startswith("cnn"):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    print(f"{loss.item():.9g}")
torch.onnx.export(model, (x,), out, input_names=names[0],
                  output_names=names[1], opset_version=17, **kw)
if what == "cnn:0":
    # The running statistics after argv[4] SGD steps on batches 0-7, 8-15,
    # ... by ONNX's formula (population variance; PyTorch's own running_var
    # uses the unbiased one), from the convolution's output. They start from
    # the exported ones, which the export's forward passes have moved. SGD,
    # not Adam: the convolution's bias gets a gradient of zero (BatchNorm
    # subtracts the mean) up to roundoff, which Adam would scale to steps
    # of lr in a direction the roundoff picks.
    import json
    mean = model.bn.running_mean.detach().double().clone()
    var = model.bn.running_var.detach().double().clone()
    print(json.dumps({"mean": mean.tolist(), "var": var.tolist()}))
    def hook(module, inputs, output):
        global mean, var
        h = output.detach().double()
        mean = 0.9 * mean + 0.1 * h.mean(dim=(0, 2, 3))
        var = 0.9 * var + 0.1 * h.var(dim=(0, 2, 3), unbiased=False)
    handle = model.conv.register_forward_hook(hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(int(sys.argv[4])):
        lo = 8 * step % 64
        xs = torch.from_numpy(arrays["x"][lo:lo + 8])
        ys = torch.from_numpy(arrays["labels"][lo:lo + 8])
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(xs), ys).backward()
        optimizer.step()
    # Validation as model.eval() computes it, on those statistics: the mean
    # loss over all 64 samples.
    handle.remove()
    model.bn.running_mean.copy_(mean)
    model.bn.running_var.copy_(var)
    model.eval()
    with torch.no_grad():
        eval_loss = torch.nn.functional.cross_entropy(
            model(torch.from_numpy(arrays["x"])),
            torch.from_numpy(arrays["labels"])).item()
    print(json.dumps({"mean": mean.tolist(), "var": var.tolist(),
                      "eval_loss": eval_loss}))
'''


def main():
    build, _ = sys.argv[1], sys.argv[2]
    bin_dir = os.path.join(build, "bin")
    compile_tool = os.path.join(bin_dir, "tessera-compile")
    run_tool = os.path.join(bin_dir, "tessera-run")
    with tempfile.TemporaryDirectory() as work:
        script = os.path.join(work, "export.py")
        with open(script, "w") as f:
            f.write(EXPORT)

        # 1. Merged initializers.
        results = {}
        for mode in ("eval", "train"):
            path = os.path.join(work, f"encoder-{mode}.onnx")
            run([TORCH_PYTHON, script, path, f"encoder-{mode}"])
            count = len(onnx.load(path).graph.initializer)
            done = subprocess.run([compile_tool, path, "--mode=train",
                                   "--loss=mse", "--logits=y", "-o",
                                   os.path.join(work, f"enc-{mode}")],
                                  capture_output=True, text=True)
            results[mode] = (count, done)
        count, done = results["eval"]
        warning = [l for l in done.stderr.splitlines() if "warning:" in l]
        check(done.returncode == 0 and count == 9 and len(warning) == 1
              and "9 trained initializers each feed the same input of "
                  "several nodes" in warning[0]
              and "'layers.0.norm1.weight', also named layers.1.norm2.weight, "
                  "layers.1.norm1.weight, layers.0.norm2.weight (input 1 of 4 "
                  "LayerNormalization nodes" in warning[0]
              and "training=torch.onnx.TrainingMode.TRAINING" in warning[0]
              and "training 9 parameters" in done.stderr,
              f"eval-mode export ({count} initializers): compiled, with one "
              f"warning naming the merged initializers and the re-export "
              f"({warning[0][:160] if warning else done.stderr[-300:]!r}...)")
        count, done = results["train"]
        check(done.returncode == 0 and count == 24
              and "warning" not in done.stderr
              and "training 24 parameters" in done.stderr,
              f"TrainingMode.TRAINING export: {count} initializers, all "
              f"trained, no warning")

        # 2. BatchNorm and Dropout exported for training.
        rng = np.random.default_rng(0)
        data = os.path.join(work, "images.npz")
        np.savez(data, x=rng.standard_normal((64, 3, 16, 16)).astype(np.float32),
                 labels=rng.integers(0, 10, 64).astype(np.int64))
        stats_steps = 3
        for p in ("0", "0.25"):
            path = os.path.join(work, f"cnn-{p}.onnx")
            lines = run([TORCH_PYTHON, script, path, f"cnn:{p}", data,
                         str(stats_steps)]).splitlines()
            reference = float(lines[0])
            art = os.path.join(work, f"cnn-{p}")
            run([compile_tool, path, "--mode=train", "--loss=cross_entropy",
                 "--logits=logits", "--batch-size=8", "--optimizer=adam",
                 "--lr=1e-3", "-o", art])
            log = art + ".json"
            run([run_tool, art, "--train", "--data", data, "--steps", "30",
                 "--threads", "1", "--log-json", log])
            with open(log) as f:
                losses = [float(json.loads(l)["loss"]) for l in f]
            with open(os.path.join(art, "manifest.json")) as f:
                roles = [t.get("role") for t in json.load(f)["programs"][0]["inputs"]]
            if p == "0":
                check(abs(losses[0] - reference) <= 1e-5 * reference,
                      f"CNN, BatchNorm in training mode: step 1's loss "
                      f"{losses[0]:.7f}, PyTorch's train-mode loss "
                      f"{reference:.7f}")
                # The running statistics the trained model exports: updated
                # every step as ONNX's BatchNormalization defines (f32 over
                # 3 SGD steps against PyTorch's f64 hook; the loss agrees to
                # 1e-5; measured 1e-7 on statistics of order 0.01-1, bound 1e-6).
                exported, expected = map(json.loads, lines[1:3])
                sgd = art + "-sgd"
                run([compile_tool, path, "--mode=train", "--loss=cross_entropy",
                     "--logits=logits", "--batch-size=8", "--optimizer=sgd",
                     "--lr=0.1", "--eval", "-o", sgd])
                trained = os.path.join(work, "cnn-trained.onnx")
                eval_log = os.path.join(work, "cnn-sgd.json")
                run([run_tool, sgd, "--train", "--data", data, "--steps",
                     str(stats_steps), "--threads", "1", "--save-onnx",
                     trained, "--eval-data", data, "--log-json", eval_log])
                with open(eval_log) as f:
                    eval_loss = [json.loads(l)["eval_loss"] for l in f
                                 if "eval_loss" in l][-1]
                check(abs(eval_loss - expected["eval_loss"])
                      <= 1e-5 * expected["eval_loss"],
                      f"CNN: the validation loss after {stats_steps} steps "
                      f"(--eval, normalizing by the running statistics) "
                      f"{eval_loss:.7f}, PyTorch's model.eval() loss "
                      f"{expected['eval_loss']:.7f} (rtol 1e-5)")
                saved = {t.name: numpy_helper.to_array(t)
                         for t in onnx.load(trained).graph.initializer}
                for name, key in (("bn.running_mean", "mean"),
                                  ("bn.running_var", "var")):
                    check(np.allclose(numpy_helper.to_array(next(
                        t for t in onnx.load(path).graph.initializer
                        if t.name == name)), exported[key], rtol=0,
                        atol=1e-7), f"CNN: the export holds PyTorch's {name}")
                    error = np.max(np.abs(saved[name] - expected[key]))
                    check(error <= 1e-6,
                          f"CNN: {name} after {stats_steps} steps, saved by "
                          f"--save-onnx, is ONNX's running update of the "
                          f"batch statistics PyTorch computes (largest "
                          f"error {error:.1e}, bound 1e-6; the exported "
                          f"values would miss by {np.max(np.abs(np.subtract(expected[key], exported[key]))):.1e})")
            else:
                check("rng" in roles and np.mean(losses[-5:]) < np.mean(losses[:5]),
                      f"CNN with Dropout(0.25): the step takes a dropout seed "
                      f"(rng input) and 30 steps lower the loss "
                      f"({np.mean(losses[:5]):.4f} -> {np.mean(losses[-5:]):.4f})")
    return finish("pytorch_export_test.py")


if __name__ == "__main__":
    sys.exit(main())
