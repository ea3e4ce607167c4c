"""The elementwise ops the daemon serves for the array API's special values: asinh, acosh and
atanh (real and complex), signbit (a NaN's sign included), nextafter, and floor division at
infinities, each against NumPy (or the standard, where the two differ) on fresh random data and
the special inputs, over several layouts."""

from __future__ import annotations

import numpy as np
import pytest

import distarray as xp
from _layouts import LAYOUTS, put

_NUMPY_NAMES = {"asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(_NUMPY_NAMES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_inverse_hyperbolics_match_numpy(client, layout, name, dtype):
    rng = np.random.default_rng()
    shape = (6, 5)
    v = rng.uniform(-3, 3, shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.uniform(-3, 3, shape)
    elif name == "acosh":
        v = np.abs(v) + 1
    elif name == "atanh":
        v = v / 3.5
    v = v.astype(dtype)
    got = getattr(xp, name)(put(client, v, layout)).to_numpy()
    want = _NUMPY_NAMES[name](v)
    assert got.dtype == want.dtype
    rtol = 2e-6 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-13
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


def test_complex_special_values_follow_the_standard(client):
    nan, inf = np.nan, np.inf
    z = np.array([complex(nan, 0.0), complex(inf, inf), complex(0.0, nan), complex(1.0, 0.0)])
    a = client.from_numpy(z)
    asinh = xp.asinh(a).to_numpy()
    assert np.isnan(asinh[0].real) and asinh[0].imag == 0
    assert asinh[1] == complex(inf, np.pi / 4)
    acosh = xp.acosh(a).to_numpy()
    assert np.isnan(acosh[2].real) and abs(acosh[2].imag) == np.pi / 2
    assert xp.atanh(a).to_numpy()[3] == complex(inf, 0.0)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_signbit_reads_the_sign_bit(client, layout):
    rng = np.random.default_rng()
    v = rng.standard_normal((4, 6))
    v[0, :4] = [-0.0, 0.0, -np.nan, np.nan]
    v[1, :2] = [-np.inf, np.inf]
    got = xp.signbit(put(client, v, layout)).to_numpy()
    np.testing.assert_array_equal(got, np.signbit(v))
    ints = rng.integers(-5, 5, (4, 6), dtype=np.int16)
    np.testing.assert_array_equal(xp.signbit(put(client, ints, layout)).to_numpy(),
                                  np.signbit(ints))
    with pytest.raises(Exception, match="signbit"):
        xp.signbit(client.from_numpy(np.ones(3, np.complex64)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_matches_numpy(client, dtype):
    rng = np.random.default_rng()
    x1 = rng.standard_normal(40).astype(dtype)
    x2 = rng.standard_normal(40).astype(dtype)
    x1[:6] = [0.0, -0.0, np.inf, np.nan, 1.0, np.finfo(dtype).max]
    x2[:6] = [-0.0, 0.0, 0.0, 1.0, np.nan, np.inf]
    a = client.from_numpy(x1, xp.split_index_map((40,), 0, [0, 1]))
    b = client.from_numpy(x2, xp.split_index_map((40,), 0, [1, 2]))
    got = xp.nextafter(a, b).to_numpy()
    with np.errstate(over="ignore"):
        want = np.nextafter(x1, x2)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[:2]), [True, False])  # -0 and +0 as NumPy's


def test_nextafter_refuses_16_bit_floats(client):
    with pytest.raises(Exception, match="float32"):
        xp.nextafter(client.from_numpy(np.ones(3, np.float16)), 2.0)


def test_floor_divide_at_infinities_is_the_standards(client):
    inf = np.inf
    x1 = np.array([inf, inf, -inf, -inf, 1.0, -1.0, 1.0, 7.5, -7.5])
    x2 = np.array([2.0, -2.0, 2.0, -2.0, -inf, inf, inf, 2.0, 2.0])
    got = xp.floor_divide(client.from_numpy(x1), client.from_numpy(x2)).to_numpy()
    want = np.array([inf, -inf, -inf, inf, -0.0, -0.0, 0.0, 3.0, -4.0])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
