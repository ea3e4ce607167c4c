"""The two bulk messages encoded and decoded by hand, so their bytes are copied once.

Through the generated classes an upload piece is copied three times (into a bytes object, into
the message, into the serialized string) and a download piece twice (parsed into the message,
then into the NumPy array). These helpers build an UploadArrayRequest's data message as one
`bytes` (tag, length, payload) and find the data field of a serialized DownloadArrayResponse
without parsing it into a message. Everything else goes through the generated classes.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Optional, Tuple

import numpy as np

from .v1 import distarray_pb2 as pb

# Field numbers of the proto (checked against the descriptors at import).
_UPLOAD_DATA_FIELD = 2  # UploadArrayRequest.data
_DOWNLOAD_DATA_FIELD = 3  # DownloadArrayResponse.data
assert pb.UploadArrayRequest.DESCRIPTOR.fields_by_name["data"].number == _UPLOAD_DATA_FIELD
assert pb.DownloadArrayResponse.DESCRIPTOR.fields_by_name["data"].number == _DOWNLOAD_DATA_FIELD

_LEN = 2  # wire type of length-delimited fields
_UPLOAD_DATA_TAG = bytes([(_UPLOAD_DATA_FIELD << 3) | _LEN])


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(buf, i: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated or overlong varint")
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7


# Upload messages of at least this many bytes are filled outside the GIL (below).
_FILL_OUTSIDE_GIL_MIN_BYTES = 64 << 10
# CPython: a bytes object's payload starts this far past its address (PyBytesObject.ob_sval).
_BYTES_PAYLOAD_OFFSET = sys.getsizeof(b"") - 1


def _bytes_maker():
    """PyBytes_FromStringAndSize as a function object of our own (ctypes.pythonapi's attributes
    are shared with every library in the process, which may set other result types), or None
    where the payload is not where _BYTES_PAYLOAD_OFFSET says (not CPython, or another layout)."""
    if sys.implementation.name != "cpython":
        return None
    probe = b"distarray"
    if ctypes.string_at(id(probe) + _BYTES_PAYLOAD_OFFSET, len(probe)) != probe:
        return None
    prototype = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_ssize_t)
    return prototype(("PyBytes_FromStringAndSize", ctypes.pythonapi))


_new_bytes = _bytes_maker()


def upload_data_message(piece: memoryview) -> bytes:
    """A serialized UploadArrayRequest whose `data` is `piece` (a C-contiguous buffer).

    gRPC takes a message as `bytes` and copies it once more, holding the GIL, so an upload's
    streams share one core for two copies of every byte. On CPython the payload is copied into
    a new, not yet shared bytes object by ctypes.memmove, which releases the GIL, so only gRPC's
    copy is serial: on a 16-core host this (with 4 MiB messages) took a 1 GiB upload from
    2.05-2.45 GB/s with b"".join to 4.7-5.2 GB/s (docs/performance.md). Without the GIL,
    another thread writing the source array meanwhile can be seen half written (as it always
    could with shared memory): do not change an array while it uploads.
    """
    if piece.format != "B" or piece.ndim != 1:
        piece = piece.cast("B")  # lengths below are in bytes
    prefix = _UPLOAD_DATA_TAG + _varint(len(piece))
    if _new_bytes is None or len(piece) < _FILL_OUTSIDE_GIL_MIN_BYTES:
        return b"".join((prefix, piece))
    size = len(prefix) + len(piece)
    message = _new_bytes(None, size)  # uninitialized, and no one else holds it yet
    if type(message) is not bytes or len(message) != size:
        return b"".join((prefix, piece))
    payload = id(message) + _BYTES_PAYLOAD_OFFSET
    ctypes.memmove(payload, prefix, len(prefix))
    source = np.frombuffer(piece, dtype=np.uint8)  # a view: its address, no copy
    ctypes.memmove(payload + len(prefix), source.ctypes.data, len(piece))
    return message


def download_data(message: bytes) -> memoryview:
    """The `data` field of a serialized DownloadArrayResponse, as a view into `message`
    (shape and dtype, sent in the first message, are skipped: the caller knows them)."""
    view = memoryview(message)
    data: Optional[memoryview] = None
    i, n = 0, len(message)
    while i < n:
        tag, i = _read_varint(message, i)
        field, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            _, i = _read_varint(message, i)
        elif wire_type == _LEN:
            length, i = _read_varint(message, i)
            if i + length > n:
                raise ValueError("truncated DownloadArrayResponse")
            if field == _DOWNLOAD_DATA_FIELD:
                data = view[i : i + length]
            i += length
        elif wire_type == 1:
            i += 8
        elif wire_type == 5:
            i += 4
        else:
            raise ValueError(f"unexpected wire type {wire_type} in DownloadArrayResponse")
    return data if data is not None else view[:0]


class Connection:
    """One gRPC channel's stub plus the raw bulk calls on it."""

    def __init__(self, channel, stub):
        self.stub = stub
        self.upload_raw = channel.stream_unary(
            "/distarray.v1.ArrayService/UploadArray",
            request_serializer=None,  # the requests are already serialized
            response_deserializer=pb.UploadArrayResponse.FromString,
        )
        self.download_raw = channel.unary_stream(
            "/distarray.v1.ArrayService/DownloadArray",
            request_serializer=pb.DownloadArrayRequest.SerializeToString,
            response_deserializer=None,  # bytes: download_data finds the payload
        )
