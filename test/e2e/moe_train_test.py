#!/usr/bin/env python3
"""The MoE GPT (python/tessera_examples/make_moe_gpt.py) trains, alone and
data-parallel.

Two 2-layer GPTs with 4 experts, top-2, in each block, in the two forms MoE
models arrive in ONNX: one com.microsoft MoE node per layer (dropless,
routing weights renormalized), and GShard's formulation in ordinary ONNX
ops (softmax, TopK, OneHot, CumSum, Einsum) with a capacity of 6 tokens per
expert and sequence, so that tokens are dropped. For each:

- step 1's loss equals onnxruntime's cross-entropy of the exported model on
  the same batch (rtol 1e-4: float32 through two different kernels, the
  tolerance of the other exported-model tests);
- every loss is finite and training makes progress: each later 20-step
  mean lies below the first;
- the contrib form also trains under mpirun at `--mesh dp=2` (ZeRO 0 and
  3), with expert parallelism at `ep=2` and `ep=4`, and at `dp=2,ep=2`
  (ZeRO 0 and 3), and its 20 losses match the single-process run with the
  same global batch to 1e-5 relative. Routing is per sequence (a group is
  one sequence), so splitting the batch changes no routing decision; so
  does ep=2 with 2 micro-batches per step, and a dp=2,ep=2 ZeRO-3
  checkpoint of step 10 resumed on one process and on ep=4;
- expert and tensor parallelism compose: at ep=2,tp=2 and dp=2,ep=2,tp=2
  (ZeRO-3) the losses match likewise, each rank holds 1/(ep·tp) of every
  expert weight and 1/ep of every expert bias (the manifest), and the
  dp=2,ep=2 checkpoint also resumes on ep=2,tp=2;
- with ep, rank 0 holds the dense parameters and 1/ep of the experts'
  (--memory-report), and at ep=2 (and ep=2,tp=2) `--explain` lists per MoE layer and
  direction exactly two all-to-alls (dispatch and combine), each moving
  (n-1)/n of the rank's [experts, groups, capacity, hidden] buffer;
- with `--moe-capacity-factor=1` (8 slots per expert and sequence of 16
  tokens, top-2 of 4: tokens drop) step 1 equals onnxruntime's loss of the
  GShard form exported with capacity 8 (the same weights: an independent
  formulation of the same drops), and ep=2, dp=2, ep=4 and dp=2,ep=2
  (ZeRO-3) log the single process's 20 losses;
- with `--moe-aux-loss=0.1` step 1 equals onnxruntime's cross-entropy plus
  a NumPy implementation of the Switch load-balancing loss on the router
  logits onnxruntime computes (1e-5 absolute);
- the routing statistics each step logs (per layer, the choices routed to
  each expert and those dropped) equal at step 1 a NumPy routing of those
  router logits (dropless: every layer; at capacity factor 1: the first,
  whose input no drop changes), and on every mesh
  above the single process's, exactly, for all 20 steps; the GShard form
  (ordinary ops) logs none.

Usage: moe_train_test.py BUILD_DIR REPO_ROOT
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from checks import check, finish

for key, value in (("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                   ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
                   ("OMPI_MCA_rmaps_base_oversubscribe", "1")):
    os.environ.setdefault(key, value)

BATCH, STEPS, WINDOW, DP_STEPS = 8, 60, 20, 20
ORT_RTOL, DP_RTOL = 1e-4, 1e-5
# GShard's capacity factor 1: capacity ceil(16 · 2 / 4) = 8 of 16 tokens.
CAPACITY_FACTOR = 1.0
# The Switch loss is about 0.25 at 0.1; the step's float32 loss (about
# 4.9) is a sum of float32 terms good to a few ulps, 1e-6 at worst.
AUX_COEF, AUX_ATOL = 0.1, 1e-5
TORCH_PYTHON = "/usr/bin/python3"


def mpirun(ranks):
    """OpenMPI's own allocations are leaks to LeakSanitizer: ranks run
    without leak checking in an ASan build."""
    asan = ":".join(filter(None, (os.environ.get("ASAN_OPTIONS"),
                                  "detect_leaks=0")))
    return ["env", f"ASAN_OPTIONS={asan}", "mpirun", "-np", str(ranks)]


def run(cmd, what):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"{what} exited {done.returncode}")
    return done


def losses(log):
    with open(log) as f:
        return [float(json.loads(line)["loss"]) for line in f]


def metrics(log):
    """Each step's routing statistics in a --log-json log: the metrics
    named NODE.tokens_per_expert and NODE.dropped (None when there are
    none; lr and grad_norm are left out)."""
    steps = []
    with open(log) as f:
        for line in f:
            routed = {k: v for k, v in
                      json.loads(line).get("metrics", {}).items()
                      if k.endswith((".tokens_per_expert", ".dropped"))}
            steps.append(routed or None)
    return steps


def worst_relative(got, expected):
    """The largest relative difference of the losses `got` from `expected`
    step by step, or inf when a step is missing."""
    if len(got) != len(expected):
        return math.inf
    return max(abs(a - b) / abs(b) for a, b in zip(got, expected))


def compile_all(jobs, run):
    """Runs the tessera-compile command lines of `jobs` (name -> argv) two
    at a time; name -> the finished process."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda name: run(jobs[name], f"tessera-compile {name}"),
                        list(jobs))
        return dict(zip(list(jobs), done))


