"""What ``repr(x)`` and Jupyter (``_repr_html_``) show of a DistributedArray: its values as NumPy
summarises them, its shape and dtype, and where its chunks are.

An array may be far larger than the host's memory, so a repr never downloads it whole. Up to
NumPy's summarisation threshold (1000 elements) the values are downloaded and printed as
``numpy.array2string`` prints them. Above it NumPy prints only the first and last ``edgeitems``
(3) entries of each axis longer than ``2 * edgeitems``, with ``...`` between; so only those
corners are downloaded, one region download (``to_numpy(region)``) per corner, and laid into a
small array with one spare entry where each ``...`` goes. ``array2string`` with a threshold of 0
summarises exactly the axes that have the spare entry (the others are no longer than
``2 * edgeitems``), and formats the numbers from the corners alone, as it does for the whole
array: the text is NumPy's own. Precision, line width and the other print options are NumPy's
current ones; the threshold and ``edgeitems`` are fixed, so the download stays bounded
(``6 ** ndim`` elements at most).

A repr must never raise (a debugger, a log line or a notebook calls it on anything): when the
values cannot be had (the daemon gone, the client closed, a slow daemon past ``REPR_TIMEOUT``),
it falls back to the description alone, which needs no call.
"""

from __future__ import annotations

import html
import itertools
import math
import sys
import time
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from . import _transfer
from .v1 import distarray_pb2 as pb

#: NumPy's default summarisation threshold: more elements than this are summarised.
REPR_THRESHOLD = 1000
#: NumPy's default ``edgeitems``: entries shown at each end of a summarised axis.
REPR_EDGEITEMS = 3
#: Seconds the downloads of one repr may take in all before it gives up on the values.
REPR_TIMEOUT = 10.0

_PREFIX = "DistributedArray("


def _ranges(shape: Sequence[int], summarise: bool) -> List[List[Tuple[int, int]]]:
    """Per axis, the index ranges shown: both ends of a summarised axis, else the whole axis."""
    edge = REPR_EDGEITEMS
    return [[(0, edge), (n - edge, n)] if summarise and n > 2 * edge else [(0, n)]
            for n in shape]


def corner_values(array: Any) -> Tuple[np.ndarray, bool]:
    """The values a repr shows: ``(values, summarised)``. Unsummarised, ``values`` is the whole
    array; summarised, each summarised axis has ``2 * edgeitems + 1`` entries, the middle one a
    placeholder (zero) standing for the ``...``. Downloads only what is shown."""
    info = array.info
    shape = tuple(info.shape.dims)
    size = math.prod(shape)
    summarise = size > REPR_THRESHOLD
    ranges = _ranges(shape, summarise)
    gapped = [len(r) == 2 for r in ranges]
    deadline = time.monotonic() + REPR_TIMEOUT
    if not any(gapped):
        return array.to_numpy(progress=False, timeout=REPR_TIMEOUT), False
    edge = REPR_EDGEITEMS
    small_shape = tuple(2 * edge + 1 if g else n for g, n in zip(gapped, shape))
    values = np.zeros(small_shape, array.dtype)
    rpc = array._rpc
    for corner in itertools.product(*(enumerate(r) for r in ranges)):
        region = pb.Region()
        target = []
        for (which, (start, stop)) in corner:
            s = region.slices.add()
            s.start, s.stop = start, stop
            offset = (edge + 1) if which == 1 else 0
            target.append(slice(offset, offset + stop - start))
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("repr: the corners took longer than REPR_TIMEOUT")
        values[tuple(target)] = _transfer.download_region(rpc, info, region, timeout=left)
    return values, True


def format_values(values: np.ndarray, summarised: bool, prefix: str = _PREFIX) -> str:
    """NumPy's text for the values ``corner_values`` returned, ``...`` where it summarises."""
    return np.array2string(
        values, separator=", ", prefix=prefix, edgeitems=REPR_EDGEITEMS,
        threshold=0 if summarised else sys.maxsize,
    )


# ---- layout ------------------------------------------------------------------------------------


def _bounds(s: "pb.Slice", n: int) -> Tuple[int, int, int]:
    """(start, stop, step) of a normalized chunk slice of an axis of length ``n``."""
    step = s.step if s.HasField("step") and s.step else 1
    start = s.start if s.HasField("start") else (0 if step > 0 else n - 1)
    stop = s.stop if s.HasField("stop") else (n if step > 0 else -1)
    return start, stop, step


def _covers(s: "pb.Slice", n: int) -> bool:
    return _bounds(s, n) == (0, n, 1)


def slice_text(s: "pb.Slice", n: int) -> str:
    """A chunk slice as NumPy writes an index (``0:5``, ``:``, ``2:9:2``)."""
    if _covers(s, n):
        return ":"
    start, stop, step = _bounds(s, n)
    return f"{start}:{stop}" + (f":{step}" if step != 1 else "")


