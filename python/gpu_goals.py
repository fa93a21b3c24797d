#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gpu_goals.py -- measures issue 22's goals for the Python package on a
CUDA device, and prints a table of them last.

1. The seed MLP (8192 x 768 -> 3072 -> 768, bf16, GeGLU, no bias) through
   fusedblas::gated_mlp under torch.compile(fullgraph=True), against the
   same call made straight to the C library through ctypes (its own
   handle, the same stream and buffers): GPU time from CUDA events, the
   two interleaved in rounds, medians. Goal: within 3 %.
2. Eager-mode Python overhead per call over the C call: CPU wall time per
   call of fusedblas.linear / gated_mlp on small shapes against ctypes
   calls of the same routine with prepared arguments, in bursts short
   enough that the GPU never holds the CPU back, medians. Goal: <= 10 us.
3. A Llama MLP block (hidden 4096, intermediate 11008, bf16, SiLU; the
   Hugging Face layout) unpatched and after fusedblas.patch, eager, at 1,
   16 and 2048 tokens: both outputs within the bf16 bound of a float64
   reference, and the patched block faster at each.
4. The patched block under torch.compile(fullgraph=True) with the row
   dimension marked dynamic: one graph, no break, for 16, 64 and 2048 rows.

Needs the package importable (PYTHONPATH or installed) and the library
from FUSEDBLAS_LIBRARY. Run by gpu_check.sh. --cpu-dry-run runs the same
steps on the CPU at small sizes (float32 timings, no goal judged): a check
of this script where there is no GPU.
"""

import ctypes
import math
import statistics
import sys
import time

import torch
import torch._dynamo
import torch._dynamo.testing
from torch import nn

import fusedblas
from fusedblas import _library as L
from fusedblas import testing as T

DEV = torch.device("cuda")
BF16 = torch.bfloat16
RESULTS = []  # (goal, measured, target, verdict)
# sizes: the on the GPU; --cpu-dry-run shrinks them
SIZES = {"seed": (8192, 768, 3072, 768), "llama": (4096, 11008),
         "tokens": (1, 16, 2048), "dynamic": (16, 64, 2048)}


def sync():
    if DEV.type == "cuda":
        torch.cuda.synchronize()


def stream_ptr():
    return torch.cuda.current_stream().cuda_stream if DEV.type == "cuda" else None


def say(*args):
    print(*args, file=sys.stderr, flush=True)


def rand(shape, fan_in=None, seed=0, dtype=BF16):
    g = torch.Generator(device=DEV).manual_seed(seed)
    scale = 1.0 if fan_in is None else math.sqrt(3.0 / fan_in)
    t = (torch.rand(shape, generator=g, device=DEV) * 2 - 1) * scale
    return t.to(dtype)


def c_handle(lib, stream):
    """A handle of the C library's own, on the CUDA backend and stream."""
    h = ctypes.c_void_p()
    assert lib.cdll.fb_create(ctypes.byref(h)) == 0
    if DEV.type != "cuda":
        assert lib.cdll.fb_set_backend(h, L.BACKEND_CPU) == 0
        return h.value
    assert lib.cdll.fb_set_backend(h, L.BACKEND_CUDA) == 0
    assert lib.cdll.fb_set_cuda_device(h, torch.cuda.current_device()) == 0
    assert lib.cdll.fb_set_cuda_stream(h, stream) == 0
    return h.value


def event_times(fn, reps, ahead=False):
    """Milliseconds of each of reps calls of fn, by CUDA events; ahead:
    the stream first spins for about 20 ms, so that the host has queued
    the calls before the GPU reaches them."""
    if DEV.type != "cuda":
        out = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
        return out
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    if ahead:
        torch.cuda._sleep(20_000_000)
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in ev]


def interleaved(fns, rounds=6, reps=30):
    """Median ms of each fn, measured in alternating rounds."""
    times = {name: [] for name in fns}
    for fn in fns.values():
        for _ in range(5):
            fn()
    sync()
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name] += event_times(fn, reps)
    return {name: statistics.median(t) for name, t in times.items()}


