"""What makes the ``distarray`` module an array API namespace (2024.12) beyond its functions:
the version, the constants, ``astype`` in the array API's signature, and the methods the array
object needs (``__array_namespace__``, ``device``, ``to_device``, the 0-d conversions, DLPack's
export of a host copy), which ``DistributedArray`` takes from ``ArrayApiMethods``.

``DistributedArray.__array_namespace__()`` is the ``distarray`` module itself; its functions use
the default client (``distarray.connect(address)``) to create arrays, and the arrays' own client
otherwise. ``docs/testing.md`` says how the standard's test suite runs against it.
"""

from __future__ import annotations

import enum
import math
import operator
import sys
from typing import Any, Optional, Tuple

from ._api_info import DEVICE, Device, check_device

__array_api_version__ = "2024.12"

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Optional[Device] = None,
           name: Optional[str] = None) -> Any:
    """``x`` converted to ``dtype`` (NumPy's unsafe casting; see docs/api.md). ``copy=False``
    returns ``x`` itself when it has the dtype already."""
    check_device(device)
    if not copy and x.dtype == dtype:
        return x
    return x._ufunc("astype", (x,), dtype=dtype, **({"result_name": name} if name else {}))


class DLDeviceType(enum.IntEnum):
    """DLPack's device types, of which distarray exports one: the host's memory."""

    kDLCPU = 1


class ArrayApiMethods:
    """The array API's array methods that are not operators: the namespace, the device, and
    the conversions of 0-d arrays (each one download)."""

    __slots__ = ()

    def __array_namespace__(self, /, *, api_version: Optional[str] = None) -> Any:
        """The ``distarray`` module: distarray's array API namespace (2024.12)."""
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12",
                                                           "2024.12"):
            raise ValueError(f"distarray serves the array API 2024.12, not {api_version!r}")
        return sys.modules["distarray"]

    @property
    def device(self) -> Device:
        """The array API device: the daemon's whole device space (``distarray.Device``); the
        chunks' own devices are ``devices`` and ``index_map``."""
        return DEVICE

    def to_device(self, device: Device, /, *, stream: Any = None) -> Any:
        """``self``: there is one array API device (to place chunks, use ``reshard``)."""
        check_device(device)
        if stream is not None:
            raise ValueError("to_device: distarray takes no stream")
        return self

    def __dlpack__(self, /, *, stream: Any = None, max_version: Optional[tuple] = None,
                   dl_device: Optional[tuple] = None, copy: Optional[bool] = None) -> Any:
        """A DLPack capsule of a host copy of the values: the array lives in the daemon's
        memory, which no other library of this process can read, so exporting is a download
        (``to_numpy()``), which the consumer asked for by name (``numpy.from_dlpack(x)``,
        ``torch.from_dlpack(x)``), as ``numpy.asarray(x)`` is. The capsule says it is a copy.
        ``copy=False`` is BufferError (there is no buffer to share); ``dl_device`` may only be
        the CPU (``__dlpack_device__``), and ``stream`` only None, as for NumPy's arrays."""
        if copy is False:
            raise BufferError(
                "a DistributedArray lives in the daemon's memory: DLPack can only export a copy "
                "(copy=None or True), downloaded to the host"
            )
        values = self.to_numpy()  # type: ignore[attr-defined]
        kwargs: dict = {"copy": True}  # sets DLPack's IS_COPIED flag
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        return values.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> Tuple[DLDeviceType, int]:
        """``(kDLCPU, 0)``: the device of what ``__dlpack__`` exports, a host copy (the daemon's
        devices are another process's, out of DLPack's reach)."""
        return (DLDeviceType.kDLCPU, 0)

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self.ndim != 0:  # type: ignore[attr-defined]
            raise TypeError("only 0-d integer arrays can be converted to an index")
        return operator.index(self._scalar_value())  # type: ignore[attr-defined]

    def __complex__(self) -> complex:
        return complex(self._scalar_value())  # type: ignore[attr-defined]


__all__ = ["Device", "astype", "e", "inf", "nan", "newaxis", "pi"]
