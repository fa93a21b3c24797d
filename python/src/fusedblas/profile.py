# SPDX-License-Identifier: BSD-3-Clause
"""python -m fusedblas.profile: the seed experiment on this machine.

nn.Linear 32 -> 64 with bias and tanh GELU at 1024 rows, and the GeGLU MLP
(768 -> 3072 -> 768, no bias, tanh GELU) at 8192 rows, each run as PyTorch
eager, torch.compile, fusedblas (eager), and fusedblas under torch.compile.
On a CUDA device: bfloat16, times from CUDA events, and the CUDA kernels
each call launches, counted by torch.profiler. On the CPU: float32, the MLP
at 512 rows (--mlp-rows), times from perf_counter, no kernel count.
Times are medians over --reps calls after warm-up.
"""

import argparse
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from . import gated_mlp, last_path, library, linear


def eager_linear(x, w, b):
    return F.gelu(F.linear(x, w, b), approximate="tanh")


def eager_mlp(x, wg, wu, wd):
    return F.linear(F.gelu(F.linear(x, wg), approximate="tanh") * F.linear(x, wu), wd)


def fused_linear(x, w, b):
    return linear(x, w, b, "gelu_tanh")


def fused_mlp(x, wg, wu, wd):
    return gated_mlp(x, wg, wu, wd, activation="gelu_tanh")


def make_inputs(shapes, dtype, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    out = []
    for shape, fan_in in shapes:
        scale = 1.0 if fan_in is None else math.sqrt(3.0 / fan_in)
        t = (torch.rand(shape, generator=g) * 2 - 1) * scale
        out.append(t.to(device=device, dtype=dtype))
    return out


def time_call(fn, args, reps, cuda):
    """Median milliseconds of fn(*args)."""
    for _ in range(3):
        fn(*args)
    if cuda:
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True),
                   torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for start, end in events:
            start.record()
            fn(*args)
            end.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in events)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def count_kernels(fn, args):
    """CUDA kernels one call of fn launches, as torch.profiler sees them."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn(*args)
        torch.cuda.synchronize()
    return sum(1 for e in prof.events()
               if e.device_type == DeviceType.CUDA and
               not e.name.startswith(("Memcpy", "Memset", "[memory]")))


def rel_error(y, ref):
    y, ref = y.double(), ref.double()
    return ((y - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def run(workloads, device, reps, compile_it, out=None):
    out = sys.stdout if out is None else out
    cuda = device.type == "cuda"
    rows = []
    with torch.no_grad():
        for name, shape, ref_fn, fused_fn, args in workloads:
            ref = ref_fn(*args)
            variants = [("eager", ref_fn), ("fusedblas", fused_fn)]
            if compile_it:
                variants[1:1] = [("torch.compile", torch.compile(ref_fn))]
                variants.append(("fusedblas+compile",
                                 torch.compile(fused_fn, fullgraph=True)))
            for label, fn in variants:
                t0 = time.perf_counter()
                y = fn(*args)
                first = time.perf_counter() - t0
                err = rel_error(y, ref)
                path = last_path() if label == "fusedblas" else ""
                ms = time_call(fn, args, reps, cuda)
                kernels = count_kernels(fn, args) if cuda else "n/a"
                rows.append((name, shape, label, ms, kernels, err, path))
                print(f"  {name} {label}: {ms:.4f} ms (first call {first:.1f} s)",
                      file=sys.stderr)
    head = ("workload", "shape", "variant", "ms (median)", "kernels",
            "max rel diff vs eager", "fusedblas path")
    table = [head] + [(n, s, v, f"{ms:.4f}", str(k), f"{e:.1e}", p)
                      for n, s, v, ms, k, e, p in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        print("  ".join(c.ljust(w) if i in (0, 1, 2, 6) else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))).rstrip(),
              file=out)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m fusedblas.profile",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--device", help="cuda or cpu (default: cuda if available)")
    ap.add_argument("--reps", type=int, default=None,
                    help="timed calls per variant (default 100 on CUDA, 10 on CPU)")
    ap.add_argument("--mlp-rows", type=int, default=None,
                    help="rows of the MLP (default 8192 on CUDA, 512 on CPU)")
    ap.add_argument("--linear-rows", type=int, default=1024)
    ap.add_argument("--no-compile", action="store_true",
                    help="skip the torch.compile variants")
    opt = ap.parse_args(argv)
    device = torch.device(opt.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    reps = opt.reps or (100 if cuda else 10)
    m = opt.mlp_rows or (8192 if cuda else 512)
    lm = opt.linear_rows
    path, version = library()
    where = torch.cuda.get_device_name(device) if cuda else "CPU"
    print(f"fusedblas.profile: {where}, {dtype}, torch {torch.__version__}, "
          f"libfusedblas {version} ({path}); median of {reps} calls")
    lin = make_inputs([((lm, 32), None), ((64, 32), 32), ((64,), 64)], dtype, device)
    mlp = make_inputs([((m, 768), None), ((3072, 768), 768), ((3072, 768), 768),
                       ((768, 3072), 3072)], dtype, device, seed=1)
    workloads = [
        ("linear+gelu", f"{lm}x32->64", eager_linear, fused_linear, lin),
        ("geglu-mlp", f"{m}x768->3072->768", eager_mlp, fused_mlp, mlp),
    ]
    run(workloads, device, reps, not opt.no_compile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
