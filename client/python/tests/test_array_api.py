"""The array API namespace (2024.12): the namespace object, the device, dtype functions, and the
functions composed from the daemon's ops, each against NumPy. The standard's own suite runs in
scripts/test-array-api.sh."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import distarray as xp
from _layouts import check


def close(result, expected: np.ndarray) -> None:
    """``check`` for values composed of several rounded ops: dtype and shape exact, values to a
    few ulps (NaN where NumPy has NaN)."""
    got = result.to_numpy()
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0, equal_nan=True)


@pytest.fixture
def ns(client):
    """The module as a namespace, with ``client`` its default."""
    return xp


def test_namespace_and_device(ns, client):
    a = client.from_numpy(np.arange(6.0).reshape(2, 3))
    assert a.__array_namespace__() is xp
    assert xp.__array_api_version__ == "2024.12"
    assert a.device == xp.Device() and a.to_device(a.device) is a
    info = xp.__array_namespace_info__()
    assert info.devices() == [a.device] and info.default_device() == a.device
    assert info.default_dtypes()["integral"] == xp.int64
    assert list(info.dtypes(kind="unsigned integer")) == ["uint8", "uint16", "uint32", "uint64"]
    with pytest.raises(ValueError, match="one array API device"):
        xp.zeros(3, device="cuda:1")
    assert xp.zeros(3, device=a.device).shape == (3,)
    assert int(client.from_numpy(np.asarray(7))) == 7
    assert [0, 1, 2][client.from_numpy(np.asarray(2, np.int8))] == 2
    assert complex(client.from_numpy(np.asarray(1.5))) == 1.5 + 0j


def test_dtype_functions(ns):
    assert xp.isdtype(xp.int8, "signed integer") and not xp.isdtype(xp.uint8, "signed integer")
    assert xp.isdtype(xp.float32, ("integral", "real floating"))
    assert xp.finfo(xp.float32).eps == float(np.finfo(np.float32).eps)
    assert isinstance(xp.finfo(xp.float32).max, float)
    assert xp.iinfo(xp.int16).max == 32767
    assert xp.result_type(xp.int8, xp.int16) == xp.int16
    assert xp.result_type(xp.float32, 1.0) == xp.float32
    assert xp.can_cast(xp.int8, xp.int64) and not xp.can_cast(xp.int64, xp.float64)
    assert not xp.can_cast(xp.float64, xp.float32)


def test_signatures_are_the_array_api(ns):
    params = inspect.signature(xp.add).parameters
    assert [p.kind for p in params.values()][:2] == [inspect.Parameter.POSITIONAL_ONLY] * 2
    assert "correction" in inspect.signature(xp.var).parameters


def test_composed_elementwise(ns, client):
    v = np.array([-3e10, -2.5, -0.0, 0.0, 0.5, 1.0, 2.5, 3e10])
    a = client.from_numpy(v)
    with np.errstate(all="ignore"):
        close(xp.asinh(a), np.arcsinh(v))
        close(xp.acosh(a), np.arccosh(v))
        close(xp.atanh(a), np.arctanh(v))
        check(xp.reciprocal(a), 1 / v)
    check(xp.round(a), np.round(v))
    check(xp.signbit(a), np.signbit(v))
    check(xp.copysign(a[::-1], a), np.copysign(v[::-1], v))
    close(xp.logaddexp(a, a[::-1]), np.logaddexp(v, v[::-1]))
    check(xp.clip(a, max=1.0), np.minimum(v, 1.0))
    z = np.array([1 + 2j, -3 - 4j], np.complex64)
    c = client.from_numpy(z)
    check(xp.real(c), z.real)
    check(xp.imag(c), z.imag)
    check(xp.conj(c), np.conj(z))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's var over one element, ddof=1
def test_statistics(ns, client, rng):
    v = rng.uniform(-5, 5, (4, 5))
    a = client.from_numpy(v)
    for axis in (None, 0, (0, 1), ()):
        np_axis = axis if axis != () else ()
        close(xp.var(a, axis=axis, correction=1), np.var(v, axis=np_axis, ddof=1))
        close(xp.std(a, axis=axis), np.std(v, axis=np_axis))
    i = client.from_numpy(np.array([[1, 0, 3], [0, 0, 6]], np.int32))
    check(xp.count_nonzero(i, axis=1), np.count_nonzero(i.to_numpy(), axis=1))
    check(xp.sum(i, dtype=xp.int8), np.sum(i.to_numpy(), dtype=np.int8))
    check(xp.sum(i, axis=()), i.to_numpy().astype(np.int64))
    check(xp.sum(i, 0), np.sum(i.to_numpy(), 0))
    check(xp.diff(a, axis=0, n=2), np.diff(v, axis=0, n=2))


def test_creation(ns, client, rng):
    check(xp.linspace(-1, 2, 7), np.linspace(-1, 2, 7))
    check(xp.linspace(0, 1, 4, endpoint=False, dtype=xp.float32),
          np.linspace(0, 1, 4, endpoint=False, dtype=np.float32))
    check(xp.eye(3, 5, k=-1, dtype=xp.int32), np.eye(3, 5, k=-1, dtype=np.int32))
    v = rng.uniform(-5, 5, (2, 3, 4))
    a = client.from_numpy(v)
    for k in (-1, 0, 2):
        check(xp.tril(a, k=k), np.tril(v, k))
        check(xp.triu(a, k=k), np.triu(v, k))
    x, y = np.arange(3), np.arange(4.0)
    for indexing in ("xy", "ij"):
        got = xp.meshgrid(client.from_numpy(x), client.from_numpy(y), indexing=indexing)
        for g, want in zip(got, np.meshgrid(x, y, indexing=indexing)):
            check(g, want)


def test_shapes(ns, client, rng):
    v = rng.uniform(-5, 5, (3, 1, 4))
    a = client.from_numpy(v)
    check(xp.broadcast_to(a, (2, 3, 5, 4)), np.broadcast_to(v, (2, 3, 5, 4)))
    b, c = xp.broadcast_arrays(a, client.from_numpy(np.ones(2)[:, None, None, None]))
    assert b.shape == c.shape == (2, 3, 1, 4)
    check(xp.roll(a, 2, axis=2), np.roll(v, 2, axis=2))
    check(xp.roll(a, -1), np.roll(v, -1))
    check(xp.roll(a, (1, 2), axis=(0, 2)), np.roll(v, (1, 2), axis=(0, 2)))
    check(xp.tile(a, (2, 1, 1)), np.tile(v, (2, 1, 1)))
    check(xp.repeat(a, 3, axis=2), np.repeat(v, 3, axis=2))
    check(xp.repeat(a, 2), np.repeat(v, 2))
    parts = xp.unstack(a, axis=2)
    assert len(parts) == 4
    check(parts[1], v[:, :, 1])
    with pytest.raises(ValueError, match="never a view"):
        xp.reshape(a, (12,), copy=False)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32, np.complex64])
def test_linear_algebra(ns, client, rng, dtype):
    def make(shape):
        values = rng.integers(0, 5, shape).astype(dtype)
        return values, client.from_numpy(values)

    (p, a), (q, b) = make((2, 3, 4)), make((4, 5))
    check(xp.matmul(a, b), np.matmul(p, q))
    check(a @ b, p @ q)
    (u, x), (w, y) = make((4,)), make((3, 4))
    check(xp.matmul(y, x), np.matmul(w, u))
    check(xp.vecdot(y, x), np.vecdot(w, u))
    check(xp.outer(x, x), np.outer(u, u))
    check(xp.tensordot(a, b, axes=1), np.tensordot(p, q, axes=1))
    check(xp.tensordot(a, y, axes=([1, 2], [0, 1])), np.tensordot(p, w, axes=([1, 2], [0, 1])))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
def test_cumulative(ns, client, rng, n):
    v = rng.integers(-3, 4, (3, n)).astype(np.int32)
    a = client.from_numpy(v)
    check(xp.cumulative_sum(a, axis=1), np.cumsum(v, axis=1))
    check(xp.cumulative_prod(a, axis=1), np.cumprod(v, axis=1))
    check(xp.cumulative_sum(a, axis=0, dtype=xp.int8), np.cumsum(v, axis=0, dtype=np.int8))
    w = rng.uniform(-1, 1, n)
    close(xp.cumulative_sum(client.from_numpy(w), include_initial=True),
          np.concatenate([[0.0], np.cumsum(w)]))
    close(xp.cumulative_prod(client.from_numpy(w), include_initial=True),
          np.concatenate([[1.0], np.cumprod(w)]))
