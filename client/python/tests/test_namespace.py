"""The module-level namespace: the default client, creation in NumPy's signatures, dtype names,
and the one transfer policy (NumPy functions run on the daemon or raise; nothing downloads
behind the caller's back)."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import assert_intact, bystander, check, put
from conftest import random_array

DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "complex64", "complex128"]


def test_dtype_names(client, rng):
    for name in DTYPE_NAMES:
        dtype = getattr(distarray, name)
        assert np.dtype(dtype) == np.dtype(name)
        assert name in distarray.__all__
    z = distarray.zeros((3, 2), distarray.int32)
    assert z.dtype == distarray.int32
    a_np = random_array(rng, (4, 5), np.float64)
    a = client.from_numpy(a_np)
    check(a.astype(distarray.bool), a_np.astype(bool))
    check(a.astype(distarray.complex64), a_np.astype(np.complex64))
    check(distarray.full(3, 2, dtype=distarray.uint8), np.full(3, 2, np.uint8))


def test_connect_makes_the_default(daemon):
    with distarray.connect(daemon.address) as first:
        assert distarray.default_client() is first
        assert distarray.zeros(3).client is first
        with distarray.connect(daemon.address) as second:
            assert distarray.ones((2, 2)).client is second
            assert distarray.default_client() is second


def test_no_default_without_an_address(daemon, monkeypatch):
    monkeypatch.delenv("DISTARRAY_ADDRESS", raising=False)
    with distarray.connect(daemon.address):
        pass  # closed: no longer the default
    with pytest.raises(RuntimeError, match="DISTARRAY_ADDRESS"):
        distarray.zeros(3)


def test_lazy_default_from_the_environment(daemon, monkeypatch, rng):
    with distarray.connect(daemon.address):
        pass
    monkeypatch.setenv("DISTARRAY_ADDRESS", daemon.address)
    values = random_array(rng, (5,), np.int64)
    a = distarray.asarray(values)
    client = distarray.default_client()
    try:
        assert a.client is client and client.address == daemon.address
        check(a, values)
        assert distarray.arange(4).client is client  # connected once, then reused
    finally:
        client.close()


def test_creation_matches_numpy(client):
    layout = distarray.split_index_map((6, 4), 0, [0, 1])
    check(distarray.zeros((6, 4), index_map=layout), np.zeros((6, 4)))
    check(distarray.ones(5, np.int16), np.ones(5, np.int16))
    check(distarray.empty((2, 3)), np.zeros((2, 3)))  # empty is zeroed on the daemon
    check(distarray.full((2, 3), 7), np.full((2, 3), 7))
    check(distarray.full((2, 3), 2.5, index_map=distarray.split_index_map((2, 3), 1, [2, 3])),
          np.full((2, 3), 2.5))
    check(distarray.full(4, True), np.full(4, True))
    check(distarray.full(2, 1 + 2j), np.full(2, 1 + 2j))
    assert distarray.zeros(3, client=client).client is client
    with pytest.raises(TypeError, match="scalar"):
        distarray.full(3, np.ones(3))


@pytest.mark.parametrize("args", [(10,), (2, 11, 3), (5, 0, -1), (1,), (0, 1, 0.25),
                                  (0.5, 3.2, 0.7), (-3.0, 3), (10, -10, -3), (1, 2, 10)],
                         ids=str)
def test_arange_matches_numpy(client, args):
    check(distarray.arange(*args), np.arange(*args))


def test_arange_options(client):
    check(distarray.arange(6, dtype=distarray.float32), np.arange(6, dtype=np.float32))
    layout = distarray.split_index_map((9,), 0, [0, 1, 2])
    a = distarray.arange(1, 10, index_map=layout)
    check(a, np.arange(1, 10))
    assert a.devices == (0, 1, 2)
    with pytest.raises(ValueError, match="zero"):
        distarray.arange(0, 5, 0)
    for empty in [(3, 3), (4, 1), (0, 5, -1)]:  # NumPy's empty ranges: zero-size arrays
        assert np.arange(*empty).size == 0
        check(distarray.arange(*empty), np.arange(*empty))
    # The client's older form (shape, start, step, dtype) still works (test_methods.py has its
    # NumPy signatures).
    check(client.arange((2, 3), 1, 2, np.int64), np.arange(1, 13, 2).reshape(2, 3))


def test_like_functions_keep_the_layout(client, rng):
    a_np = random_array(rng, (6, 4), np.int32)
    a = put(client, a_np, "cols3")
    for fn, expected in [(distarray.zeros_like, np.zeros_like(a_np)),
                         (distarray.ones_like, np.ones_like(a_np)),
                         (distarray.empty_like, np.zeros_like(a_np))]:
        made = fn(a)
        check(made, expected, fn.__name__)
        assert made.index_map == a.index_map
    check(distarray.full_like(a, 3), np.full_like(a_np, 3))
    check(distarray.zeros_like(a, distarray.float32), np.zeros((6, 4), np.float32))
    check(distarray.ones_like(a, shape=(2, 2)), np.ones((2, 2), np.int32))
    # NumPy's own *_like functions dispatch to these.
    made = np.ones_like(a)
    check(made, np.ones_like(a_np))
    assert made.index_map == a.index_map
    check(np.full_like(a, 5, dtype=np.float64), np.full_like(a_np, 5, dtype=np.float64))
    with pytest.raises(TypeError, match="DistributedArray"):
        distarray.zeros_like(a_np)


def test_asarray(client, rng):
    values = random_array(rng, (4, 3), np.float32)
    layout = distarray.split_index_map((4, 3), 0, [1, 2])
    a = distarray.asarray(values, index_map=layout)
    check(a, values)
    assert a.devices == (1, 2)
    check(distarray.asarray([[1, 2], [3, 4]]), np.asarray([[1, 2], [3, 4]]))
    check(distarray.asarray(2.5), np.asarray(2.5))
    check(distarray.asarray([1, 2], dtype=distarray.uint8), np.asarray([1, 2], np.uint8))
    assert distarray.asarray(a) is a
    check(distarray.asarray(a, distarray.float64), values.astype(np.float64))
    copied = distarray.asarray(a, copy=True)
    assert copied.handle != a.handle
    check(copied, values)
    # A list of arrays is joined on the daemon (as stack), not downloaded (test_data_dependent).
    check(distarray.asarray([a, a]), np.asarray([values, values]))


def test_numpy_functions_run_on_the_daemon(client, rng):
    a_np = random_array(rng, (5, 4), np.float64)
    b_np = random_array(rng, (5, 4), np.float64)
    a, b = put(client, a_np, "rows2"), put(client, b_np, "cols3")
    check(np.concatenate([a, b]), np.concatenate([a_np, b_np]), "concatenate")
    check(np.concatenate((a, b), axis=1), np.concatenate((a_np, b_np), axis=1))
    check(np.stack([a, b], axis=1), np.stack([a_np, b_np], axis=1), "stack")
    check(np.transpose(a), np.transpose(a_np), "transpose")
    check(np.reshape(a, (2, 10)), np.reshape(a_np, (2, 10)), "reshape")
    check(np.reshape(a, -1), np.reshape(a_np, -1), "reshape -1")
    check(np.ravel(a), np.ravel(a_np), "ravel")
    check(np.squeeze(a[:1]), np.squeeze(a_np[:1]), "squeeze")
    check(np.expand_dims(a, 1), np.expand_dims(a_np, 1), "expand_dims")
    check(np.flip(a, 0), np.flip(a_np, 0), "flip")
    check(np.where(a > b, a, b), np.where(a_np > b_np, a_np, b_np), "where")
    check(np.where(a > 0, a, 0.0), np.where(a_np > 0, a_np, 0.0), "where with a scalar")
    np.testing.assert_allclose(np.sum(a, axis=0).to_numpy(), np.sum(a_np, axis=0))
    np.testing.assert_allclose(np.mean(a, axis=1, keepdims=True).to_numpy(),
                               np.mean(a_np, axis=1, keepdims=True))
    check(np.max(a), np.asarray(np.max(a_np)), "max")
    check(np.argmin(a, axis=1), np.argmin(a_np, axis=1), "argmin")
    check(np.clip(a, -10, 10), np.clip(a_np, -10, 10), "clip")
    check(np.clip(a, None, 10), np.clip(a_np, None, 10), "clip one-sided")
    check(np.sqrt(np.abs(a)), np.sqrt(np.abs(a_np)), "ufuncs")
    assert np.shape(a) == (5, 4) and np.ndim(a) == 2 and np.size(a) == 20


def test_unserved_numpy_functions_refuse_to_download(client, rng):
    keep, keep_np = bystander(client, rng)
    a_np = random_array(rng, (5, 4), np.float64)
    a = put(client, a_np, "rows2")
    calls = {
        "numpy.median": lambda: np.median(a),
        "numpy.partition": lambda: np.partition(a, 2),
        "numpy.nancumsum": lambda: np.nancumsum(a),
        "numpy.linalg.eig": lambda: np.linalg.eig(a[:4]),
        "numpy.inner": lambda: np.inner(a, a),
        "numpy.ptp": lambda: np.ptp(a),
        "numpy.concatenate": lambda: np.concatenate([a, a], dtype=np.float32),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError) as raised:
            call()
        message = str(raised.value)
        assert name in message, message
        if "dtype=" not in message:
            assert "numpy.asarray(x)" in message and "to_numpy()" in message, message
    # A NumPy array operand is refused, not uploaded.
    with pytest.raises(TypeError, match="upload"):
        np.where(a > 0, a, np.zeros((5, 4)))
    # The explicit downloads still work.
    np.testing.assert_array_equal(np.asarray(a), a_np)
    np.testing.assert_array_equal(a.to_numpy(), a_np)
    np.testing.assert_array_equal(np.median(np.asarray(a)), np.median(a_np))
    assert_intact(keep, keep_np)


def test_connect_alone_is_enough_and_close_or_replace_lets_go(daemon, monkeypatch):
    """`distarray.connect(address)` without keeping the result serves the module-level calls;
    closing the default ends it, and a new connect replaces it (the module lets the old one go)."""
    import gc
    import weakref

    monkeypatch.delenv("DISTARRAY_ADDRESS", raising=False)
    distarray.connect(daemon.address)
    gc.collect()
    first = distarray.default_client()
    np.testing.assert_array_equal(np.asarray(distarray.arange(4)), np.arange(4))
    first_ref = weakref.ref(first)
    del first
    second = distarray.connect(daemon.address)
    assert distarray.default_client() is second
    gc.collect()
    assert first_ref() is None  # nothing holds the replaced default: collected, so closed
    second.close()
    with pytest.raises(RuntimeError, match="no default"):
        distarray.default_client()
