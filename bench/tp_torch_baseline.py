#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tp_torch_baseline.py -- the baseline for mlp_geglu_forward_tp: the same
tensor-parallel gated MLP written in PyTorch, as users write it (two
linear layers -- gate and up as one weight, then down -- with the SiLU gate
between, and torch.distributed all_reduce over NCCL, one process per GPU
via torch.multiprocessing), and the whole layer on one GPU.

Layer as bench/tp_bench.c: 8192 -> 28672 -> 8192, bf16, no biases, each
rank holding h/2 rows of the gate and up weights and its n x h/2 slice of
the down weights. Times: CUDA events around each call, enqueued back to
back after a warm-up; the median per rank. Prints lines
"torch_baseline: m=M one-gpu T us, tp T us" for scripts/gpu-tp-check.sh.

Usage: python3 bench/tp_torch_baseline.py [--m 16,4096] [--iters 50]
"""
import argparse
import os
import statistics

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

K, H, N = 8192, 28672, 8192


def layer(x, wgu, wd):
    """Two linear layers and the gated activation: gate and up as one
    weight, as serving engines store them (bench/tp_bench.c does too)."""
    g, u = F.linear(x, wgu).chunk(2, dim=-1)
    return F.linear(F.silu(g) * u, wd)


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True),
           torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in ev)


def weights(h, device):
    g = torch.Generator(device=device).manual_seed(1)
    wgu = (torch.rand(2 * h, K, device=device, generator=g) - 0.5) / 45
    wd = (torch.rand(N, h, device=device, generator=g) - 0.5) / 85
    return wgu.bfloat16(), wd.bfloat16()


def rank_main(rank, world, ms, iters, warmup, out):
    torch.cuda.set_device(rank)
    try:
        dist.init_process_group("nccl", rank=rank, world_size=world,
                                device_id=torch.device("cuda", rank))
    except TypeError:  # a PyTorch before device_id
        dist.init_process_group("nccl", rank=rank, world_size=world)
    wgu, wd = weights(H // world, "cuda")
    res = {}
    for m in ms:
        x = torch.randn(m, K, device="cuda").bfloat16()

        def step():
            y = layer(x, wgu, wd)
            dist.all_reduce(y)
            return y
        dist.barrier()
        res[m] = timed(step, iters, warmup)
    out[rank] = res
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", default="16,4096")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    ms = [int(v) for v in a.m.split(",")]

    one = {}
    torch.cuda.set_device(0)
    wgu, wd = weights(H, "cuda")
    for m in ms:
        x = torch.randn(m, K, device="cuda").bfloat16()
        one[m] = timed(lambda: layer(x, wgu, wd), a.iters, a.warmup)
    del wgu, wd
    torch.cuda.empty_cache()

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    world = 2
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(rank_main, args=(world, ms, a.iters, a.warmup, out),
                 nprocs=world, join=True)
        tp = {m: max(out[r][m] for r in range(world)) for m in ms}
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}")
    for m in ms:
        print(f"torch_baseline: m={m} one-gpu {one[m]:.1f} us, "
              f"tp {tp[m]:.1f} us ({one[m] / tp[m]:.2f}x)")


if __name__ == "__main__":
    main()
