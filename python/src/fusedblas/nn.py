# SPDX-License-Identifier: BSD-3-Clause
"""Modules: ``Linear`` (nn.Linear + activation) and ``GatedMLP`` (the
gate_proj / up_proj / down_proj MLP of Llama, Mistral, Gemma), each with
``from_torch`` to wrap an existing module's parameters without copying.
"""

from torch import nn

from . import ops
from ._activation_map import activation_of


class Linear(nn.Linear):
    """``act(x @ weight.T + bias)`` in one library call.

    Parameters, initialisation and state_dict keys are nn.Linear's;
    ``activation`` is one of none, relu, gelu_tanh, gelu_erf, silu.
    """

    def __init__(self, in_features, out_features, bias=True,
                 activation="none", device=None, dtype=None):
        super().__init__(in_features, out_features, bias=bias, device=device,
                         dtype=dtype)
        self.activation = activation_of(activation)

    @classmethod
    def from_torch(cls, linear, activation="none"):
        """A Linear sharing linear's weight and bias (the same Parameter
        objects), followed by activation (a name, or a module such as
        nn.GELU(approximate="tanh"))."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"fusedblas.nn.Linear.from_torch takes an "
                            f"nn.Linear, got {type(linear).__name__}")
        new = cls.__new__(cls)
        nn.Module.__init__(new)
        new.in_features = linear.in_features
        new.out_features = linear.out_features
        new.weight = linear.weight
        new.bias = linear.bias
        new.activation = activation_of(activation)
        return new

    def forward(self, x):
        return ops.linear(x, self.weight, self.bias, self.activation)

    def extra_repr(self):
        return super().extra_repr() + f", activation={self.activation}"


def _linear_layer(mlp, name):
    layer = getattr(mlp, name, None)
    if not isinstance(layer, nn.Linear):
        raise TypeError(f"{type(mlp).__name__}.{name} must be an nn.Linear, "
                        f"got {type(layer).__name__}")
    return layer


def mlp_activation(mlp):
    """The library's name for a gated MLP's activation: its act_fn (or
    activation_fn, act) module or function, else its hidden_act (or its
    config's hidden_act / hidden_activation). ValueError if none maps."""
    for attr in ("act_fn", "activation_fn", "act"):
        act = getattr(mlp, attr, None)
        if act is not None and not isinstance(act, str):
            return activation_of(act)
    holders = [mlp, getattr(mlp, "config", None)]
    for holder in holders:
        for attr in ("hidden_act", "hidden_activation", "act_fn"):
            act = getattr(holder, attr, None)
            if isinstance(act, str):
                return activation_of(act)
    raise ValueError(f"{type(mlp).__name__} has no act_fn or hidden_act to "
                     "tell its activation; pass activation=")


class GatedMLP(nn.Module):
    """``down_proj(act(gate_proj(x)) * up_proj(x))`` in one library call.

    gate_proj, up_proj (hidden_size -> intermediate_size) and down_proj
    (intermediate_size -> hidden_size) are nn.Linear modules, so the
    parameters, their initialisation and the state_dict keys
    (gate_proj.weight, ...) are those of the Hugging Face Llama MLP.
    activation: silu (SwiGLU, the default), gelu_tanh (GeGLU), gelu_erf,
    relu or none.
    """

    def __init__(self, hidden_size, intermediate_size, bias=False,
                 activation="silu", device=None, dtype=None):
        super().__init__()
        kw = {"bias": bias, "device": device, "dtype": dtype}
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, **kw)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, **kw)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, **kw)
        self.activation = activation_of(activation)

    @classmethod
    def from_torch(cls, mlp, activation=None):
        """A GatedMLP using mlp's own gate_proj, up_proj and down_proj
        modules (so their parameters are shared, not copied). mlp is any
        module with those three nn.Linear layers and the Llama forward,
        down_proj(act_fn(gate_proj(x)) * up_proj(x)); its activation is
        read from act_fn or hidden_act (see mlp_activation) unless
        activation is given. Refuses (ValueError) an activation the library
        does not compute and layers whose shapes do not chain."""
        gate = _linear_layer(mlp, "gate_proj")
        up = _linear_layer(mlp, "up_proj")
        down = _linear_layer(mlp, "down_proj")
        act = activation_of(activation) if activation is not None \
            else mlp_activation(mlp)
        if up.weight.shape != gate.weight.shape or \
                down.in_features != gate.out_features:
            raise ValueError(
                f"{type(mlp).__name__}: gate_proj {tuple(gate.weight.shape)}, "
                f"up_proj {tuple(up.weight.shape)} and down_proj "
                f"{tuple(down.weight.shape)} do not form a gated MLP")
        new = cls.__new__(cls)
        nn.Module.__init__(new)
        new.hidden_size = gate.in_features
        new.intermediate_size = gate.out_features
        new.gate_proj, new.up_proj, new.down_proj = gate, up, down
        new.activation = act
        return new

    def forward(self, x):
        g, u, d = self.gate_proj, self.up_proj, self.down_proj
        return ops.gated_mlp(x, g.weight, u.weight, d.weight, g.bias, u.bias,
                             d.bias, self.activation)

    def extra_repr(self):
        return (f"hidden_size={self.hidden_size}, intermediate_size="
                f"{self.intermediate_size}, activation={self.activation}")
