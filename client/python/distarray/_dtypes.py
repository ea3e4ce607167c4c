"""The dtype names of the namespace: ``distarray.float32``, ``distarray.bool``...

They are NumPy's own scalar types (as CuPy's are), so they work wherever a dtype is taken, in
distarray and NumPy alike (``distarray.zeros(3, distarray.int32)``, ``x.astype(distarray.bool)``),
and compare equal to an array's ``dtype`` (``x.dtype == distarray.float32``). ``bfloat16`` is
there when the ml_dtypes package is installed (``pip install distarray[bfloat16]``).
"""

from __future__ import annotations

import numpy as np

bool = np.bool_  # noqa: A001: the array API's name, shadowing the builtin in this module only
int8 = np.int8
int16 = np.int16
int32 = np.int32
int64 = np.int64
uint8 = np.uint8
uint16 = np.uint16
uint32 = np.uint32
uint64 = np.uint64
float16 = np.float16
float32 = np.float32
float64 = np.float64
complex64 = np.complex64
complex128 = np.complex128

__all__ = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]

try:
    from ml_dtypes import bfloat16  # noqa: F401

    __all__.append("bfloat16")
except ImportError:  # the namespace then has no bfloat16, as NumPy has none
    pass
