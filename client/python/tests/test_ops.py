"""Operators, ufuncs and reductions against NumPy on fresh random inputs, dtypes included."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import distarray
from conftest import random_array

SHAPE = (6, 8)


def put(client, values, axis=0, devices=(0, 1, 2)):
    return client.from_numpy(values, distarray.split_index_map(values.shape, axis, list(devices)))


def check(result, expected, exact=True):
    got = result.to_numpy()
    assert got.dtype == expected.dtype, f"dtype {got.dtype}, NumPy gives {expected.dtype}"
    assert got.shape == expected.shape
    if exact:
        np.testing.assert_array_equal(got, expected)
    else:
        rtol = 2e-6 if expected.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, equal_nan=True)


ARITH = [operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
         operator.truediv]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.float32,
                                   np.float64], ids=lambda t: np.dtype(t).name)
def test_arithmetic(client, rng, dtype):
    a_np = random_array(rng, SHAPE, dtype)
    b_np = random_array(rng, SHAPE, dtype)
    if np.dtype(dtype).kind in "iu":
        b_np[b_np == 0] = 3  # NumPy warns on integer division by zero
    a, b = put(client, a_np, 0), put(client, b_np, 1, (3, 1))  # different layouts
    with np.errstate(all="ignore"):
        for op in ARITH:
            # Float remainders may differ from NumPy's float32 loop in the last bit.
            inexact = op is operator.truediv or (op is operator.mod and a_np.dtype.kind == "f")
            check(op(a, b), op(a_np, b_np), exact=not inexact)
        for op in (operator.add, operator.sub, operator.mul, operator.floordiv):
            check(op(a, 3), op(a_np, 3))  # weak scalar: keeps the dtype
            check(op(5, a), op(5, a_np))
        check(a * 1.5, a_np * 1.5, exact=False)  # float scalar lifts integers to float64
        check(-a, -a_np)
        check(abs(a), np.abs(a_np))
        small_np = (np.abs(a_np) % 4).astype(dtype)
        small = put(client, small_np)
        # NumPy squares floats exactly (x * x); the daemon's pow may be 1 ULP off (seen once).
        check(small ** 2, small_np ** 2, exact=np.dtype(dtype).kind != "f")
        check(2 ** small, 2 ** small_np, exact=np.dtype(dtype).kind != "f")


def test_mixed_dtype_promotion(client, rng):
    i32 = random_array(rng, SHAPE, np.int32)
    f32 = random_array(rng, SHAPE, np.float32)
    u8 = random_array(rng, SHAPE, np.uint8)
    i8 = random_array(rng, SHAPE, np.int8)
    a, b, c, d = put(client, i32), put(client, f32), put(client, u8), put(client, i8)
    check(a + b, i32 + f32, exact=False)  # float64
    check(c + d, u8 + i8)  # int16
    check(b + 1.5, f32 + 1.5, exact=False)  # float32 stays
    with pytest.raises(distarray.InvalidArgumentError, match="300"):
        c + 300  # an int scalar outside uint8, as NumPy 2's OverflowError


@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.uint64, np.float32],
                         ids=lambda t: np.dtype(t).name)
def test_comparisons(client, rng, dtype):
    a_np, b_np = random_array(rng, SHAPE, dtype), random_array(rng, SHAPE, dtype)
    b_np[::2] = a_np[::2]  # some equal elements
    a, b = put(client, a_np), put(client, b_np, 1)
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        check(op(a, b), op(a_np, b_np))
    check(a > 0, a_np > 0)
    check(1 <= a, 1 <= a_np)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint16, np.int64],
                         ids=lambda t: np.dtype(t).name)
def test_bitwise(client, rng, dtype):
    a_np, b_np = random_array(rng, SHAPE, dtype), random_array(rng, SHAPE, dtype)
    a, b = put(client, a_np), put(client, b_np, 1)
    for op in (operator.and_, operator.or_, operator.xor):
        check(op(a, b), op(a_np, b_np))
    check(~a, ~a_np)
    if dtype != np.bool_:
        bits = np.dtype(dtype).itemsize * 8
        s_np = rng.integers(0, bits, SHAPE).astype(dtype)
        s = put(client, s_np)
        check(a << s, a_np << s_np)
        check(a >> s, a_np >> s_np)
        check(a << 2, a_np << 2)
        check(a & 6, a_np & 6)


def test_in_place_operators_keep_the_handle(client, rng):
    a_np = rng.uniform(1, 2, SHAPE)
    a = put(client, a_np)
    handle = a.handle
    a += 1
    a *= a
    a -= 0.5
    a /= 2
    assert a.handle == handle
    check(a, ((a_np + 1) * (a_np + 1) - 0.5) / 2, exact=False)
    i = put(client, rng.integers(0, 100, SHAPE).astype(np.int32))
    with pytest.raises(distarray.InvalidArgumentError):
        i /= 2  # the float64 result does not fit the int32 array, as in NumPy


FLOAT_UFUNCS = ["sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc",
                "rint", "sign", "square", "isnan", "isinf", "isfinite", "negative", "positive",
                "absolute", "logical_not"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16], ids=lambda t: np.dtype(t).name)
def test_unary_ufuncs(client, rng, dtype):
    if np.dtype(dtype).kind == "f":
        a_np = rng.uniform(-3, 3, SHAPE).astype(dtype)
        a_np[0, :3] = [np.nan, np.inf, -np.inf]
    else:
        a_np = rng.integers(-20, 20, SHAPE).astype(dtype)
    a = put(client, a_np)
    with np.errstate(all="ignore"):
        for name in FLOAT_UFUNCS:
            expected = getattr(np, name)(a_np)
            check(getattr(distarray, name)(a), expected,
                  exact=name in ("floor", "ceil", "trunc", "rint", "sign", "isnan", "isinf",
                                 "isfinite", "negative", "positive", "absolute", "logical_not"))
        # NumPy's own functions dispatch to the daemon.
        check(np.sqrt(a), np.sqrt(a_np), exact=False)


def test_binary_ufuncs(client, rng):
    a_np, b_np = rng.uniform(-2, 2, SHAPE), rng.uniform(-2, 2, SHAPE)
    a_np[1, 1], b_np[2, 2] = np.nan, np.nan
    a, b = put(client, a_np), put(client, b_np, 1)
    for name in ("arctan2", "hypot", "maximum", "minimum", "fmax", "fmin", "logical_and",
                 "logical_or", "logical_xor", "power"):
        with np.errstate(all="ignore"):
            check(getattr(distarray, name)(a, b), getattr(np, name)(a_np, b_np),
                  exact=name not in ("arctan2", "hypot", "power"))
    check(distarray.divide(a, 4), a_np / 4)
    check(distarray.mod(a, 0.5), np.mod(a_np, 0.5), exact=False)


def test_where_clip_astype(client, rng):
    x_np, y_np = rng.uniform(-5, 5, SHAPE), rng.integers(-5, 5, SHAPE).astype(np.int32)
    c_np = rng.random(SHAPE) < 0.5
    x, y, c = put(client, x_np), put(client, y_np, 1), put(client, c_np)
    check(distarray.where(c, x, y), np.where(c_np, x_np, y_np))
    check(distarray.where(c, x, 0.0), np.where(c_np, x_np, 0.0))
    check(distarray.clip(x, -1.0, 2.0), np.clip(x_np, -1.0, 2.0))
    check(x.clip(-1.0, 2.0), np.clip(x_np, -1.0, 2.0))
    for dtype in (np.int8, np.float32, np.bool_, np.int64):
        check(x.astype(dtype), x_np.astype(dtype))
    # Negative floats to unsigned: NumPy's result is undefined (C), the daemon saturates to 0.
    check(x.astype(np.uint16), np.where(x_np < 0, 0, x_np).astype(np.uint16))
    for dtype in (np.int8, np.uint16, np.float32, np.bool_, np.int64):
        check(distarray.astype(y, dtype), y_np.astype(dtype))


def test_broadcasting_and_result_layout(client, rng):
    m_np, row_np = rng.uniform(size=(6, 5)), rng.uniform(size=(5,))
    m = put(client, m_np)
    row = client.from_numpy(row_np, distarray.on_device(1, 3))
    check(m + row, m_np + row_np)
    r = distarray.add(m, row, index_map=distarray.on_device(2, 2))
    assert r.devices == (2,)
    out = client.zeros((6, 5), np.float64, distarray.split_index_map((6, 5), 1, [0, 1]))
    handle = out.handle
    assert distarray.multiply(m, 2, out=out) is out and out.handle == handle
    check(out, m_np * 2)


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "all", "any", "argmax", "argmin"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint16, np.bool_],
                         ids=lambda t: np.dtype(t).name)
def test_reductions(client, rng, dtype):
    if np.dtype(dtype).kind == "f":
        a_np = rng.uniform(0.5, 1.5, SHAPE).astype(dtype)
    elif dtype == np.bool_:
        a_np = rng.random(SHAPE) < 0.8
    else:
        a_np = rng.integers(1, 4, SHAPE).astype(dtype)
    a = client.from_numpy(a_np, distarray.make_2d_index_map([0, 3, 6], [0, 4, 8],
                                                            [[0, 1], [2, 3]]))
    for name in REDUCTIONS:
        axes = [None, 0, 1] if name.startswith("arg") else [None, 0, 1, (0, 1), -1]
        for axis in axes:
            for keepdims in (False, True):
                if name.startswith("arg") and keepdims and axis is None:
                    continue
                expected = np.asarray(getattr(np, name)(a_np, axis=axis, keepdims=keepdims))
                if name == "mean" and dtype == np.float32:
                    expected = expected.astype(np.float32)
                result = getattr(a, name)(axis=axis, keepdims=keepdims)
                check(result, expected, exact=name not in ("sum", "prod", "mean"))
    # Module functions, combine=, and scalars out of 0-d results.
    total = distarray.sum(a, combine=True)
    assert total.mode == "replica" and total.shape == ()
    np.testing.assert_allclose(float(total), float(a_np.sum()), rtol=1e-6)
    assert int(a.argmax()) == int(np.argmax(a_np))
    assert bool(a.all()) == bool(a_np.all())


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda t: np.dtype(t).name)
def test_matmul(client, rng, dtype):
    a_np = rng.uniform(-1, 1, (6, 8)).astype(dtype)
    b_np = rng.uniform(-1, 1, (8, 5)).astype(dtype)
    a = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, 1, [0, 1]))  # shared axis
    b = client.from_numpy(b_np, distarray.split_index_map(b_np.shape, 0, [0, 1]))
    c = a @ b
    assert c.mode == "sum"  # partial products, combined on download
    check(c, a_np @ b_np, exact=False)
    check(np.matmul(a, b), a_np @ b_np, exact=False)  # NumPy's function runs on the daemon
    r = distarray.matmul(a, b, index_map=distarray.on_device(2, 3))
    assert r.mode == "replica" and r.devices == (3,)
    check(r, a_np @ b_np, exact=False)
    with pytest.raises(distarray.InvalidArgumentError):
        a @ a  # (6, 8) @ (6, 8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_with_a_symmetric_reads_the_upper_triangle(client, rng, dtype):
    """a_symmetric=True: a whole on one device is read by its upper triangle, mirrored (checked
    with an a that is not symmetric); split by rows it is the plain product; refusals name the
    field."""
    a_np = rng.uniform(-1, 1, (9, 9)).astype(dtype)
    upper = np.triu(a_np) + np.triu(a_np, 1).T
    for b_np in (rng.uniform(-1, 1, 9).astype(dtype), rng.uniform(-1, 1, (9, 4)).astype(dtype)):
        b = client.from_numpy(b_np, distarray.on_device(b_np.ndim, 1))
        whole = client.from_numpy(a_np, distarray.on_device(2, 1))
        check(distarray.matmul(whole, b, a_symmetric=True), upper @ b_np, exact=False)
        rows = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, 0, [0, 1]))
        check(distarray.matmul(rows, b, a_symmetric=True), a_np @ b_np, exact=False)
    wide = client.from_numpy(a_np[:, :5], distarray.on_device(2, 0))
    with pytest.raises(distarray.InvalidArgumentError, match="a_symmetric: a of shape"):
        distarray.matmul(wide, client.from_numpy(a_np[:5], distarray.on_device(2, 0)),
                         a_symmetric=True)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64, np.bool_],
                         ids=lambda t: np.dtype(t).name)
def test_integer_and_bool_matmul_match_numpy(client, rng, dtype):
    """Integer products wrap as NumPy's (the full range, so they overflow); bool is OR of ANDs.
    The shared axis split over two devices: a 'sum'-mode result combined on download."""
    info = np.iinfo(dtype) if dtype != np.bool_ else None
    def make(shape):
        if info is None:
            return rng.integers(0, 2, shape).astype(np.bool_)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    a_np, b_np = make((6, 9)), make((9, 5))
    a = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, 1, [0, 1]))
    b = client.from_numpy(b_np, distarray.split_index_map(b_np.shape, 0, [1, 2]))
    with np.errstate(over="ignore"):
        want = a_np @ b_np
    c = a @ b
    assert c.dtype == want.dtype
    check(c, want)
    s_np = make((3, 4, 9))  # a stack times a vector
    with np.errstate(over="ignore"):
        check(client.from_numpy(s_np, distarray.on_device(3, 2)) @ client.from_numpy(
            b_np[:, 0], distarray.on_device(1, 0)), s_np @ b_np[:, 0])
    # Mixed dtypes promote as NumPy's before the product.
    m_np = rng.integers(0, 5, (6, 9)).astype(dtype)
    f_np = rng.uniform(-1, 1, (9, 5))
    mixed = client.from_numpy(m_np, distarray.on_device(2, 1)) @ client.from_numpy(
        f_np, distarray.on_device(2, 0))
    check(mixed, m_np @ f_np, exact=False)


def test_batched_matmul_broadcasts_as_numpy(client, rng):
    """A stack split along its batch axis times a matrix, and batch axes that broadcast."""
    s_np = rng.uniform(-1, 1, (4, 6, 8))
    w_np = rng.uniform(-1, 1, (8, 5))
    s = client.from_numpy(s_np, distarray.split_index_map(s_np.shape, 0, [0, 1]))
    w = client.from_numpy(w_np, distarray.on_device(2, 1))
    c = s @ w
    assert c.shape == (4, 6, 5) and c.mode == "replica"
    check(c, s_np @ w_np, exact=False)
    x_np = rng.uniform(-1, 1, (2, 1, 3, 4))
    y_np = rng.uniform(-1, 1, (5, 4, 2))
    x = client.from_numpy(x_np, distarray.on_device(4, 0))
    y = client.from_numpy(y_np, distarray.on_device(3, 1))
    check(x @ y, x_np @ y_np, exact=False)
    with pytest.raises(distarray.InvalidArgumentError, match="broadcast"):
        s @ client.from_numpy(rng.uniform(-1, 1, (3, 8, 5)), distarray.on_device(3, 0))
    v_np = rng.uniform(-1, 1, 8)
    v = client.from_numpy(v_np, distarray.split_index_map(v_np.shape, 0, [0, 1]))
    check(s @ v, s_np @ v_np, exact=False)  # a stack @ vector: (4, 6)
    check(v @ w, v_np @ w_np, exact=False)  # vector @ matrix: (5,)
    check(distarray.matmul(v, v), np.asarray(v_np @ v_np), exact=False)  # a 0-d dot product


def test_float16_matches_numpy(client, rng):
    """float16 arrays compute in float32 and round once, as NumPy's float16 loops do: arithmetic
    is bit for bit NumPy's; libm-backed functions may differ in the last bit."""
    a_np = rng.uniform(-4, 4, SHAPE).astype(np.float16)
    b_np = rng.uniform(0.5, 4, SHAPE).astype(np.float16)
    a, b = put(client, a_np, 0), put(client, b_np, 1, (3, 1))
    assert a.dtype == np.float16
    np.testing.assert_array_equal(a.to_numpy(), a_np)
    for op in (operator.add, operator.sub, operator.mul, operator.truediv):
        check(op(a, b), op(a_np, b_np))
    check(a + 0.1, a_np + 0.1)  # the weak scalar takes float16 first
    check(a < b, a_np < b_np)
    check(distarray.sqrt(b), np.sqrt(b_np))
    got = distarray.exp(a).to_numpy()
    np.testing.assert_array_max_ulp(got, np.exp(a_np), maxulp=1)
    check(a.astype(np.float32), a_np.astype(np.float32))
    check(a + np.float32(1) * put(client, np.ones(SHAPE, np.float32)), a_np + np.float32(1))
    assert a.max().to_numpy() == a_np.max()
    np.testing.assert_allclose(float(a.sum(combine=True)), float(a_np.astype(np.float64).sum()),
                               atol=4e-3 * float(np.abs(a_np.astype(np.float64)).sum()))
    assert a.sum().dtype == np.float16


