"""Index maps in cupyx's form: a dict device -> list of tuples of slices (one per axis).

``{0: [(slice(0, 5),)], 1: [(slice(5, 10),)]}`` puts ``a[0:5]`` on device 0 and ``a[5:10]`` on
device 1. A device may hold several chunks, chunks may overlap (replication) and may leave
elements uncovered (docs/api.md, "Index maps").
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Sequence, Set, Tuple, Union

from .v1 import distarray_pb2 as pb

Index = Tuple[slice, ...]
IndexMap = Dict[int, List[Index]]
IndexMapLike = Mapping[int, Union[Index, slice, Sequence[Index]]]

__all__ = [
    "IndexMap",
    "make_2d_index_map",
    "split_index_map",
    "replicated_index_map",
    "on_device",
]


def _chunks_of(value) -> List[Index]:
    """A dict value: one index (a tuple of slices, or a slice for 1-d) or a list of them."""
    if isinstance(value, slice):
        return [(value,)]
    if isinstance(value, tuple) and all(isinstance(s, slice) for s in value):
        return [value]
    if isinstance(value, (list, tuple)):
        out = []
        for idx in value:
            if isinstance(idx, slice):
                out.append((idx,))
            elif isinstance(idx, tuple) and all(isinstance(s, slice) for s in idx):
                out.append(idx)
            else:
                raise TypeError(f"an index map's chunk is a tuple of slices, not {idx!r}")
        return out
    raise TypeError(f"an index map's value is a tuple of slices or a list of them, not {value!r}")


def _slice_to_proto(s: slice, out: "pb.Slice") -> None:
    for name in ("start", "stop", "step"):
        v = getattr(s, name)
        if v is not None:
            if not isinstance(v, int):
                v = int(v.__index__())
            setattr(out, name, v)


def to_proto_index_map(index_map: IndexMapLike, ndim: int) -> "pb.IndexMap":
    """The API's IndexMap for a cupyx-style dict. Chunks with fewer slices than ``ndim`` cover
    the remaining axes whole, as a NumPy index does; the daemon checks everything else."""
    if not isinstance(index_map, Mapping):
        raise TypeError(f"an index map is a dict device -> chunks, not {type(index_map).__name__}")
    proto = pb.IndexMap()
    for device, value in index_map.items():
        for idx in _chunks_of(value):
            if len(idx) > ndim:
                raise ValueError(
                    f"index_map[{device}] has {len(idx)} slices for an array of {ndim} axes"
                )
            chunk = proto.chunks.add()
            chunk.device = int(device)
            for s in tuple(idx) + (slice(None),) * (ndim - len(idx)):
                _slice_to_proto(s, chunk.slices.add())
    return proto


def _slice_from_proto(s: "pb.Slice") -> slice:
    return slice(
        s.start if s.HasField("start") else None,
        s.stop if s.HasField("stop") else None,
        s.step if s.HasField("step") and s.step != 1 else None,
    )


def from_proto_index_map(proto: "pb.IndexMap") -> IndexMap:
    """The dict form of an IndexMap (the daemon's normalized form has explicit bounds)."""
    out: IndexMap = {}
    for chunk in proto.chunks:
        out.setdefault(chunk.device, []).append(tuple(_slice_from_proto(s) for s in chunk.slices))
    return out


def _blocks(length: int, n: int) -> List[Tuple[int, int]]:
    return [(length * i // n, length * (i + 1) // n) for i in range(n)]


def split_index_map(shape: Sequence[int], axis: int, devices: Sequence[int]) -> IndexMap:
    """``axis`` cut into near-equal contiguous blocks, one per device in order (as the C++ SDK's
    ``Split``); the other axes whole. Devices beyond the axis's length get nothing."""
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for shape {tuple(shape)}")
    axis %= ndim
    out: IndexMap = {}
    for device, (begin, end) in zip(devices, _blocks(shape[axis], len(devices))):
        if begin == end:
            continue
        idx = [slice(None)] * ndim
        idx[axis] = slice(begin, end)
        out.setdefault(int(device), []).append(tuple(idx))
    return out


def replicated_index_map(ndim: int, devices: Iterable[int]) -> IndexMap:
    """Every device holds the whole array (use with mode 'replica')."""
    return {int(d): [(slice(None),) * ndim] for d in devices}


def on_device(ndim: int, device: int = 0) -> IndexMap:
    """The whole array on one device."""
    return replicated_index_map(ndim, [device])


def make_2d_index_map(
    i_partitions: Sequence[int],
    j_partitions: Sequence[int],
    devices: Sequence[Sequence[Union[int, Set[int], Iterable[int]]]],
) -> IndexMap:
    """A 2-d block layout, as cupyx.distributed.array.make_2d_index_map.

    ``i_partitions`` are the row boundaries ``[0, ..., rows]`` and ``j_partitions`` the column
    boundaries; block ``(i, j)`` is ``[i_partitions[i]:i_partitions[i+1],
    j_partitions[j]:j_partitions[j+1]]`` and goes to every device of ``devices[i][j]`` (a device
    or a set of devices: several replicate the block).
    """
    rows, cols = len(i_partitions) - 1, len(j_partitions) - 1
    if rows < 1 or cols < 1:
        raise ValueError("partitions need at least two boundaries each")
    if len(devices) != rows or any(len(r) != cols for r in devices):
        raise ValueError(f"devices must be a {rows} x {cols} grid, one entry per block")
    out: IndexMap = {}
    for i in range(rows):
        for j in range(cols):
            block = (
                slice(i_partitions[i], i_partitions[i + 1]),
                slice(j_partitions[j], j_partitions[j + 1]),
            )
            entry = devices[i][j]
            owners = [entry] if isinstance(entry, int) else sorted(entry)
            for d in owners:
                out.setdefault(int(d), []).append(block)
    return out
