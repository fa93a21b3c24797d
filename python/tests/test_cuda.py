# SPDX-License-Identifier: BSD-3-Clause
"""CUDA only: PyTorch's current stream is the one the library runs on, no
call waits for the GPU, torch.cuda.graph capture and replay equal direct
calls, torch.compile(mode="reduce-overhead") works, and PyTorch's TF32
switch reaches the library's math mode. (The numerics of every op, dtype
and activation on CUDA are in test_ops.py, run on both devices.)"""

import time

import pytest
import torch
import torch._dynamo
from torch import nn

import fusedblas
from fusedblas import _handles
from fusedblas import testing as T
from fusedblas.nn import GatedMLP, Linear

from conftest import cuda_only

pytestmark = cuda_only

DEV = "cuda"
BF16 = torch.bfloat16
U_ACC = 2.0 ** -22


class Block(nn.Module):
    def __init__(self, k=256, h=512, n=192):
        super().__init__()
        self.proj = Linear(k, n, activation="gelu_tanh")
        self.mlp = GatedMLP(n, h, bias=True, activation="silu")

    def forward(self, x):
        """The linear's output, the MLP's, and their sum, so that each op's
        result can be checked from the input it was given."""
        y = self.proj(x)
        z = self.mlp(y)
        return y, z, y + z


def inputs(seed, rows=64, k=256, h=512, n=192, dtype=BF16):
    g = torch.Generator().manual_seed(seed)

    def u(*shape, scale=1.0):
        return ((torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) *
                scale).to(dtype).to(DEV)

    return (u(rows, k), u(n, k, scale=(3 / k) ** 0.5), u(n, scale=0.5),
            u(h, n, scale=(3 / n) ** 0.5), u(h, n, scale=(3 / n) ** 0.5),
            u(n, h, scale=(3 / h) ** 0.5))


def check_linear(x, w, b, act, got, what):
    ref = T.linear_reference(x, w, b, act)
    T.assert_within(got, ref, T.linear_bound(x, w, b, act, ref, U_ACC), what)


def check_mlp(args, act, got, what):
    ref = T.gated_mlp_reference(*args, act)
    T.assert_within(got, ref, T.gated_mlp_bound(*args, act, ref, U_ACC), what)


def block_check(model, x, outs, what):
    """outs = model(x): the linear's part within its bound of float64 from
    x, the MLP's within its bound from the linear's (bf16) output, and the
    sum exactly the bf16 sum of the two."""
    y, z, total = (t.detach().clone() for t in outs)
    p, mlp = model.proj, model.mlp
    check_linear(x, p.weight, p.bias, "gelu_tanh", y, what + " (linear)")
    check_mlp((y, mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight,
               mlp.gate_proj.bias, mlp.up_proj.bias, mlp.down_proj.bias),
              "silu", z, what + " (gated MLP)")
    assert torch.equal(total, y + z), what + " (sum)"


def test_runs_on_the_current_stream():
    """On a side stream, x is written after a long sleep kernel; an op that
    ran on any other stream would read the NaN that is there before."""
    x, w, b, *_ = inputs(1)
    mlp = inputs(101, k=256, n=256)[3:]  # w_gate, w_up [512, 256]; w_down [256, 512]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        buf = torch.full_like(x, float("nan"))
        torch.cuda._sleep(200_000_000)
        buf.copy_(x)
        y = fusedblas.linear(buf, w, b, "gelu_tanh")
        z = fusedblas.gated_mlp(buf, *mlp, activation="silu")
    s.synchronize()
    check_linear(x, w, b, "gelu_tanh", y, "linear on a side stream")
    check_mlp((x, *mlp, None, None, None), "silu", z, "gated_mlp on a side stream")