def goal_seed_mlp(lib):
    say("goal 1: seed MLP, op under torch.compile(fullgraph=True) against the C call")
    m, k, h, n = SIZES["seed"]
    dt = BF16 if DEV.type == "cuda" else torch.float32
    x, wg, wu, wd = rand((m, k)), rand((h, k), k, 1), rand((h, k), k, 2), rand((n, h), h, 3)
    y = torch.empty(m, n, device=DEV, dtype=BF16)
    if dt != BF16:
        x, wg, wu, wd, y = (t.to(dt) for t in (x, wg, wu, wd, y))
    compiled = torch.compile(
        lambda x, wg, wu, wd: fusedblas.gated_mlp(x, wg, wu, wd, activation="gelu_tanh"),
        fullgraph=True)
    with torch.no_grad():
        want = compiled(x, wg, wu, wd)
    handle = c_handle(lib, stream_ptr())
    args = (handle, 2 if dt == BF16 else 0, 2, m, k, h, n, x.data_ptr(), k, wg.data_ptr(), None,
            wu.data_ptr(), None, wd.data_ptr(), None, y.data_ptr(), n)
    fn = lib.cdll.mlp_geglu_forward
    st = fn(*args)
    assert st == 0, lib.error("mlp_geglu_forward", st, handle).args[0]
    path = lib.last_path(handle)
    sync()
    same = torch.equal(y, want)

    def op():
        with torch.no_grad():
            compiled(x, wg, wu, wd)

    t = interleaved({"op": op, "c": lambda: fn(*args)})
    ratio = t["op"] / t["c"]
    say(f"  op {t['op'] * 1e3:.1f} us, C {t['c'] * 1e3:.1f} us, path {path}, "
        f"same bits: {same}")
    RESULTS.append((f"seed MLP {m}x{k}->{h}->{n} {dt}: op under compile / C call",
                    f"{ratio:.3f}x ({t['op'] * 1e3:.1f} / {t['c'] * 1e3:.1f} us)",
                    "<= 1.03x", "PASS" if ratio <= 1.03 else "FAIL"))
    # Where a compiled call's host time nears the kernels' time, the GPU
    # waits for the host between calls and the ratio above counts it:
    # the host time per call, and the GPU time with the host ahead.
    host_op, host_c = cpu_per_call(op, 20, 10), cpu_per_call(lambda: fn(*args), 20, 10)
    ahead = {name: statistics.median(event_times(f, 30, ahead=True))
             for name, f in (("op", op), ("c", lambda: fn(*args)))}
    RESULTS.append(("  (for reference) host time a call: op under compile, C call",
                    f"{host_op:.1f} / {host_c:.1f} us", "", ""))
    RESULTS.append(("  (for reference) GPU time, host ahead: op under compile / C call",
                    f"{ahead['op'] / ahead['c']:.3f}x ({ahead['op'] * 1e3:.1f} / "
                    f"{ahead['c'] * 1e3:.1f} us)", "", ""))
    lib.cdll.fb_destroy(handle)


def cpu_per_call(fn, calls=200, bursts=40):
    """Median CPU microseconds per call over bursts of calls; the GPU is
    drained between bursts, so launches never wait for queue space."""
    for _ in range(20):
        fn()
    per = []
    for _ in range(bursts):
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) / calls * 1e6)
    sync()
    return statistics.median(per)


