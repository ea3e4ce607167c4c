"""``csr_matrix``: CSR blocks on the daemon (distarray/sparse/__init__.py)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._array import DistributedArray
from .._default import current as _current_client
from .._errors import translate_errors
from .._graph import Var
from ..v1 import distarray_pb2 as pb

_VALUE_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _value_dtype(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.kind in "biu":
        return np.dtype(np.float64)
    if dt not in [np.dtype(d) for d in _VALUE_DTYPES]:
        raise TypeError(
            f"sparse values are float32, float64, complex64 or complex128, not {dt.name}")
    return dt


def _row_blocks(m: int, devices: Sequence[int]) -> List[Tuple[int, int, int]]:
    """(device, first row, end row) of near-equal contiguous blocks; devices that would get no
    row get no block."""
    parts = len(devices)
    blocks, first = [], 0
    for b, device in enumerate(devices):
        rows = m // parts + (1 if b < m % parts else 0)
        if rows:
            blocks.append((int(device), first, first + rows))
            first += rows
    return blocks


def _end_to_end(devices: Sequence[int], lengths: Sequence[int]) -> Dict[int, list]:
    out: Dict[int, list] = {}
    offset = 0
    for device, length in zip(devices, lengths):
        out.setdefault(int(device), []).append((slice(offset, offset + int(length)),))
        offset += int(length)
    return out


class csr_matrix:  # noqa: N801: SciPy's name
    """A sparse matrix in CSR blocks on the daemon's devices (see the module's docstring).

    ``csr_matrix(S)`` for a SciPy sparse matrix (anything with ``tocoo()``) or a 2-D NumPy
    array; ``csr_matrix((data, (row, col)), shape=...)``; ``csr_matrix((data, indices, indptr),
    shape=...)``. ``devices``: where the row blocks go (default: device 0). ``dtype``: the values'
    (float32, float64, complex64, complex128; integers become float64).
    """

    def __init__(self, arg: Any, shape: Optional[Tuple[int, int]] = None, dtype: Any = None, *,
                 devices: Optional[Sequence[int]] = None, client: Any = None):
        if isinstance(arg, _Parts):
            self._set(arg)
            return
        client = client or _current_client()
        if client is None:
            raise ValueError("no client: pass client= or connect first (distarray.connect)")
        row, col, data, shape = _triplets(arg, shape)
        data = data.astype(_value_dtype(dtype if dtype is not None else data.dtype), copy=False)
        self._set(_upload(client, row, col, data, shape, list(devices or [0])))

    def _set(self, parts: "_Parts") -> None:
        self._parts = parts
        self._transpose: Optional["csr_matrix"] = None

    # ---- what SciPy's matrices have -----------------------------------------------------------

    @property
    def shape(self) -> Tuple[int, int]:
        return self._parts.shape

    @property
    def dtype(self) -> np.dtype:
        return self._parts.data.dtype

    @property
    def ndim(self) -> int:
        return 2

    @property
    def nnz(self) -> int:
        """The entries stored (duplicates summed)."""
        return self._parts.nnz

    @property
    def format(self) -> str:
        return "csr"

    @property
    def devices(self) -> List[int]:
        return [c.device for c in self._parts.blocks.chunks]

    @property
    def data(self) -> DistributedArray:
        return self._parts.data

    @property
    def indices(self) -> DistributedArray:
        return self._parts.indices

    @property
    def indptr(self) -> DistributedArray:
        return self._parts.indptr

    def __repr__(self) -> str:
        return (f"<{self.shape[0]}x{self.shape[1]} distarray.sparse.csr_matrix of dtype "
                f"{self.dtype.name} with {self.nnz} stored elements in {len(self.devices)} "
                f"row blocks on devices {self.devices}>")

    def proto(self) -> "pb.CsrMatrix":
        """The request message naming this matrix's arrays by handle."""
        p = self._parts
        return pb.CsrMatrix(
            indptr=pb.Operand(handle=p.indptr.handle), indices=pb.Operand(handle=p.indices.handle),
            data=pb.Operand(handle=p.data.handle), shape=pb.Shape(dims=list(p.shape)),
            blocks=p.blocks)

    @property
    def T(self) -> "csr_matrix":  # noqa: N802: SciPy's name
        """The transpose, built once by the daemon and kept: block i of A.T is A's block i
        transposed, on the same device, so ``A.T @ y`` sums one partial product per device."""
        if self._transpose is None:
            self._transpose = self._transposed()
            self._transpose._transpose = self
        return self._transpose

    def transpose(self) -> "csr_matrix":
        return self.T

    @translate_errors
    def _transposed(self) -> "csr_matrix":
        p = self._parts
        rpc = p.data._rpc
        rpc.require("sparse.transpose")
        response = rpc.call("Sparse", pb.SparseRequest(spec=pb.SparseOpSpec(transpose=self.proto())))
        client = p.data._client
        indptr, indices, data = (DistributedArray(client, info, owned=True)
                                 for info in response.arrays)
        blocks = pb.IndexMap()
        for c in p.blocks.chunks:
            t = blocks.chunks.add()
            t.device = c.device
            t.slices.add().CopyFrom(c.slices[1])
            t.slices.add().CopyFrom(c.slices[0])
        return csr_matrix(_Parts(indptr, indices, data, (p.shape[1], p.shape[0]), blocks, p.nnz))

    @translate_errors
    def toarray(self) -> DistributedArray:
        """The dense matrix as a DistributedArray in the blocks' layout (``.to_numpy()`` for
        NumPy's)."""
        rpc = self._parts.data._rpc
        rpc.require("sparse.to_dense")
        response = rpc.call("Sparse", pb.SparseRequest(spec=pb.SparseOpSpec(to_dense=self.proto())))
        return DistributedArray(self._parts.data._client, response.arrays[0], owned=True)

    def todense(self) -> DistributedArray:
        return self.toarray()

    def to_scipy(self) -> Any:
        """The matrix as a ``scipy.sparse.csr_matrix`` on the host (downloads the parts)."""
        import scipy.sparse

        rows, cols, vals = [], [], []
        p = self._parts
        indptr, indices, data = p.indptr.to_numpy(), p.indices.to_numpy(), p.data.to_numpy()
        ip, ie = 0, 0  # where each block's parts start in the arrays laid end to end
        for chunk in p.blocks.chunks:
            r0, r1 = chunk.slices[0].start, chunk.slices[0].stop
            local = indptr[ip:ip + (r1 - r0) + 1]
            stored = int(local[-1])
            rows.append(np.repeat(np.arange(r0, r1), np.diff(local)))
            cols.append(chunk.slices[1].start + indices[ie:ie + stored].astype(np.int64))
            vals.append(data[ie:ie + stored])
            ip += (r1 - r0) + 1
            ie += max(stored, 1)  # a block without entries keeps one unused entry
        cat = (lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype))
        rows, cols, vals = cat(rows, np.int64), cat(cols, np.int64), cat(vals, self.dtype)
        return scipy.sparse.csr_matrix((vals, (rows, cols)), shape=self.shape)

    # ---- products -----------------------------------------------------------------------------

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, Var):
            return self._traced_matmul(other)
        if isinstance(other, DistributedArray):
            return self._matmul(other)
        if isinstance(other, np.ndarray):
            raise TypeError("A @ x takes a DistributedArray (upload NumPy arrays with from_numpy)")
        return NotImplemented

    def dot(self, other: Any) -> Any:
        return self @ other

    @translate_errors
    def _matmul(self, b: DistributedArray) -> DistributedArray:
        rpc = self._parts.data._rpc
        rpc.require("sparse.matmul")
        spec = pb.MatmulOpSpec(sparse_a=self.proto(), b=pb.Operand(handle=b.handle))
        response = rpc.call("Matmul", pb.MatmulRequest(spec=spec))
        return DistributedArray(b._client, response.array, owned=True)

    def _traced_matmul(self, b: Var) -> Var:
        program = b.program
        indptr, indices, data = (program.capture(a) for a in
                                 (self._parts.indptr, self._parts.indices, self._parts.data))
        s = pb.Statement()
        matrix = s.matmul.sparse_a
        matrix.indptr.variable = indptr.name
        matrix.indices.variable = indices.name
        matrix.data.variable = data.name
        matrix.shape.dims.extend(self.shape)
        matrix.blocks.CopyFrom(self._parts.blocks)
        s.matmul.b.variable = b.name
        return program._emit(s, "spmv")

    # ---- layouts of the vectors a solver keeps --------------------------------------------------

    def row_index_map(self) -> Dict[int, list]:
        """The layout of ``A @ x`` (1-D): each block's rows on its device."""
        out: Dict[int, list] = {}
        for c in self._parts.blocks.chunks:
            out.setdefault(c.device, []).append((slice(c.slices[0].start, c.slices[0].stop),))
        return out

    def column_index_map(self) -> Dict[int, list]:
        """Every column on every device of a block (1-D): where ``A @ x`` reads ``x`` from
        without a copy."""
        return {d: [(slice(0, self.shape[1]),)] for d in dict.fromkeys(self.devices)} or {
            0: [(slice(0, self.shape[1]),)]}


