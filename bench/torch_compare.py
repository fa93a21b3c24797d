#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""torch_compare.py -- fusedblas against PyTorch eager and torch.compile.

Loads libfusedblas through ctypes, calls it on PyTorch's own device tensors
(data_ptr) on PyTorch's current stream, and times the benchmark's GPU
workloads against PyTorch eager (F.linear + F.gelu(approximate='tanh') and
the gated MLP written the way users write it) and torch.compile of the same
functions, in one process, with CUDA events (median of many runs). Every
fusedblas result is checked against eager's before it is timed.

    python3 bench/torch_compare.py [--lib PATH] [--module PATH] [--csv FILE]
                                   [--budget SECONDS] [--quick | --engine |
                                    --crossover | --sweep | --drawn SEED |
                                    --gemm-rule | --narrow-rule |
                                    --mlp-rule | --chain]

--lib defaults to $FUSEDBLAS_LIB, then ./.libs/libfusedblas.so (run from a
build tree); --module (the CUDA backend module) to $FUSEDBLAS_CUDA_MODULE,
then ./lib/cuda/.libs/fusedblas_cuda.so. Plain Python + PyTorch: nothing
here is a dependency of the library.
"""

import argparse
import ctypes
import math
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - reported, not a failure of the bench
    print("torch_compare.py: PyTorch is not installed; nothing to compare",
          file=sys.stderr)
    sys.exit(0)

# include/fusedblas.h
FB_SUCCESS, FB_NOT_SUPPORTED = 0, 2
FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS = 101, 111, 112
FB_ACT_GELU_TANH = 2
FB_ACT = {"none": 0, "relu": 1, "gelu_tanh": 2, "gelu_erf": 3, "silu": 4}
FB_DTYPE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
FB_BACKENDS = [("cuda-lt", 3), ("cuda-fused", 4), ("cuda", 2)]
DTYPE_NAME = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def load_fusedblas(lib_path, module_path):
    """The library, with the prototypes this script uses."""
    if module_path and not os.environ.get("FUSEDBLAS_CUDA_MODULE"):
        # read by the library at its first GPU call, so set it before
        os.environ["FUSEDBLAS_CUDA_MODULE"] = module_path
    lib = ctypes.CDLL(lib_path)
    P, I, I64, F32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_float
    lib.fb_create.argtypes = [ctypes.POINTER(P)]
    lib.fb_destroy.argtypes = [P]
    for name, args in [("fb_set_backend", [P, I]), ("fb_set_cuda_device", [P, I]),
                       ("fb_set_cuda_stream", [P, P]), ("fb_set_math_mode", [P, I]),
                       ("fb_backend_available", [I])]:
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = I
    lib.fb_create.restype = I
    lib.fb_destroy.restype = I
    lib.fb_status_string.argtypes = [I]
    lib.fb_status_string.restype = ctypes.c_char_p
    lib.fb_handle_last_path.argtypes = [P]
    lib.fb_handle_last_path.restype = ctypes.c_char_p
    lib.fb_handle_last_message.argtypes = [P]
    lib.fb_handle_last_message.restype = ctypes.c_char_p
    gemm_args = [P, I, I, I, I64, I64, I64, F32, P, I64, P, I64, F32, P, I64, P, I]
    for name in ("sgemm_bias_act", "hgemm_bias_act", "bgemm_bias_act"):
        getattr(lib, name).argtypes = gemm_args
        getattr(lib, name).restype = I
    lib.mlp_geglu_forward.argtypes = [P, I, I, I64, I64, I64, I64, P, I64,
                                      P, P, P, P, P, P, P, I64]
    lib.mlp_geglu_forward.restype = I
    lib.fb_plan_create_gemm.argtypes = [P, I, I, I, I, I64, I64, I64, F32, P,
                                        I64, F32, P, I, ctypes.POINTER(P)]
    lib.fb_plan_create_mlp.argtypes = [P, I, I, I64, I64, I64, I64, P, P, P,
                                       P, P, P, ctypes.POINTER(P)]
    lib.fb_plan_gemm.argtypes = [P, I64, P, I64, P, I64]
    lib.fb_plan_mlp.argtypes = [P, I64, P, I64, P, I64]
    lib.fb_plan_destroy.argtypes = [P]
    for name in ("fb_plan_create_gemm", "fb_plan_create_mlp", "fb_plan_gemm",
                 "fb_plan_mlp", "fb_plan_destroy"):
        getattr(lib, name).restype = I
    lib.fb_plan_path.argtypes = [P, I64]
    lib.fb_plan_path.restype = ctypes.c_char_p
    return lib


class FusedBlas:
    """One handle per GPU path, all on PyTorch's current stream."""

    def __init__(self, lib):
        self.lib = lib
        self.handles = {}
        dev = torch.cuda.current_device()
        stream = torch.cuda.current_stream().cuda_stream
        for name, backend in FB_BACKENDS:
            st = lib.fb_backend_available(backend)
            if st != FB_SUCCESS:
                print(f"fusedblas {name}: {lib.fb_status_string(st).decode()}",
                      file=sys.stderr)
                continue
            h = ctypes.c_void_p()
            if lib.fb_create(ctypes.byref(h)) != FB_SUCCESS:
                continue
            lib.fb_set_backend(h, backend)
            lib.fb_set_cuda_device(h, dev)
            lib.fb_set_cuda_stream(h, ctypes.c_void_p(stream))
            self.handles[name] = h

    def close(self):
        for h in self.handles.values():
            self.lib.fb_destroy(h)

    def call(self, name, w, args):
        """One call of workload w on args with path name; the status."""
        h = self.handles[name]
        ptr = lambda t: ctypes.c_void_p(t.data_ptr() if t is not None else 0)
        if w.routine == "gemm":
            x, wt, b, y = args
            fn = {torch.float32: self.lib.sgemm_bias_act,
                  torch.float16: self.lib.hgemm_bias_act,
                  torch.bfloat16: self.lib.bgemm_bias_act}[w.dtype]
            return fn(h, FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS, w.m, w.n, w.k, 1.0,
                      ptr(x), w.k, ptr(wt), w.k, 0.0, ptr(y), w.n, ptr(b),
                      FB_ACT[w.act])
        x, wg, bg, wu, bu, wd, bd, y = args
        return self.lib.mlp_geglu_forward(
            h, FB_DTYPE[w.dtype], FB_ACT[w.act], w.m, w.k, w.h, w.n,
            ptr(x), w.k, ptr(wg), ptr(bg), ptr(wu), ptr(bu), ptr(wd), ptr(bd),
            ptr(y), w.n)

    def make_plans(self, w, sets):
        """A plan of workload w on the cuda handle for each set's weights
        (the plan column: made once, outside the timing), or None."""
        h = self.handles.get("cuda")
        if h is None:
            return None
        ptr = lambda t: ctypes.c_void_p(t.data_ptr() if t is not None else 0)
        plans = []
        for args in sets:
            p = ctypes.c_void_p()
            if w.routine == "gemm":
                x, wt, b, y = args
                st = self.lib.fb_plan_create_gemm(
                    h, FB_DTYPE[w.dtype], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                    w.m, w.n, w.k, 1.0, ptr(wt), w.k, 0.0, ptr(b),
                    FB_ACT[w.act], ctypes.byref(p))
            else:
                x, wg, bg, wu, bu, wd, bd, y = args
                st = self.lib.fb_plan_create_mlp(
                    h, FB_DTYPE[w.dtype], FB_ACT[w.act], w.m, w.k, w.h, w.n,
                    ptr(wg), ptr(bg), ptr(wu), ptr(bu), ptr(wd), ptr(bd),
                    ctypes.byref(p))
            if st != FB_SUCCESS:
                self.free_plans(plans)
                return st
            plans.append(p)
        return plans

    def free_plans(self, plans):
        for p in plans:
            self.lib.fb_plan_destroy(p)

    def call_plan(self, plans, w, args, i):
        """One execution of set i's plan on args; the status."""
        x, y = args[0], args[-1]
        run = self.lib.fb_plan_gemm if w.routine == "gemm" else self.lib.fb_plan_mlp
        return run(plans[i], w.m, ctypes.c_void_p(x.data_ptr()), w.k,
                   ctypes.c_void_p(y.data_ptr()), w.n)

    def describe(self, name, status):
        h = self.handles[name]
        if status == FB_SUCCESS:
            return self.lib.fb_handle_last_path(h).decode()
        return (self.lib.fb_status_string(status).decode() + ": " +
                self.lib.fb_handle_last_message(h).decode())


