"""Module functions in NumPy's names: ``distarray.sqrt(x)``, ``distarray.where(c, x, y)``,
``distarray.sum(x, axis=0)``... Each works on DistributedArrays (a request to the daemon) and on
traced values inside ``distarray.trace`` / ``while_loop`` bodies (a statement of the program)."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional

from ._ops import ALIASES, REDUCTION_ALIASES, REDUCTIONS, UFUNCS, ArrayOps, Axis


def _target(name: str, operands) -> ArrayOps:
    for o in operands:
        if isinstance(o, ArrayOps):
            return o
    raise TypeError(
        f"distarray.{name} needs a DistributedArray (or a traced value) among its operands; "
        "upload NumPy arrays with from_numpy first"
    )


_OPERAND_NAMES = {1: ("x",), 2: ("x1", "x2"), 3: ("x", "x1", "x2")}
_SPECIAL_OPERANDS = {"where": ("condition", "x1", "x2"), "clip": ("x", "min", "max")}


def _ufunc_signature(name: str, nargs: int) -> inspect.Signature:
    """The signature ``inspect`` reports: the operands positional-only, in the array API's names
    (``add(x1, x2, /, *, out=None, index_map=None, name=None)``), though the function takes them
    as ``*operands``."""
    P = inspect.Parameter
    names = _SPECIAL_OPERANDS.get(name, _OPERAND_NAMES[nargs])
    params = [P(n, P.POSITIONAL_ONLY) for n in names]
    params += [P(k, P.KEYWORD_ONLY, default=None) for k in ("out", "index_map", "name")]
    return inspect.Signature(params)


def _make_ufunc(name: str, nargs: int) -> Callable[..., Any]:
    def ufunc(*operands: Any, out=None, index_map=None, name: Optional[str] = None):
        if len(operands) != nargs:
            raise TypeError(f"distarray.{ufunc.__name__} takes {nargs} operand(s), got {len(operands)}")
        options: Dict[str, Any] = {}
        if out is not None:
            options["out"] = out
        if index_map is not None:
            options["index_map"] = index_map
        if name is not None:
            options["result_name"] = name
        return _target(ufunc.__name__, operands)._ufunc(op_name, operands, **options)

    op_name = name
    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__signature__ = _ufunc_signature(name, nargs)
    ufunc.__doc__ = (
        f"NumPy's ``{name}`` on the daemon's devices ({nargs} operand{'s' if nargs > 1 else ''}: "
        "DistributedArrays or Python scalars, broadcast and promoted as in NumPy 2).\n\n"
        "``out=``: write into an existing array of the result's shape and dtype (its handle "
        "stays). ``index_map=``: the result's layout (default: the first operand's whose shape "
        "is the result's). ``name=``: a persistent name for the result.\n"
        "docs/api.md lists the dtypes each op takes."
    )
    return ufunc


def _make_reduction(name: str) -> Callable[..., Any]:
    def reduction(a: Any, axis: Axis = None, *, keepdims: bool = False, combine: Optional[bool] = None,
                  name: Optional[str] = None):
        if not isinstance(a, ArrayOps):
            raise TypeError(f"distarray.{reduction.__name__} takes a DistributedArray")
        options: Dict[str, Any] = {}
        if combine is not None:
            options["combine"] = combine
        if name is not None:
            options["result_name"] = name
        return getattr(a, op_name)(axis=axis, keepdims=keepdims, **options)

    op_name = name
    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = (
        f"NumPy's ``{name}`` over ``axis`` (None: every axis), with ``keepdims``. On arrays the "
        "result holds one partial per chunk in the op's mode (combined on download or "
        "change_mode), as cupyx's; ``combine=True`` combines it at once."
    )
    return reduction


_namespace: Dict[str, Callable[..., Any]] = {}
for _name, (_op, _nargs) in UFUNCS.items():
    _namespace[_name] = _make_ufunc(_name, _nargs)
for _alias, _name in ALIASES.items():
    _namespace[_alias] = _namespace[_name]
for _name in REDUCTIONS:
    _namespace[_name] = _make_reduction(_name)
for _alias, _name in REDUCTION_ALIASES.items():
    _namespace[_alias] = _namespace[_name]
globals().update(_namespace)


def astype(a: Any, dtype, *, name: Optional[str] = None):
    """``a`` converted to ``dtype`` (NumPy's unsafe casting; see docs/api.md)."""
    if not isinstance(a, ArrayOps):
        raise TypeError("distarray.astype takes a DistributedArray")
    return a._ufunc("astype", (a,), dtype=dtype, **({"result_name": name} if name else {}))


def matmul(a: Any, b: Any, *, allow_tf32: bool = False, a_symmetric: bool = False,
           index_map=None, name: Optional[str] = None):
    """``a @ b`` as ``numpy.matmul`` for float16/bfloat16/float32/float64 arrays of one dtype:
    vectors, matrices and stacks (the axes before the last two broadcast). When the shared axis is
    split the result is a 'sum'-mode array of partial products (combined on download).
    ``a_symmetric=True`` asserts that ``a`` is a symmetric float32 or float64 matrix: held whole on
    one device, only its upper triangle is read (half the bytes; docs/api.md)."""
    if not isinstance(a, ArrayOps) or not isinstance(b, ArrayOps):
        raise TypeError("distarray.matmul takes two arrays")
    options: Dict[str, Any] = {"allow_tf32": allow_tf32}
    if a_symmetric:
        options["a_symmetric"] = True
    if index_map is not None:
        options["index_map"] = index_map
    if name is not None:
        options["result_name"] = name
    return a._matmul(a, b, **options)


__all__ = sorted(_namespace) + ["astype", "matmul"]
