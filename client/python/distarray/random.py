"""Random arrays drawn on the devices: ``distarray.random.uniform``, ``normal`` and ``integers``,
in the argument names of ``numpy.random.Generator``'s methods.

Each is one CreateArray with a random fill (docs/api.md, "Fills"): the daemon draws every element
from Philox4x32-10 keyed by the seed, with the element's C-order position as the counter. An
array's values therefore depend only on the seed, its shape and its dtype, never on its
``index_map`` or on how many devices hold it, and nothing is uploaded.

There is no generator object and no state: ``seed`` is the whole key. The same seed (and shape and
dtype) gives the same array, call after call; ``seed=None`` (the default) takes a fresh 64-bit
seed from the operating system, as ``numpy.random.default_rng(None)`` does. Arrays drawn with one
seed share their leading values (position i is position i of every such array), so independent
draws need distinct seeds. The streams are not NumPy's: a seed gives other values than
``numpy.random.default_rng(seed)``.

Unlike NumPy's methods, ``low``, ``high``, ``loc`` and ``scale`` are scalars (the daemon's fill
takes one range), and ``size=None`` gives a 0-d array, not a Python scalar: results stay on the
devices. Bad arguments raise before anything is sent: TypeError or ValueError naming the argument.
"""

from __future__ import annotations

import math
import numbers
import operator
import secrets
import warnings
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _default
from ._array import DistributedArray
from ._index_map import IndexMapLike
from ._types import DTypeLike, to_proto_dtype

SizeLike = Union[None, int, Sequence[int]]

#: The daemon's integer fill takes its bounds as int64: high (exclusive) is at most this.
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)


def _size(what: str, size: SizeLike) -> Tuple[int, ...]:
    """``size`` as a shape: None is 0-d, an integer one axis."""
    if size is None:
        return ()
    dims = size if isinstance(size, (tuple, list)) else (size,)
    shape = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (numbers.Integral, np.integer)):
            raise TypeError(f"{what}: size takes an integer or a sequence of integers, not "
                            f"{size!r}")
        shape.append(operator.index(d))
    if any(d < 0 for d in shape):
        raise ValueError(f"{what}: size {tuple(shape)} has a negative dimension")
    return tuple(shape)


def _seed(what: str, seed: Optional[int]) -> int:
    """An integer in [0, 2**64): the Philox key. None: a fresh one from the OS."""
    if seed is None:
        return secrets.randbits(64)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError(f"{what}: seed is an integer in [0, 2**64) or None, not {seed!r}")
    seed = operator.index(seed)
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"{what}: seed must be in [0, 2**64), not {seed}")
    return seed


def _real(what: str, name: str, value: Any) -> float:
    """A finite real scalar (not bool, complex or an array)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: {name} is a real number, not {type(value).__name__} (the fill "
                        f"draws from one range: arrays of {name} are not served)")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{what}: {name} must be finite, not {value}")
    return value


def _integer(what: str, name: str, value: Any) -> int:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{what}: {name} is an integer, not {value!r}")
    return operator.index(value)


def _float_dtype(what: str, dtype: DTypeLike) -> np.dtype:
    """A real floating dtype the daemon stores (float16, bfloat16, float32, float64)."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{what}: dtype {dtype!r} is not a dtype ({e})") from None
    if not (dt.kind == "f" or dt.name == "bfloat16"):  # ml_dtypes' bfloat16 is of kind "V"
        raise TypeError(f"{what}: dtype must be a real floating dtype (float16, bfloat16, "
                        f"float32, float64), not {dt}")
    to_proto_dtype(dt)  # ValueError for a float the daemon has no dtype for (float128)
    return dt


def _fits(what: str, name: str, value: float, dtype: np.dtype) -> None:
    """``value`` converted to ``dtype`` is finite (1e5 is not a float16)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        converted = np.asarray(value).astype(dtype)
    if not np.isfinite(converted.astype(np.float64)):
        raise ValueError(f"{what}: {name}={value} is outside the range of {dtype}")


def _create(shape: Tuple[int, ...], dtype: np.dtype, fill_method: str, args: dict,
            index_map: Optional[IndexMapLike], name: Optional[str], client: Any
            ) -> DistributedArray:
    target = _default.client_for(client)
    return getattr(target, fill_method)(shape, dtype=dtype, index_map=index_map, name=name, **args)


def uniform(low: float = 0.0, high: float = 1.0, size: SizeLike = None,
            dtype: DTypeLike = np.float64, *, seed: Optional[int] = None,
            index_map: Optional[IndexMapLike] = None, name: Optional[str] = None,
            client: Any = None) -> DistributedArray:
    """Independent draws from the uniform distribution on [low, high), as
    ``numpy.random.Generator.uniform`` (and ``random`` with the defaults), in a real floating
    ``dtype`` (float64 by default; a value that rounds to ``high`` in the dtype becomes ``low``,
    so ``high`` is never drawn).

    ``low`` < ``high``, both finite, and ``high - low`` finite. ``size``: the shape (None: 0-d).
    ``seed``: see the module's docstring. ``index_map``: the layout (default: the whole array on
    device 0), which does not change the values. ``name``: a persistent name. ``client``: default
    the module's default client."""
    what = "distarray.random.uniform"
    dt = _float_dtype(what, dtype)
    lo, hi = _real(what, "low", low), _real(what, "high", high)
    if not lo < hi:
        raise ValueError(f"{what}: low must be less than high, got low={lo}, high={hi}")
    if not math.isfinite(hi - lo):
        raise ValueError(f"{what}: high - low = {hi} - {lo} overflows float64")
    _fits(what, "low", lo, dt)
    _fits(what, "high", hi, dt)
    shape = _size(what, size)
    return _create(shape, dt, "uniform", {"low": lo, "high": hi, "seed": _seed(what, seed)},
                   index_map, name, client)