def layout_summary(info: "pb.ArrayInfo") -> str:
    """One line on where the chunks are: ``on device 0``, ``replicated on devices [1, 3]``,
    ``split along axis 0 over devices [0, 1]``, or ``5 chunks on devices [0, 1, 2]``."""
    shape = tuple(info.shape.dims)
    chunks = list(info.index_map.chunks)
    devices = sorted({c.device for c in chunks})
    if not chunks:
        return "no chunks"
    whole = [[_covers(s, n) for s, n in zip(c.slices, shape)] for c in chunks]
    if all(all(w) for w in whole):
        if len(chunks) == 1:
            return f"on device {chunks[0].device}"
        return f"replicated on devices {devices}"
    cut = {a for w in whole for a, full in enumerate(w) if not full}
    if len(cut) == 1:
        (axis,) = cut
        order = [c.device for c in sorted(chunks, key=lambda c: _bounds(c.slices[axis],
                                                                         shape[axis]))]
        return f"split along axis {axis} over devices {order}"
    return f"{len(chunks)} chunks on devices {devices}"


def _description(array: Any) -> List[str]:
    info = array.info
    parts = [f"shape={tuple(info.shape.dims)}", f"dtype={array.dtype}",
             f"handle={info.handle!r}"]
    if info.name:
        parts.append(f"name={info.name!r}")
    if array.mode != "replica":
        parts.append(f"mode={array.mode!r}")
    parts.append(f"layout={layout_summary(info)!r}")
    return parts


def metadata_repr(array: Any) -> str:
    """The description alone (no call): what repr falls back to without the values."""
    name = f", name={array.name!r}" if array.name else ""
    return (
        f"DistributedArray(handle={array.handle!r}{name}, shape={array.shape}, "
        f"dtype={array.dtype}, mode={array.mode!r}, devices={list(array.devices)})"
    )


def _values_or_none(array: Any) -> Optional[Tuple[np.ndarray, bool]]:
    try:
        if array._rpc.closed:
            return None
        return corner_values(array)
    except Exception:  # noqa: BLE001: a repr shows what it can
        return None


def array_repr(array: Any) -> str:
    """``repr(x)``: NumPy's text of the values, then shape, dtype, handle and layout; the
    description alone when the values cannot be had. Never raises."""
    try:
        got = _values_or_none(array)
        if got is None:
            return metadata_repr(array)
        text = format_values(*got)
        parts = _description(array)
        width = np.get_printoptions()["linewidth"]
        one_line = f"{_PREFIX}{text}, {', '.join(parts)})"
        if "\n" not in text and len(one_line) <= width:
            return one_line
        # The description under the values, in lines of NumPy's width where the parts allow.
        indent = " " * len(_PREFIX)
        lines = [indent]
        for i, part in enumerate(parts):
            part += "," if i + 1 < len(parts) else ")"
            if lines[-1] != indent and len(lines[-1]) + 1 + len(part) > width:
                lines.append(indent)
            lines[-1] += part if lines[-1] == indent else " " + part
        return f"{_PREFIX}{text},\n" + "\n".join(lines)
    except Exception:  # noqa: BLE001
        try:
            return metadata_repr(array)
        except Exception:  # noqa: BLE001
            return f"<DistributedArray at {id(array):#x}>"


def array_html(array: Any) -> str:
    """Jupyter's view: the values as ``repr`` shows them (the same bounded download), the
    description, and a table of the chunks (device, and the box each holds). Never raises."""
    try:
        info = array.info
        shape = tuple(info.shape.dims)
        got = _values_or_none(array)
        if got is None:
            values = "(values unavailable: the daemon could not be reached)"
        else:
            values = format_values(got[0], got[1], prefix="")
        rows = []
        for i, chunk in enumerate(info.index_map.chunks):
            box = ", ".join(slice_text(s, n) for s, n in zip(chunk.slices, shape))
            extent = "&times;".join(
                str(len(range(*_bounds(s, n)))) for s, n in zip(chunk.slices, shape)) or "1"
            rows.append(f"<tr><td>{i}</td><td>{chunk.device}</td>"
                        f"<td><code>[{html.escape(box)}]</code></td><td>{extent}</td></tr>")
        name = f" <code>{html.escape(info.name)}</code>" if info.name else ""
        mode = f", mode <code>{html.escape(array.mode)}</code>" if array.mode != "replica" else ""
        return (
            f"<div class=\"distarray\"><p><b>DistributedArray</b>{name} "
            f"<code>{html.escape(info.handle)}</code>: shape <code>{shape}</code>, dtype "
            f"<code>{html.escape(str(array.dtype))}</code>{mode}; "
            f"{html.escape(layout_summary(info))}</p>"
            f"<pre>{html.escape(values)}</pre>"
            "<table><thead><tr><th>chunk</th><th>device</th><th>box</th><th>extent</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
        )
    except Exception:  # noqa: BLE001
        try:
            return f"<pre>{html.escape(metadata_repr(array))}</pre>"
        except Exception:  # noqa: BLE001
            return "<pre>DistributedArray</pre>"
