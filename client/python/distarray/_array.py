"""DistributedArray: a handle to an array that lives on the daemon's devices."""

from __future__ import annotations

import logging
import weakref
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _api_indexing, _functions, _masking, _numpy_dispatch, _repr, _transfer
from ._api_namespace import ArrayApiMethods
from ._errors import translate_errors
from ._index_map import IndexMap, IndexMapLike, from_proto_index_map, to_proto_index_map
from ._indexing import Key
from ._manipulation import ManipulationOps, set_item_spec
from ._methods import NumpyMethods
from ._ops import NDARRAY_OPERAND, REDUCTIONS, UFUNCS, ArrayOps, Axis, normalize_axes
from ._rpc import Rpc
from ._types import (
    ModeLike,
    from_proto_dtype,
    is_scalar,
    mode_name,
    to_proto_dtype,
    to_proto_mode,
    to_proto_scalar,
)
from .v1 import distarray_pb2 as pb

_log = logging.getLogger("distarray")

Region = Union[slice, Tuple[slice, ...]]


def _release(rpc_ref: "weakref.ref[Rpc]", handle: str) -> None:
    """Deletes an owned array whose Python object died. Best effort: a failure (the daemon gone,
    the client closed) is logged at debug; the session lease cleans up after it anyway."""
    rpc = rpc_ref()
    if rpc is None or rpc.closed:
        return
    try:
        rpc.call("DeleteArray", pb.DeleteArrayRequest(handle=handle), timeout=10)
    except Exception as e:  # noqa: BLE001: a finalizer must not raise
        _log.debug("distarray: releasing %s failed: %s", handle, e)