class Workload:
    def __init__(self, group, routine, dtype, m, k, h, n, bias, compile_it,
                 act="gelu_tanh"):
        self.group, self.routine, self.dtype = group, routine, dtype
        self.m, self.k, self.h, self.n, self.bias = m, k, h, n, bias
        self.compile_it, self.act = compile_it, act

    def shape(self):
        dims = (self.m, self.k, self.n) if self.routine == "gemm" else \
               (self.m, self.k, self.h, self.n)
        return ",".join(str(d) for d in dims)

    def bytes_per_set(self):
        es = 4 if self.dtype == torch.float32 else 2
        m, k, h, n = self.m, self.k, self.h, self.n
        if self.routine == "gemm":
            return es * (m * k + n * k + m * n + n)
        return es * (m * k + 2 * h * k + n * h + m * n + 2 * h + n)

    def reduction(self):
        return self.k if self.routine == "gemm" else self.k + self.h

    def flops(self):
        if self.routine == "gemm":
            return 2.0 * self.m * self.n * self.k
        return 2.0 * self.m * self.h * (2 * self.k + self.n)


def workloads(quick):
    """The GPU workloads of fusedblas-bench (bench_workloads.c), trimmed to
    what fits the time budget; torch.compile on the headline ones."""
    bf16, f16, f32 = torch.bfloat16, torch.float16, torch.float32
    if quick:
        return [Workload("seed-linear", "gemm", bf16, 1024, 32, 0, 64, True, True),
                Workload("decode-mlp-768", "mlp", bf16, 16, 768, 3072, 768, True, False),
                Workload("tiny-mlp", "mlp", bf16, 4096, 64, 256, 64, True, False)]
    w = []
    for dt in (bf16, f16, f32):
        w.append(Workload("seed-mlp", "mlp", dt, 8192, 768, 3072, 768, False, dt == bf16))
        w.append(Workload("seed-linear", "gemm", dt, 1024, 32, 0, 64, True, dt == bf16))
    for m in (1, 4, 16, 32):
        w.append(Workload("decode-mlp", "mlp", bf16, m, 4096, 11008, 4096, False, m == 16))
        w.append(Workload("decode-gemm", "gemm", bf16, m, 4096, 0, 11008, True, m == 16))
    w.append(Workload("decode-mlp", "mlp", f32, 16, 4096, 11008, 4096, False, False))
    w.append(Workload("decode-mlp-768", "mlp", bf16, 16, 768, 3072, 768, True, True))
    for m in (1024, 4096, 8192):
        w.append(Workload("prefill-mlp", "mlp", bf16, m, 4096, 11008, 4096, False, m == 4096))
    for k, h, n in ((64, 64, 64), (64, 256, 64), (128, 128, 128), (256, 256, 256)):
        for m in (65536, 1048576):
            w.append(Workload("tiny-mlp", "mlp", bf16, m, k, h, n, True,
                              (k, h, n, m) == (64, 256, 64, 65536)))
    return w