def memory_params(stdout, rank=0):
    """The params bytes of rank `rank`'s --memory-report line."""
    for line in stdout.splitlines():
        m = re.match(rf"memory rank {rank} of \d+: params (\d+) bytes", line)
        if m:
            return int(m.group(1))
    return None


def expert_bytes(model):
    """Bytes of the experts' weights and biases (initializers of the MoE
    nodes' inputs 2 to 5)."""
    import onnx
    from onnx import numpy_helper
    proto = onnx.load(model)
    names = {n for node in proto.graph.node if node.op_type == "MoE"
             for n in node.input[2:6] if n}
    return sum(numpy_helper.to_array(t).nbytes
               for t in proto.graph.initializer if t.name in names)


def check_expert_blocks(art, model, ep, tp, mesh):
    """Tensor parallelism inside the experts: per the manifest, each rank
    holds 1/(ep·tp) of every expert weight (its ep block of the experts,
    split by tp along the hidden features) and 1/ep of every expert
    bias."""
    import onnx
    proto = onnx.load(model)
    weights = {n for node in proto.graph.node if node.op_type == "MoE"
               for n in (node.input[2], node.input[4])}
    biases = {n for node in proto.graph.node if node.op_type == "MoE"
              for n in (node.input[3], node.input[5]) if n}
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    inputs = {i["name"]: i for i in manifest["programs"][0]["inputs"]}
    shares = {}
    for name in sorted(weights | biases):
        spec = inputs.get(name, {})
        local = math.prod(spec.get("shape", [0]))
        whole = math.prod(spec.get("global_shape", spec.get("shape", [0])))
        shares[name] = whole // local if local else 0
    want = {n: ep * tp if n in weights else ep for n in shares}
    check(shares == want and len(weights) == 4,
          f"contrib: {mesh}: each rank holds 1/{ep * tp} of every expert "
          f"weight and 1/{ep} of every expert bias; got the fractions "
          f"{shares}")


