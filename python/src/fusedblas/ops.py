# SPDX-License-Identifier: BSD-3-Clause
"""The custom ops ``fusedblas::linear`` and ``fusedblas::gated_mlp``, and
the functions ``linear`` and ``gated_mlp`` that call them.

Each op has a real implementation (CPU and CUDA: one libfusedblas call), a
fake one (output shape, dtype and device from the inputs, for
torch.compile, FakeTensor and meta tensors) and an autograd formula (the
backward of :mod:`fusedblas.reference`, in PyTorch operations, recomputing
the pre-activations from the saved inputs).

``linear`` and ``gated_mlp`` go through the PyTorch dispatcher (the ops)
whenever anything may need to see the op: torch.compile tracing, autograd
(an input that requires grad, with grad mode on), a tensor subclass or a
Python mode, functorch transforms. Otherwise (eager inference on plain
tensors) they call the same real implementation directly, which skips the
dispatcher's per-call cost. Under autocast, inputs are
cast to the autocast dtype first, as torch.nn.functional.linear's are.
"""

from typing import Optional

import torch
from torch import Tensor

from . import _forward, reference
from ._checks import check_gated_mlp, check_linear

# ---- the ops -------------------------------------------------------------


@torch.library.custom_op("fusedblas::linear", mutates_args=(),
                         device_types=("cpu", "cuda"))
def _linear_op(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
               activation: str = "none") -> Tensor:
    return _forward.linear(x, weight, bias, activation)


@_linear_op.register_fake
def _linear_fake(x, weight, bias=None, activation="none"):
    check_linear(x, weight, bias, activation)
    return x.new_empty(x.shape[:-1] + (weight.shape[0],))


def _linear_setup(ctx, inputs, output):
    x, weight, bias, activation = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.activation = activation


def _needs(ctx, count):
    """ctx.needs_input_grad for the first count inputs. The dispatcher drops
    trailing arguments equal to their defaults (None biases), so it may be
    shorter; those need no gradient."""
    needs = tuple(ctx.needs_input_grad)
    return (needs + (False,) * count)[:count]


def _linear_grad(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    return (*reference.linear_backward(grad, x, weight, bias, ctx.activation,
                                       _needs(ctx, 3)), None)


_linear_op.register_autograd(_linear_grad, setup_context=_linear_setup)


@torch.library.custom_op("fusedblas::gated_mlp", mutates_args=(),
                         device_types=("cpu", "cuda"))
def _gated_mlp_op(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor,
                  b_gate: Optional[Tensor] = None, b_up: Optional[Tensor] = None,
                  b_down: Optional[Tensor] = None,
                  activation: str = "gelu_tanh") -> Tensor:
    return _forward.gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down,
                              activation)


@_gated_mlp_op.register_fake
def _gated_mlp_fake(x, w_gate, w_up, w_down, b_gate=None, b_up=None,
                    b_down=None, activation="gelu_tanh"):
    check_gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down, activation)
    return x.new_empty(x.shape[:-1] + (w_down.shape[0],))


def _gated_mlp_setup(ctx, inputs, output):
    *tensors, activation = inputs
    ctx.save_for_backward(*tensors)
    ctx.activation = activation


def _gated_mlp_grad(ctx, grad):
    return (*reference.gated_mlp_backward(grad, *ctx.saved_tensors,
                                          ctx.activation, _needs(ctx, 7)),
            None)


_gated_mlp_op.register_autograd(_gated_mlp_grad, setup_context=_gated_mlp_setup)

# The overloads themselves: calling them skips CustomOpDef's own wrapper.
_LINEAR = torch.ops.fusedblas.linear.default
_GATED_MLP = torch.ops.fusedblas.gated_mlp.default

# ---- when the dispatcher can be skipped ----------------------------------


def _always(*args):
    return True


def _private(name):
    """A torch._C query; where this PyTorch lacks it, one that always says
    yes, so that the dispatcher is used."""
    return getattr(torch._C, name, _always)


_compiling = getattr(torch.compiler, "is_compiling", _always)
_function_mode = _private("_is_torch_function_mode_enabled")
_dispatch_modes = _private("_len_torch_dispatch_stack")
_functorch = _private("_are_functorch_transforms_active")
_PLAIN = frozenset((torch.Tensor, torch.nn.Parameter))