def engine_workloads():
    """The Hopper GEMM engine's table (the issue that asked for it): the
    engine alone (act none, no bias), gemm + bias + gelu_tanh, the gated
    MLPs (SwiGLU and GeGLU) in both 16-bit types, the seed MLP."""
    bf16, f16 = torch.bfloat16, torch.float16
    w = [Workload("engine-alone", "gemm", bf16, 8192, 8192, 0, 8192, False, False, "none"),
         Workload("engine-alone", "gemm", bf16, 8192, 4096, 0, 11008, False, False, "none"),
         Workload("gemm-gelu", "gemm", bf16, 8192, 4096, 0, 11008, True, False),
         Workload("gemm-gelu", "gemm", bf16, 2048, 4096, 0, 14336, True, False)]
    for dt in (bf16, f16):
        for m in (2048, 8192):
            w.append(Workload("swiglu-mlp", "mlp", dt, m, 4096, 14336, 4096, False, False, "silu"))
        for m in (1024, 4096, 8192):
            w.append(Workload("geglu-mlp", "mlp", dt, m, 4096, 11008, 4096, False, False))
        w.append(Workload("seed-mlp", "mlp", dt, 8192, 768, 3072, 768, False, False))
        w.append(Workload("mlp-1024", "mlp", dt, 4096, 1024, 4096, 1024, False, False))
    return w


def crossover_workloads():
    """The shape rule's crossovers between cuda-fused and cuda-lt, on the
    GPU at hand: the engine's gemm + bias + gelu and gated MLPs over the
    row counts where the choice changes, and the decode kernels over the
    token counts where it does (each backend forced by name)."""
    bf16, f16 = torch.bfloat16, torch.float16
    w = []
    for m in (256, 512, 1024, 2048, 4096):
        w.append(Workload("gemm-gelu", "gemm", bf16, m, 4096, 0, 11008, True, False))
    for m in (512, 1024, 2048, 4096, 8192):
        w.append(Workload("swiglu-mlp", "mlp", bf16, m, 4096, 11008, 4096, False, False, "silu"))
    for m in (1024, 2048, 4096):
        w.append(Workload("geglu-mlp", "mlp", f16, m, 4096, 11008, 4096, False, False))
    for m in (1, 4, 16, 32):
        w.append(Workload("decode-mlp", "mlp", bf16, m, 4096, 11008, 4096, False, False))
    for m in (1, 4, 8, 16):
        w.append(Workload("decode-gemm", "gemm", bf16, m, 4096, 0, 11008, True, False))
    return w


def sweep_workloads():
    """Shapes nobody tuned for: odd row counts, and the widths of models
    other than the ones the benchmark names, each dtype and activation;
    the auto path (column cuda) against eager shows where the shape rule
    or a kernel family loses."""
    bf16, f16, f32 = torch.bfloat16, torch.float16, torch.float32
    w = []
    for m, k, n in ((1, 5120, 13824), (7, 3000, 7000), (24, 2560, 10240),
                    (48, 6144, 2048), (100, 1536, 6000), (333, 4000, 4000),
                    (777, 2048, 5632), (1500, 5120, 1280), (3000, 2000, 5000),
                    (6000, 1024, 3072), (12000, 768, 768), (2500, 7168, 7168)):
        w.append(Workload("sweep-gemm", "gemm", bf16, m, k, 0, n, True, False))
    for m, k, n, act in ((5, 3584, 18944, "silu"), (1000, 3584, 18944, "silu"),
                         (200, 1000, 3000, "none")):
        w.append(Workload("sweep-gemm", "gemm", f16, m, k, 0, n, True, False, act))
    for m, k, n in ((64, 1000, 1000), (2000, 1500, 2500)):
        w.append(Workload("sweep-gemm", "gemm", f32, m, k, 0, n, True, False))
    for m, k, h, n, act in ((1, 5120, 13824, 5120, "silu"),
                            (8, 2560, 6912, 2560, "gelu_tanh"),
                            (24, 3072, 8192, 3072, "silu"),
                            (100, 2048, 5632, 2048, "silu"),
                            (300, 1536, 8960, 1536, "silu"),
                            (600, 4096, 14336, 4096, "silu"),
                            (1500, 3584, 18944, 3584, "silu"),
                            (3000, 2048, 8192, 2048, "gelu_tanh"),
                            (5000, 1024, 2816, 1024, "silu")):
        w.append(Workload("sweep-mlp", "mlp", bf16, m, k, h, n, False, False, act))
    for m, k, h, n in ((17, 4096, 12288, 4096), (2500, 2560, 10240, 2560)):
        w.append(Workload("sweep-mlp", "mlp", f16, m, k, h, n, False, False))
    for m, k, h, n in ((4, 2048, 5504, 2048), (512, 1024, 4096, 1024)):
        w.append(Workload("sweep-mlp", "mlp", f32, m, k, h, n, True, False))
    return w


