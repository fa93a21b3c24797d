#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fusedblas's e4m3-weight gemm+bias+act against PyTorch's FP8 GEMM.

nn.Linear + gelu_tanh with the weight held as e4m3 plus one fp32 scale per
output channel (the row-wise layout of FP8 checkpoints), bf16 activations
and output. Columns, all in one run, median microseconds (L2 flushed by
rotating input sets, as torch_compare.py):

  fusedblas      gemm_e4m3_bias_act, the handle on auto
  scaled_mm      torch._scaled_mm with row-wise scales (X quantised per row
                 to e4m3 on the fly), bias inside, then F.gelu: what a
                 PyTorch FP8 user runs
  scaled_mm-only the same product with X already quantised: PyTorch's
                 lower bound (no quantisation of X, no activation)
  bf16-eager     F.linear + F.gelu on the bf16 weights

torch._scaled_mm quantises the activations, which fusedblas's contract
does not (it computes from the bf16 X exactly); its error column shows it.

    python3 bench/fp8_torch_compare.py --lib .libs/libfusedblas.so
"""
import argparse
import ctypes
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_compare import (FB_ACT, FB_DTYPE, FB_ROW_MAJOR, FB_NO_TRANS,  # noqa: E402
                           FB_TRANS, FB_SUCCESS, load_fusedblas, time_gpu,
                           rel_err)

E4M3_MAX = 448.0


def quantise_rows(t):
    """t (rows x cols, fp32) as e4m3 rows and one fp32 scale a row."""
    amax = t.abs().amax(dim=1, keepdim=True).clamp_min(1e-12)
    scale = amax / E4M3_MAX
    return (t / scale).to(torch.float8_e4m3fn), scale


def make_set(m, k, n, seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    r = lambda *s: torch.rand(*s, generator=g, device="cuda") * 2 - 1
    x = r(m, k).to(torch.bfloat16)
    w = r(n, k) * (3.0 / k) ** 0.5
    wq, ws = quantise_rows(w)
    b = (r(n) * 0.5).to(torch.bfloat16)
    return {"x": x, "wq": wq, "ws": ws.reshape(n).contiguous(),
            "ws_row": ws.reshape(1, n).contiguous(),
            "w_bf16": (wq.float() * ws).to(torch.bfloat16), "b": b,
            "y": torch.empty(m, n, device="cuda", dtype=torch.bfloat16)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--module", default=None)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int, default=11008)
    ap.add_argument("--rows", default="1,16,32,64,256,2048")
    ap.add_argument("--sets", type=int, default=3)
    args = ap.parse_args()

    lib = load_fusedblas(args.lib, args.module)
    P, I, I64, F32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_float
    lib.gemm_e4m3_bias_act.argtypes = [P, I, I, I, I, I64, I64, I64, F32, P,
                                       I64, P, I64, P, F32, P, I64, P, I]
    lib.gemm_e4m3_bias_act.restype = I
    h = ctypes.c_void_p()
    assert lib.fb_create(ctypes.byref(h)) == FB_SUCCESS
    lib.fb_set_cuda_device(h, torch.cuda.current_device())
    lib.fb_set_cuda_stream(h, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    k, n = args.k, args.n
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())
    gelu = lambda v: F.gelu(v, approximate="tanh")

    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; "
          f"gemm + bias + gelu_tanh, k {k}, n {n}, e4m3 weights with row scales, bf16 X/Y")
    print(f"{'rows':>6} {'fusedblas':>10} {'scaled_mm':>10} {'sm-only':>9} "
          f"{'bf16-eager':>10} {'vs sm':>6} {'vs sm-only':>10} {'vs eager':>8} "
          f"{'err fb':>8} {'err sm':>8}  path")
    for m in [int(v) for v in args.rows.split(",")]:
        sets = [make_set(m, k, n, 1000 + i) for i in range(args.sets)]
        for s in sets:
            s["xq"], s["xs"] = quantise_rows(s["x"].float())

        def fb(s):
            st = lib.gemm_e4m3_bias_act(
                h, FB_DTYPE[torch.bfloat16], FB_ROW_MAJOR, FB_NO_TRANS, FB_TRANS,
                m, n, k, 1.0, ptr(s["x"]), k, ptr(s["wq"]), k, ptr(s["ws"]),
                0.0, ptr(s["y"]), n, ptr(s["b"]), FB_ACT["gelu_tanh"])
            if st != FB_SUCCESS:
                raise RuntimeError(lib.fb_status_string(st).decode() + ": " +
                                   lib.fb_handle_last_message(h).decode())
            return s["y"]

        def sm(s):
            xq, xs = quantise_rows(s["x"].float())
            return gelu(torch._scaled_mm(xq, s["wq"].t(), scale_a=xs,
                                         scale_b=s["ws_row"], bias=s["b"],
                                         out_dtype=torch.bfloat16))

        def sm_only(s):
            return torch._scaled_mm(s["xq"], s["wq"].t(), scale_a=s["xs"],
                                    scale_b=s["ws_row"], bias=s["b"],
                                    out_dtype=torch.bfloat16)

        def eager(s):
            return gelu(F.linear(s["x"], s["w_bf16"], s["b"]))

        s0 = sets[0]
        wdq = s0["wq"].double() * s0["ws"].double().reshape(n, 1)
        ref = gelu(F.linear(s0["x"].double(), wdq, s0["b"].double()))
        try:
            err_fb = rel_err(fb(s0), ref)
            err_sm = rel_err(sm(s0), ref)
        except RuntimeError as e:  # e.g. _scaled_mm's shape limits
            print(f"{m:>6} skipped: {e}")
            continue
        path = lib.fb_handle_last_path(h).decode()
        t = {name: 1e3 * time_gpu(fn, sets) for name, fn in
             [("fb", fb), ("sm", sm), ("smo", sm_only), ("eager", eager)]}
        print(f"{m:>6} {t['fb']:>10.1f} {t['sm']:>10.1f} {t['smo']:>9.1f} "
              f"{t['eager']:>10.1f} {t['sm'] / t['fb']:>6.2f} "
              f"{t['smo'] / t['fb']:>10.2f} {t['eager'] / t['fb']:>8.2f} "
              f"{err_fb:>8.1e} {err_sm:>8.1e}  {path}")
    lib.fb_destroy(h)


if __name__ == "__main__":
    main()