def test_no_host_synchronisation():
    """After a warm-up, calls return while a long kernel still runs on the
    stream: the library never waits for the GPU."""
    x, w, b, wg, wu, wd = inputs(2)
    y = fusedblas.linear(x, w, b, "gelu_tanh")
    fusedblas.gated_mlp(y, wg, wu, wd, activation="silu")
    torch.cuda.synchronize()
    torch.cuda._sleep(1_000_000_000)  # a billion cycles: longer than the calls below
    t0 = time.perf_counter()
    for _ in range(10):
        y = fusedblas.linear(x, w, b, "gelu_tanh")
        fusedblas.gated_mlp(y, wg, wu, wd, activation="silu")
    dt = time.perf_counter() - t0
    done = torch.cuda.Event()
    done.record()
    still_running = not done.query()
    torch.cuda.synchronize()
    assert still_running, "the GPU had drained: something waited for it"
    assert dt < 0.2, dt


def test_graph_capture_and_replay():
    torch.manual_seed(3)
    model = Block().to(DEV, BF16)
    static_x = inputs(3)[0]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(2):  # warm-up on the capture stream
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g, stream=s):
        static_out = model(static_x)
    totals = []
    for seed in (4, 5, 6):
        static_x.copy_(inputs(seed)[0])
        g.replay()
        torch.cuda.synchronize()
        block_check(model, static_x, static_out, f"replay {seed}")
        totals.append(static_out[2].clone())
    assert not torch.equal(totals[0], totals[1])
    # the stream's handle was retired after the capture: eager calls on it,
    # larger ones included, still work, and the graph still replays right
    with torch.no_grad(), torch.cuda.stream(s):
        big = inputs(7, rows=1024)[0]
        out = model(big)
    s.synchronize()
    block_check(model, big, out, "eager after capture")
    static_x.copy_(inputs(8)[0])
    g.replay()
    torch.cuda.synchronize()
    block_check(model, static_x, static_out, "replay after eager")


def test_capture_without_warm_up_says_so():
    x, w, b, *_ = inputs(9)
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="first call on CUDA stream .* inside "
                       "CUDA graph capture"):
        with torch.cuda.graph(g, stream=s):
            fusedblas.linear(x, w, b)
    torch.cuda.synchronize()
    check_linear(x, w, b, "none", fusedblas.linear(x, w, b), "after the refusal")


def test_reduce_overhead():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch.manual_seed(10)
    model = Block().to(DEV, BF16)
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    with torch.no_grad():
        for rows in (64, 64, 64, 64, 256, 256, 256, 64):
            x = inputs(rows, rows=rows)[0]
            block_check(model, x, compiled(x), f"reduce-overhead, {rows} rows")
    skips = torch._dynamo.utils.counters["inductor"].get("cudagraph_skips", 0)
    assert skips == 0, dict(torch._dynamo.utils.counters["inductor"])
    torch._dynamo.reset()


def test_tf32_follows_pytorch():
    x, w, b, *_ = inputs(11, dtype=torch.float32)
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        y = fusedblas.linear(x, w, b, "silu")
        assert _handles.last_handle().math == 0
        ref = T.linear_reference(x, w, b, "silu")
        T.assert_within(y, ref, T.linear_bound(x, w, b, "silu", ref, U_ACC), "fp32")
        torch.backends.cuda.matmul.allow_tf32 = True
        y = fusedblas.linear(x, w, b, "silu")
        assert _handles.last_handle().math == 1
        T.assert_within(y, ref, T.linear_bound(x, w, b, "silu", ref, U_ACC,
                                               tf32=True), "tf32")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def test_paths_reported():
    """The library ran on the GPU (its path names a CUDA backend)."""
    x, w, b, wg, wu, wd = inputs(12)
    fusedblas.linear(x, w, b, "gelu_tanh")
    assert fusedblas.last_path().startswith("cuda"), fusedblas.last_path()
    fusedblas.gated_mlp(fusedblas.linear(x, w, b), wg, wu, wd)
    assert fusedblas.last_path().startswith("cuda"), fusedblas.last_path()
