# SPDX-License-Identifier: BSD-3-Clause
"""From what a PyTorch or Hugging Face model calls an activation to the
library's name for it, or a refusal.

Hugging Face classes are recognised by class name, so that transformers
need not be installed; each maps only where its formula is the library's:
the tanh GELU variants (GELUTanh, PytorchGELUTanh, NewGELUActivation,
FastGELUActivation, AccurateGELUActivation) are all
0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))); GELUActivation is the erf
GELU. QuickGELU, clipped GELU, ReLU6 and the like have other formulas and
are refused.
"""

import functools

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import ACTIVATIONS

# Hugging Face's ACT2FN keys and other spellings.
_NAMES = {
    "none": "none", "identity": "none", "linear": "none",
    "relu": "relu",
    "gelu_tanh": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_new": "gelu_tanh", "gelu_fast": "gelu_tanh",
    "gelu_accurate": "gelu_tanh",
    "gelu": "gelu_erf", "gelu_erf": "gelu_erf", "gelu_python": "gelu_erf",
    "silu": "silu", "swish": "silu",
}

_CLASSES = {
    "SiLU": "silu", "SiLUActivation": "silu", "Swish": "silu",
    "ReLU": "relu",
    "Identity": "none", "LinearActivation": "none",
    "GELUTanh": "gelu_tanh", "PytorchGELUTanh": "gelu_tanh",
    "NewGELUActivation": "gelu_tanh", "FastGELUActivation": "gelu_tanh",
    "AccurateGELUActivation": "gelu_tanh",
    "GELUActivation": "gelu_erf",
}

_FUNCTIONS = {F.silu: "silu", F.relu: "relu", torch.relu: "relu",
              F.gelu: "gelu_erf"}


def activation_of(act):
    """The library's activation name for act: a name (ours or Hugging
    Face's hidden_act), an activation module, or one of F.silu, F.relu,
    F.gelu (with approximate="tanh" through functools.partial). ValueError
    for anything else."""
    if act is None:
        return "none"
    if isinstance(act, str):
        name = _NAMES.get(act.lower())
        if name is None:
            raise ValueError(f"fusedblas has no activation for {act!r}; it "
                             f"has {', '.join(ACTIVATIONS)} (and Hugging Face "
                             f"names {', '.join(sorted(_NAMES))})")
        return name
    if isinstance(act, nn.GELU):
        return "gelu_tanh" if act.approximate == "tanh" else "gelu_erf"
    if isinstance(act, nn.Module):
        name = _CLASSES.get(type(act).__name__)
        if name is None:
            raise ValueError(f"fusedblas cannot compute activation module "
                             f"{type(act).__name__}; it computes SiLU, ReLU, "
                             "GELU (tanh or erf) and identity")
        return name
    if isinstance(act, functools.partial) and act.func is F.gelu and \
            not act.args and set(act.keywords) == {"approximate"}:
        return "gelu_tanh" if act.keywords["approximate"] == "tanh" else "gelu_erf"
    if callable(act) and act in _FUNCTIONS:
        return _FUNCTIONS[act]
    raise ValueError(f"fusedblas cannot compute activation {act!r}")