def drawn_workloads(seed, count):
    """Shapes drawn at random (a seed: a fresh set each time, so that no
    rule is fitted to them): row counts odd and even from 1 to 6001, the
    widths of many model families, gemm + bias + act and gated MLPs in
    bf16 and f16, a few fp32; capped at about 1.5e12 flops a call."""
    import random
    rnd = random.Random(seed)
    bf16, f16, f32 = torch.bfloat16, torch.float16, torch.float32
    rows = (1, 2, 3, 5, 9, 13, 20, 31, 37, 50, 65, 97, 130, 200, 257, 384,
            500, 640, 1023, 1111, 1536, 2049, 3333, 4097, 6001)
    widths = ((896, 4864), (1024, 2816), (1280, 5120), (1536, 8960),
              (1600, 6400), (2048, 5632), (2048, 8192), (2304, 9216),
              (2560, 6912), (2880, 7680), (3072, 8192), (3200, 8640),
              (3584, 18944), (4096, 12288), (4096, 14336), (5120, 13824),
              (5120, 17408), (6144, 16384), (7168, 18432), (768, 3072))
    acts = ("gelu_tanh", "silu", "gelu_erf", "relu", "none")
    w = []
    while len(w) < count:
        m = rnd.choice(rows)
        k, h = rnd.choice(widths)
        r = rnd.random()
        dtype = f32 if r < 0.1 else f16 if r < 0.35 else bf16
        if rnd.random() < 0.5:
            n = h if rnd.random() < 0.6 else k  # up or down projection
            kk = k if n == h else h
            if 2.0 * m * kk * n > 1.5e12:
                continue
            w.append(Workload("drawn-gemm", "gemm", dtype, m, kk, 0, n, True,
                              False, rnd.choice(acts)))
        else:
            if 6.0 * m * k * h > 1.5e12:
                continue
            act = rnd.choice(("silu", "gelu_tanh", "gelu_erf"))
            w.append(Workload("drawn-mlp", "mlp", dtype, m, k, h, k,
                              rnd.random() < 0.3, False, act))
    return w


def run_checked(fb, name, w, sets, ref):
    """One call of w on sets[0] with path name checked against ref, then
    timed over sets: (microseconds or None, the path or why not, the
    relative error or None, 1 if it failed or disagreed else 0)."""
    y = sets[0][-1]
    y.fill_(float("nan"))
    st = fb.call(name, w, sets[0])
    if st == FB_NOT_SUPPORTED:
        return None, "n/a", None, 0
    if st != FB_SUCCESS:
        return None, "FAILED " + fb.describe(name, st), None, 1
    torch.cuda.synchronize()
    path = fb.describe(name, st)
    err = rel_err(y, ref)
    if not err <= tolerance(w):
        return None, path + f" MISMATCH rel err {err:.2g}", err, 1
    return 1e3 * time_gpu(lambda a: fb.call(name, w, a), sets), path, err, 0


def gemm_rule_grid():
    """The gemm shape rule's boundaries (shape_rule.cu): bias + activation
    over token counts and widths, the decode kernel's token range, and
    tall products with narrow outputs."""
    bf16, f16 = torch.bfloat16, torch.float16
    w = []
    for k, n in ((768, 3072), (1024, 4096), (1536, 6144), (2048, 8192),
                 (3072, 3072), (4096, 4096), (4096, 14336), (5120, 13824),
                 (8192, 2048)):
        for t in (16, 64, 128, 256, 512, 768, 1000, 1536):
            w.append(Workload("rule-engine", "gemm", bf16, t, k, 0, n, True, False))
    for t in (2048, 8192, 16384):
        for k, n in ((768, 768), (1024, 1024), (4096, 512), (2048, 1024), (512, 4096)):
            w.append(Workload("rule-engine", "gemm", bf16, t, k, 0, n, True, False))
    for t in (256, 1000):
        for k, n in ((1536, 6144), (4096, 14336)):
            w.append(Workload("rule-engine", "gemm", f16, t, k, 0, n, True, False, "silu"))
    for t in (1, 4, 64, 1024, 8192):  # launch-bound: the seed Linear's widths
        for k, n in ((32, 64), (64, 32), (256, 1024), (1024, 256)):
            w.append(Workload("rule-small", "gemm", bf16, t, k, 0, n, True, False))
    for k, n in ((4096, 11008), (3000, 7000), (2560, 10240), (5120, 13824),
                 (8192, 28672), (1024, 4096), (11008, 4096)):
        for t in (1, 2, 4, 5, 6, 8, 12, 16, 24, 32):
            w.append(Workload("rule-decode", "gemm", bf16, t, k, 0, n, True, False))
    for t in (4, 8, 16, 32):
        w.append(Workload("rule-decode", "gemm", f16, t, 4096, 0, 11008, True, False, "silu"))
    return w


