# SPDX-License-Identifier: BSD-3-Clause
"""The two ops in plain PyTorch: forward formulas and the backward pass.

The library computes forward passes only. The gradients of both ops are
computed here, with PyTorch operations, from the saved inputs: the
pre-activations are recomputed (one GEMM for linear, the gate and up
projections for the gated MLP) rather than kept from the forward pass,
which keeps no intermediate alive between forward and backward.

``linear_backward`` and ``gated_mlp_backward`` are what the custom ops'
autograd formulas call. ``linear`` and ``gated_mlp`` here are the same
formulas as differentiable functions whose forward is plain PyTorch (any
dtype, float64 included) and whose backward is the package's: that is what
``torch.autograd.gradcheck`` checks in float64.
"""

import math

import torch
import torch.nn.functional as F


def rows(t):
    """t [..., c] as a matrix [rows, c] (a view where strides allow);
    c may be 0, which reshape(-1, c) cannot tell."""
    return t if t.dim() == 2 else t.reshape(math.prod(t.shape[:-1]), t.shape[-1])


def activate(z, activation):
    """act(z) with the library's formulas (PyTorch's own functions)."""
    if activation == "none":
        return z
    if activation == "relu":
        return torch.relu(z)
    if activation == "gelu_tanh":
        return F.gelu(z, approximate="tanh")
    if activation == "gelu_erf":
        return F.gelu(z)
    if activation == "silu":
        return F.silu(z)
    raise ValueError(f"unknown activation {activation!r}")


def activation_backward(grad, z, activation):
    """grad * act'(z)."""
    if activation == "none":
        return grad
    if activation == "relu":
        return torch.ops.aten.threshold_backward(grad, z, 0)
    if activation == "gelu_tanh":
        return torch.ops.aten.gelu_backward(grad, z, approximate="tanh")
    if activation == "gelu_erf":
        return torch.ops.aten.gelu_backward(grad, z)
    if activation == "silu":
        return torch.ops.aten.silu_backward(grad, z)
    raise ValueError(f"unknown activation {activation!r}")


def linear_forward(x, weight, bias=None, activation="none"):
    """act(x @ weight.T + bias), in x's dtype."""
    return activate(F.linear(x, weight, bias), activation)


def gated_mlp_forward(x, w_gate, w_up, w_down, b_gate=None, b_up=None,
                      b_down=None, activation="gelu_tanh"):
    """down(act(gate(x)) * up(x)), in x's dtype."""
    return F.linear(activate(F.linear(x, w_gate, b_gate), activation) *
                    F.linear(x, w_up, b_up), w_down, b_down)


def linear_backward(grad_out, x, weight, bias, activation, needs=(True,) * 3):
    """Gradients of linear_forward for x, weight and bias (None where
    needs says not wanted, or where bias is None)."""
    x2 = rows(x)
    g2 = rows(grad_out)
    if activation == "none":
        dz = g2
    else:
        dz = activation_backward(g2, F.linear(x2, weight, bias), activation)
    gx = (dz @ weight).reshape(x.shape) if needs[0] else None
    gw = dz.t() @ x2 if needs[1] else None
    gb = dz.sum(0) if needs[2] and bias is not None else None
    return gx, gw, gb


def gated_mlp_backward(grad_out, x, w_gate, w_up, w_down, b_gate, b_up,
                       b_down, activation, needs=(True,) * 7):
    """Gradients of gated_mlp_forward for x, w_gate, w_up, w_down, b_gate,
    b_up, b_down (None where not wanted, or where that bias is None)."""
    x2 = rows(x)
    gy = rows(grad_out)
    g = F.linear(x2, w_gate, b_gate)
    u = F.linear(x2, w_up, b_up)
    a = activate(g, activation)
    dh = gy @ w_down
    du = dh * a
    dg = activation_backward(dh * u, g, activation)
    gx = (dg @ w_gate + du @ w_up).reshape(x.shape) if needs[0] else None
    gwg = dg.t() @ x2 if needs[1] else None
    gwu = du.t() @ x2 if needs[2] else None
    gwd = gy.t() @ (a * u) if needs[3] else None
    gbg = dg.sum(0) if needs[4] and b_gate is not None else None
    gbu = du.sum(0) if needs[5] and b_up is not None else None
    gbd = gy.sum(0) if needs[6] and b_down is not None else None
    return gx, gwg, gwu, gwd, gbg, gbu, gbd


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, activation):
        ctx.save_for_backward(x, weight, bias)
        ctx.activation = activation
        return linear_forward(x, weight, bias, activation)

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        return (*linear_backward(grad, x, weight, bias, ctx.activation,
                                 ctx.needs_input_grad[:3]), None)


class _GatedMLP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w_gate, w_up, w_down, b_gate, b_up, b_down, activation):
        ctx.save_for_backward(x, w_gate, w_up, w_down, b_gate, b_up, b_down)
        ctx.activation = activation
        return gated_mlp_forward(x, w_gate, w_up, w_down, b_gate, b_up, b_down,
                                 activation)

    @staticmethod
    def backward(ctx, grad):
        return (*gated_mlp_backward(grad, *ctx.saved_tensors, ctx.activation,
                                    ctx.needs_input_grad[:7]), None)


def linear(x, weight, bias=None, activation="none"):
    """linear_forward in plain PyTorch (any float dtype), differentiated
    by linear_backward."""
    return _Linear.apply(x, weight, bias, activation)


def gated_mlp(x, w_gate, w_up, w_down, b_gate=None, b_up=None, b_down=None,
              activation="gelu_tanh"):
    """gated_mlp_forward in plain PyTorch (any float dtype), differentiated
    by gated_mlp_backward."""
    return _GatedMLP.apply(x, w_gate, w_up, w_down, b_gate, b_up, b_down,
                           activation)