def check_parallel(bin_dir, out, model, data, compile_cmd, single,
                   single_metrics, run):
    """dp=2, ep=2, ep=4 and dp=2 x ep=2 against one process (losses, and
    routing statistics exactly); the explained all-to-alls of ep=2 and every
    rank's share of the experts."""
    one = run([os.path.join(bin_dir, "tessera-run"),
               os.path.join(out, "art"), "--train", "--data", data, "--steps",
               "1", "--threads", "1", "--memory-report"], "tessera-run")
    whole = memory_params(one.stdout)
    experts = expert_bytes(model)
    layers = 2
    configs = (("dp=2", 0, 2, 1), ("dp=2", 3, 2, 1), ("ep=2", 0, 2, 1),
               ("ep=2", 0, 2, 2), ("ep=4", 0, 4, 1), ("dp=2,ep=2", 0, 4, 1),
               ("dp=2,ep=2", 3, 4, 1), ("ep=2,tp=2", 0, 4, 1),
               ("dp=2,ep=2,tp=2", 3, 8, 1))
    arts, jobs = {}, {}
    for mesh, zero, ranks, micro in configs:
        name = f"{mesh.replace(',', '-')}-z{zero}-m{micro}"
        arts[name] = os.path.join(out, name)
        flags = ["--mesh", mesh] + ([f"--zero={zero}"] if "dp" in mesh else [])
        if micro > 1:
            flags.append(f"--micro-batches={micro}")
        jobs[name] = compile_cmd + flags + ["-o", arts[name], "--explain"]
    built_all = compile_all(jobs, run)
    for mesh, zero, ranks, micro in configs:
        name = f"{mesh.replace(',', '-')}-z{zero}-m{micro}"
        art, built = arts[name], built_all[name]
        log = os.path.join(out, name + ".jsonl")
        done = run(mpirun(ranks) + [os.path.join(bin_dir, "tessera-run"), art,
                                    "--train", "--data", data, "--steps",
                                    str(DP_STEPS), "--threads", "1",
                                    "--log-json", log, "--memory-report"],
                   f"mpirun -np {ranks} {mesh} ZeRO-{zero}")
        got = losses(log)
        worst = worst_relative(got, single[:DP_STEPS])
        routed = metrics(log)
        check(routed == single_metrics[:DP_STEPS],
              f"contrib: mpirun -np {ranks} --mesh {mesh} ZeRO-{zero}"
              f"{f' --micro-batches={micro}' if micro > 1 else ''}: "
              f"{DP_STEPS} steps' tokens per expert and drops equal one "
              f"process's; step 1: {routed[0]}")
        check(worst <= DP_RTOL,
              f"contrib: mpirun -np {ranks} --mesh {mesh} ZeRO-{zero}"
              f"{f' --micro-batches={micro}' if micro > 1 else ''}: "
              f"{DP_STEPS} losses match one process, worst relative "
              f"difference {worst:.2e}")
        ep = int(re.search(r"ep=(\d+)", mesh).group(1)) if "ep" in mesh else 1
        dp = 2 if "dp" in mesh else 1
        if "tp" in mesh:
            # Under ZeRO-3 the manifest holds the dp shard of the block.
            if zero == 0:
                check_expert_blocks(art, model, ep, 2, mesh)
        elif ep > 1 and zero == 0 and micro == 1:
            want = whole - experts + experts // ep
            have = memory_params(done.stdout)
            check(have == want,
                  f"contrib: {mesh}: rank 0 holds {have} bytes of parameters "
                  f"= the dense {whole - experts} + 1/{ep} of the experts' "
                  f"{experts}")
        if mesh in ("ep=2", "ep=2,tp=2") and micro == 1:
            # Per layer: one dispatch and one combine all-to-all forward,
            # their transposes backward; each moves (n-1)/n of the rank's
            # [experts, groups, capacity, hidden] f32 buffer.
            with open(os.path.join(out, "moe_gpt.json")) as f:
                cfg = json.load(f)
            groups = BATCH // (dp * ep)
            buffer = cfg["experts"] * groups * cfg["seq"] * cfg["d_model"] * 4
            sent = buffer * (ep - 1) // ep
            lines = [l for l in (built.stdout + built.stderr).splitlines()
                     if "all_to_all over ep" in l]
            per_layer = {}
            for line in lines:
                m = re.search(r"(\d+) bytes per rank, (forward|backward), "
                              r"node '([^']+)'", line)
                key = (m.group(3), m.group(2)) if m else None
                per_layer.setdefault(key, []).append(
                    int(m.group(1)) if m else -1)
            ok = (len(per_layer) == 2 * layers and all(
                k is not None and v == [sent, sent]
                for k, v in per_layer.items()))
            check(ok, f"contrib: {mesh} --explain: per MoE layer and direction "
                      f"exactly 2 all-to-alls (dispatch, combine) of {sent} "
                      f"bytes per rank; got {sorted(per_layer.items())}")

    # A dp=2 x ep=2 ZeRO-3 checkpoint of step 10 resumes on one process and
    # on ep=4, logging steps 11-20 as the uninterrupted run did.
    ckpt = os.path.join(out, "ckpt")
    run(mpirun(4) + [os.path.join(bin_dir, "tessera-run"),
                     arts["dp=2-ep=2-z3-m1"], "--train", "--data", data,
                     "--steps", "10", "--threads", "1", "--checkpoint-dir",
                     ckpt, "--checkpoint-every", "10"], "dp=2,ep=2 checkpoint")
    step10 = os.path.join(ckpt, "step-00000010")
    for what, art, ranks in (("one process", os.path.join(out, "art"), 0),
                             ("ep=4", arts["ep=4-z0-m1"], 4),
                             ("ep=2,tp=2", arts["ep=2-tp=2-z0-m1"], 4)):
        log = os.path.join(out, f"resume-{ranks}.jsonl")
        cmd = [os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
               data, "--steps", str(DP_STEPS), "--threads", "1", "--resume",
               step10, "--log-json", log]
        run((mpirun(ranks) if ranks else []) + cmd, f"resume on {what}")
        with open(log) as f:
            resumed = {e["step"]: float(e["loss"]) for e in map(json.loads, f)}
        worst = (worst_relative([resumed[st] for st in range(11, DP_STEPS + 1)],
                                single[10:DP_STEPS])
                 if sorted(resumed) == list(range(11, DP_STEPS + 1))
                 else math.inf)
        check(worst <= DP_RTOL,
              f"contrib: a dp=2,ep=2 ZeRO-3 checkpoint of step 10 resumes "
              f"on {what}: steps 11-{DP_STEPS} match the uninterrupted run, "
              f"worst relative difference {worst:.2e}")