def isspmatrix_csr(x: Any) -> bool:
    return isinstance(x, csr_matrix)


class _Parts:
    __slots__ = ("indptr", "indices", "data", "shape", "blocks", "nnz")

    def __init__(self, indptr, indices, data, shape, blocks, nnz):
        self.indptr, self.indices, self.data = indptr, indices, data
        self.shape, self.blocks, self.nnz = (int(shape[0]), int(shape[1])), blocks, int(nnz)


def _triplets(arg: Any, shape: Optional[Tuple[int, int]]):
    """(row, col, data, shape) of any accepted form, checked."""
    if hasattr(arg, "tocoo"):  # a SciPy sparse matrix or array
        coo = arg.tocoo()
        return (np.asarray(coo.row, np.int64), np.asarray(coo.col, np.int64),
                np.asarray(coo.data), tuple(int(d) for d in (shape or coo.shape)))
    if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[1], tuple):
        data, (row, col) = arg
        row, col, data = np.asarray(row), np.asarray(col), np.asarray(data)
        if not (len(row) == len(col) == len(data)):
            raise ValueError(f"row, col and data: lengths {len(row)}, {len(col)} and {len(data)} "
                             "differ (one triplet per entry)")
        if shape is None:
            shape = (int(row.max()) + 1 if len(row) else 0, int(col.max()) + 1 if len(col) else 0)
        return row.astype(np.int64), col.astype(np.int64), data, _check_shape(shape)
    if isinstance(arg, tuple) and len(arg) == 3:
        data, indices, indptr = (np.asarray(a) for a in arg)
        if shape is None:
            raise ValueError("csr_matrix((data, indices, indptr)) needs shape=")
        shape = _check_shape(shape)
        if len(indptr) != shape[0] + 1:
            raise ValueError(f"indptr: {len(indptr)} offsets for {shape[0]} rows (rows + 1)")
        if len(indices) != len(data) or (len(indptr) and int(indptr[-1]) != len(data)):
            raise ValueError(f"indices, data: lengths {len(indices)} and {len(data)}; indptr "
                             f"ends at {int(indptr[-1]) if len(indptr) else 0}")
        if np.any(np.diff(indptr) < 0) or (len(indptr) and indptr[0] != 0):
            raise ValueError("indptr: offsets start at 0 and never decrease")
        row = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(indptr))
        return row, indices.astype(np.int64), data, shape
    dense = np.asarray(arg)
    if dense.ndim != 2:
        raise ValueError(f"a dense matrix has two axes, not {dense.ndim}")
    row, col = np.nonzero(dense)
    return row.astype(np.int64), col.astype(np.int64), dense[row, col], dense.shape


