# SPDX-License-Identifier: BSD-3-Clause
"""``patch(model)``: swap a model's gated MLPs for fusedblas.nn.GatedMLP."""

import warnings

from torch import nn

from ._checks import DTYPES
from .nn import GatedMLP


def _is_gated_mlp(module):
    return not isinstance(module, GatedMLP) and all(
        isinstance(getattr(module, name, None), nn.Linear)
        for name in ("gate_proj", "up_proj", "down_proj"))


def _why_not(module):
    """Why this MLP cannot run in the library, or None if it can."""
    try:
        GatedMLP.from_torch(module)
    except (TypeError, ValueError) as e:
        return str(e)
    dtypes = {p.dtype for p in module.parameters()}
    if len(dtypes) != 1 or next(iter(dtypes)) not in DTYPES:
        return (f"its parameters have dtype {sorted(map(str, dtypes))}; "
                "fusedblas takes one of float32, float16, bfloat16")
    return None


def patch(model, strict=False):
    """Replace, in place, every submodule of model that has gate_proj,
    up_proj and down_proj nn.Linear layers (the Hugging Face Llama, Mistral,
    Gemma, Qwen MLP layout) by a fusedblas.nn.GatedMLP that shares their
    parameters; its activation is read from act_fn or hidden_act.

    Returns the qualified names of the modules swapped, in model order. A
    module that cannot be swapped (an activation the library does not
    compute, parameters of another dtype) is left as it is with a warning,
    or raises ValueError when strict. Forward hooks on a swapped module are
    not carried over; the parameters' names in the state_dict do not change.
    The model itself cannot be swapped (nothing holds it): wrap a bare MLP
    with GatedMLP.from_torch.
    """
    if _is_gated_mlp(model):
        raise ValueError("fusedblas.patch: the model is itself a gated MLP; "
                         "use fusedblas.nn.GatedMLP.from_torch(model)")
    swapped = []
    made = {}  # id(module) -> its GatedMLP, for a module held twice
    for name, module in list(model.named_modules(remove_duplicate=False)):
        if not name or not _is_gated_mlp(module):
            continue
        new = made.get(id(module))
        if new is None:
            why = _why_not(module)
            if why is not None:
                msg = f"fusedblas.patch: {name} ({type(module).__name__}) " \
                      f"left as it is: {why}"
                if strict:
                    raise ValueError(msg)
                warnings.warn(msg, stacklevel=2)
                continue
            new = made[id(module)] = GatedMLP.from_torch(module)
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, new)
        swapped.append(name)
    return swapped
