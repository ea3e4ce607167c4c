"""Status codes surface as exceptions with the daemon's message."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

import distarray


def test_not_found(client):
    with pytest.raises(distarray.NotFoundError) as e:
        client.attach("no-such-array")
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert "no-such-array" in e.value.message
    assert isinstance(e.value, distarray.DistarrayError) and isinstance(e.value, KeyError)
    with pytest.raises(distarray.NotFoundError):
        client.delete("arr-0123456789abcdef")


def test_invalid_argument_names_the_field(client):
    with pytest.raises(distarray.InvalidArgumentError) as e:
        client.from_numpy(np.zeros((4, 4)), {0: [(slice(0, 2),)], 9: [(slice(2, 4),)]})
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "chunks[1]" in e.value.message and "device" in e.value.message
    with pytest.raises(distarray.InvalidArgumentError, match="name"):
        client.from_numpy(np.zeros(3), name="bad name!")
    a = client.from_numpy(np.zeros((4, 4)))
    with pytest.raises(distarray.InvalidArgumentError, match="ax"):
        a.sum(axis=5)
    with pytest.raises(distarray.InvalidArgumentError, match=r"slices\[0\]"):
        a.reshard({0: [(slice(0, 4, 0),)]})


def test_other_codes(client):
    a = client.from_numpy(np.arange(6.0), name="errors-test-named")
    try:
        with pytest.raises(distarray.AlreadyExistsError):
            client.from_numpy(np.arange(6.0), name="errors-test-named")
        with pytest.raises(distarray.OutOfRangeError, match=r"region.slices\[0\]"):
            a.to_numpy(slice(0, 7))
        s = a.change_mode("sum")
        with pytest.raises(distarray.FailedPreconditionError):
            s.write(np.zeros(6))
        with pytest.raises(distarray.ResourceExhaustedError):
            client.zeros((1 << 40,), np.float64)  # beyond the device's memory limit
    finally:
        client.delete("errors-test-named")


def test_connect_failure_is_unavailable():
    with pytest.raises(distarray.UnavailableError, match="within"):
        distarray.connect("127.0.0.1:1", timeout=0.5)


def test_deadline(daemon, client):
    x = client.from_numpy(np.zeros(4, np.float32))
    program = distarray.trace(lambda a: distarray.while_loop(
        lambda v: (v < 1e30).all(), lambda v: v + 1, a, max_iterations=1 << 30))
    with pytest.raises(distarray.DeadlineExceededError):
        client.run_graph(program, a=x, timeout=0.3)
    np.testing.assert_array_equal(x.to_numpy(), np.zeros(4))  # inputs intact


def test_error_mapping_table():
    for code in grpc.StatusCode:
        if code == grpc.StatusCode.OK:
            continue
        e = distarray._errors.error_for(code, "message")
        assert e.code == code and e.message == "message" and code.name in str(e)
        assert type(e).__name__ != "DistarrayError", f"{code.name} has no subclass"
