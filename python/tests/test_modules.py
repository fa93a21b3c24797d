# SPDX-License-Identifier: BSD-3-Clause
"""fusedblas.nn.Linear and GatedMLP, from_torch, the activation mapping,
and patch() on a small Llama-style model."""

import functools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fusedblas
from fusedblas import testing as T
from fusedblas._activation_map import activation_of
from fusedblas.nn import GatedMLP, Linear

from conftest import DEVICES
from llama_standin import LlamaMLP, TinyLlama


def params(module):
    return dict(module.named_parameters())


def test_linear_init_is_nn_linear():
    torch.manual_seed(3)
    ours = Linear(20, 12, activation="gelu_tanh")
    torch.manual_seed(3)
    theirs = nn.Linear(20, 12)
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    for name, p in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[name], p)
    assert Linear(4, 3, bias=False).bias is None
    m = Linear(4, 3, dtype=torch.bfloat16, device="meta")
    assert m.weight.dtype == torch.bfloat16 and m.weight.device.type == "meta"
    assert "activation=gelu_tanh" in repr(ours)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act", [nn.GELU(approximate="tanh"), "relu", nn.SiLU(), None])
def test_linear_from_torch(device, act):
    torch.manual_seed(0)
    lin = nn.Linear(24, 16).to(device)
    ours = Linear.from_torch(lin, activation=act if act is not None else "none")
    assert ours.weight is lin.weight and ours.bias is lin.bias
    x = torch.randn(3, 5, 24, device=device)
    name = activation_of(act)
    with torch.no_grad():
        got = ours(x)
        theirs = (act or nn.Identity()) if not isinstance(act, str) else \
            functools.partial(fusedblas.reference.activate, activation=act)
        want = theirs(lin(x))
    ref = T.linear_reference(x, lin.weight, lin.bias, name)
    bound = T.linear_bound(x, lin.weight, lin.bias, name, ref,
                           T.accumulation_roundoff(device))
    T.assert_within(got, ref, bound, "fusedblas.nn.Linear")
    T.assert_within(want, ref, bound, "torch's own (the bound's sanity)")
    with pytest.raises(TypeError, match="takes an nn.Linear"):
        Linear.from_torch(nn.Conv1d(2, 2, 1))


def test_gated_mlp_init_is_llama_layout():
    torch.manual_seed(5)
    ours = GatedMLP(16, 40, bias=True, activation="gelu_tanh")
    torch.manual_seed(5)
    g, u, d = nn.Linear(16, 40), nn.Linear(16, 40), nn.Linear(40, 16)
    want = {"gate_proj.weight": g.weight, "gate_proj.bias": g.bias,
            "up_proj.weight": u.weight, "up_proj.bias": u.bias,
            "down_proj.weight": d.weight, "down_proj.bias": d.bias}
    got = ours.state_dict()
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert torch.equal(got[k], v)
    assert GatedMLP(8, 16).gate_proj.bias is None
    assert GatedMLP(8, 16).activation == "silu"
    assert set(LlamaMLP(8, 16).state_dict()) == set(GatedMLP(8, 16).state_dict())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [False, True])
def test_gated_mlp_from_torch(device, dtype, bias):
    torch.manual_seed(1)
    mlp = LlamaMLP(32, 72, bias=bias).to(device=device, dtype=dtype)
    ours = GatedMLP.from_torch(mlp)
    assert ours.activation == "silu"
    for name in ("gate_proj", "up_proj", "down_proj"):
        assert getattr(ours, name) is getattr(mlp, name)
    x = torch.randn(2, 7, 32, device=device).to(dtype)
    with torch.no_grad():
        got, want = ours(x), mlp(x)
    args = (x, mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight,
            mlp.gate_proj.bias, mlp.up_proj.bias, mlp.down_proj.bias)
    ref = T.gated_mlp_reference(*args, "silu")
    bound = T.gated_mlp_bound(*args, "silu", ref, T.accumulation_roundoff(device))
    T.assert_within(got, ref, bound, "GatedMLP.from_torch")
    T.assert_within(want, ref, bound, "the torch module (the bound's sanity)")


class GELUTanh(nn.Module):  # named as Hugging Face's classes are
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


class GELUActivation(nn.Module):
    def forward(self, x):
        return F.gelu(x)


