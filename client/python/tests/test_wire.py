"""The hand-encoded bulk messages agree with the generated classes."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from distarray import _wire
from distarray.v1 import distarray_pb2 as pb


@pytest.mark.parametrize("size", [0, 1, 127, 128, 300, (64 << 10) - 1, 64 << 10, 1 << 20,
                                  (4 << 20) + 3])
def test_upload_message_parses_as_the_proto(size):
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    message = pb.UploadArrayRequest.FromString(_wire.upload_data_message(memoryview(payload)))
    assert message.WhichOneof("part") == "data" and message.data == payload
    if size:
        assert _wire.upload_data_message(memoryview(payload)) == pb.UploadArrayRequest(
            data=payload).SerializeToString()


def test_upload_message_of_array_views():
    """Pieces as the SDK cuts them: byte views of NumPy arrays, whole and from the middle."""
    values = np.random.default_rng(5).uniform(size=(300, 1000))
    whole = memoryview(values).cast("B")
    middle = whole[8 * 1000 : 8 * 200_000]
    typed = memoryview(values)  # format "d", two dimensions: its length is not its bytes
    for piece in (whole, middle, typed):
        message = pb.UploadArrayRequest.FromString(_wire.upload_data_message(piece))
        assert message.data == piece.tobytes()


def test_upload_message_ignores_other_users_of_ctypes_pythonapi(monkeypatch):
    """Another library setting a result type on ctypes.pythonapi's shared function object does
    not reach the SDK's own."""
    shared = ctypes.pythonapi.PyBytes_FromStringAndSize
    monkeypatch.setattr(shared, "restype", ctypes.c_void_p)
    payload = bytes(range(256)) * 1024
    message = pb.UploadArrayRequest.FromString(_wire.upload_data_message(memoryview(payload)))
    assert message.data == payload


@pytest.mark.parametrize("size", [0, 5, 200, 70000])
def test_download_data_finds_the_payload(size):
    payload = bytes((i * 7) % 256 for i in range(size))
    first = pb.DownloadArrayResponse(shape=pb.Shape(dims=[3, 1 << 40]), dtype=pb.DTYPE_INT64,
                                     data=payload).SerializeToString()
    assert bytes(_wire.download_data(first)) == payload
    later = pb.DownloadArrayResponse(data=payload).SerializeToString()
    assert bytes(_wire.download_data(later)) == payload


def test_download_data_rejects_truncated_messages():
    message = pb.DownloadArrayResponse(data=b"x" * 100).SerializeToString()
    with pytest.raises(ValueError):
        _wire.download_data(message[:50])
    with pytest.raises(ValueError):
        _wire.download_data(b"\x1a\xff")  # a length varint cut short
