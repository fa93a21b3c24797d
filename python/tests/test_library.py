# SPDX-License-Identifier: BSD-3-Clause
"""Finding and loading libfusedblas, and refusing another version."""

import os
import subprocess
import sys

import pytest

import fusedblas
from fusedblas import _library as L


def run_python(code, env):
    """code in a fresh interpreter (the library is loaded once per
    process); its stdout and stderr."""
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


def test_loaded_library():
    path, version = fusedblas.library()
    assert L.parse_version(version)[:2] == (0, 1)
    assert os.path.exists(path)


def test_candidates_order(monkeypatch, tmp_path):
    """FUSEDBLAS_LIBRARY alone when set (a folder means the library in
    it); else pkg-config's libdir, then the system's search."""
    monkeypatch.setenv("FUSEDBLAS_LIBRARY", "/some/libfusedblas.so")
    assert L.candidates() == ([("FUSEDBLAS_LIBRARY", "/some/libfusedblas.so")], [])
    (tmp_path / "libfusedblas.so.0").write_bytes(b"")
    monkeypatch.setenv("FUSEDBLAS_LIBRARY", str(tmp_path))
    assert L.candidates()[0] == [("FUSEDBLAS_LIBRARY",
                                  str(tmp_path / "libfusedblas.so.0"))]
    monkeypatch.delenv("FUSEDBLAS_LIBRARY")
    monkeypatch.setattr(L, "_pkg_config_libdir", lambda: ("/opt/fb/lib", None))
    monkeypatch.setattr(L.ctypes.util, "find_library",
                        lambda name: "libfusedblas.so.0" if name == "fusedblas" else None)
    found, notes = L.candidates()
    assert [how for how, _ in found] == ["pkg-config", "ctypes.util.find_library",
                                         "the dynamic loader's search"]
    assert found[0][1] == "/opt/fb/lib/libfusedblas.so.0" and not notes


def test_pkg_config_libdir(monkeypatch, tmp_path):
    """The libdir pkg-config reports is where the library is looked for."""
    pc = tmp_path / "fusedblas.pc"
    pc.write_text("libdir=/opt/fusedblas/lib64\nName: fusedblas\n"
                  "Description: x\nVersion: 0.1.0\nLibs: -lfusedblas\n")
    monkeypatch.setenv("PKG_CONFIG_PATH", str(tmp_path))
    libdir, why = L._pkg_config_libdir()
    if why == "pkg-config is not installed":
        pytest.skip(why)
    assert libdir == "/opt/fusedblas/lib64"


def test_other_version_refused(monkeypatch):
    """A library whose major.minor is not the package's is refused, with
    both versions in the message."""
    path, version = fusedblas.library()
    monkeypatch.setattr(L, "LIBRARY_MAJOR_MINOR", (9, 7))
    with pytest.raises(L.LibraryError) as e:
        L.open_library(path)
    assert f"libfusedblas {version}" in str(e.value)
    assert "9.7.x C API" in str(e.value)


def test_not_fusedblas_refused():
    with pytest.raises(L.LibraryError, match="is not libfusedblas"):
        L.open_library("libc.so.6")


def test_wrong_variable_is_an_error():
    env = dict(os.environ, FUSEDBLAS_LIBRARY="/nonexistent/libfusedblas.so")
    rc, out = run_python("import torch, fusedblas\n"
                         "try:\n"
                         "    fusedblas.linear(torch.ones(1, 1), torch.ones(1, 1))\n"
                         "except fusedblas.LibraryError as e:\n"
                         "    print('refused:', e)\n", env)
    assert rc == 0, out
    assert "refused: FUSEDBLAS_LIBRARY=/nonexistent/libfusedblas.so: cannot load" in out


def test_not_found_message():
    """Nothing set and nothing installed: the message says what was tried
    and how to point at the library."""
    env = {k: v for k, v in os.environ.items() if k != "FUSEDBLAS_LIBRARY"}
    env["PKG_CONFIG_PATH"] = env["PKG_CONFIG_LIBDIR"] = "/nonexistent"
    env.pop("LD_LIBRARY_PATH", None)
    rc, out = run_python("import fusedblas\n"
                         "try:\n"
                         "    print(fusedblas.library())\n"
                         "except fusedblas.LibraryError as e:\n"
                         "    print('refused:', e)\n", env)
    assert rc == 0, out
    if "refused:" not in out:
        pytest.skip(f"a libfusedblas is installed on this system: {out}")
    assert "set FUSEDBLAS_LIBRARY" in out and "Tried:" in out


def test_import_needs_no_library():
    """Importing the package (and tracing with the fake ops) does not load
    the library: a machine without it can still import and trace."""
    env = dict(os.environ, FUSEDBLAS_LIBRARY="/nonexistent/libfusedblas.so")
    rc, out = run_python(
        "import torch, fusedblas\n"
        "from fusedblas import _library\n"
        "y = torch.ops.fusedblas.linear(torch.ones(2, 3, device='meta'),\n"
        "                               torch.ones(4, 3, device='meta'))\n"
        "print(tuple(y.shape), _library._loaded)\n", env)
    assert rc == 0, out
    assert "(2, 4) None" in out


def test_handles_freed_with_their_thread():
    """A thread's handles are destroyed when it ends (the library then no
    longer knows the pointer as a live handle)."""
    import gc
    import threading

    import torch
    from fusedblas import _handles

    made = []

    def work():
        fusedblas.linear(torch.randn(2, 3), torch.randn(4, 3))
        made.append(_handles.last_handle().ptr)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    gc.collect()
    lib = L.load()
    assert lib.cdll.fb_set_threads(made[0], 1) == L.STATUS_INVALID_ARGUMENT