def goal_overhead(lib):
    say("goal 2: eager Python overhead per call over the C call")
    handle = c_handle(lib, stream_ptr())
    m, k, n, h = 16, 256, 256, 512
    x, w, b = rand((m, k)), rand((n, k), k, 1), rand((n,), None, 2)
    y = torch.empty(m, n, device=DEV, dtype=BF16)
    gemm = lib.cdll.bgemm_bias_act
    gargs = (handle, L.ROW_MAJOR, L.NO_TRANS, L.TRANS, m, n, k, 1.0, x.data_ptr(), k,
             w.data_ptr(), k, 0.0, y.data_ptr(), n, b.data_ptr(), 2)
    wg, wu, wd = rand((h, k), k, 3), rand((h, k), k, 4), rand((n, h), h, 5)
    mlp = lib.cdll.mlp_geglu_forward
    margs = (handle, 2, 4, m, k, h, n, x.data_ptr(), k, wg.data_ptr(), None,
             wu.data_ptr(), None, wd.data_ptr(), None, y.data_ptr(), n)
    assert gemm(*gargs) == 0 and mlp(*margs) == 0
    module = fusedblas.nn.Linear(k, n, activation="gelu_tanh", device=DEV, dtype=BF16)
    rows = []
    with torch.no_grad():
        c_lin = cpu_per_call(lambda: gemm(*gargs))
        py_lin = cpu_per_call(lambda: fusedblas.linear(x, w, b, "gelu_tanh"))
        op_lin = cpu_per_call(lambda: torch.ops.fusedblas.linear(x, w, b, "gelu_tanh"))
        mod_lin = cpu_per_call(lambda: module(x))
        c_mlp = cpu_per_call(lambda: mlp(*margs))
        py_mlp = cpu_per_call(lambda: fusedblas.gated_mlp(x, wg, wu, wd, activation="silu"))
        empty = cpu_per_call(lambda: torch.empty(m, n, device=DEV, dtype=BF16))
    rows = [("fusedblas.linear", py_lin - c_lin), ("fusedblas.gated_mlp", py_mlp - c_mlp)]
    say(f"  C calls: gemm {c_lin:.2f} us, mlp {c_mlp:.2f} us; fusedblas.linear "
        f"{py_lin:.2f}, through the dispatcher (torch.ops) {op_lin:.2f}, "
        f"nn.Linear module {mod_lin:.2f}, fusedblas.gated_mlp {py_mlp:.2f}; "
        f"torch.empty alone {empty:.2f} us")
    for name, over in rows:
        RESULTS.append((f"eager Python overhead per call, {name} (bf16, 16 rows)",
                        f"{over:.2f} us", "<= 10 us", "PASS" if over <= 10 else "FAIL"))
    RESULTS.append(("  (for reference) torch.ops.fusedblas.linear, dispatcher path",
                    f"{op_lin - c_lin:.2f} us", "", ""))
    lib.cdll.fb_destroy(handle)


class LlamaMLP(nn.Module):
    """The Hugging Face Llama MLP's layout and forward."""

    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.mlp = LlamaMLP(hidden, intermediate)

    def forward(self, x):
        return self.mlp(x)


