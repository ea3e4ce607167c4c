"""NumPy's ufuncs and reductions as the daemon serves them: the op table, the operators shared by
DistributedArray and traced values (Var), and the module functions (``distarray.sqrt(x)``)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from .v1 import distarray_pb2 as pb

NDARRAY_OPERAND = (
    "a NumPy array is not an operand of a distributed one: upload it first with "
    "client.from_numpy(arr, index_map)"
)

# NumPy name -> (ElementwiseOp, number of operands). The feature GetServerInfo lists for each is
# "elementwise.<name>"; docs/api.md gives each op's dtypes and result dtype.
UFUNCS: Dict[str, Tuple[int, int]] = {
    "add": (pb.ELEMENTWISE_OP_ADD, 2),
    "subtract": (pb.ELEMENTWISE_OP_SUBTRACT, 2),
    "multiply": (pb.ELEMENTWISE_OP_MULTIPLY, 2),
    "true_divide": (pb.ELEMENTWISE_OP_DIVIDE, 2),
    "floor_divide": (pb.ELEMENTWISE_OP_FLOOR_DIVIDE, 2),
    "remainder": (pb.ELEMENTWISE_OP_REMAINDER, 2),
    "power": (pb.ELEMENTWISE_OP_POWER, 2),
    "maximum": (pb.ELEMENTWISE_OP_MAXIMUM, 2),
    "minimum": (pb.ELEMENTWISE_OP_MINIMUM, 2),
    "fmax": (pb.ELEMENTWISE_OP_FMAX, 2),
    "fmin": (pb.ELEMENTWISE_OP_FMIN, 2),
    "arctan2": (pb.ELEMENTWISE_OP_ARCTAN2, 2),
    "hypot": (pb.ELEMENTWISE_OP_HYPOT, 2),
    "less": (pb.ELEMENTWISE_OP_LESS, 2),
    "less_equal": (pb.ELEMENTWISE_OP_LESS_EQUAL, 2),
    "greater": (pb.ELEMENTWISE_OP_GREATER, 2),
    "greater_equal": (pb.ELEMENTWISE_OP_GREATER_EQUAL, 2),
    "equal": (pb.ELEMENTWISE_OP_EQUAL, 2),
    "not_equal": (pb.ELEMENTWISE_OP_NOT_EQUAL, 2),
    "logical_and": (pb.ELEMENTWISE_OP_LOGICAL_AND, 2),
    "logical_or": (pb.ELEMENTWISE_OP_LOGICAL_OR, 2),
    "logical_xor": (pb.ELEMENTWISE_OP_LOGICAL_XOR, 2),
    "bitwise_and": (pb.ELEMENTWISE_OP_BITWISE_AND, 2),
    "bitwise_or": (pb.ELEMENTWISE_OP_BITWISE_OR, 2),
    "bitwise_xor": (pb.ELEMENTWISE_OP_BITWISE_XOR, 2),
    "left_shift": (pb.ELEMENTWISE_OP_LEFT_SHIFT, 2),
    "right_shift": (pb.ELEMENTWISE_OP_RIGHT_SHIFT, 2),
    "nextafter": (pb.ELEMENTWISE_OP_NEXTAFTER, 2),
    "negative": (pb.ELEMENTWISE_OP_NEGATIVE, 1),
    "positive": (pb.ELEMENTWISE_OP_POSITIVE, 1),
    "absolute": (pb.ELEMENTWISE_OP_ABS, 1),
    "sign": (pb.ELEMENTWISE_OP_SIGN, 1),
    "square": (pb.ELEMENTWISE_OP_SQUARE, 1),
    "sqrt": (pb.ELEMENTWISE_OP_SQRT, 1),
    "exp": (pb.ELEMENTWISE_OP_EXP, 1),
    "expm1": (pb.ELEMENTWISE_OP_EXPM1, 1),
    "log": (pb.ELEMENTWISE_OP_LOG, 1),
    "log1p": (pb.ELEMENTWISE_OP_LOG1P, 1),
    "log2": (pb.ELEMENTWISE_OP_LOG2, 1),
    "log10": (pb.ELEMENTWISE_OP_LOG10, 1),
    "sin": (pb.ELEMENTWISE_OP_SIN, 1),
    "cos": (pb.ELEMENTWISE_OP_COS, 1),
    "tan": (pb.ELEMENTWISE_OP_TAN, 1),
    "arcsin": (pb.ELEMENTWISE_OP_ARCSIN, 1),
    "arccos": (pb.ELEMENTWISE_OP_ARCCOS, 1),
    "arctan": (pb.ELEMENTWISE_OP_ARCTAN, 1),
    "sinh": (pb.ELEMENTWISE_OP_SINH, 1),
    "cosh": (pb.ELEMENTWISE_OP_COSH, 1),
    "tanh": (pb.ELEMENTWISE_OP_TANH, 1),
    "floor": (pb.ELEMENTWISE_OP_FLOOR, 1),
    "ceil": (pb.ELEMENTWISE_OP_CEIL, 1),
    "trunc": (pb.ELEMENTWISE_OP_TRUNC, 1),
    "rint": (pb.ELEMENTWISE_OP_RINT, 1),
    "logical_not": (pb.ELEMENTWISE_OP_LOGICAL_NOT, 1),
    "invert": (pb.ELEMENTWISE_OP_INVERT, 1),
    "isnan": (pb.ELEMENTWISE_OP_ISNAN, 1),
    "isinf": (pb.ELEMENTWISE_OP_ISINF, 1),
    "isfinite": (pb.ELEMENTWISE_OP_ISFINITE, 1),
    "signbit": (pb.ELEMENTWISE_OP_SIGNBIT, 1),
    "arcsinh": (pb.ELEMENTWISE_OP_ARCSINH, 1),
    "arccosh": (pb.ELEMENTWISE_OP_ARCCOSH, 1),
    "arctanh": (pb.ELEMENTWISE_OP_ARCTANH, 1),
    "where": (pb.ELEMENTWISE_OP_WHERE, 3),
    "clip": (pb.ELEMENTWISE_OP_CLIP, 3),
}

# NumPy's other names for the same ufuncs.
ALIASES = {
    "divide": "true_divide",
    "mod": "remainder",
    "abs": "absolute",
    "bitwise_not": "invert",
    "bitwise_invert": "invert",
    "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift",
    "pow": "power",
    "atan2": "arctan2",
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
}

# Reductions: NumPy name -> ReduceOp ("reduce.<name>" in GetServerInfo.features).
REDUCTIONS: Dict[str, int] = {
    "sum": pb.REDUCE_OP_SUM,
    "prod": pb.REDUCE_OP_PROD,
    "max": pb.REDUCE_OP_MAX,
    "min": pb.REDUCE_OP_MIN,
    "all": pb.REDUCE_OP_ALL,
    "any": pb.REDUCE_OP_ANY,
    "mean": pb.REDUCE_OP_MEAN,
    "argmax": pb.REDUCE_OP_ARGMAX,
    "argmin": pb.REDUCE_OP_ARGMIN,
}
REDUCTION_ALIASES = {"amax": "max", "amin": "min"}

Axis = Union[None, int, Sequence[int]]


def normalize_axes(axis: Axis) -> Tuple[int, ...]:
    """NumPy's axis argument as the API's list (empty: every axis)."""
    if axis is None:
        return ()
    if isinstance(axis, int) or hasattr(axis, "__index__"):
        return (int(axis),)
    return tuple(int(a) for a in axis)


class ArrayOps:
    """Python's operators and NumPy's method names, for anything that implements
    ``_ufunc(name, operands, **options)`` and ``_reduce(name, axis, keepdims, ...)`` and
    ``_matmul(other)`` (DistributedArray sends requests, Var records statements)."""

    __slots__ = ()
    __array_priority__ = 100  # NumPy defers binary operators to ours

    def _ufunc(self, name: str, operands: Sequence[Any], **options: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _reduce(self, name: str, axis: Axis, keepdims: bool, **options: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _matmul(self, a: Any, b: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _accepts(self, other: Any) -> bool:  # pragma: no cover
        raise NotImplementedError

    def _binary(self, name: str, other: Any, reflected: bool = False):
        if not self._accepts(other):
            if isinstance(other, np.ndarray):
                raise TypeError(NDARRAY_OPERAND)
            return NotImplemented
        return self._ufunc(name, (other, self) if reflected else (self, other))

    # Arithmetic.
    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, True)
    def __sub__(self, o): return self._binary("subtract", o)
    def __rsub__(self, o): return self._binary("subtract", o, True)
    def __mul__(self, o): return self._binary("multiply", o)
    def __rmul__(self, o): return self._binary("multiply", o, True)
    def __truediv__(self, o): return self._binary("true_divide", o)
    def __rtruediv__(self, o): return self._binary("true_divide", o, True)
    def __floordiv__(self, o): return self._binary("floor_divide", o)
    def __rfloordiv__(self, o): return self._binary("floor_divide", o, True)
    def __mod__(self, o): return self._binary("remainder", o)
    def __rmod__(self, o): return self._binary("remainder", o, True)
    def __pow__(self, o): return self._binary("power", o)
    def __rpow__(self, o): return self._binary("power", o, True)
    # Bitwise and logical (NumPy: & | ^ ~ are bitwise; on bool they are logical).
    def __and__(self, o): return self._binary("bitwise_and", o)
    def __rand__(self, o): return self._binary("bitwise_and", o, True)
    def __or__(self, o): return self._binary("bitwise_or", o)
    def __ror__(self, o): return self._binary("bitwise_or", o, True)
    def __xor__(self, o): return self._binary("bitwise_xor", o)
    def __rxor__(self, o): return self._binary("bitwise_xor", o, True)
    def __lshift__(self, o): return self._binary("left_shift", o)
    def __rlshift__(self, o): return self._binary("left_shift", o, True)
    def __rshift__(self, o): return self._binary("right_shift", o)
    def __rrshift__(self, o): return self._binary("right_shift", o, True)
    # Comparisons give bool arrays, as NumPy's.
    def __lt__(self, o): return self._binary("less", o)
    def __le__(self, o): return self._binary("less_equal", o)
    def __gt__(self, o): return self._binary("greater", o)
    def __ge__(self, o): return self._binary("greater_equal", o)
    def __eq__(self, o): return self._binary("equal", o)  # type: ignore[override]
    def __ne__(self, o): return self._binary("not_equal", o)  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]  # as NumPy arrays: == is elementwise
    # Unary.
    def __neg__(self): return self._ufunc("negative", (self,))
    def __pos__(self): return self._ufunc("positive", (self,))
    def __abs__(self): return self._ufunc("absolute", (self,))
    def __invert__(self): return self._ufunc("invert", (self,))

    def __matmul__(self, o):
        if not self._accepts(o) or not isinstance(o, ArrayOps):
            return NotImplemented
        return self._matmul(self, o)

    def __rmatmul__(self, o):
        if not self._accepts(o) or not isinstance(o, ArrayOps):
            return NotImplemented
        return self._matmul(o, self)

    # NumPy's method names.
    def astype(self, dtype, **options):
        """A copy converted to ``dtype`` (NumPy's unsafe casting: float to integer saturates,
        NaN becomes 0; to bool is ``!= 0``)."""
        return self._ufunc("astype", (self,), dtype=dtype, **options)

    def clip(self, a_min, a_max, **options):
        """``minimum(maximum(self, a_min), a_max)``."""
        return self._ufunc("clip", (self, a_min, a_max), **options)

    def sum(self, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, **options):
        """Sum over ``axis`` (None: all). bool and signed integers sum in int64, unsigned in
        uint64, floats in their dtype (accumulating in float64)."""
        _no_numpy_extras("sum", dtype, out)
        return self._reduce("sum", axis, keepdims, **options)

    def prod(self, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, **options):
        """Product over ``axis``; dtypes as ``sum``."""
        _no_numpy_extras("prod", dtype, out)
        return self._reduce("prod", axis, keepdims, **options)

    def max(self, axis: Axis = None, out=None, keepdims: bool = False, **options):
        """Maximum over ``axis`` (NaN propagates; complex numbers in NumPy's order: real part,
        then imaginary part)."""
        _no_numpy_extras("max", None, out)
        return self._reduce("max", axis, keepdims, **options)

    def min(self, axis: Axis = None, out=None, keepdims: bool = False, **options):
        """Minimum over ``axis`` (NaN propagates; complex numbers in NumPy's order)."""
        _no_numpy_extras("min", None, out)
        return self._reduce("min", axis, keepdims, **options)

    def mean(self, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, **options):
        """Mean over ``axis``: float64 for integers and bool, else the dtype."""
        _no_numpy_extras("mean", dtype, out)
        return self._reduce("mean", axis, keepdims, **options)

    def all(self, axis: Axis = None, out=None, keepdims: bool = False, **options):
        """Whether every element over ``axis`` is nonzero (bool)."""
        _no_numpy_extras("all", None, out)
        return self._reduce("all", axis, keepdims, **options)

    def any(self, axis: Axis = None, out=None, keepdims: bool = False, **options):
        """Whether any element over ``axis`` is nonzero (bool)."""
        _no_numpy_extras("any", None, out)
        return self._reduce("any", axis, keepdims, **options)

    def argmax(self, axis: Optional[int] = None, out=None, keepdims: bool = False, **options):
        """Index of the first maximum along one axis, or into the flattened array (int64)."""
        _no_numpy_extras("argmax", None, out)
        return self._reduce("argmax", axis, keepdims, **options)

    def argmin(self, axis: Optional[int] = None, out=None, keepdims: bool = False, **options):
        """Index of the first minimum along one axis, or into the flattened array (int64)."""
        _no_numpy_extras("argmin", None, out)
        return self._reduce("argmin", axis, keepdims, **options)


def _no_numpy_extras(name: str, dtype, out) -> None:
    if dtype is not None:
        raise TypeError(f"{name}: dtype= is not served by distarrayd; use astype first")
    if out is not None:
        raise TypeError(f"{name}: out= is not served for reductions")
