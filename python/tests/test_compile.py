# SPDX-License-Identifier: BSD-3-Clause
"""torch.compile: models using the ops trace with no graph break, and with
the row dimension marked dynamic, calls with other row counts reuse the
one graph (no recompilation); results equal eager's."""

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing
from torch import nn

import fusedblas
from fusedblas import testing as T
from fusedblas.nn import GatedMLP, Linear

from conftest import DEVICES


class Block(nn.Module):
    """A linear + GELU, then a gated MLP with a residual addition."""

    def __init__(self, k=32, h=72, n=24):
        super().__init__()
        self.proj = Linear(k, n, activation="gelu_tanh")
        self.mlp = GatedMLP(n, h, activation="silu")

    def forward(self, x):
        y = self.proj(x)
        return y + self.mlp(y)


def check_block(model, x, got):
    """got = Block's result for x, each op's part within its float64 bound."""
    u = T.accumulation_roundoff(x.device)
    p, mlp = model.proj, model.mlp
    y = p(x)
    ref = T.linear_reference(x, p.weight, p.bias, "gelu_tanh")
    T.assert_within(y, ref, T.linear_bound(x, p.weight, p.bias, "gelu_tanh", ref, u),
                    "Block's linear")
    args = (y, mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight,
            None, None, None)
    ref = T.gated_mlp_reference(*args, "silu")
    ref = ref + y.double()  # the residual addition, then one fp32 rounding
    bound = T.gated_mlp_bound(*args, "silu", ref, u) + 2.0 ** -24 * ref.abs()
    T.assert_within(got, ref, bound, "Block")


def fused_ops(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"
            and "fusedblas" in str(n.target)]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("device", DEVICES)
def test_no_graph_break_no_recompile(device):
    torch.manual_seed(0)
    model = Block().to(device)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(model, backend=backend, fullgraph=True)
    with torch.no_grad():
        for rows in (8, 13, 57, 8, 200):
            x = torch.randn(rows, 32, device=device)
            torch._dynamo.mark_dynamic(x, 0)
            got = compiled(x)
            if device == "cpu":  # the CPU backend's results are reproducible
                torch.testing.assert_close(got, model(x), rtol=0, atol=0)
            check_block(model, x, got)
    assert len(graphs) == 1, f"{len(graphs)} graphs for 5 row counts"
    ops = fused_ops(graphs[0])
    assert len(ops) == 2 and {str(o) for o in ops} == {
        "fusedblas.linear.default", "fusedblas.gated_mlp.default"}, ops


def test_explain_counts_no_break():
    model = Block()
    x = torch.randn(6, 32)
    explanation = torch._dynamo.explain(model)(x)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def test_batched_dynamic_rows():
    """x [batch, seq, k] with both leading dimensions dynamic (sizes of at
    least 2: PyTorch specialises sizes 0 and 1 whatever the op)."""
    model = Block()
    counter = torch._dynamo.testing.CompileCounter()
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    with torch.no_grad():
        for b, s in ((2, 5), (3, 7), (2, 16)):
            x = torch.randn(b, s, 32)
            torch._dynamo.mark_dynamic(x, 0)
            torch._dynamo.mark_dynamic(x, 1)
            torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    assert counter.frame_count == 1


def test_training_under_compile():
    """aot_autograd traces the fake forward and the registered backward:
    gradients equal eager's."""
    torch.manual_seed(1)
    model = Block()
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    x = torch.randn(9, 32, requires_grad=True)
    compiled(x).square().sum().backward()
    got = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    model(x).square().sum().backward()
    want = [p.grad for p in model.parameters()] + [x.grad]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_inductor():
    """The default backend (inductor, C++ on the CPU): one graph for all
    row counts, results within the float64 bound."""
    torch.manual_seed(2)
    mlp = GatedMLP(16, 40, activation="gelu_tanh")
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(mlp, backend=counter, fullgraph=True)
    with torch.no_grad():
        for rows in (4, 11, 30):
            x = torch.randn(rows, 16)
            torch._dynamo.mark_dynamic(x, 0)
            got = compiled(x)
            args = (x, mlp.gate_proj.weight, mlp.up_proj.weight,
                    mlp.down_proj.weight, None, None, None)
            ref = T.gated_mlp_reference(*args, "gelu_tanh")
            T.assert_within(got, ref, T.gated_mlp_bound(*args, "gelu_tanh", ref,
                                                        2.0 ** -24), "inductor")
    assert counter.frame_count == 1


def test_fake_errors_at_trace_time():
    """Shape errors surface while tracing, from the fake implementation."""
    def f(x, w):
        return fusedblas.linear(x, w, None, "relu")

    compiled = torch.compile(f, backend="eager", fullgraph=True)
    with pytest.raises(Exception, match="in_features"):
        compiled(torch.randn(3, 4), torch.randn(5, 6))
