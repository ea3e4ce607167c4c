"""The array API's device and inspection objects: ``x.device``, ``distarray.Device``,
``distarray.__array_namespace_info__()``.

distarray has one array API *device*: the whole daemon's device space. An array's chunks may lie
on any of the daemon's devices (its index map says which), and every op takes operands wherever
they lie, moving data as it must; so for the array API, whose devices are places that arrays of
one computation must share, the daemon as a whole is the one device. ``x.devices`` (plural) and
``x.index_map`` still say where the chunks are, and ``index_map=`` places them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _api_dtypes


class Device:
    """The one array API device of distarray: the whole daemon's device space (its GPUs, or the
    host backend's simulated devices), whichever of them hold an array's chunks. Every array's
    ``device`` is this object, so arrays of one namespace can always be combined."""

    __slots__ = ()

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Device)

    def __hash__(self) -> int:
        return hash(Device)

    def __repr__(self) -> str:
        return "distarray.Device('daemon')"


DEVICE = Device()


def check_device(device: Any) -> None:
    """Creation functions take ``device=None`` or the one Device; anything else is ValueError."""
    if device is not None and device != DEVICE:
        raise ValueError(
            f"unknown device {device!r}: distarray has one array API device, the daemon's whole "
            "device space (distarray.Device()); place chunks with index_map="
        )


_DEFAULT_DTYPES = {
    "real floating": np.dtype(np.float64),
    "complex floating": np.dtype(np.complex128),
    "integral": np.dtype(np.int64),
    "indexing": np.dtype(np.int64),
}


class ArrayNamespaceInfo:
    """``distarray.__array_namespace_info__()``: what the namespace serves."""

    __module__ = "distarray"

    def capabilities(self) -> Dict[str, Any]:
        """Boolean-mask indexing (a mask held on the devices) and the functions whose output
        shape depends on the values (``nonzero``, ``unique_*``, ``repeat`` with an array of
        counts) are served, each reading back one count; the daemon bounds index keys, not
        ranks."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": None}

    def default_device(self) -> Device:
        return DEVICE

    def devices(self) -> List[Device]:
        return [DEVICE]

    def default_dtypes(self, *, device: Optional[Device] = None) -> Dict[str, np.dtype]:
        check_device(device)
        return dict(_DEFAULT_DTYPES)

    def dtypes(self, *, device: Optional[Device] = None,
               kind: Union[None, str, Tuple[str, ...]] = None) -> Dict[str, np.dtype]:
        """The array API's dtypes the namespace serves (by name), of ``kind`` when given (a kind
        name of ``isdtype``, or a tuple of them)."""
        check_device(device)
        out = {}
        for name in _api_dtypes.API_DTYPE_NAMES:
            dtype = np.dtype(name)
            if kind is None or _api_dtypes.isdtype(dtype, kind):
                out[name] = dtype
        return out


def __array_namespace_info__() -> ArrayNamespaceInfo:
    return ArrayNamespaceInfo()