def test_bfloat16_through_ml_dtypes(client, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    a_np = rng.uniform(-4, 4, SHAPE).astype(bf16)
    b_np = rng.uniform(0.5, 4, SHAPE).astype(bf16)
    a, b = put(client, a_np), put(client, b_np, 1, (2, 0))
    assert a.dtype == bf16
    np.testing.assert_array_equal(a.to_numpy(), a_np)
    expected = (a_np.astype(np.float32) * b_np.astype(np.float32)).astype(bf16)
    check(a * b, expected)
    check(a.astype(np.float64), a_np.astype(np.float64))


def test_complex_arrays_compute_as_numpy(client, rng):
    for dtype in (np.complex64, np.complex128):
        a_np = (rng.uniform(-2, 2, SHAPE) + 1j * rng.uniform(-2, 2, SHAPE)).astype(dtype)
        b_np = (rng.uniform(-2, 2, SHAPE) + 1j * rng.uniform(-2, 2, SHAPE)).astype(dtype)
        a, b = put(client, a_np), put(client, b_np, 1, (2, 0))
        np.testing.assert_array_equal(a.to_numpy(), a_np)
        rtol = 1e-5 if dtype == np.complex64 else 1e-13
        for got, want in ((a + b, a_np + b_np), (a * b, a_np * b_np), (a / b, a_np / b_np),
                          (a * 2.5, a_np * 2.5), (np.abs(a), np.abs(a_np)),
                          (-a, -a_np), (np.square(a), np.square(a_np))):
            g = got.to_numpy()
            assert g.dtype == want.dtype
            np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol)
        check(a == b, a_np == b_np)
        check(a.astype(np.float64), a_np.real.astype(np.float64))
    f = put(client, rng.uniform(size=SHAPE).astype(np.float32))
    z = put(client, (rng.uniform(size=SHAPE) + 1j).astype(np.complex64))
    assert (f + z).dtype == np.complex64
    assert (f.astype(np.float64) + z).dtype == np.complex128
    with pytest.raises(distarray.InvalidArgumentError, match="floor_divide"):
        z // z
    z_np = z.to_numpy()
    for got, want in ((z * 1j, z_np * 1j), (f + (2 - 3j), f.to_numpy() + (2 - 3j)),
                      (f.astype(np.float64) * 1j, f.to_numpy().astype(np.float64) * 1j)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6)