def router_outputs(model):
    """The model with each MoE node's router logits as extra outputs, and
    each node's k."""
    import onnx
    from onnx import helper
    proto = onnx.load(model)
    nodes = [n for n in proto.graph.node if n.op_type == "MoE"]
    for node in nodes:
        proto.graph.output.append(helper.make_tensor_value_info(
            node.input[1], onnx.TensorProto.FLOAT, None))
    ks = [next((a.i for a in n.attribute if a.name == "k"), 1) for n in nodes]
    return proto.SerializeToString(), ks


def switch_loss(logits, k, groups, coef):
    """NumPy's Switch load-balancing loss of one layer, per group (one
    sequence) and averaged: coef · E · mean_g Σ_e f[g, e] · P[g, e], f the
    fraction of the group's top-k choices that picked e, P the mean router
    probability of e (float64)."""
    import numpy as np
    experts = logits.shape[-1]
    z = logits.reshape(groups, -1, experts).astype(np.float64)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    chosen = np.argsort(-p, axis=-1, kind="stable")[..., :k]
    f = np.stack([(chosen == e).mean(axis=(1, 2)) for e in range(experts)],
                 axis=-1)
    return coef * experts * float(np.mean((f * p.mean(axis=1)).sum(-1)))


def numpy_routing(logits, k, groups, capacity):
    """NumPy's routing of one layer: the top-k choices routed to each expert
    and those dropped, filling each group's (sequence's) expert buffers of
    `capacity` slots in priority order, every token's first choice before
    any second (GShard)."""
    import numpy as np
    experts = logits.shape[-1]
    z = logits.reshape(groups, -1, experts).astype(np.float64)
    chosen = np.argsort(-z, axis=-1, kind="stable")[..., :k]
    tokens = np.bincount(chosen.ravel(), minlength=experts)
    dropped = 0
    for g in range(groups):
        used = np.zeros(experts, dtype=np.int64)
        for j in range(k):
            for e in chosen[g, :, j]:
                if used[e] < capacity:
                    used[e] += 1
                else:
                    dropped += 1
    return [int(t) for t in tokens], dropped


def check_step1_routing(model, feed, step1, capacity, what, layers=None):
    """Step 1's reported routing of the first `layers` MoE layers (all by
    default) against NumPy's on the router logits onnxruntime computes.
    With drops only the first layer's input is the dropless model's."""
    import onnx
    import onnxruntime as ort
    proto, ks = router_outputs(model)
    names = [n.name for n in onnx.load(model).graph.node if n.op_type == "MoE"]
    outs = ort.InferenceSession(proto, providers=["CPUExecutionProvider"]).run(
        None, feed)
    expected = {}
    for name, z, k in list(zip(names, outs[1:], ks))[:layers]:
        tokens, dropped = numpy_routing(z, k, BATCH, capacity)
        expected[f"{name}.tokens_per_expert"] = tokens
        expected[f"{name}.dropped"] = dropped
    got = {key: step1.get(key) for key in expected}
    check(got == expected and len(step1) == 2 * len(names),
          f"{what}: step 1's tokens per expert and dropped choices of each "
          f"MoE layer{'' if layers is None else f' of the first {layers}'} "
          f"equal NumPy's routing of onnxruntime's router logits: "
          f"got {step1}, expected {expected}")