def normal(loc: float = 0.0, scale: float = 1.0, size: SizeLike = None,
           dtype: DTypeLike = np.float64, *, seed: Optional[int] = None,
           index_map: Optional[IndexMapLike] = None, name: Optional[str] = None,
           client: Any = None) -> DistributedArray:
    """Independent draws ``loc + scale * z`` of the normal distribution, as
    ``numpy.random.Generator.normal`` (``standard_normal`` with the defaults), in a real floating
    ``dtype`` (float64 by default). ``z`` is Box-Muller on two 53-bit uniform draws, computed in
    float64 and rounded to ``dtype``.

    ``loc`` finite, ``scale`` finite and >= 0 (0 gives ``loc`` everywhere). ``size``, ``seed``,
    ``index_map``, ``name``, ``client``: as ``uniform``'s."""
    what = "distarray.random.normal"
    dt = _float_dtype(what, dtype)
    mean, stddev = _real(what, "loc", loc), _real(what, "scale", scale)
    if stddev < 0:
        raise ValueError(f"{what}: scale must be non-negative, not {stddev}")
    _fits(what, "loc", mean, dt)
    shape = _size(what, size)
    return _create(shape, dt, "normal", {"mean": mean, "stddev": stddev,
                                         "seed": _seed(what, seed)}, index_map, name, client)


def integers(low: int, high: Optional[int] = None, size: SizeLike = None,
             dtype: DTypeLike = np.int64, endpoint: bool = False, *, seed: Optional[int] = None,
             index_map: Optional[IndexMapLike] = None, name: Optional[str] = None,
             client: Any = None) -> DistributedArray:
    """Independent uniform integers in [low, high) ([low, high] with ``endpoint``), as
    ``numpy.random.Generator.integers``: ``integers(n)`` draws from [0, n). Exact over the whole
    int64 range (64 random bits reduced by a multiply-high, so a range that is not a power of two
    is biased by at most range / 2**64).

    ``dtype``: an integer dtype (int64 by default; bool is not served), which both ends must fit
    (ValueError naming the end, as NumPy's). The daemon takes the bounds as int64, so the
    exclusive ``high`` is at most 2**63 - 1: int64's largest value and uint64's upper half cannot
    be drawn. ``size``, ``seed``, ``index_map``, ``name``, ``client``: as ``uniform``'s."""
    what = "distarray.random.integers"
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{what}: dtype {dtype!r} is not a dtype ({e})") from None
    if dt.kind not in "iu":
        raise TypeError(f"{what}: dtype must be an integer dtype ([u]int8 to [u]int64), not {dt}")
    if not isinstance(endpoint, (bool, np.bool_)):
        raise TypeError(f"{what}: endpoint is a bool, not {endpoint!r}")
    lo = _integer(what, "low", low)
    if high is None:
        lo, hi = 0, lo
    else:
        hi = _integer(what, "high", high)
    exclusive = hi + 1 if endpoint else hi
    if not lo < exclusive:
        bound = "low > high" if endpoint else "low >= high"
        given = f"low={lo}, high={hi}" + (", endpoint=True" if endpoint else "")
        raise ValueError(f"{what}: {bound} ({given})")
    info = np.iinfo(dt)
    if lo < info.min:
        raise ValueError(f"{what}: low={lo} is out of bounds for {dt}")
    if exclusive - 1 > info.max:
        raise ValueError(f"{what}: high={hi} is out of bounds for {dt}")
    if exclusive > _INT64_MAX:
        raise ValueError(
            f"{what}: high={hi}{' with endpoint=True' if endpoint else ''} is past the daemon's "
            "bound: the exclusive upper end is an int64, at most 2**63 - 1")
    assert lo >= _INT64_MIN
    shape = _size(what, size)
    return _create(shape, dt, "integers", {"low": lo, "high": exclusive,
                                           "seed": _seed(what, seed)}, index_map, name, client)


__all__ = ["integers", "normal", "uniform"]
