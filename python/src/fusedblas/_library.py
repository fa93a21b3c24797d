# SPDX-License-Identifier: BSD-3-Clause
"""Finding, loading and version-checking libfusedblas, and its C prototypes.

The library is looked for, first that is set or found:

1. ``FUSEDBLAS_LIBRARY``: the path of the shared library (or of the folder
   holding it). When set, it is the only place looked at, so that a wrong
   value is an error rather than a silent use of some other copy.
2. ``pkg-config --variable=libdir fusedblas``: the installed library.
3. The system's search: ``ctypes.util.find_library("fusedblas")``, then
   ``libfusedblas.so.0`` through the dynamic loader's own path.

The library found must have the major.minor version this package was
written against (``fb_version()``); any other is refused, since the
prototypes below would then be guesses.
"""

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import threading

import torch

from ._version import LIBRARY_MAJOR_MINOR

# ---- values from include/fusedblas.h -------------------------------------

STATUS_SUCCESS = 0
STATUS_INVALID_ARGUMENT = 1

ROW_MAJOR = 101
NO_TRANS = 111
TRANS = 112

BACKEND_AUTO = 0
BACKEND_CPU = 1
BACKEND_CUDA = 2
BACKEND_CUDA_LT = 3
BACKEND_CUDA_FUSED = 4
CUDA_BACKENDS = (BACKEND_CUDA, BACKEND_CUDA_LT, BACKEND_CUDA_FUSED)

MATH_DEFAULT = 0
MATH_ALLOW_TF32 = 1

# Argument names by position, for fb_handle_last_arg(): the C names, then
# what this package calls them.
GEMM_ARGUMENTS = (None, "handle", "layout", "transa", "transb", "m", "n", "k",
                  "alpha", "A (x)", "lda (x's row stride)", "B (weight)",
                  "ldb (weight's row stride)", "beta", "C (output)",
                  "ldc (output's row stride)", "bias", "act (activation)")
MLP_ARGUMENTS = (None, "handle", "dtype", "gate_act (activation)",
                 "m (rows of x)", "k (in features)", "h (hidden features)",
                 "n (out features)", "X (x)", "ldx (x's row stride)",
                 "Wg (w_gate)", "bg (b_gate)", "Wu (w_up)", "bu (b_up)",
                 "Wd (w_down)", "bd (b_down)", "Y (output)",
                 "ldy (output's row stride)")


class LibraryError(RuntimeError):
    """libfusedblas could not be found, loaded, or is of another version."""


class FusedBlasError(RuntimeError):
    """A libfusedblas call returned a status other than success.

    Attributes: ``routine`` (the C function), ``status`` (the fb_status
    value) and ``status_name`` (fb_status_string), ``argument`` (the
    1-based position fb_handle_last_arg reports, 0 if none),
    ``argument_name`` and ``detail`` (fb_handle_last_message).
    """

    def __init__(self, routine, status, status_name, argument=0,
                 argument_name=None, detail=""):
        self.routine = routine
        self.status = status
        self.status_name = status_name
        self.argument = argument
        self.argument_name = argument_name
        self.detail = detail
        text = f"fusedblas: {routine} failed: {status_name}"
        if argument:
            text += f" (argument {argument}"
            text += f", {argument_name})" if argument_name else ")"
        if detail:
            text += f": {detail}"
        super().__init__(text)


class Library:
    """The loaded library: ``cdll`` with prototypes set, ``path``, ``version``."""

    def __init__(self, cdll, path, version):
        self.cdll = cdll
        self.path = path
        self.version = version
        # (s|h|b)gemm_bias_act by torch dtype, looked up on every call
        self.gemm = {torch.float32: cdll.sgemm_bias_act,
                     torch.float16: cdll.hgemm_bias_act,
                     torch.bfloat16: cdll.bgemm_bias_act}

    def status_string(self, status):
        return self.cdll.fb_status_string(status).decode(errors="replace")

    def last_message(self, handle):
        return self.cdll.fb_handle_last_message(handle).decode(errors="replace")

    def last_path(self, handle):
        return self.cdll.fb_handle_last_path(handle).decode(errors="replace")

    def error(self, routine, status, handle, names=None):
        """The FusedBlasError for a failed call on handle (None: the
        thread's default handle, where failures without a handle land)."""
        arg = self.cdll.fb_handle_last_arg(handle)
        name = None
        if names is not None and 0 < arg < len(names):
            name = names[arg]
        return FusedBlasError(routine, status, self.status_string(status), arg,
                              name, self.last_message(handle))


