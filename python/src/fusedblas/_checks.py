# SPDX-License-Identifier: BSD-3-Clause
"""Argument checks shared by the ops' real and fake implementations.

They look at types, dtypes, devices and shapes only (never at data), so
they run the same on real tensors, on FakeTensors while torch.compile
traces, and on meta tensors. Errors name the argument:

- TypeError: an argument is not a tensor (or None where a bias may be
  None), the activation is not a string, a dtype the library does not take
  (it takes float32, float16 and bfloat16), or tensors of different dtypes;
- ValueError: an unknown activation name, or shapes that do not fit;
- RuntimeError: a device other than CPU or CUDA, or tensors on different
  devices.
"""

import torch

ACTIVATIONS = {"none": 0, "relu": 1, "gelu_tanh": 2, "gelu_erf": 3, "silu": 4}
DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_DEVICE_TYPES = ("cpu", "cuda", "meta")


def _tensor(op, name, t, optional=False):
    if t is None and optional:
        return
    if not isinstance(t, torch.Tensor):
        what = "a tensor or None" if optional else "a tensor"
        raise TypeError(f"{op}: {name} must be {what}, got {type(t).__name__}")


def activation_code(op, activation):
    if not isinstance(activation, str):
        raise TypeError(f"{op}: activation must be a str, one of "
                        f"{', '.join(ACTIVATIONS)}; got {type(activation).__name__}")
    code = ACTIVATIONS.get(activation)
    if code is None:
        raise ValueError(f"{op}: unknown activation {activation!r}; fusedblas "
                         f"has {', '.join(ACTIVATIONS)}")
    return code


def _same_kind(op, x, named):
    """dtype and device of every named tensor against x's."""
    if x.dtype not in DTYPES:
        raise TypeError(f"{op}: x has dtype {x.dtype}; fusedblas takes "
                        "torch.float32, torch.float16 or torch.bfloat16")
    if x.device.type not in _DEVICE_TYPES:
        raise RuntimeError(f"{op}: x is on {x.device}; fusedblas runs on CPU "
                           "and CUDA tensors")
    for name, t in named:
        if t is None:
            continue
        if t.dtype != x.dtype:
            raise TypeError(f"{op}: {name} has dtype {t.dtype} but x has "
                            f"{x.dtype}; all tensors must have one dtype")
        if t.device != x.device:
            raise RuntimeError(f"{op}: {name} is on {t.device} but x is on "
                               f"{x.device}; all tensors must be on one device")


def _shape(t):
    return tuple(t.shape)


def check_linear(x, weight, bias, activation):
    """Checks fusedblas::linear's arguments; returns the activation code."""
    op = "fusedblas.linear"
    _tensor(op, "x", x)
    _tensor(op, "weight", weight)
    _tensor(op, "bias", bias, optional=True)
    code = activation_code(op, activation)
    _same_kind(op, x, (("weight", weight), ("bias", bias)))
    if x.dim() < 1:
        raise ValueError(f"{op}: x must have at least 1 dimension [..., "
                         "in_features], got a 0-d tensor")
    if weight.dim() != 2:
        raise ValueError(f"{op}: weight must be 2-D [out_features, "
                         f"in_features], got shape {_shape(weight)}")
    if weight.shape[1] != x.shape[-1]:
        raise ValueError(f"{op}: weight {_shape(weight)} takes "
                         f"{weight.shape[1]} in_features but x {_shape(x)} "
                         f"has {x.shape[-1]}")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        raise ValueError(f"{op}: bias must be 1-D of length out_features = "
                         f"{weight.shape[0]}, got shape {_shape(bias)}")
    return code


def check_gated_mlp(x, w_gate, w_up, w_down, b_gate, b_up, b_down, activation):
    """Checks fusedblas::gated_mlp's arguments; returns the activation code."""
    op = "fusedblas.gated_mlp"
    _tensor(op, "x", x)
    for name, t in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        _tensor(op, name, t)
    for name, t in (("b_gate", b_gate), ("b_up", b_up), ("b_down", b_down)):
        _tensor(op, name, t, optional=True)
    code = activation_code(op, activation)
    _same_kind(op, x, (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down),
                       ("b_gate", b_gate), ("b_up", b_up), ("b_down", b_down)))
    if x.dim() < 1:
        raise ValueError(f"{op}: x must have at least 1 dimension [..., "
                         "in_features], got a 0-d tensor")
    for name, t in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        if t.dim() != 2:
            raise ValueError(f"{op}: {name} must be 2-D [out_features, "
                             f"in_features], got shape {_shape(t)}")
    k = x.shape[-1]
    if w_gate.shape[1] != k:
        raise ValueError(f"{op}: w_gate {_shape(w_gate)} takes {w_gate.shape[1]} "
                         f"in_features but x {_shape(x)} has {k}")
    if w_up.shape != w_gate.shape:
        raise ValueError(f"{op}: w_up must have w_gate's shape "
                         f"{_shape(w_gate)} [hidden, in_features], got "
                         f"{_shape(w_up)}")
    h = w_gate.shape[0]
    if w_down.shape[1] != h:
        raise ValueError(f"{op}: w_down {_shape(w_down)} takes {w_down.shape[1]} "
                         f"in_features but the hidden layer (w_gate "
                         f"{_shape(w_gate)}) has {h}")
    for name, t, length, what in (("b_gate", b_gate, h, "hidden"),
                                  ("b_up", b_up, h, "hidden"),
                                  ("b_down", b_down, w_down.shape[0],
                                   "out_features")):
        if t is not None and (t.dim() != 1 or t.shape[0] != length):
            raise ValueError(f"{op}: {name} must be 1-D of length {what} = "
                             f"{length}, got shape {_shape(t)}")
    return code
