"""NumPy's ndarray methods on DistributedArray (``copy``, ``std``/``var``, ``cumsum``/``cumprod``,
``dot``, ``sort`` in place, ``argsort``, ``nonzero``, ``take``, ``repeat``, ``round``, ``conj``,
``real``/``imag``, ``diagonal``, ``trace``, ``fill``, ``tolist``, ``flatten``/``ravel`` orders),
``Client.arange`` in NumPy's signature, and the error a traced value gives where an op needs its
rank or dtype. Against NumPy in float64 (and the dtypes each method changes) on fresh random data
in every layout of ``_layouts``; each bad argument NumPy refuses is refused with NumPy's
exception type, checked against NumPy itself."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, check, put

numpy_axis_error = getattr(getattr(np, "exceptions", np), "AxisError")


def close(result, expected: np.ndarray, msg: str = "", rtol: float = 1e-12) -> None:
    """``result`` holds ``expected`` to rounding: shape and dtype exactly, values to ``rtol`` (of
    the largest magnitude, for sums that cancel)."""
    assert isinstance(result, distarray.DistributedArray), msg
    got = result.to_numpy()
    assert got.shape == expected.shape, f"{msg}: shape {got.shape}, NumPy gives {expected.shape}"
    assert got.dtype == expected.dtype, f"{msg}: dtype {got.dtype}, NumPy gives {expected.dtype}"
    scale = float(np.max(np.abs(expected))) if expected.size else 1.0
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * scale, err_msg=msg)


def both_raise(exc, numpy_call, distarray_call) -> None:
    """NumPy raises ``exc`` and so does distarray (so the test cannot pass on a bad model)."""
    with pytest.raises(exc):
        numpy_call()
    with pytest.raises(exc):
        distarray_call()


layouts = pytest.mark.parametrize("layout", list(LAYOUTS))


# ---- copy, tolist, fill --------------------------------------------------------------------


@layouts
def test_copy_is_a_new_array_of_the_same_layout_and_mode(client, rng, layout):
    values = rng.uniform(-100, 100, (6, 5))
    a = put(client, values, layout)
    b = a.copy()
    check(b, values, "copy")
    assert b.handle != a.handle and b.index_map == a.index_map and b.mode == a.mode
    b[0, 0] = 1e9  # the copy is not the original
    np.testing.assert_array_equal(a.to_numpy(), values)
    for order in ("C", "F", "A", "K"):
        check(a.copy(order=order), values.copy(order=order), f"copy(order={order!r})")
    summed = client.from_numpy(values, LAYOUTS[layout](values.shape), mode="sum")
    c = summed.copy()
    assert c.mode == "sum" and c.index_map == summed.index_map
    check(c, summed.to_numpy(), "copy of a sum-mode array")
    both_raise(ValueError, lambda: values.copy(order="X"), lambda: a.copy(order="X"))


@layouts
def test_tolist_and_fill(client, rng, layout):
    values = rng.integers(-100, 100, (4, 3)).astype(np.int16)
    a = put(client, values, layout)
    listed = a.tolist()
    assert listed == values.tolist() and type(listed[0][0]) is int
    handle = a.handle
    assert a.fill(7) is None
    expected = values.copy()
    expected.fill(7)
    check(a, expected, "fill")
    assert a.handle == handle
    with pytest.raises(TypeError):
        a.fill(a)
    scalar = np.asarray(rng.uniform(-100, 100))
    zero_d = put(client, scalar, layout).tolist()
    assert zero_d == scalar.tolist() and type(zero_d) is float


# ---- statistics ----------------------------------------------------------------------------


@layouts
def test_std_and_var_against_numpy(client, rng, layout):
    values = rng.uniform(-100, 100, (6, 5))
    a = put(client, values, layout)
    for kwargs in ({}, {"axis": 0}, {"axis": -1}, {"axis": (0, 1)}, {"axis": 1, "keepdims": True},
                   {"ddof": 1}, {"axis": 0, "ddof": 2}):
        for name in ("std", "var"):
            close(getattr(a, name)(**kwargs), np.asarray(getattr(values, name)(**kwargs)),
                  f"{name}({kwargs})")
    # The array API's correction= is NumPy's ddof= (numpy.var takes it; the method does not).
    close(a.var(axis=0, correction=1), np.var(values, axis=0, correction=1), "correction=1")
    close(a.std(correction=1.5), np.asarray(np.std(values, correction=1.5)), "correction=1.5")
    single = put(client, values.astype(np.float32), layout)
    close(single.var(axis=0), values.astype(np.float32).var(axis=0), "float32", rtol=1e-5)
    close(single.std(dtype=np.float64), np.asarray(values.astype(np.float32).std(
        dtype=np.float64)), "float32 in float64")
    ints = rng.integers(-1000, 1000, (6, 5)).astype(np.int32)
    close(put(client, ints, layout).var(axis=1), ints.var(axis=1), "int32 gives float64")
    cplx = values + 1j * rng.uniform(-100, 100, values.shape)
    close(put(client, cplx, layout).var(axis=0), cplx.var(axis=0), "complex gives real")
    close(put(client, cplx, layout).std(), np.asarray(cplx.std()), "complex std")
    both_raise(ValueError, lambda: np.var(values, ddof=1, correction=1),
               lambda: a.var(ddof=1, correction=1))
    both_raise(numpy_axis_error, lambda: values.std(axis=2), lambda: a.std(axis=2))
    with pytest.raises(TypeError, match="out="):
        a.var(out=a)
    with pytest.raises(TypeError, match="dtype"):
        a.var(dtype=np.int64)
    with pytest.raises(TypeError, match="where="):
        a.std(where=a > 0)


@layouts
def test_cumsum_and_cumprod_against_numpy(client, rng, layout):
    values = rng.uniform(-100, 100, (6, 5))
    a = put(client, values, layout)
    for axis in (None, 0, 1, -1):
        close(a.cumsum(axis=axis), values.cumsum(axis=axis), f"cumsum(axis={axis})", rtol=1e-10)
    near_one = rng.uniform(0.5, 1.5, (6, 5))
    b = put(client, near_one, layout)
    for axis in (None, 0, -1):
        close(b.cumprod(axis=axis), near_one.cumprod(axis=axis), f"cumprod(axis={axis})")
    small = rng.integers(-5, 6, (6, 5)).astype(np.int8)
    check(put(client, small, layout).cumsum(), small.cumsum(), "int8 sums in int64")
    check(put(client, small, layout).cumprod(axis=0, dtype=np.float64),
          small.cumprod(axis=0, dtype=np.float64), "cumprod dtype=")
    flags = rng.random((6, 5)) < 0.5
    check(put(client, flags, layout).cumsum(axis=1), flags.cumsum(axis=1), "bool")
    both_raise(numpy_axis_error, lambda: values.cumsum(axis=2), lambda: a.cumsum(axis=2))
    with pytest.raises(TypeError, match="out="):
        a.cumprod(out=a)


# ---- products ------------------------------------------------------------------------------


@layouts
def test_dot_against_numpy(client, rng, layout):
    m = rng.uniform(-10, 10, (6, 5))
    n = rng.uniform(-10, 10, (5, 4))
    v = rng.uniform(-10, 10, 5)
    w = rng.uniform(-10, 10, 6)
    a, b = put(client, m, layout), put(client, n, layout)
    x, y = put(client, v, layout), put(client, w, layout)
    close(a.dot(b), m.dot(n), "2-D . 2-D")
    close(a.dot(x), m.dot(v), "2-D . 1-D")
    close(y.dot(a), w.dot(m), "1-D . 2-D")
    close(x.dot(x), np.asarray(v.dot(v)), "1-D . 1-D: the inner product, 0-d")
    close(a.dot(2.5), m.dot(2.5), "a scalar")
    s = put(client, np.asarray(rng.uniform(1, 2)), layout)
    close(s.dot(x), s.to_numpy().dot(v), "0-d . 1-D")
    t = rng.uniform(-10, 10, (2, 3, 5))
    u = rng.uniform(-10, 10, (4, 5, 3))
    close(put(client, t, layout).dot(put(client, u, layout)), t.dot(u), "3-D . 3-D")
    close(put(client, t, layout).dot(x), t.dot(v), "3-D . 1-D")
    ints = rng.integers(-5, 5, (3, 4)).astype(np.int16)
    check(put(client, ints, layout).dot(put(client, ints.T.copy(), layout)), ints.dot(ints.T),
          "int16 stays int16")
    both_raise(ValueError, lambda: m.dot(m), lambda: a.dot(a))
    both_raise(ValueError, lambda: t.dot(t), lambda: put(client, t, layout).dot(
        put(client, t, layout)))
    with pytest.raises(TypeError, match="upload"):
        a.dot(n)
    with pytest.raises(TypeError, match="out="):
        a.dot(b, out=a)


# ---- sorting and searching -----------------------------------------------------------------


@layouts
def test_sort_is_in_place_as_numpy(client, rng, layout):
    values = rng.uniform(-100, 100, (6, 5))
    for axis in (-1, 0):
        a = put(client, values, layout)
        handle, index_map = a.handle, a.index_map
        expected = values.copy()
        assert expected.sort(axis=axis) is None
        assert a.sort(axis=axis) is None
        check(a, expected, f"sort(axis={axis})")
        assert a.handle == handle and a.index_map == index_map
    a = put(client, values, layout)
    for kind in ("quicksort", "mergesort", "heapsort", "stable"):
        a.sort(kind=kind)
    check(a, np.sort(values), "every kind")
    both_raise(ValueError, lambda: values.copy().sort(kind="foo"), lambda: a.sort(kind="foo"))
    both_raise(ValueError, lambda: values.copy().sort(order="x"), lambda: a.sort(order="x"))
    both_raise(ValueError, lambda: np.sort(values, kind="stable", stable=True),
               lambda: a.sort(kind="stable", stable=True))
    both_raise(TypeError, lambda: values.copy().sort(axis=None), lambda: a.sort(axis=None))
    both_raise(numpy_axis_error, lambda: values.copy().sort(axis=2), lambda: a.sort(axis=2))
    check(a, np.sort(values), "the refused calls left it as it was")


@layouts
def test_argsort_and_nonzero(client, rng, layout):
    values = rng.uniform(-100, 100, (6, 5))  # distinct: one order
    a = put(client, values, layout)
    for axis in (-1, 0, None):
        check(a.argsort(axis=axis), values.argsort(axis=axis), f"argsort(axis={axis})")
    check(a.argsort(kind="stable"), values.argsort(kind="stable"), "kind='stable'")
    both_raise(ValueError, lambda: values.argsort(kind="foo"), lambda: a.argsort(kind="foo"))
    sparse = np.where(rng.random((6, 5)) < 0.3, values, 0.0)
    got = put(client, sparse, layout).nonzero()
    want = sparse.nonzero()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        check(g, w, "nonzero")
    zero_d = np.asarray(rng.uniform(1, 2))
    both_raise(ValueError, lambda: zero_d.nonzero(), lambda: put(client, zero_d, layout).nonzero())


# ---- indexing ------------------------------------------------------------------------------


@layouts
def test_take_against_numpy(client, rng, layout):
    values = rng.uniform(-100, 100, (6, 5))
    a = put(client, values, layout)
    rows = rng.integers(-6, 6, 4)
    check(a.take(rows, axis=0), values.take(rows, axis=0), "listed rows")
    cols = [int(i) for i in rng.integers(-5, 5, 3)]
    check(a.take(cols, axis=-1), values.take(cols, axis=-1), "a list")
    flat = rng.integers(0, 30, (2, 3))
    check(a.take(flat), values.take(flat), "axis=None: the flattened array, indices 2-D")
    check(a.take(3, axis=1), values.take(3, axis=1), "an integer removes the axis")
    held = client.from_numpy(rng.integers(-5, 5, (3, 2)))
    check(a.take(held, axis=1), values.take(held.to_numpy(), axis=1), "indices on the devices")
    check(a.take([], axis=0), values.take(np.array([], np.int64), axis=0), "no indices")
    wild = rng.integers(-40, 40, 7)
    for mode in ("wrap", "clip"):
        check(a.take(wild, axis=0, mode=mode), values.take(wild, axis=0, mode=mode), mode)
        held = client.from_numpy(wild)
        check(a.take(held, mode=mode), values.take(wild, mode=mode), f"{mode}, held")
    both_raise(IndexError, lambda: values.take([6], axis=0), lambda: a.take([6], axis=0))
    both_raise(ValueError, lambda: values.take([0], mode="foo"), lambda: a.take([0], mode="foo"))
    empty = np.zeros((0, 3))
    both_raise(IndexError, lambda: empty.take([1], axis=0, mode="wrap"),
               lambda: client.from_numpy(empty).take([1], axis=0, mode="wrap"))
    both_raise(numpy_axis_error, lambda: values.take([0], axis=2), lambda: a.take([0], axis=2))
    with pytest.raises(TypeError, match="integer"):
        a.take(np.array([0.5]))


@layouts
def test_repeat_against_numpy(client, rng, layout):
    values = rng.uniform(-100, 100, (4, 3))
    a = put(client, values, layout)
    check(a.repeat(2), values.repeat(2), "flattened")
    check(a.repeat(3, axis=0), values.repeat(3, axis=0), "axis 0")
    counts = rng.integers(0, 4, 3)
    check(a.repeat(counts, axis=1), values.repeat(counts, axis=1), "a count per column")
    check(a.repeat(client.from_numpy(counts), axis=-1), values.repeat(counts, axis=-1),
          "counts on the devices")
    both_raise(ValueError, lambda: values.repeat(-1), lambda: a.repeat(-1))
    both_raise(ValueError, lambda: values.repeat([1, 2], axis=0),
               lambda: a.repeat([1, 2], axis=0))


@layouts
def test_diagonal_and_trace_against_numpy(client, rng, layout):
    values = rng.uniform(-100, 100, (5, 6))
    a = put(client, values, layout)
    for offset in (0, 1, -2, 5, -7):
        check(a.diagonal(offset), values.diagonal(offset), f"diagonal({offset})")
        close(a.trace(offset), np.asarray(values.trace(offset)), f"trace({offset})")
    cube = rng.uniform(-100, 100, (3, 4, 5))
    c = put(client, cube, layout)
    for axis1, axis2 in ((0, 1), (1, 0), (0, 2), (2, 1), (-1, -3)):
        for offset in (0, 1, -1):
            check(c.diagonal(offset, axis1, axis2), cube.diagonal(offset, axis1, axis2),
                  f"diagonal({offset}, {axis1}, {axis2})")
            close(c.trace(offset, axis1, axis2), cube.trace(offset, axis1, axis2),
                  f"trace({offset}, {axis1}, {axis2})")
    small = rng.integers(-100, 100, (4, 4)).astype(np.int8)
    s = put(client, small, layout)
    check(s.trace(), np.asarray(small.trace()), "int8 sums in int64")
    check(s.trace(dtype=np.float32), np.asarray(small.trace(dtype=np.float32)), "dtype=")
    line = rng.uniform(size=4)
    both_raise(ValueError, lambda: line.diagonal(), lambda: put(client, line, layout).diagonal())
    both_raise(ValueError, lambda: line.trace(), lambda: put(client, line, layout).trace())
    both_raise(ValueError, lambda: values.diagonal(0, 1, 1), lambda: a.diagonal(0, 1, 1))
    both_raise(numpy_axis_error, lambda: values.diagonal(0, 0, 2), lambda: a.diagonal(0, 0, 2))


# ---- elementwise ---------------------------------------------------------------------------


@layouts
def test_round_against_numpy(client, rng, layout):
    values = rng.uniform(-1000, 1000, (6, 5))
    a = put(client, values, layout)
    for decimals in (0, 1, 3, -1, -2):
        check(a.round(decimals), values.round(decimals), f"round({decimals})")
    single = values.astype(np.float32)
    check(put(client, single, layout).round(2), single.round(2), "float32")
    halves = (rng.integers(-20, 20, (6, 5)) + 0.5)
    check(put(client, halves, layout).round(), halves.round(), "halves go to even")
    ints = rng.integers(-3000, 3000, (6, 5)).astype(np.int16)
    for decimals in (1, 0, -1, -2):
        check(put(client, ints, layout).round(decimals), ints.round(decimals),
              f"int16 round({decimals})")
    near = np.array([[32767, -32768, 32764, 15, 25]], np.int16)  # past the range NumPy wraps
    check(client.from_numpy(near).round(-1), near.round(-1), "int16 wraps as NumPy's")
    cplx = values + 1j * rng.uniform(-1000, 1000, values.shape)
    check(put(client, cplx, layout).round(1), cplx.round(1), "complex: each part")
    flags = rng.random((6, 5)) < 0.5
    check(put(client, flags, layout).round(), flags.round(), "bool gives float16, as NumPy's")
    both_raise(TypeError, lambda: values.round(1.5), lambda: a.round(1.5))
    both_raise(TypeError, lambda: flags.round(1), lambda: put(client, flags, layout).round(1))
    with pytest.raises(TypeError, match="out="):
        a.round(out=a)


@layouts
def test_conj_real_imag(client, rng, layout):
    values = rng.uniform(-100, 100, (6, 5)) + 1j * rng.uniform(-100, 100, (6, 5))
    a = put(client, values, layout)
    check(a.conj(), values.conj(), "conj")
    check(a.conjugate(), values.conjugate(), "conjugate")
    check(a.real, values.real.copy(), "real")
    check(a.imag, values.imag.copy(), "imag")
    single = put(client, values.astype(np.complex64), layout)
    check(single.real, values.astype(np.complex64).real.copy(), "complex64's real is float32")
    reals = rng.uniform(-100, 100, (6, 5))
    r = put(client, reals, layout)
    assert r.conj() is r and reals.conj() is reals  # a real array is its own conjugate
    check(r.real, reals, "real of a real array")
    check(r.imag, np.zeros_like(reals), "imag of a real array")


@layouts
def test_flatten_and_ravel_orders(client, rng, layout):
    values = rng.uniform(-100, 100, (3, 4, 2))
    a = put(client, values, layout)
    for order in ("C", "F", "A", "K"):
        check(a.flatten(order), values.flatten(order), f"flatten({order!r})")
        check(a.ravel(order), np.ravel(values, order), f"ravel({order!r})")
    both_raise(ValueError, lambda: values.flatten("X"), lambda: a.flatten("X"))
    both_raise(ValueError, lambda: values.ravel("X"), lambda: a.ravel("X"))


# ---- Client.arange -------------------------------------------------------------------------


@layouts
def test_client_arange_has_numpys_signatures(client, layout):
    cases = [((5,), {}), ((2, 10, 3), {}), ((10, 2, -3), {}), ((0.5, 2.25, 0.5), {}),
             ((3, 3), {}), ((-4,), {}), ((7,), {"dtype": np.float32}),
             ((1, 12), {"dtype": np.int16})]
    for args, kwargs in cases:
        expected = np.arange(*args, **kwargs)
        check(client.arange(*args, **kwargs), expected, f"arange{args} {kwargs}")
        if expected.size:
            laid = client.arange(*args, index_map=LAYOUTS[layout](expected.shape), **kwargs)
            check(laid, expected, f"arange{args} in {layout}")
            assert laid.index_map == put(client, expected, layout).index_map
    named = client.arange(4, name="methods-arange")
    try:
        assert client.attach("methods-arange").to_numpy().tolist() == [0, 1, 2, 3]
    finally:
        named.delete()
    # The older form: a shape first, then start and step (float64).
    check(client.arange((6, 4), 1, 2), (1 + 2 * np.arange(24.0)).reshape(6, 4), "shape form")
    # NumPy's ZeroDivisionError; distarray.arange's ValueError, which the client's shares.
    both_raise((ValueError, ZeroDivisionError), lambda: np.arange(1, 5, 0),
               lambda: client.arange(1, 5, 0))
    with pytest.raises(ValueError, match="step cannot be zero"):
        client.arange(1.0, 5.0, 0.0)
    both_raise(TypeError, lambda: np.arange(1, "5"), lambda: client.arange(1, "5"))
    with pytest.raises(TypeError, match="real numbers"):
        client.arange(1j)  # NumPy's is an empty complex array; the daemon's fill is real


# ---- traced values -------------------------------------------------------------------------

la = distarray.linalg
NEEDS_RANK = {
    "distarray.roll": lambda v, w: distarray.roll(v, 1),
    "distarray.tile": lambda v, w: distarray.tile(v, (2,)),
    "distarray.repeat": lambda v, w: distarray.repeat(v, 2, axis=0),
    "distarray.diff": lambda v, w: distarray.diff(v),
    "distarray.std": lambda v, w: distarray.std(v, axis=0),
    "distarray.var": lambda v, w: distarray.var(v),
    "distarray.vecdot": lambda v, w: distarray.vecdot(v, w),
    "distarray.tensordot": lambda v, w: distarray.tensordot(v, w),
    "distarray.outer": lambda v, w: distarray.outer(v, w),
    "distarray.tril": lambda v, w: distarray.tril(v),
    "distarray.broadcast_to": lambda v, w: distarray.broadcast_to(v, (3, 3)),
    "distarray.broadcast_arrays": lambda v, w: distarray.broadcast_arrays(v, w),
    "distarray.unstack": lambda v, w: distarray.unstack(v),
    "distarray.nonzero": lambda v, w: distarray.nonzero(v),
    "distarray.unique_values": lambda v, w: distarray.unique_values(v),
    "distarray.meshgrid": lambda v, w: distarray.meshgrid(v, w),
    "distarray.linalg.trace": lambda v, w: la.trace(v),
    "distarray.linalg.diagonal": lambda v, w: la.diagonal(v),
    "distarray.linalg.cross": lambda v, w: la.cross(v, w),
    "distarray.linalg.matrix_norm": lambda v, w: la.matrix_norm(v),
    "distarray.linalg.matrix_power": lambda v, w: la.matrix_power(v, 2),
    "distarray.linalg.lstsq": lambda v, w: la.lstsq(v, w),
    "expand_dims": lambda v, w: distarray.expand_dims(v, 0),
    "moveaxis": lambda v, w: distarray.moveaxis(v, 0, 1),
    "matrix_transpose": lambda v, w: v.mT,
    "flatten(order='F')": lambda v, w: v.flatten("F"),
}
NEEDS_DTYPE = {
    "distarray.round": lambda v, w: distarray.round(v),
    "distarray.conj": lambda v, w: distarray.conj(v),
    "distarray.real": lambda v, w: distarray.real(v),
    "distarray.sum": lambda v, w: distarray.sum(v, dtype=np.float32),
    "distarray.max": lambda v, w: distarray.max(v, axis=()),
    "distarray.linalg.vector_norm": lambda v, w: la.vector_norm(v),
    "distarray.linalg.pinv": lambda v, w: la.pinv(v),
}


@pytest.mark.parametrize("name,needs", [(n, "rank") for n in NEEDS_RANK]
                         + [(n, "dtype") for n in NEEDS_DTYPE])
def test_traced_value_without_rank_or_dtype_is_a_clear_type_error(name, needs):
    program = distarray.Program()
    v, w = program.input("a"), program.input("b")
    call = {**NEEDS_RANK, **NEEDS_DTYPE}[name]
    with pytest.raises(TypeError) as caught:
        call(v, w)
    message = str(caught.value)
    assert message.startswith(f"{name} needs the array's {needs}, which a traced value does not "
                              "have yet"), message
    assert isinstance(caught.value, distarray.TracedValueError)


def test_traced_value_attributes():
    program = distarray.Program()
    v = program.input("a")
    # Still "no such attribute" for getattr with a default and hasattr: the SDK's functions tell
    # a traced value by it, and take their traced path.
    assert getattr(v, "shape", None) is None and not hasattr(v, "ndim")
    assert not hasattr(v, "dtype") and not hasattr(v, "size")
    with pytest.raises(AttributeError) as caught:
        v.no_such_thing
    assert not isinstance(caught.value, TypeError)
    with pytest.raises(distarray.TracedValueError, match="the array's rank"):
        v.ndim
    # Ops that take their axes explicitly still record statements.
    before = len(program.proto.statements)
    distarray.sort(v, axis=0)
    distarray.squeeze(v, 0)
    distarray.flip(v, axis=-1)
    distarray.clip(v, 0, 1)
    distarray.sum(v, axis=0)
    assert len(program.proto.statements) == before + 5