def narrow_rule_grid():
    """The decode gemm's narrow row (shape_rule.cu): outputs narrower than
    the input, 1 to 16 tokens, the weights from 0.5 to 112 MiB."""
    bf16, f16 = torch.bfloat16, torch.float16
    w = []
    for k, n in ((6400, 1600), (5120, 1280), (4096, 1024), (2048, 512),
                 (3072, 768), (8192, 2048), (11008, 4096), (14336, 4096)):
        for t in (1, 2, 4, 8, 16):
            w.append(Workload("rule-narrow", "gemm", bf16, t, k, 0, n, True, False))
    for t in (1, 4):
        w.append(Workload("rule-narrow", "gemm", f16, t, 6400, 0, 1600, True, False, "silu"))
    return w


def mlp_rule_grid():
    """The gated MLP's engine row (shape_rule.cu): prefill row counts over
    the widths of several model families, both gate activations; and the
    prefill pair's widths, where it and the engine both apply."""
    bf16, f16 = torch.bfloat16, torch.float16
    w = []
    for k, h, n in ((1536, 8960, 1536), (2048, 5632, 2048), (2048, 8192, 2048),
                    (2560, 10240, 2560), (3072, 8192, 3072), (3584, 18944, 3584),
                    (4096, 11008, 4096), (4096, 14336, 4096), (5120, 13824, 5120)):
        for m in (512, 1024, 2048, 3000, 4096, 8192):
            w.append(Workload("rule-mlp", "mlp", bf16, m, k, h, n, False, False, "silu"))
    for m in (1024, 2048, 4096):
        for k, h, n in ((2560, 10240, 2560), (4096, 11008, 4096)):
            w.append(Workload("rule-mlp", "mlp", f16, m, k, h, n, False, False))
    # the prefill pair's widths (k, n <= 1024, h <= 4096) against the engine
    for m in (2048, 8192, 16384):
        w.append(Workload("rule-pair", "mlp", bf16, m, 768, 3072, 768, False, False))
    for m in (4096, 8192):
        w.append(Workload("rule-pair", "mlp", bf16, m, 1024, 4096, 1024, False, False))
    w.append(Workload("rule-pair", "mlp", f16, 8192, 768, 3072, 768, False, False))
    return w


def rule_table(lib, fb, routine, grid):
    """--gemm-rule / --narrow-rule / --mlp-rule: eager, cuda-lt, each fused
    family of the routine forced by name, and auto (the cuda handle), one
    row a shape of grid; returns the failures."""
    lib.fb_set_implementation.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.fb_set_implementation.restype = ctypes.c_int
    dev = torch.cuda.current_device()
    stream = torch.cuda.current_stream().cuda_stream
    families = (["cuda-fused/gemm_decode", "cuda-fused/gemm_sm90"]
                if routine == "gemm" else
                ["cuda-fused/mlp_prefill_wgmma", "cuda-fused/mlp_sm90"])
    for name in families:
        h = ctypes.c_void_p()
        if lib.fb_create(ctypes.byref(h)) != FB_SUCCESS:
            return 1
        lib.fb_set_backend(h, 4)
        lib.fb_set_cuda_device(h, dev)
        lib.fb_set_cuda_stream(h, ctypes.c_void_p(stream))
        if lib.fb_set_implementation(h, name.encode()) != FB_SUCCESS:
            return 1
        fb.handles[name] = h
    cols = ["cuda-lt"] + families + ["cuda"]
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    fmt = lambda v: f"{v:.1f}" if v else "-"
    print("dtype tokens k", "" if routine == "gemm" else "h", "n act | eager",
          " ".join(cols), "| auto path")
    failures = 0
    for w in grid:
        nsets = 1 if w.bytes_per_set() >= l2 else \
            min(16, math.ceil(2 * l2 / w.bytes_per_set()))
        sets = [make_args(w, 1000 * i + 7) for i in range(nsets)]
        eager = torch_fn(w, linear_act(w.act) if routine == "gemm"
                         else gated_mlp(w.act))
        t, path = {}, ""
        with torch.no_grad():
            ref = eager(sets[0])
            t["eager"] = 1e3 * time_gpu(eager, sets)
            for name in cols:
                t[name], p, _, failed = run_checked(fb, name, w, sets, ref)
                failures += failed
                if failed:
                    print(f"{name} {w.shape()}: {p}")
                if name == "cuda":
                    path = p
        print(DTYPE_NAME[w.dtype], w.shape().replace(",", " "), w.act, "|",
              fmt(t["eager"]),
              *(fmt(t[c]) for c in cols), "|", path, flush=True)
        del sets
        torch.cuda.empty_cache()
    return failures


def make_args(w, seed):
    """One input set: X uniform in [-1, 1), weights with variance 1/fan_in,
    biases in [-0.5, 0.5); y preallocated for fusedblas."""
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    dev, dt = "cuda", w.dtype

    def u(*shape, scale=1.0):
        return ((torch.rand(*shape, generator=g, device=dev, dtype=torch.float32)
                 * 2 - 1) * scale).to(dt)

    x = u(w.m, w.k)
    if w.routine == "gemm":
        wt = u(w.n, w.k, scale=math.sqrt(3 / w.k))
        b = u(w.n, scale=0.5) if w.bias else None
        return [x, wt, b, torch.empty(w.m, w.n, device=dev, dtype=dt)]
    wg = u(w.h, w.k, scale=math.sqrt(3 / w.k))
    wu = u(w.h, w.k, scale=math.sqrt(3 / w.k))
    wd = u(w.n, w.h, scale=math.sqrt(3 / w.h))
    bg = u(w.h, scale=0.5) if w.bias else None
    bu = u(w.h, scale=0.5) if w.bias else None
    bd = u(w.n, scale=0.5) if w.bias else None
    return [x, wg, bg, wu, bu, wd, bd, torch.empty(w.m, w.n, device=dev, dtype=dt)]