def _direct_linear(x, weight, bias):
    """True where calling linear's real implementation directly is the same
    as going through the op: nothing may need to see the op (see above),
    and the tensors are plain tensors (bias may be None) on the CPU or a
    GPU. Written out per tensor: this runs on every eager call, and a loop
    over the tensors costs about a microsecond more."""
    if _compiling() or _function_mode() or _dispatch_modes() or _functorch():
        return False
    if type(x) not in _PLAIN or type(weight) not in _PLAIN or \
            (bias is not None and type(bias) not in _PLAIN):
        return False
    if torch.is_grad_enabled() and (
            x.requires_grad or weight.requires_grad or
            (bias is not None and bias.requires_grad)):
        return False
    return x.is_cuda or x.is_cpu


def _direct_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down):
    """The same for gated_mlp's seven tensors (the biases may be None)."""
    if _compiling() or _function_mode() or _dispatch_modes() or _functorch():
        return False
    plain = _PLAIN
    if type(x) not in plain or type(w_gate) not in plain or \
            type(w_up) not in plain or type(w_down) not in plain:
        return False
    biases = b_gate is not None or b_up is not None or b_down is not None
    if biases and ((b_gate is not None and type(b_gate) not in plain) or
                   (b_up is not None and type(b_up) not in plain) or
                   (b_down is not None and type(b_down) not in plain)):
        return False
    if torch.is_grad_enabled() and (
            x.requires_grad or w_gate.requires_grad or w_up.requires_grad or
            w_down.requires_grad or (biases and (
                (b_gate is not None and b_gate.requires_grad) or
                (b_up is not None and b_up.requires_grad) or
                (b_down is not None and b_down.requires_grad)))):
        return False
    return x.is_cuda or x.is_cpu


# One query for "is autocast on for any device" where PyTorch has it: the
# per-device query costs more than the rest of the call's checks.
_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", _always)


def _autocast(tensors):
    """The tensors cast to the autocast dtype where autocast is on for
    their device, as autocast casts F.linear's inputs; else as they are."""
    if not _any_autocast():
        return tensors
    x = tensors[0]
    if not isinstance(x, Tensor):
        return tensors
    device = "cuda" if x.is_cuda else "cpu"
    if not torch.is_autocast_enabled(device):
        return tensors
    dt = torch.get_autocast_dtype(device)
    return tuple(t.to(dt) if isinstance(t, Tensor) and t.is_floating_point()
                 and t.dtype not in (dt, torch.float64) else t for t in tensors)


# ---- what users call -------------------------------------------------------


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           activation: str = "none") -> Tensor:
    """``act(x @ weight.T + bias)``: torch.nn.functional.linear followed by
    an activation, in one libfusedblas call.

    x is [..., in_features], weight [out_features, in_features], bias
    [out_features] or None; activation is one of none, relu, gelu_tanh
    (GELU with approximate="tanh"), gelu_erf (exact GELU) and silu. All of
    one dtype (float32, float16 or bfloat16) and on one device (CPU or
    CUDA). Returns [..., out_features], contiguous.
    """
    if _any_autocast():
        x, weight, bias = _autocast((x, weight, bias))
    if _direct_linear(x, weight, bias):
        return _forward.linear(x, weight, bias, activation)
    check_linear(x, weight, bias, activation)
    return _LINEAR(x, weight, bias, activation)


def gated_mlp(x: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor,
              b_gate: Optional[Tensor] = None, b_up: Optional[Tensor] = None,
              b_down: Optional[Tensor] = None,
              activation: str = "gelu_tanh") -> Tensor:
    """``down(act(gate(x)) * up(x))``, the gated MLP of GeGLU (gelu_tanh,
    the default) and SwiGLU (silu) transformers, in one libfusedblas call.

    x is [..., in_features]; w_gate and w_up [hidden, in_features] and
    w_down [out_features, hidden] (torch.nn.Linear's layout); each bias
    [out] or None. Dtypes and devices as for :func:`linear`. Returns
    [..., out_features], contiguous.
    """
    if _any_autocast():
        x, w_gate, w_up, w_down, b_gate, b_up, b_down = _autocast(
            (x, w_gate, w_up, w_down, b_gate, b_up, b_down))
    if _direct_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down):
        return _forward.gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up,
                                  b_down, activation)
    tensors = (x, w_gate, w_up, w_down, b_gate, b_up, b_down)
    check_gated_mlp(*tensors, activation)
    return _GATED_MLP(*tensors, activation)