def _check_shape(shape) -> Tuple[int, int]:
    shape = tuple(int(d) for d in shape)
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError(f"shape: a sparse matrix has two axes of length >= 0, not {shape}")
    return shape  # type: ignore[return-value]


def _upload(client: Any, row, col, data, shape, devices) -> _Parts:
    m, n = shape
    if len(row) and (row.min() < 0 or row.max() >= m):
        bad = int(np.flatnonzero((row < 0) | (row >= m))[0])
        raise ValueError(f"row[{bad}]: {int(row[bad])} is out of range for {m} rows")
    if len(col) and (col.min() < 0 or col.max() >= n):
        bad = int(np.flatnonzero((col < 0) | (col >= n))[0])
        raise ValueError(f"col[{bad}]: {int(col[bad])} is out of range for {n} columns")
    # Sorted by (row, column); equal positions summed. Input already in that order (a canonical
    # SciPy CSR, a generated stencil) skips the sort.
    canonical = len(row) < 2 or bool(np.all((row[1:] > row[:-1]) |
                                            ((row[1:] == row[:-1]) & (col[1:] > col[:-1]))))
    if not canonical:
        order = np.lexsort((col, row))
        row, col, data = row[order], col[order], data[order]
    if len(row) and not canonical:
        first = np.ones(len(row), dtype=bool)
        first[1:] = (row[1:] != row[:-1]) | (col[1:] != col[:-1])
        starts = np.flatnonzero(first)
        data = np.add.reduceat(data, starts)
        row, col = row[starts], col[starts]
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=m), out=indptr[1:])
    index_dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
    block_devices, indptr_parts, index_parts, data_parts, blocks = [], [], [], [], pb.IndexMap()
    for device, r0, r1 in (_row_blocks(m, devices) if m and n else []):
        e0, e1 = int(indptr[r0]), int(indptr[r1])
        indptr_parts.append(indptr[r0:r1 + 1] - e0)
        if e1 > e0:
            index_parts.append(col[e0:e1].astype(index_dtype))
            data_parts.append(data[e0:e1])
        else:  # a chunk is never empty: one unused entry
            index_parts.append(np.zeros(1, index_dtype))
            data_parts.append(np.zeros(1, data.dtype))
        block_devices.append(device)
        chunk = blocks.chunks.add()
        chunk.device = device
        chunk.slices.add(start=r0, stop=r1, step=1)
        chunk.slices.add(start=0, stop=n, step=1)

    def part(pieces, dtype):
        values = np.concatenate(pieces).astype(dtype, copy=False) if pieces else np.zeros(0, dtype)
        lengths = [len(p) for p in pieces]
        index_map = _end_to_end(block_devices, lengths) if pieces else {0: [(slice(0, 0),)]}
        return client.from_numpy(values, index_map)

    return _Parts(part(indptr_parts, np.int64), part(index_parts, index_dtype),
                  part(data_parts, data.dtype), (m, n), blocks, len(data))