def _prototype(cdll):
    """Set argtypes/restype of every function the package calls."""
    P, I, I64, F = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_float
    S = ctypes.c_char_p
    protos = {
        "fb_version": ([], S),
        "fb_status_string": ([I], S),
        "fb_backend_name": ([I], S),
        "fb_backend_available": ([I], I),
        "fb_create": ([ctypes.POINTER(P)], I),
        "fb_destroy": ([P], I),
        "fb_set_backend": ([P, I], I),
        "fb_get_backend": ([P, ctypes.POINTER(I)], I),
        "fb_set_threads": ([P, I], I),
        "fb_set_math_mode": ([P, I], I),
        "fb_set_cuda_device": ([P, I], I),
        "fb_set_cuda_stream": ([P, P], I),
        "fb_handle_last_status": ([P], I),
        "fb_handle_last_arg": ([P], I),
        "fb_handle_last_message": ([P], S),
        "fb_handle_last_backend": ([P], I),
        "fb_handle_last_path": ([P], S),
        "mlp_geglu_forward": ([P, I, I, I64, I64, I64, I64, P, I64, P, P, P,
                               P, P, P, P, I64], I),
    }
    gemm = [P, I, I, I, I64, I64, I64, F, P, I64, P, I64, F, P, I64, P, I]
    for name in ("sgemm_bias_act", "hgemm_bias_act", "bgemm_bias_act"):
        protos[name] = (gemm, I)
    for name, (args, res) in protos.items():
        fn = getattr(cdll, name)  # AttributeError: not a fusedblas library
        fn.argtypes = args
        fn.restype = res


def _pkg_config_libdir():
    exe = shutil.which("pkg-config")
    if exe is None:
        return None, "pkg-config is not installed"
    try:
        out = subprocess.run([exe, "--variable=libdir", "fusedblas"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"pkg-config failed: {e}"
    libdir = out.stdout.strip()
    if out.returncode != 0 or not libdir:
        return None, "pkg-config does not know fusedblas"
    return libdir, None


def _in_folder(folder):
    for name in ("libfusedblas.so.0", "libfusedblas.so"):
        p = os.path.join(folder, name)
        if os.path.exists(p):
            return p
    return os.path.join(folder, "libfusedblas.so.0")


def candidates():
    """[(how it was found, what to pass to dlopen)], in the order tried,
    and notes on the places that gave nothing."""
    env = os.environ.get("FUSEDBLAS_LIBRARY")
    if env:
        path = _in_folder(env) if os.path.isdir(env) else env
        return [("FUSEDBLAS_LIBRARY", path)], []
    found, notes = [], []
    libdir, why = _pkg_config_libdir()
    if libdir is not None:
        found.append(("pkg-config", _in_folder(libdir)))
    else:
        notes.append(why)
    name = ctypes.util.find_library("fusedblas")
    if name:
        found.append(("ctypes.util.find_library", name))
    else:
        notes.append("ctypes.util.find_library('fusedblas') found nothing")
    found.append(("the dynamic loader's search", "libfusedblas.so.0"))
    return found, notes


def parse_version(text):
    """(major, minor, patch) of a version string such as '0.1.0'."""
    parts = text.split(".")
    try:
        nums = tuple(int(p) for p in parts[:3])
    except ValueError:
        return None
    return nums if len(nums) == 3 else None


def open_library(path):
    """Load one candidate and check it: a Library, or LibraryError."""
    try:
        cdll = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryError(f"cannot load {path}: {e}") from None
    try:
        _prototype(cdll)
    except AttributeError as e:
        raise LibraryError(f"{path} is not libfusedblas: {e}") from None
    version = cdll.fb_version().decode(errors="replace")
    nums = parse_version(version)
    want = "%d.%d" % LIBRARY_MAJOR_MINOR
    if nums is None or nums[:2] != LIBRARY_MAJOR_MINOR:
        raise LibraryError(
            f"{path} is libfusedblas {version}, but this fusedblas package "
            f"speaks the {want}.x C API; install a {want}.x library or the "
            f"package that matches {version}")
    return Library(cdll, path, version)


_lock = threading.Lock()
_loaded = None


def load():
    """The library, loaded on first use (LibraryError if it cannot be)."""
    global _loaded
    lib = _loaded
    if lib is not None:
        return lib
    with _lock:
        if _loaded is None:
            found, notes = candidates()
            errors = []
            for how, path in found:
                try:
                    _loaded = open_library(path)
                    break
                except LibraryError as e:
                    if how == "FUSEDBLAS_LIBRARY":
                        raise LibraryError(
                            f"FUSEDBLAS_LIBRARY={os.environ['FUSEDBLAS_LIBRARY']}: "
                            f"{e}") from None
                    errors.append(f"{how}: {e}")
            if _loaded is None:
                raise LibraryError(
                    "libfusedblas not found; set FUSEDBLAS_LIBRARY to its path "
                    "(e.g. BUILD/.libs/libfusedblas.so) or install it where "
                    "pkg-config or the dynamic loader finds it. Tried: " +
                    "; ".join(notes + errors))
        return _loaded