def goal_llama():
    hidden, inter = SIZES["llama"]
    say(f"goal 3: Llama MLP block {hidden} -> {inter} -> {hidden} bf16 SiLU, "
        "patched vs eager")
    torch.manual_seed(0)
    block = Block(hidden, inter).to(DEV, BF16)
    mlp = block.mlp
    xs = {t: rand((t, hidden), None, 10 + t) for t in SIZES["tokens"]}
    with torch.no_grad():
        before = {t: block(x) for t, x in xs.items()}
        t_before = {t: statistics.median(event_times(lambda x=x: block(x), 50))
                    for t, x in xs.items()}
        names = fusedblas.patch(block)
        assert names == ["mlp"], names
        after = {t: block(x) for t, x in xs.items()}
        path = {}
        for t, x in xs.items():
            block(x)
            path[t] = fusedblas.last_path()
        t_after = {t: statistics.median(event_times(lambda x=x: block(x), 50))
                   for t, x in xs.items()}
    worst = {}
    for t, x in xs.items():
        args = (x, mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight,
                None, None, None)
        ref = T.gated_mlp_reference(*args, "silu")
        bound = T.gated_mlp_bound(*args, "silu", ref, T.accumulation_roundoff(DEV))
        for label, y in (("unpatched", before[t]), ("patched", after[t])):
            ratio = ((y.double() - ref).abs() / bound).max().item()
            worst[(t, label)] = ratio
        del ref, bound
    for t in xs:
        speed = t_before[t] / t_after[t]
        say(f"  {t} tokens: eager {t_before[t] * 1e3:.1f} us, patched "
            f"{t_after[t] * 1e3:.1f} us ({path[t]}); error/bound unpatched "
            f"{worst[(t, 'unpatched')]:.3g}, patched {worst[(t, 'patched')]:.3g}")
        RESULTS.append((f"Llama MLP {hidden}->{inter}->{hidden} bf16, {t} tokens: "
                        "patched vs eager",
                        f"{speed:.2f}x faster ({t_before[t] * 1e3:.1f} -> "
                        f"{t_after[t] * 1e3:.1f} us)", "> 1x",
                        "PASS" if speed > 1 else "FAIL"))
    ours = max(v for (t, label), v in worst.items() if label == "patched")
    theirs = max(v for (t, label), v in worst.items() if label == "unpatched")
    RESULTS.append(("Llama MLP patched outputs within the bf16 bound of float64",
                    f"max error/bound {ours:.3g}", "<= 1",
                    "PASS" if ours <= 1 else "FAIL"))
    # PyTorch's default cuBLAS settings allow bf16 reductions in split-K,
    # which its bound does not model: reported, not judged.
    RESULTS.append(("  (for reference) unpatched eager against the same bound",
                    f"max error/bound {theirs:.3g}", "", ""))
    return block


def goal_dynamic(block):
    say("goal 4: patched block under torch.compile(fullgraph=True), dynamic rows")
    hidden = SIZES["llama"][0]
    torch._dynamo.reset()
    with torch.no_grad():
        explain = torch._dynamo.explain(block)(rand((16, hidden)))
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(block, backend=counter, fullgraph=True)
    with torch.no_grad():
        for rows in SIZES["dynamic"]:
            x = rand((rows, hidden), None, rows)
            torch._dynamo.mark_dynamic(x, 0)
            y = compiled(x)
            assert y.shape == (rows, hidden)
    verdict = counter.frame_count == 1 and explain.graph_break_count == 0
    RESULTS.append((f"torch.compile(fullgraph) of the patched block, rows "
                    f"{'/'.join(map(str, SIZES['dynamic']))}",
                    f"{counter.frame_count} graph(s), {explain.graph_break_count} "
                    f"break(s)", "1 graph, 0 breaks", "PASS" if verdict else "FAIL"))


def main(argv):
    global DEV
    dry = "--cpu-dry-run" in argv
    if dry:
        DEV = torch.device("cpu")
        SIZES.update(seed=(256, 64, 192, 64), llama=(128, 344), tokens=(1, 16, 96),
                     dynamic=(16, 64, 96))
    elif not torch.cuda.is_available():
        print("gpu_goals.py: no CUDA device")
        return 1
    lib = L.load()
    st = lib.cdll.fb_backend_available(L.BACKEND_CUDA)
    if st != 0 and not dry:
        print(f"gpu_goals.py: the library's CUDA backend is unavailable: "
              f"{lib.status_string(st)}; set FUSEDBLAS_CUDA_MODULE")
        return 1
    where = "CPU (dry run: no goal judged)" if dry else torch.cuda.get_device_name()
    say(f"{where}, torch {torch.__version__}, libfusedblas {lib.version} at {lib.path}")
    torch.backends.cuda.matmul.allow_tf32 = False
    for step in (lambda: goal_seed_mlp(lib), lambda: goal_overhead(lib)):
        step()
    block = goal_llama()
    goal_dynamic(block)
    if dry:
        RESULTS[:] = [(g, m, t, "-" if v else v) for g, m, t, v in RESULTS]
    head = ("goal", "measured", "target", "verdict")
    table = [head] + RESULTS
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    print()
    print(f"issue 22 goals on {where}:")
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0 if all(r[3] != "FAIL" for r in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