def activation(name):
    return {"gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
            "gelu_erf": F.gelu, "relu": F.relu, "silu": F.silu,
            "none": lambda v: v}[name]


def linear_act(act):
    a = activation(act)
    return lambda x, w, b: a(F.linear(x, w, b))


def gated_mlp(act):
    a = activation(act)
    return lambda x, wg, bg, wu, bu, wd, bd: F.linear(
        a(F.linear(x, wg, bg)) * F.linear(x, wu, bu), wd, bd)


def products_only(w):
    """The products of w alone (no activation, no gate product): the dense
    GEMM rate the fused call is measured against."""
    if w.routine == "gemm":
        return lambda a: F.linear(a[0], a[1], a[2])
    hbuf = torch.empty(w.m, w.h, device="cuda", dtype=w.dtype)
    return lambda a: (F.linear(a[0], a[1], a[2]), F.linear(a[0], a[3], a[4]),
                      F.linear(hbuf, a[5], a[6]))


def torch_fn(w, fn):
    """fn over one input set, without fusedblas's output buffer."""
    if w.routine == "gemm":
        return lambda a: fn(a[0], a[1], a[2])
    return lambda a: fn(a[0], a[1], a[2], a[3], a[4], a[5], a[6])


def chain_workloads():
    """Decode layers for --chain: 16-bit, 1 to 32 rows, 4096 wide."""
    bf16 = torch.bfloat16
    w = []
    for m in (1, 16, 32):
        w.append(Workload("chain-mlp", "mlp", bf16, m, 4096, 11008, 4096, False, False))
    w.append(Workload("chain-mlp", "mlp", bf16, 16, 4096, 14336, 4096, False, False,
                      act="silu"))
    for m in (1, 16):
        w.append(Workload("chain-gemm", "gemm", bf16, m, 4096, 0, 11008, True, False))
    return w