def check_routing_options(bin_dir, work, out, make, compile_cmd, data, run):
    """--moe-capacity-factor against the GShard form with that capacity (an
    independent formulation of the same drops), and its ep=2 and dp=2 runs
    against one process; --moe-aux-loss against NumPy's Switch loss."""
    import numpy as np
    import onnxruntime as ort
    import charlm_data
    model = os.path.join(out, "moe_gpt.onnx")
    with open(os.path.join(out, "moe_gpt.json")) as f:
        cfg = json.load(f)
    seq, experts, k = cfg["seq"], cfg["experts"], cfg["top_k"]
    capacity = math.ceil(CAPACITY_FACTOR * seq * k / experts)
    gshard = os.path.join(work, "gshard-capacity")
    run([TORCH_PYTHON, make, "--out", gshard, "--style", "gshard",
         "--experts", str(experts), "--top-k", str(k), "--capacity",
         str(capacity), "--batch", str(BATCH)] +
        (["--normalize"] if cfg["normalize"] else []), "make_moe_gpt gshard")
    tokens = charlm_data.load_tokens(data)
    x, y = charlm_data.batch(tokens, 0, BATCH, seq)
    feed = {"tokens": x.astype(np.int64)}
    session = ort.InferenceSession(os.path.join(gshard, "moe_gpt.onnx"),
                                   providers=["CPUExecutionProvider"])
    reference = charlm_data.cross_entropy(session.run(["logits"], feed)[0], y)

    flag = f"--moe-capacity-factor={CAPACITY_FACTOR}"
    aux_flag = f"--moe-aux-loss={AUX_COEF}"
    single = None
    configs = (("", 0, 0), ("ep=2", 2, 0), ("dp=2", 2, 0), ("ep=4", 4, 0),
               ("dp=2,ep=2", 4, 3))
    jobs = {"aux": compile_cmd + [aux_flag, "-o", os.path.join(out, "aux")]}
    for mesh, ranks, zero in configs:
        art = os.path.join(out, "capacity-" + (mesh or "one").replace(",", "-"))
        jobs[mesh] = (compile_cmd + [flag, "-o", art] +
                      (["--mesh", mesh] if mesh else []) +
                      ([f"--zero={zero}"] if zero else []))
    compile_all(jobs, run)
    for mesh, ranks, zero in configs:
        art = os.path.join(out, "capacity-" + (mesh or "one").replace(",", "-"))
        log = art + ".jsonl"
        cmd = [os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
               data, "--steps", str(DP_STEPS), "--threads", "1", "--log-json",
               log]
        run((mpirun(ranks) if ranks else []) + cmd, f"tessera-run {flag} {mesh}")
        got = losses(log)
        routed = metrics(log)
        if not mesh:
            single, single_metrics = got, routed
            # Layer 0 sees the same input as in the dropless model that
            # onnxruntime runs; later layers see the drops' effect.
            check_step1_routing(model, feed, routed[0], capacity,
                                f"contrib {flag}", layers=1)
            check(abs(got[0] - reference) <= ORT_RTOL * abs(reference),
                  f"contrib {flag} (capacity {capacity} of {seq}): step 1 "
                  f"loss {got[0]:.6f} = onnxruntime's GShard form with "
                  f"capacity {capacity} {reference:.6f}")
            continue
        worst = worst_relative(got, single[:DP_STEPS])
        check(routed == single_metrics[:DP_STEPS],
              f"contrib {flag}: mpirun -np {ranks} --mesh {mesh} "
              f"ZeRO-{zero}: {DP_STEPS} steps' tokens per expert and drops "
              f"equal one process's")
        check(worst <= DP_RTOL,
              f"contrib {flag}: mpirun -np {ranks} --mesh {mesh} "
              f"ZeRO-{zero}: "
              f"{DP_STEPS} losses match one process (same drops), worst "
              f"relative difference {worst:.2e}")

    proto, ks = router_outputs(model)
    outs = ort.InferenceSession(proto, providers=["CPUExecutionProvider"]).run(
        None, feed)
    ce = charlm_data.cross_entropy(outs[0], y)
    aux = sum(switch_loss(z, kk, BATCH, AUX_COEF)
              for z, kk in zip(outs[1:], ks))
    flag = aux_flag
    art = os.path.join(out, "aux")
    log = art + ".jsonl"
    run([os.path.join(bin_dir, "tessera-run"), art, "--train", "--data", data,
         "--steps", "1", "--threads", "1", "--log-json", log],
        f"tessera-run {flag}")
    got = losses(log)[0]
    check(abs(got - (ce + aux)) <= AUX_ATOL,
          f"contrib {flag}: step 1 loss {got:.6f} = onnxruntime's "
          f"cross-entropy {ce:.6f} + NumPy's Switch loss {aux:.6f} "
          f"(|diff| {abs(got - ce - aux):.1e} <= {AUX_ATOL})")


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: moe_train_test.py BUILD_DIR REPO_ROOT", file=sys.stderr)
        return 2
    build, repo = sys.argv[1:]
    import numpy as np
    import onnxruntime as ort
    sys.path.insert(0, os.path.join(repo, "python", "tessera_examples"))
    import charlm_data

    bin_dir = os.path.join(build, "bin")
    make = os.path.join(repo, "python", "tessera_examples", "make_moe_gpt.py")
    with tempfile.TemporaryDirectory(prefix="tessera-moe-train-") as work:
        singles = {}
        for style, extra in (("contrib", ["--normalize"]),
                             ("gshard", ["--capacity", "6",
                                         "--batch", str(BATCH)])):
            out = os.path.join(work, style)
            run([TORCH_PYTHON, make, "--out", out, "--style", style,
                 "--experts", "4", "--top-k", "2", *extra], f"make_moe_gpt {style}")
            model = os.path.join(out, "moe_gpt.onnx")
            data = os.path.join(out, "tokens.bin")
            compile_cmd = [os.path.join(bin_dir, "tessera-compile"), model,
                           "--mode=train", "--loss=cross_entropy",
                           "--logits=logits", f"--batch-size={BATCH}",
                           "--optimizer=adam", "--lr=3e-3"]
            art = os.path.join(out, "art")
            run(compile_cmd + ["-o", art], f"tessera-compile {style}")
            log = os.path.join(out, "log.jsonl")
            run([os.path.join(bin_dir, "tessera-run"), art, "--train", "--data",
                 data, "--steps", str(STEPS), "--threads", "1", "--log-json",
                 log], f"tessera-run {style}")
            got = losses(log)
            singles[style] = got
            routed = metrics(log)

            tokens = charlm_data.load_tokens(data)
            with open(os.path.join(out, "moe_gpt.json")) as f:
                seq = json.load(f)["seq"]
            x, y = charlm_data.batch(tokens, 0, BATCH, seq)
            session = ort.InferenceSession(model,
                                           providers=["CPUExecutionProvider"])
            logits = session.run(["logits"], {"tokens": x.astype(np.int64)})[0]
            reference = charlm_data.cross_entropy(logits, y)
            check(len(got) == STEPS and
                  abs(got[0] - reference) <= ORT_RTOL * abs(reference),
                  f"{style}: step 1 loss {got[0]:.6f} = onnxruntime "
                  f"{reference:.6f} (rtol {ORT_RTOL})")
            means = [sum(got[i:i + WINDOW]) / WINDOW
                     for i in range(0, len(got), WINDOW)]
            check(all(math.isfinite(v) for v in got) and len(means) > 1 and
                  all(m < means[0] for m in means[1:]),
                  f"{style}: {STEPS} Adam steps, 20-step mean losses " +
                  ", ".join(f"{m:.3f}" for m in means))

            if style != "contrib":
                # Ordinary ONNX ops: the compiler reports no routing.
                check(routed == [None] * STEPS,
                      f"{style}: no routing statistics in the log")
                continue
            # Dropless: every expert's buffer holds a whole sequence.
            check_step1_routing(model, {"tokens": x.astype(np.int64)},
                                routed[0], seq, style)
            check_parallel(bin_dir, out, model, data, compile_cmd, got, routed,
                           run)
            check_routing_options(bin_dir, work, out, make, compile_cmd, data,
                                  run)

    return finish("moe_train_test.py")


if __name__ == "__main__":
    sys.exit(main())