class QuickGELUActivation(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


@pytest.mark.parametrize("act,name", [
    (nn.SiLU(), "silu"), (nn.ReLU(), "relu"), (nn.Identity(), "none"),
    (nn.GELU(), "gelu_erf"), (nn.GELU(approximate="tanh"), "gelu_tanh"),
    (GELUTanh(), "gelu_tanh"), (GELUActivation(), "gelu_erf"),
    (F.silu, "silu"), (F.gelu, "gelu_erf"),
    (functools.partial(F.gelu, approximate="tanh"), "gelu_tanh"),
    ("silu", "silu"), ("swish", "silu"), ("gelu_pytorch_tanh", "gelu_tanh"),
    ("gelu_new", "gelu_tanh"), ("gelu", "gelu_erf"), ("relu", "relu"),
])
def test_activation_mapping(act, name):
    assert activation_of(act) == name


@pytest.mark.parametrize("act", [QuickGELUActivation(), nn.Tanh(), "quick_gelu",
                                 "relu6", torch.sigmoid])
def test_activation_refused(act):
    with pytest.raises(ValueError, match="fusedblas"):
        activation_of(act)
    with pytest.raises(ValueError):
        GatedMLP.from_torch(LlamaMLP(4, 8, act_fn=act) if not isinstance(act, str)
                            else _with_hidden_act(act))


def _with_hidden_act(name):
    m = LlamaMLP(4, 8)
    del m.act_fn
    m.act_fn = None
    m.config = type("Config", (), {"hidden_act": name})()
    return m


def test_from_torch_reads_hidden_act():
    """Gemma's layout: act_fn from config.hidden_activation / hidden_act."""
    assert GatedMLP.from_torch(_with_hidden_act("gelu_pytorch_tanh")).activation == \
        "gelu_tanh"
    m = LlamaMLP(4, 8)
    assert GatedMLP.from_torch(m, activation="relu").activation == "relu"


def test_from_torch_refuses_bad_layouts():
    m = LlamaMLP(4, 8)
    m.up_proj = nn.Linear(4, 9, bias=False)
    with pytest.raises(ValueError, match="do not form a gated MLP"):
        GatedMLP.from_torch(m)
    m = LlamaMLP(4, 8)
    m.down_proj = nn.Conv1d(8, 4, 1)
    with pytest.raises(TypeError, match="down_proj must be an nn.Linear"):
        GatedMLP.from_torch(m)


def test_patch_tiny_llama():
    """patch() swaps every MLP, shares the parameters, keeps the state_dict,
    and gives the model's outputs: each MLP within its element-wise bound
    (checked on the inputs it saw), and the logits within a normwise
    2 (k + h) u relative bound, k and h the MLP's widths: RMSNorm and the
    residual additions pass a relative error on with a gain near 1, and
    the stand-in has two MLPs in a row."""
    torch.manual_seed(7)
    model = TinyLlama(hidden=32, intermediate=88, layers=2)
    ids = torch.randint(0, 50, (3, 9))
    with torch.no_grad():
        want = model(ids)
    keys = set(model.state_dict())
    mlps = [layer.mlp for layer in model.layers]
    assert fusedblas.patch(model) == ["layers.0.mlp", "layers.1.mlp"]
    assert set(model.state_dict()) == keys
    for old, layer in zip(mlps, model.layers):
        assert isinstance(layer.mlp, GatedMLP)
        assert layer.mlp.gate_proj is old.gate_proj
    seen = []
    hooks = [layer.mlp.register_forward_hook(
        lambda mod, inp, out: seen.append((mod, inp[0], out)))
        for layer in model.layers]
    with torch.no_grad():
        got = model(ids)
    for h in hooks:
        h.remove()
    for mod, x, out in seen:
        args = (x, mod.gate_proj.weight, mod.up_proj.weight, mod.down_proj.weight,
                None, None, None)
        ref = T.gated_mlp_reference(*args, "silu")
        T.assert_within(out, ref, T.gated_mlp_bound(*args, "silu", ref, 2.0 ** -24),
                        "patched MLP")
    rel = ((got - want).norm() / want.norm()).item()
    assert rel <= 2 * (32 + 88) * 2.0 ** -24, rel
    assert fusedblas.patch(model) == []  # nothing left to swap


def test_patch_shared_and_refused_modules():
    shared = LlamaMLP(8, 16)
    model = nn.ModuleDict({"a": shared, "b": shared,
                           "c": LlamaMLP(8, 16, act_fn=QuickGELUActivation()),
                           "d": LlamaMLP(8, 16).double()})
    with pytest.warns(UserWarning) as w:
        assert fusedblas.patch(model) == ["a", "b"]
    text = " ".join(str(x.message) for x in w)
    assert "c (LlamaMLP) left as it is" in text and "QuickGELUActivation" in text
    assert "d (LlamaMLP)" in text and "float64" in text
    assert model["a"] is model["b"]
    with pytest.raises(ValueError, match="c \\(LlamaMLP\\)"):
        fusedblas.patch(model, strict=True)
    with pytest.raises(ValueError, match="itself a gated MLP"):
        fusedblas.patch(LlamaMLP(4, 8))


def test_modules_train():
    """Gradients reach the shared parameters through the modules."""
    torch.manual_seed(2)
    mlp = LlamaMLP(8, 20)
    ours = GatedMLP.from_torch(mlp)
    ours(torch.randn(4, 8)).square().sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all()
               for p in mlp.parameters())
    lin = Linear(8, 5, activation="silu")
    lin(torch.randn(3, 8)).sum().backward()
    assert lin.weight.grad is not None and lin.bias.grad is not None
    assert math.isfinite(lin.weight.grad.sum().item())