COMPLEX_FUNCTIONS = [np.exp, np.expm1, np.log, np.log1p, np.log2, np.log10, np.sqrt, np.sin,
                     np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
                     np.sign, np.rint]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda t: np.dtype(t).name)
def test_complex_functions_and_order_match_numpy(client, rng, dtype):
    a_np = (rng.uniform(-3, 3, SHAPE) + 1j * rng.uniform(-3, 3, SHAPE)).astype(dtype)
    b_np = (rng.uniform(-2, 2, SHAPE) + 1j * rng.uniform(-2, 2, SHAPE)).astype(dtype)
    a, b = put(client, a_np), put(client, b_np, 1, (2, 0))
    rtol = 1e-5 if dtype == np.complex64 else 1e-13
    for fn in COMPLEX_FUNCTIONS:
        got = fn(a).to_numpy()
        assert got.dtype == dtype, fn.__name__
        np.testing.assert_allclose(got, fn(a_np), rtol=rtol, atol=rtol, err_msg=fn.__name__)
    got = (a ** b).to_numpy()
    np.testing.assert_allclose(got, a_np ** b_np, rtol=20 * rtol, err_msg="power")
    np.testing.assert_allclose((a ** 3).to_numpy(), a_np ** 3, rtol=rtol, err_msg="power by 3")

    # The order: parts from a few integers so real parts tie, and NaN in either part.
    c_np = rng.integers(-2, 3, SHAPE) + 1j * rng.integers(-2, 3, SHAPE)
    d_np = rng.integers(-2, 3, SHAPE) + 1j * rng.integers(-2, 3, SHAPE)
    c_np[0, 0], c_np[1, 1], d_np[2, 2], d_np[3, 3] = complex(np.nan, 0), complex(1, np.nan), \
        complex(np.nan, 1), complex(0, np.nan)
    c_np, d_np = c_np.astype(dtype), d_np.astype(dtype)
    c, d = put(client, c_np), put(client, d_np, 1, (1, 2))
    with np.errstate(invalid="ignore"):  # NumPy warns about comparing NaN
        for op in (operator.lt, operator.le, operator.gt, operator.ge):
            check(op(c, d), op(c_np, d_np))
        for fn in (np.maximum, np.minimum, np.fmax, np.fmin):
            check(fn(c, d), fn(c_np, d_np))
        check(c.clip(-1 + 1j, 1 - 1j), np.clip(c_np, -1 + 1j, 1 - 1j))
    ordered = np.where(np.isnan(c_np), 0, c_np)  # NaN-free rows, so the value is unique
    e = put(client, ordered, 1, (0, 2))
    check(e.max(axis=1), ordered.max(axis=1))
    check(e.min(axis=0), ordered.min(axis=0))
    check(e.argmax(axis=1), ordered.argmax(axis=1))
    check(e.argmin(), np.array(ordered.argmin()))
    assert np.isnan(c.max().to_numpy())
    check(c.argmax(), np.array(c_np.argmax()))


def test_what_the_daemon_does_not_serve_is_an_error(client, rng):
    a = put(client, rng.uniform(size=SHAPE))
    with pytest.raises(TypeError):
        np.add.reduce(a)  # not served: no silent download
    with pytest.raises(TypeError, match="from_numpy"):
        a + np.ones(SHAPE)
    with pytest.raises(TypeError, match="from_numpy"):
        np.ones(SHAPE) + a
    with pytest.raises(TypeError, match="from_numpy"):
        np.multiply(a, np.ones(SHAPE))
    # A daemon that does not list a feature is refused before the call, naming it.
    client._rpc.features = client.features - {"elementwise.sqrt"}
    with pytest.raises(distarray.UnimplementedError, match="elementwise.sqrt"):
        distarray.sqrt(a)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a > 0)