def random(m: int, n: int, density: float = 0.01, format: str = "csr",  # noqa: A002
           dtype: Any = np.float64, random_state: Any = None, *,
           devices: Optional[Sequence[int]] = None, client: Any = None) -> csr_matrix:
    """A random m x n matrix with round(density * m * n) entries at distinct positions, values
    uniform in [0, 1), as ``scipy.sparse.random`` (drawn on the client with NumPy's Generator
    seeded by ``random_state``; the same seed gives the same matrix whatever the devices)."""
    if format != "csr":
        raise ValueError(f"format: only 'csr' is served, not {format!r}")
    if not 0 <= density <= 1:
        raise ValueError(f"density: {density} is not in [0, 1]")
    rng = random_state if isinstance(random_state, np.random.Generator) else \
        np.random.default_rng(random_state)
    k = int(round(density * m * n))
    positions = rng.choice(m * n, size=k, replace=False) if k else np.zeros(0, np.int64)
    row, col = np.divmod(positions.astype(np.int64), n) if n else (positions, positions)
    dt = _value_dtype(dtype)
    values = rng.random(k)
    if dt.kind == "c":
        values = values + 1j * rng.random(k)
    return csr_matrix((values.astype(dt), (row, col)), shape=(m, n), devices=devices,
                      client=client)
