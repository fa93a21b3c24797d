# SPDX-License-Identifier: BSD-3-Clause
"""The package's version, and the library version it speaks."""

__version__ = "0.1.0"

# libfusedblas's fb_version() must have this major.minor: the ctypes
# prototypes here are those of include/fusedblas.h at that version.
LIBRARY_MAJOR_MINOR = (0, 1)