def chain_table(fb, layers=8):
    """A stack of `layers` decode layers of one shape, each with its own
    weights, called back to back on one stream and timed as a whole (events
    around the stack, median of many stacks): per layer, PyTorch eager, the
    plain call (cuda) and plans (one per layer). The host enqueues the
    whole stack without waiting, and a plan's decode gemm may start
    streaming its weights while the layer ahead finishes (programmatic
    dependent launch). '% copy': weight bytes a layer over its time, against a
    device-to-device copy in the same run (bytes read + written)."""
    big = torch.empty(1 << 28, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(big)
    copy_ms = time_gpu(lambda _: dst.copy_(big), [None], min_reps=10, max_reps=30)
    copy_gbs = 2 * big.numel() * 4 / (copy_ms * 1e6)
    del big, dst
    print(f"device-to-device copy {copy_gbs:.0f} GB/s; {layers} layers a stack")
    cols = ["workload", "shape", "eager", "cuda", "plan", "plan % copy",
            "plan/eager", "plan/cuda", "plan path"]
    table, failures = [], 0
    for w in chain_workloads():
        sets = [make_args(w, 1000 * i + 7) for i in range(layers)]
        es = 2
        wbytes = es * (w.n * w.k if w.routine == "gemm" else 2 * w.h * w.k + w.n * w.h)
        base = linear_act(w.act) if w.routine == "gemm" else gated_mlp(w.act)
        eager = torch_fn(w, base)
        plans = fb.make_plans(w, sets)
        if not isinstance(plans, list) or "cuda" not in fb.handles:
            print(f"  {w.group} {w.shape()}: no plans ({plans})", file=sys.stderr)
            continue
        with torch.no_grad():
            ref = eager(sets[0])
            sets[0][-1].fill_(float("nan"))
            st = fb.call_plan(plans, w, sets[0], 0)
            torch.cuda.synchronize()
            if st != FB_SUCCESS or not rel_err(sets[0][-1], ref) <= tolerance(w):
                failures += 1
                print(f"  {w.group} {w.shape()}: plan FAILED or wrong", file=sys.stderr)
                fb.free_plans(plans)
                continue
            path = fb.describe("cuda", st)
            stack = lambda one: (lambda _: [one(i) for i in range(layers)])
            t_eager = time_gpu(stack(lambda i: eager(sets[i])), [None]) / layers
            t_cuda = time_gpu(stack(lambda i: fb.call("cuda", w, sets[i])), [None]) / layers
            t_plan = time_gpu(stack(lambda i: fb.call_plan(plans, w, sets[i], i)),
                              [None]) / layers
        fb.free_plans(plans)
        us = lambda t: f"{1e3 * t:.1f}"
        table.append([w.group, w.shape(), us(t_eager), us(t_cuda), us(t_plan),
                      f"{100 * wbytes / (t_plan * 1e6) / copy_gbs:.0f}%",
                      f"{t_eager / t_plan:.2f}x", f"{t_cuda / t_plan:.2f}x", path])
        del sets
        torch.cuda.empty_cache()
    widths = [max(len(str(x)) for x in col) for col in zip(cols, *table)]
    print("us a layer (median of stacks); ratios > 1: the plan faster")
    for line in [cols] + table:
        print("  ".join(str(v).ljust(wd) if i in (0, 1, len(cols) - 1) else str(v).rjust(wd)
                        for i, (v, wd) in enumerate(zip(line, widths))).rstrip())
    return failures


def time_gpu(run, sets, target_s=0.03, min_reps=10, max_reps=200):
    """Median milliseconds of run(set): warm-up, then one event pair per
    call, enqueued back to back, read after one synchronisation."""
    stream = torch.cuda.current_stream()
    s0, e0 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    warm, calls, last = 0.0, 0, 0.0
    while calls < 2 or (warm < 20 and calls < 200):
        s0.record(stream)
        run(sets[calls % len(sets)])
        e0.record(stream)
        e0.synchronize()
        last = s0.elapsed_time(e0)
        warm += last
        calls += 1
    reps = max(min_reps, min(max_reps, int(math.ceil(target_s * 1e3 / max(last, 1e-3)))))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for r, (a, b) in enumerate(ev):
        a.record(stream)
        run(sets[(calls + r) % len(sets)])
        b.record(stream)
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


def tolerance(w):
    """As bench/bench_check.c: storage rounding plus fp32 accumulation."""
    u_store = {torch.float32: 2 ** -24, torch.float16: 2 ** -11,
               torch.bfloat16: 2 ** -8}[w.dtype]
    return 4 * u_store + 4 * math.sqrt(w.reduction()) * 2 ** -24


def rel_err(y, ref):
    y, ref = y.float(), ref.float()
    if not torch.isfinite(y).all():
        return float("inf")
    return ((y - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.environ.get("FUSEDBLAS_LIB",
                                                    "./.libs/libfusedblas.so"))
    ap.add_argument("--module", default=os.environ.get(
        "FUSEDBLAS_CUDA_MODULE", "./lib/cuda/.libs/fusedblas_cuda.so"))
    ap.add_argument("--csv", help="write the rows as CSV")
    ap.add_argument("--budget", type=float, default=150,
                    help="seconds; torch.compile is skipped once past it")
    ap.add_argument("--compile-mode", default=None,
                    help="torch.compile mode (default: inductor's default)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--engine", action="store_true",
                    help="the GEMM engine's table instead (products alone, "
                         "gemm + gelu, gated MLPs; a products-only column)")
    ap.add_argument("--sweep", action="store_true",
                    help="shapes nobody tuned for instead (the auto path "
                         "against eager, column auto/eager)")
    ap.add_argument("--drawn", type=int, metavar="SEED",
                    help="shapes drawn at random with this seed instead "
                         "(a fresh set nobody tuned for; with --count)")
    ap.add_argument("--count", type=int, default=24,
                    help="how many shapes --drawn draws (default 24)")
    ap.add_argument("--gemm-rule", action="store_true",
                    help="the gemm shape rule's boundary grid instead "
                         "(each fused gemm family forced by name)")
    ap.add_argument("--narrow-rule", action="store_true",
                    help="the decode gemm's narrow-output grid instead "
                         "(as --gemm-rule)")
    ap.add_argument("--mlp-rule", action="store_true",
                    help="the gated MLP's engine row grid instead")
    ap.add_argument("--crossover", action="store_true",
                    help="the shape rule's crossovers instead (cuda-fused "
                         "against cuda-lt where the rule's choice changes)")
    ap.add_argument("--chain", action="store_true",
                    help="decode layers stacked back to back instead: eager, "
                         "plain calls and plans, per layer")
    opt = ap.parse_args()
    if opt.crossover:
        opt.engine = True  # the same columns

    if not torch.cuda.is_available():
        print("torch_compare.py: no CUDA device; nothing to compare", file=sys.stderr)
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32, as ours
    # one graph per shape: raise the recompile limit (renamed in newer torch)
    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 256)
    lib = load_fusedblas(opt.lib, opt.module)
    fb = FusedBlas(lib)
    if not fb.handles:
        print("torch_compare.py: no fusedblas GPU path is available (see above); "
              "check --lib and --module")
        return 1
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    print(f"GPU: {props.name}; PyTorch {torch.__version__}; "
          f"CUDA {torch.version.cuda}; median of CUDA-event timings, inputs rotated "
          f"through 2x L2 ({l2 >> 20} MB) where they fit")
    if opt.chain:
        failures = chain_table(fb)
        fb.close()
        return 1 if failures else 0
    if opt.gemm_rule or opt.narrow_rule or opt.mlp_rule:
        failures = rule_table(
            lib, fb, "mlp" if opt.mlp_rule else "gemm",
            gemm_rule_grid() if opt.gemm_rule else
            narrow_rule_grid() if opt.narrow_rule else mlp_rule_grid())
        fb.close()
        return 1 if failures else 0
    start = time.time()
    rows, failures = [], 0
    chosen = (drawn_workloads(opt.drawn, opt.count)
              if opt.drawn is not None else
              sweep_workloads() if opt.sweep else
              crossover_workloads() if opt.crossover else
              engine_workloads() if opt.engine else workloads(opt.quick))
    for w in chosen:
        nsets = 1
        if w.bytes_per_set() < l2:
            nsets = min(16, math.ceil(2 * l2 / w.bytes_per_set()))
        sets = [make_args(w, 1000 * i + 7) for i in range(nsets)]
        base = linear_act(w.act) if w.routine == "gemm" else gated_mlp(w.act)
        eager = torch_fn(w, base)
        row = {"group": w.group, "dtype": DTYPE_NAME[w.dtype], "shape": w.shape()}
        with torch.no_grad():
            ref = eager(sets[0])
            row["eager_us"] = 1e3 * time_gpu(eager, sets)
            row["flops"] = w.flops()
            row["products_us"] = (1e3 * time_gpu(products_only(w), sets)
                                  if opt.engine else None)
            row["compile_us"] = None
            if w.compile_it and time.time() - start < opt.budget:
                t0 = time.time()
                compiled = torch_fn(w, torch.compile(base, dynamic=False,
                                                     mode=opt.compile_mode))
                yc = compiled(sets[0])
                row["compile_err"] = rel_err(yc, ref)
                row["compile_us"] = 1e3 * time_gpu(compiled, sets)
                print(f"  compiled {w.group} {w.shape()} in {time.time() - t0:.0f} s",
                      file=sys.stderr)
            for name, _ in FB_BACKENDS:
                row[name + "_us"] = None
                if name not in fb.handles:
                    continue
                us, path, err, failed = run_checked(fb, name, w, sets, ref)
                row[name + "_us"], row[name + "_path"] = us, path
                if err is not None:
                    row[name + "_err"] = err
                failures += failed
            # the same on the cuda path as plans, one per set, made once
            row["plan_us"] = None
            plans = fb.make_plans(w, sets)
            if isinstance(plans, list):
                index = {id(a): i for i, a in enumerate(sets)}
                y = sets[0][-1]
                y.fill_(float("nan"))
                st = fb.call_plan(plans, w, sets[0], 0)
                torch.cuda.synchronize()
                if st != FB_SUCCESS:
                    row["plan_path"] = "FAILED " + fb.describe("cuda", st)
                    failures += 1
                elif not rel_err(y, ref) <= tolerance(w):
                    row["plan_path"] = f"MISMATCH rel err {rel_err(y, ref):.2g}"
                    failures += 1
                else:
                    row["plan_path"] = fb.describe("cuda", st)
                    row["plan_us"] = 1e3 * time_gpu(
                        lambda a: fb.call_plan(plans, w, a, index[id(a)]), sets)
                fb.free_plans(plans)
        rows.append(row)
        mine = " ".join(f"{n} {row[n + '_us']:.1f}"
                        for n, _ in FB_BACKENDS if row.get(n + "_us"))
        print(f"  {w.group} {row['dtype']} {w.shape()}: eager {row['eager_us']:.1f} us"
              f" {mine} [{row.get('cuda_path', '')}]", file=sys.stderr)
        del sets
        torch.cuda.empty_cache()
    fb.close()

    # the table: times in microseconds, ratios > 1 mean fusedblas is faster
    cols = ["workload", "dtype", "shape", "eager", "compile", "cuda-lt",
            "cuda-fused", "cuda", "plan", "best/eager", "best/compile",
            "auto/eager", "cuda path"]
    if opt.engine:
        cols[4:5] = ["products", "compile"]
        cols[-1:] = ["best/lt", "products/best", "best TF", "products TF",
                     "cuda-fused path"]
    table = []
    for r in rows:
        ours = [r[n + "_us"] for n in [b for b, _ in FB_BACKENDS] + ["plan"]
                if r.get(n + "_us")]
        best = min(ours) if ours else None
        fmt = lambda v: f"{v:.1f}" if v else "n/a" if v is None else "-"
        line = [r["group"], r["dtype"], r["shape"], fmt(r["eager_us"]),
                fmt(r["compile_us"]) if r["compile_us"] else "-",
                *(fmt(r.get(n + "_us")) for n, _ in FB_BACKENDS),
                fmt(r.get("plan_us")),
                f"{r['eager_us'] / best:.2f}x" if best else "-",
                f"{r['compile_us'] / best:.2f}x" if best and r["compile_us"] else "-",
                f"{r['eager_us'] / r['cuda_us']:.2f}x" if r.get("cuda_us") else "-",
                r.get("cuda_path", "")]
        if opt.engine:
            lt = r.get("cuda-lt_us")
            pr = r["products_us"]
            line[4:5] = [fmt(pr), fmt(r["compile_us"]) if r["compile_us"] else "-"]
            line[-1:] = [f"{lt / best:.2f}x" if best and lt else "-",
                         f"{pr / best:.3f}" if best and pr else "-",
                         f"{r['flops'] / best / 1e6:.0f}" if best else "-",
                         f"{r['flops'] / pr / 1e6:.0f}" if pr else "-",
                         r.get("cuda-fused_path", "")]
        table.append(line)
    widths = [max(len(str(x)) for x in col) for col in zip(cols, *table)]
    print("times in us (median); best = fastest fusedblas path; ratios > 1: "
          "fusedblas faster" + ("; products: the same products alone in PyTorch "
                                "(F.linear), the dense GEMM rate" if opt.engine else ""))
    left = (0, 1, 2, len(cols) - 1)
    for line in [cols] + table:
        print("  ".join(str(v).ljust(wd) if i in left else str(v).rjust(wd)
                        for i, (v, wd) in enumerate(zip(line, widths))).rstrip())
    if opt.csv:
        keys = sorted({k for r in rows for k in r})
        with open(opt.csv, "w") as f:
            f.write(",".join(keys) + "\n")
            for r in rows:
                f.write(",".join('"%s"' % r[k] if isinstance(r.get(k), str)
                                 else "" if r.get(k) is None else repr(r[k])
                                 for k in keys) + "\n")
    if failures:
        print(f"{failures} fusedblas call(s) failed or disagreed with eager")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