class DistributedArray(ArrayOps, ManipulationOps, NumpyMethods, ArrayApiMethods):
    """A NumPy-like handle to an array split across the daemon's devices.

    Create one with ``client.from_numpy(arr, index_map)`` (or ``distarray.from_numpy``),
    ``client.zeros(...)`` and friends, or find a named one with ``client.attach(name)``.

    Attributes: ``shape``, ``dtype`` (a NumPy dtype), ``ndim``, ``size``, ``nbytes``,
    ``index_map`` (cupyx's form: ``{device: [tuple of slices, ...]}``, normalized by the daemon),
    ``mode`` (``'replica'``, ``'sum'``, ``'prod'``, ``'max'`` or ``'min'``: how overlapping copies
    combine), ``name`` (``''`` when unnamed), ``handle``.

    Values: ``to_numpy()`` or ``numpy.asarray(x)``; ``write(values)`` overwrites in place. These
    are the only downloads: NumPy functions distarray does not serve raise TypeError rather than
    download the array behind the caller's back (``__array_function__``).
    Indexing (NumPy's basic indexing, on the devices): ``x[1:, ::-1, None, ...]`` is a new array,
    ``x[key] = value`` (a scalar or a DistributedArray) updates this one in place; one integer
    array per key, and a boolean DistributedArray mask (``x[x > 0]``); ``len(x)``,
    ``for row in x``. Shapes: ``T``, ``mT``, ``transpose``, ``reshape``, ``flatten``, ``ravel``,
    ``squeeze``, ``swapaxes``; ``distarray.concat``, ``stack``, ``expand_dims``, ``flip``...
    Layout: ``reshard(index_map, mode=None)``, ``change_mode(mode)``.
    Compute (on the devices; results are new arrays): the operators ``+ - * / // % ** @``, unary
    ``-``, ``abs``, comparisons, ``& | ^ ~ << >>`` (in-place forms write into this array), NumPy's
    ufuncs as ``distarray.sqrt(x)`` (also ``numpy.sqrt(x)``), reductions as methods
    (``x.sum(axis=0, keepdims=True)``, ``mean``, ``max``, ``argmax``...), ``astype``, ``clip``.
    Python scalars on either side are weak, as in NumPy 2. NumPy's other methods, in its
    signatures (``distarray._methods``): ``copy``, ``std``/``var`` (``ddof=`` or
    ``correction=``), ``cumsum``, ``cumprod``, ``dot``, ``sort`` (in place), ``argsort``,
    ``nonzero``, ``take``, ``repeat``, ``round``, ``conj``, ``real``, ``imag``, ``diagonal``,
    ``trace``, ``fill``, ``tolist`` (a download).

    Lifetime: an unnamed array created through this object is deleted on the daemon when the
    object is garbage collected (or its client closes, or the process dies and the session lease
    runs out). A named array (``name=``) persists until ``client.delete(name)``; ``release()``
    keeps an unnamed one until its client's session ends (the client closes, or the lease runs
    out; a ``session=False`` client's arrays have no session and stay).
    """

    def __init__(self, client, info: "pb.ArrayInfo", *, owned: bool):
        self._client = client
        self._rpc = rpc = Rpc.of(client)
        self._info = info
        self._finalizer: Optional[weakref.finalize] = None
        if owned and not info.name:
            self._finalizer = weakref.finalize(self, _release, weakref.ref(rpc), info.handle)
            self._finalizer.atexit = False  # the session lease covers a process that exits
            rpc.track(self)

    # ---- description ------------------------------------------------------------------------

    @property
    def client(self):
        """The Client this array belongs to (its connection and session)."""
        return self._client

    @property
    def info(self) -> "pb.ArrayInfo":
        """The daemon's ArrayInfo for this array (as of the last call that returned it)."""
        return self._info

    @property
    def handle(self) -> str:
        return self._info.handle

    @property
    def name(self) -> str:
        return self._info.name

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._info.shape.dims)

    @property
    def ndim(self) -> int:
        return len(self._info.shape.dims)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> np.dtype:
        return from_proto_dtype(self._info.dtype)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def mode(self) -> str:
        return mode_name(self._info.mode)

    @property
    def index_map(self) -> IndexMap:
        return from_proto_index_map(self._info.index_map)

    @property
    def devices(self) -> Tuple[int, ...]:
        """The devices holding chunks of this array."""
        return tuple(sorted({c.device for c in self._info.index_map.chunks}))

    @property
    def bytes_per_device(self) -> Dict[int, int]:
        return dict(self._info.bytes_per_device)

    @property
    def owned(self) -> bool:
        """Whether this object deletes the array when it dies."""
        return self._finalizer is not None and self._finalizer.alive

    def __repr__(self) -> str:
        """The values as NumPy summarises them (arrays over 1000 elements: only the corners are
        downloaded), then shape, dtype, handle and layout; the description alone when the
        daemon cannot be reached. Never raises (``distarray._repr``)."""
        return _repr.array_repr(self)

    def _repr_html_(self) -> str:
        """Jupyter's view: the values (the same bounded download as ``repr``) and a table of the
        chunks: which device holds which box."""
        return _repr.array_html(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self) -> Iterator["DistributedArray"]:
        """The sub-arrays along axis 0, ``self[0]``, ``self[1]``... (one request each)."""
        for i in range(len(self)):
            yield self[i]

    # ---- indexing and shapes (ManipulationOps) ----------------------------------------------

    @translate_errors
    def _manipulate(self, spec: "pb.ManipulationSpec",
                    result_name: Optional[str] = None) -> "DistributedArray":
        self._rpc.require(_manipulate_feature(spec))
        request = pb.ManipulateRequest(spec=spec, result_name=result_name or "")
        response = self._rpc.call("Manipulate", request)
        return DistributedArray(self._client, response.array, owned=True)

    def __getitem__(self, key: Key) -> "DistributedArray":
        """NumPy's basic indexing (integers, slices, None, ``...``), one integer array along one
        axis, integer arrays (and integers) on every axis (``x[i, j]``: broadcast together, as
        NumPy's advanced indexing), and a boolean DistributedArray ``mask`` matching the leading
        axes (``x[mask]``: the selected elements, their count read back). A new array."""
        mask = _masking.mask_of(key, DistributedArray)
        if mask is not None:
            return _masking.get_masked(self, mask)
        if _api_indexing.arrays_key(self, key):
            return _api_indexing.integer_arrays_get(self, key)
        return ManipulationOps.__getitem__(self, key)

    @translate_errors
    def __setitem__(self, key: Key, value: Any) -> None:
        """``self[key] = value``: ``value`` (a scalar, or a DistributedArray of this client)
        broadcast to the selected elements and converted to this dtype, on the devices. The
        array keeps its handle; its description (``info``) is refreshed from the response.
        ``key`` may be a boolean DistributedArray matching the leading axes (``x[mask] = 0``:
        ``where(mask, value, x)`` written into this array; a value of one row per selected
        element is gathered to the selected positions first).

        NumPy arrays and lists are refused rather than uploaded behind the caller's back: upload
        them explicitly (``distarray.asarray(values)``, ``client.from_numpy(values)``), or write
        a slice region with ``write(values, region)``."""
        if not (isinstance(value, DistributedArray) or is_scalar(value)):
            raise TypeError(
                f"x[key] = value takes a scalar or a DistributedArray, not "
                f"{type(value).__name__}: distarray does not upload implicitly. Upload the values "
                "first (x[key] = distarray.asarray(values), or client.from_numpy(values)), or "
                "write a region of slices with x.write(values, region)"
            )
        mask = _masking.mask_of(key, DistributedArray)
        if mask is not None:
            _masking.set_masked(self, mask, value, DistributedArray)
            return
        spec = set_item_spec(self, key, value)
        self._rpc.require(_manipulate_feature(spec))
        response = self._rpc.call("Manipulate", pb.ManipulateRequest(spec=spec))
        self._info = response.array

    # ---- values -----------------------------------------------------------------------------

    def to_numpy(
        self, region: Optional[Region] = None, *, out: Optional[np.ndarray] = None,
        progress: Optional[bool] = None, timeout: Optional[float] = None,
    ) -> np.ndarray:
        """The logical values (ops modes combined) as a new NumPy array.

        ``region``: a slice or tuple of slices, one per axis from the first, selecting what
        NumPy's ``a[region]`` selects (negative steps included); bounds outside the array are
        OutOfRangeError rather than clamped. Large whole-array downloads run over parallel
        streams and show a progress bar when stderr is a terminal (``progress=False``: never).
        ``out``: a C-contiguous array of this shape and dtype to download into (whole arrays;
        memory already in use is faster to fill than fresh pages).
        """
        if region is None:
            return _transfer.download(
                self._rpc, self._info, out=out, progress=progress, timeout=timeout
            )
        if out is not None:
            raise ValueError("out= takes whole-array downloads only")
        return _transfer.download_region(
            self._rpc, self._info, _region_proto(region, self.ndim), timeout=timeout
        )

    def get(self, **kwargs: Any) -> np.ndarray:
        """``to_numpy()``, as CuPy's ``get``."""
        return self.to_numpy(**kwargs)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``numpy.asarray(x)``: an explicit download. NumPy functions reach this only through
        ``__array_function__``, which serves or refuses them first."""
        values = self.to_numpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    def write(
        self, values: Any, region: Optional[Region] = None, *, progress: Optional[bool] = None,
        timeout: Optional[float] = None,
    ) -> None:
        """Overwrites the array (or ``region``) with ``values`` converted to its dtype. The array
        must be in 'replica' mode (FailedPreconditionError otherwise)."""
        arr = np.asarray(values, dtype=self.dtype)
        if region is None:
            if arr.shape != self.shape:
                arr = np.broadcast_to(arr, self.shape)
            _transfer.write(self._rpc, self._info, arr, progress=progress, timeout=timeout)
        else:
            _transfer.write(
                self._rpc, self._info, arr, _region_proto(region, self.ndim),
                progress=progress, timeout=timeout,
            )

    def _scalar_value(self):
        if self.size != 1:
            raise ValueError(
                f"the truth value of an array of {self.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return self.to_numpy().reshape(()).item()

    def __bool__(self) -> bool:
        return bool(self._scalar_value())

    def __float__(self) -> float:
        return float(self._scalar_value())

    def __int__(self) -> int:
        return int(self._scalar_value())

    def item(self):
        """The value of a one-element array as a Python scalar."""
        return self._scalar_value()

    # ---- layout -----------------------------------------------------------------------------

    @translate_errors
    def reshard(
        self, index_map: Optional[IndexMapLike] = None, mode: Optional[ModeLike] = None, *,
        in_place: bool = False,
    ) -> "DistributedArray":
        """The same values in another layout and/or mode (``None`` keeps it). A new array, or with
        ``in_place=True`` this one (same handle and name) in its new layout."""
        request = pb.ReshardRequest(handle=self.handle, in_place=in_place)
        if index_map is not None:
            request.index_map.CopyFrom(to_proto_index_map(index_map, self.ndim))
        if mode is not None:
            request.mode = to_proto_mode(mode)
        response = self._rpc.call("Reshard", request)
        return self._result(response.array, in_place)

    @translate_errors
    def change_mode(self, mode: ModeLike, *, in_place: bool = False) -> "DistributedArray":
        """The same logical values in another mode ('replica' combines the copies)."""
        request = pb.ChangeModeRequest(handle=self.handle, mode=to_proto_mode(mode), in_place=in_place)
        response = self._rpc.call("ChangeMode", request)
        return self._result(response.array, in_place)

    def _result(self, info: "pb.ArrayInfo", in_place: bool) -> "DistributedArray":
        if in_place:
            self._info = info
            return self
        return DistributedArray(self._client, info, owned=True)

    @translate_errors
    def refresh(self) -> "DistributedArray":
        """Re-reads the daemon's description of this array."""
        response = self._rpc.call("DescribeArray", pb.DescribeArrayRequest(handle=self.handle))
        self._info = response.array
        return self

    def release(self) -> str:
        """Stops owning the array: it stays on the daemon after this object dies. Returns the
        handle (an unnamed array still belongs to the client's session, and goes when the client
        closes or its lease runs out: see ``connect``)."""
        if self._finalizer is not None:
            self._finalizer.detach()
        return self.handle

    def delete(self) -> None:
        """Deletes the array on the daemon now."""
        if self._finalizer is not None:
            self._finalizer.detach()
        self._client.delete(self.handle)

    # ---- pickle and copy ----------------------------------------------------------------------

    def __reduce_ex__(self, protocol):
        """Refused: the object is a handle tied to its client's connection and session, which
        cannot travel to another process or be duplicated (two owners would delete the array
        twice). Without this, pickle and copy fail deep inside gRPC's channel."""
        raise TypeError(
            f"a DistributedArray cannot be pickled or copied: it is a handle to an array on "
            f"distarrayd, tied to its client's connection ({self.handle}). To use the array "
            "elsewhere, give it a name (client.from_numpy(..., name='x'), or pass the name of a "
            "named array) and call client.attach('x') there; for its values, pickle "
            "x.to_numpy(); for a copy on the daemon, x.reshard()"
        )

    def __copy__(self):
        return self.__reduce_ex__(2)

    def __deepcopy__(self, memo):
        return self.__reduce_ex__(2)

    # ---- compute (ArrayOps) -----------------------------------------------------------------

    def _accepts(self, other: Any) -> bool:
        return isinstance(other, DistributedArray) or is_scalar(other)

    def _operand(self, value: Any) -> "pb.Operand":
        if isinstance(value, DistributedArray):
            if value._client is not self._client:
                raise ValueError("operands belong to different clients")
            return pb.Operand(handle=value.handle)
        if is_scalar(value):
            return pb.Operand(scalar=to_proto_scalar(value))
        if isinstance(value, np.ndarray):
            raise TypeError(NDARRAY_OPERAND)
        raise TypeError(f"not a distarray operand: {type(value).__name__}")

    @translate_errors
    def _ufunc(
        self, name: str, operands: Sequence[Any], *, dtype=None, out: Optional["DistributedArray"] = None,
        index_map: Optional[IndexMapLike] = None, result_name: Optional[str] = None,
    ) -> "DistributedArray":
        op = pb.ELEMENTWISE_OP_ASTYPE if name == "astype" else UFUNCS[name][0]
        self._rpc.require(f"elementwise.{name}")
        spec = pb.ElementwiseOpSpec(op=op, operands=[self._operand(o) for o in operands])
        if dtype is not None:
            spec.dtype = to_proto_dtype(dtype)
        if out is not None:
            if not isinstance(out, DistributedArray):
                raise TypeError("out= takes a DistributedArray")
            spec.out = out.handle
        if index_map is not None:
            ndim = max((o.ndim for o in operands if isinstance(o, DistributedArray)), default=0)
            spec.result_index_map.CopyFrom(to_proto_index_map(index_map, ndim))
        request = pb.ElementwiseRequest(spec=spec, result_name=result_name or "")
        response = self._rpc.call("Elementwise", request)
        if out is not None:
            out._info = response.array
            return out
        return DistributedArray(self._client, response.array, owned=True)

    @translate_errors
    def _reduce(
        self, name: str, axis: Axis, keepdims: bool, *, combine: bool = False,
        result_name: Optional[str] = None,
    ) -> "DistributedArray":
        self._rpc.require(f"reduce.{name}")
        spec = pb.ReduceOpSpec(
            op=REDUCTIONS[name], operand=pb.Operand(handle=self.handle),
            axes=normalize_axes(axis), keepdims=keepdims, combine=combine,
        )
        request = pb.ReduceRequest(spec=spec, result_name=result_name or "")
        response = self._rpc.call("Reduce", request)
        return DistributedArray(self._client, response.array, owned=True)

    @translate_errors
    def _matmul(
        self, a: "DistributedArray", b: "DistributedArray", *, allow_tf32: bool = False,
        a_symmetric: bool = False, index_map: Optional[IndexMapLike] = None,
        result_name: Optional[str] = None,
    ) -> "DistributedArray":
        self._rpc.require("matmul")
        spec = pb.MatmulOpSpec(a=self._operand(a), b=self._operand(b), allow_tf32=allow_tf32,
                               a_symmetric=a_symmetric)
        if index_map is not None:
            spec.result_index_map.CopyFrom(to_proto_index_map(index_map, 2))
        request = pb.MatmulRequest(spec=spec, result_name=result_name or "")
        response = self._rpc.call("Matmul", request)
        return DistributedArray(self._client, response.array, owned=True)

    @translate_errors
    def _linalg(
        self, op: str, a: "DistributedArray", b: Optional["DistributedArray"] = None, *,
        upper: bool = False, full_matrices: bool = False, compute_uv: bool = False,
    ) -> List["DistributedArray"]:
        """The daemon's Linalg ``op`` (solve, inv, cholesky, qr, eigh, svd, det, slogdet): its
        results in LinalgOp's order, each one chunk on the device ``a`` was gathered to."""
        self._rpc.require(f"linalg.{op}")
        spec = pb.LinalgOpSpec(op=pb.LinalgOp.Value(f"LINALG_OP_{op.upper()}"),
                               a=self._operand(a), upper=upper, full_matrices=full_matrices,
                               compute_uv=compute_uv)
        if b is not None:
            spec.b.CopyFrom(self._operand(b))
        response = self._rpc.call("Linalg", pb.LinalgRequest(spec=spec))
        return [DistributedArray(self._client, info, owned=True) for info in response.arrays]

    def __matmul__(self, o):
        if not isinstance(o, DistributedArray):
            return NotImplemented
        from ._api_linalg import matmul  # every numeric dtype, not only the daemon's floats

        return matmul(self, o)

    def __rmatmul__(self, o):
        if not isinstance(o, DistributedArray):
            return NotImplemented
        from ._api_linalg import matmul

        return matmul(o, self)

    def _inplace(self, name: str, other: Any) -> "DistributedArray":
        if not self._accepts(other):
            return NotImplemented
        return self._ufunc(name, (self, other), out=self)

    def __iadd__(self, o): return self._inplace("add", o)
    def __isub__(self, o): return self._inplace("subtract", o)
    def __imul__(self, o): return self._inplace("multiply", o)
    def __itruediv__(self, o): return self._inplace("true_divide", o)
    def __ifloordiv__(self, o): return self._inplace("floor_divide", o)
    def __imod__(self, o): return self._inplace("remainder", o)
    def __ipow__(self, o): return self._inplace("power", o)
    def __iand__(self, o): return self._inplace("bitwise_and", o)
    def __ior__(self, o): return self._inplace("bitwise_or", o)
    def __ixor__(self, o): return self._inplace("bitwise_xor", o)
    def __ilshift__(self, o): return self._inplace("left_shift", o)
    def __irshift__(self, o): return self._inplace("right_shift", o)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """``numpy.sqrt(x)`` and friends run on the daemon; what it does not serve raises
        TypeError (NumPy's answer to NotImplemented) rather than downloading."""
        name = ufunc.__name__
        if method == "__call__" and name == "matmul" and len(inputs) == 2 and not kwargs:
            return _functions.matmul(*inputs)
        if method != "__call__" or name not in UFUNCS and name not in ("divide",):
            return NotImplemented
        if any(isinstance(i, np.ndarray) for i in inputs):
            raise TypeError(NDARRAY_OPERAND)
        out = kwargs.pop("out", None)
        if kwargs or not all(isinstance(i, DistributedArray) or is_scalar(i) for i in inputs):
            return NotImplemented
        if out is not None:
            if len(out) != 1 or not isinstance(out[0], DistributedArray):
                return NotImplemented
            out = out[0]
        return getattr(_functions, name)(*inputs, out=out)


    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions: those distarray serves run on the daemon (``numpy.concatenate``,
        ``numpy.where``, ``numpy.sum``...); the rest raise TypeError naming the explicit
        download, where NumPy would otherwise download every argument through ``__array__``."""
        if not all(issubclass(t, (DistributedArray, np.ndarray)) for t in types):
            return NotImplemented  # another library's array: let it answer
        return _numpy_dispatch.dispatch(func, args, kwargs)


def _manipulate_feature(spec: "pb.ManipulationSpec") -> str:
    """GetServerInfo's feature for a manipulation ("manipulate.get_item", "manipulate.stack")."""
    op = spec.WhichOneof("op")
    if op in ("get_item", "set_item"):
        key = spec.get_item.key if op == "get_item" else spec.set_item.key
        if any(item.WhichOneof("kind") == "array" for item in key.items):
            return "manipulate.take"  # an index array held in the daemon (IndexItem.array)
    return "manipulate." + ("stack" if op == "concat" and spec.concat.stack else str(op))


def _region_proto(region: Region, ndim: int) -> "pb.Region":
    if isinstance(region, slice):
        region = (region,)
    if not isinstance(region, tuple) or not all(isinstance(s, slice) for s in region):
        raise TypeError("a region is a slice or a tuple of slices (one per axis)")
    if len(region) > ndim:
        raise ValueError(f"a region of {len(region)} slices for an array of {ndim} axes")
    proto = pb.Region()
    for s in region + (slice(None),) * (ndim - len(region)):
        out = proto.slices.add()
        for field in ("start", "stop", "step"):
            v = getattr(s, field)
            if v is not None:
                setattr(out, field, int(v))
    return proto
