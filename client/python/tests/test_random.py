"""distarray.random (uniform, normal, integers) and Client.uniform/normal/integers: the draws'
statistics for large n (sample moments within a few standard errors, every value in range, the
counts of each integer), reproducibility with a seed, the daemon's promise that a seed gives the
same values in every layout, and the argument checks (each error names its argument, and nothing
reaches the daemon). Parameters and seeds come from a fresh random Generator per test."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS

N = 200_000
# Sample statistics are within Z standard errors of the truth: a false failure at 6 standard
# errors has probability about 2e-9 per check.
Z = 6.0


def _seed(rng) -> int:
    return int(rng.integers(0, 2**64, dtype=np.uint64))


def _within(value: float, expected: float, stderr: float, what: str) -> None:
    assert abs(value - expected) <= Z * stderr, (
        f"{what}: {value} is {abs(value - expected) / stderr:.1f} standard errors from {expected}")


def _fraction_within(values: np.ndarray, inside: np.ndarray, p: float, what: str) -> None:
    """The fraction of ``inside`` is within Z binomial standard errors of ``p``."""
    n = values.size
    _within(float(inside.mean()), p, math.sqrt(p * (1 - p) / n), what)


def test_uniform_statistics_and_range(client, rng):
    low = float(rng.uniform(-100, 100))
    high = low + float(rng.uniform(0.5, 50))
    values = distarray.random.uniform(low, high, (400, 500), seed=_seed(rng)).to_numpy()
    assert values.shape == (400, 500) and values.dtype == np.float64
    assert values.min() >= low and values.max() < high
    width = high - low
    _within(values.mean(), (low + high) / 2, width / math.sqrt(12 * N), "uniform mean")
    # The variance of U(low, high) is width^2 / 12; that of its sample estimate width^4 / 180 / n.
    _within(values.var(), width**2 / 12, width**2 / math.sqrt(180 * N), "uniform variance")
    # Each tenth of the range holds a tenth of the draws.
    bins = np.floor((values - low) / width * 10).astype(int)
    for b in range(10):
        _fraction_within(values, bins == b, 0.1, f"uniform bin {b}")
    # The defaults are [0, 1), numpy.random.Generator.random's.
    unit = distarray.random.uniform(size=N, seed=_seed(rng)).to_numpy()
    assert unit.min() >= 0 and unit.max() < 1
    _within(unit.mean(), 0.5, 1 / math.sqrt(12 * N), "uniform() mean")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_uniform_narrow_floats_stay_below_high(client, rng, dtype):
    values = distarray.random.uniform(-2.0, 3.0, N, dtype, seed=_seed(rng)).to_numpy()
    assert values.dtype == np.dtype(dtype)
    wide = values.astype(np.float64)
    assert wide.min() >= -2.0 and wide.max() < 3.0  # a draw that rounds to high becomes low
    _within(wide.mean(), 0.5, 5 / math.sqrt(12 * N) + 0.01, f"uniform {np.dtype(dtype)} mean")


def test_normal_statistics(client, rng):
    loc = float(rng.uniform(-50, 50))
    scale = float(rng.uniform(0.1, 20))
    values = distarray.random.normal(loc, scale, (500, 400), seed=_seed(rng)).to_numpy()
    assert values.shape == (500, 400) and values.dtype == np.float64
    assert np.isfinite(values).all()
    _within(values.mean(), loc, scale / math.sqrt(N), "normal mean")
    # The sample standard deviation's standard error is about scale / sqrt(2 n).
    _within(values.std(), scale, scale / math.sqrt(2 * N), "normal std")
    z = (values - loc) / scale
    _fraction_within(z, np.abs(z) < 1, 0.6826894921370859, "normal within 1 sigma")
    _fraction_within(z, np.abs(z) < 2, 0.9544997361036416, "normal within 2 sigma")
    _fraction_within(z, z < 0, 0.5, "normal below loc")
    # Third and fourth moments: a normal's skewness is 0 (s.e. sqrt(6/n)), kurtosis 3 (sqrt(24/n)).
    _within(float((z**3).mean()), 0.0, math.sqrt(6 / N) * 1.5, "normal skewness")
    _within(float((z**4).mean()), 3.0, math.sqrt(96 / N), "normal kurtosis")
    # The defaults are the standard normal, in float32 when asked.
    standard = distarray.random.normal(size=N, dtype=np.float32, seed=_seed(rng)).to_numpy()
    assert standard.dtype == np.float32
    _within(float(standard.mean()), 0.0, 1 / math.sqrt(N), "standard normal mean")
    _within(float(standard.std()), 1.0, 1 / math.sqrt(2 * N), "standard normal std")
    # scale 0 is loc everywhere, as NumPy's.
    np.testing.assert_array_equal(
        distarray.random.normal(loc, 0.0, 7, seed=_seed(rng)).to_numpy(), np.full(7, loc))


def test_integers_statistics_and_range(client, rng):
    low = int(rng.integers(-1000, 1000))
    high = low + int(rng.integers(2, 20))
    values = distarray.random.integers(low, high, (N,), seed=_seed(rng)).to_numpy()
    assert values.dtype == np.int64
    assert values.min() == low and values.max() == high - 1  # every value drawn, high excluded
    k = high - low
    for v in range(low, high):
        _fraction_within(values, values == v, 1 / k, f"integers count of {v}")
    # endpoint=True draws high too; integers(n) draws from [0, n).
    closed = distarray.random.integers(low, high, N, endpoint=True, seed=_seed(rng)).to_numpy()
    assert closed.min() == low and closed.max() == high
    _fraction_within(closed, closed == high, 1 / (k + 1), "integers endpoint count of high")
    short = distarray.random.integers(5, size=N, seed=_seed(rng)).to_numpy()
    assert set(np.unique(short)) == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.uint64])
def test_integers_over_a_whole_dtype(client, rng, dtype):
    info = np.iinfo(dtype)
    high = min(int(info.max), 2**63 - 2)  # the daemon's exclusive bound is an int64
    values = distarray.random.integers(int(info.min), high, N, dtype, endpoint=True,
                                       seed=_seed(rng)).to_numpy()
    assert values.dtype == np.dtype(dtype)
    assert int(values.min()) >= info.min and int(values.max()) <= high
    middle = (int(info.min) + high) / 2
    _fraction_within(values, values.astype(np.float64) < middle, 0.5, f"{dtype} lower half")
    if info.bits <= 8:  # every value of the dtype appears
        assert len(np.unique(values)) == high - int(info.min) + 1


def test_integers_whole_int64_range(client, rng):
    """Beyond float64's exact integers: both signs and both parities, evenly."""
    values = distarray.random.integers(-2**63, 2**63 - 1, N, seed=_seed(rng)).to_numpy()
    _fraction_within(values, values < 0, 0.5, "int64 negative")
    _fraction_within(values, values % 2 == 1, 0.5, "int64 odd")
    _fraction_within(values, values % 3 == 0, 1 / 3, "int64 multiple of 3")


def test_a_seed_reproduces_and_another_seed_differs(client, rng):
    seed = _seed(rng)
    for draw in (lambda s: distarray.random.uniform(-1, 1, (30, 20), seed=s),
                 lambda s: distarray.random.normal(3, 2, (30, 20), seed=s),
                 lambda s: distarray.random.integers(-2**40, 2**40, (30, 20), seed=s)):
        first, again = draw(seed).to_numpy(), draw(seed).to_numpy()
        np.testing.assert_array_equal(first, again)
        other = draw((seed + 1) % 2**64).to_numpy()
        assert (first != other).mean() > 0.99
    # seed=None: a fresh seed each call.
    a = distarray.random.uniform(size=1000).to_numpy()
    b = distarray.random.uniform(size=1000).to_numpy()
    assert (a != b).all()
    # Position i is drawn from (seed, i) alone: arrays of one seed share their leading values,
    # whatever their shapes.
    flat = distarray.random.normal(size=60, seed=seed).to_numpy()
    square = distarray.random.normal(size=(7, 7), seed=seed).to_numpy()
    np.testing.assert_array_equal(square.reshape(-1), flat[:49])


@pytest.mark.parametrize("shape", [(37, 23), (41,), (5, 6, 7)])
def test_a_seed_gives_the_same_values_in_every_layout(client, rng, shape):
    """The daemon's promise: an element's value depends on the seed and its position alone, not
    on the layout or the number of devices."""
    seed = _seed(rng)
    draws = {
        "uniform": lambda m, s: distarray.random.uniform(-3, 5, shape, seed=s, index_map=m),
        "uniform float32": lambda m, s: distarray.random.uniform(0, 1, shape, np.float32, seed=s,
                                                                 index_map=m),
        "normal": lambda m, s: distarray.random.normal(1, 4, shape, seed=s, index_map=m),
        "integers": lambda m, s: distarray.random.integers(-2**62, 2**62, shape, seed=s,
                                                           index_map=m),
        "integers uint8": lambda m, s: distarray.random.integers(0, 255, shape, np.uint8,
                                                                 endpoint=True, seed=s,
                                                                 index_map=m),
    }
    for what, draw in draws.items():
        reference = draw(None, seed)  # the whole array on device 0
        expected = reference.to_numpy()
        for layout, make in LAYOUTS.items():
            index_map = make(shape)
            got = draw(index_map, seed)
            assert got.devices == tuple(sorted(index_map)), f"{what} {layout}: {got.devices}"
            np.testing.assert_array_equal(got.to_numpy(), expected, err_msg=f"{what} {layout}")


def test_client_methods_are_the_module_functions(client, rng):
    seed = _seed(rng)
    shape = (13, 11)
    index_map = LAYOUTS["cols3"](shape)
    np.testing.assert_array_equal(
        client.uniform(shape, -2, 2, seed, np.float32, index_map).to_numpy(),
        distarray.random.uniform(-2, 2, shape, np.float32, seed=seed).to_numpy())
    np.testing.assert_array_equal(
        client.normal(shape, 5, 0.5, seed, index_map=index_map).to_numpy(),
        distarray.random.normal(5, 0.5, shape, seed=seed).to_numpy())
    np.testing.assert_array_equal(
        client.integers(shape, -9, 9, seed, np.int16, index_map).to_numpy(),
        distarray.random.integers(-9, 9, shape, np.int16, seed=seed).to_numpy())
    # The client's methods take the daemon's errors (INVALID_ARGUMENT naming the fill's field).
    with pytest.raises(distarray.InvalidArgumentError, match="fill.normal"):
        client.normal((3,), 0, 1, seed, np.int32)
    with pytest.raises(distarray.InvalidArgumentError, match="fill.integers.high"):
        client.integers((3,), 0, 300, seed, np.uint8)


def test_options_client_name_and_0d(daemon, client, rng):
    seed = _seed(rng)
    with distarray.connect(daemon.address) as other:  # now the default; client= picks the first
        a = distarray.random.uniform(size=(3,), seed=seed, client=client)
        assert a.client is client
        b = distarray.random.uniform(size=(3,), seed=seed)
        assert b.client is other
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    name = f"random-test-{seed % 10**9}"
    named = distarray.random.integers(100, size=(4,), seed=seed, name=name, client=client)
    try:
        np.testing.assert_array_equal(client.attach(name).to_numpy(), named.to_numpy())
    finally:
        client.delete(name)
    scalar = distarray.random.normal(size=None, seed=seed, client=client)  # NumPy's scalar: 0-d
    assert scalar.shape == ()
    assert scalar.to_numpy()[()] == distarray.random.normal(size=1, seed=seed,
                                                            client=client).to_numpy()[0]
    empty = distarray.random.integers(3, size=(0, 4), seed=seed, client=client)
    assert empty.shape == (0, 4) and empty.to_numpy().shape == (0, 4)


BAD_CALLS = [
    # (call, exception, words the message must hold)
    (lambda: distarray.random.uniform(0, float("nan"), 3), ValueError, "high must be finite"),
    (lambda: distarray.random.uniform(-math.inf, 1, 3), ValueError, "low must be finite"),
    (lambda: distarray.random.uniform(2, 1, 3), ValueError, "low must be less than high"),
    (lambda: distarray.random.uniform(1, 1, 3), ValueError, "low must be less than high"),
    (lambda: distarray.random.uniform(-1e308, 1e308, 3), ValueError, "high - low"),
    (lambda: distarray.random.uniform(0, 1e5, 3, np.float16), ValueError, "high=100000.0"),
    (lambda: distarray.random.uniform(np.zeros(3), 1, 3), TypeError, "low is a real number"),
    (lambda: distarray.random.uniform(0, 1j, 3), TypeError, "high is a real number"),
    (lambda: distarray.random.uniform(True, 2, 3), TypeError, "low is a real number"),
    (lambda: distarray.random.uniform(size=3, dtype=np.int32), TypeError,
     "dtype must be a real floating dtype"),
    (lambda: distarray.random.uniform(size=3, dtype=np.complex128), TypeError, "dtype"),
    (lambda: distarray.random.uniform(size=3, dtype=bool), TypeError, "dtype"),
    (lambda: distarray.random.uniform(size=-1), ValueError, "size (-1,) has a negative"),
    (lambda: distarray.random.uniform(size=(3, -2)), ValueError, "size (3, -2)"),
    (lambda: distarray.random.uniform(size=2.0), TypeError, "size takes an integer"),
    (lambda: distarray.random.uniform(size=(2, True)), TypeError, "size takes an integer"),
    (lambda: distarray.random.uniform(size=3, seed=-1), ValueError, "seed must be in [0, 2**64)"),
    (lambda: distarray.random.uniform(size=3, seed=2**64), ValueError, "seed must be in"),
    (lambda: distarray.random.uniform(size=3, seed=1.5), TypeError, "seed is an integer"),
    (lambda: distarray.random.normal(math.nan, 1, 3), ValueError, "loc must be finite"),
    (lambda: distarray.random.normal(0, math.inf, 3), ValueError, "scale must be finite"),
    (lambda: distarray.random.normal(0, -1, 3), ValueError, "scale must be non-negative"),
    (lambda: distarray.random.normal(1e6, 1, 3, np.float16), ValueError, "loc=1000000.0"),
    (lambda: distarray.random.normal(size=3, dtype=np.int64), TypeError,
     "dtype must be a real floating dtype"),
    (lambda: distarray.random.normal(size=3, dtype=np.complex64), TypeError, "dtype"),
    (lambda: distarray.random.normal(size=(-4,)), ValueError, "negative dimension"),
    (lambda: distarray.random.integers(5, 5, 3), ValueError, "low >= high"),
    (lambda: distarray.random.integers(6, 5, 3, endpoint=True), ValueError, "low > high"),
    (lambda: distarray.random.integers(0), ValueError, "low >= high"),  # [0, 0)
    (lambda: distarray.random.integers(0, 10, 3, np.float64), TypeError,
     "dtype must be an integer dtype"),
    (lambda: distarray.random.integers(0, 2, 3, bool), TypeError, "dtype must be an integer"),
    (lambda: distarray.random.integers(0, 300, 3, np.uint8), ValueError,
     "high=300 is out of bounds for uint8"),
    (lambda: distarray.random.integers(0, 255, 3, np.uint8, endpoint=True), None, None),
    (lambda: distarray.random.integers(0, 256, 3, np.uint8, endpoint=True), ValueError,
     "high=256 is out of bounds"),
    (lambda: distarray.random.integers(-1, 5, 3, np.uint8), ValueError,
     "low=-1 is out of bounds for uint8"),
    (lambda: distarray.random.integers(-129, 0, 3, np.int8), ValueError, "low=-129"),
    (lambda: distarray.random.integers(0, 2**63 - 1, 3, endpoint=True), ValueError,
     "high=9223372036854775807 with endpoint=True"),
    (lambda: distarray.random.integers(0, 2**63, 3, np.uint64), ValueError, "2**63 - 1"),
    (lambda: distarray.random.integers(0.0, 5, 3), TypeError, "low is an integer"),
    (lambda: distarray.random.integers(0, 5.5, 3), TypeError, "high is an integer"),
    (lambda: distarray.random.integers(0, 5, 3, endpoint=1), TypeError, "endpoint is a bool"),
    (lambda: distarray.random.integers(0, 5, size=-3), ValueError, "negative dimension"),
    (lambda: distarray.random.integers(0, 5, 3, seed="7"), TypeError, "seed is an integer"),
]


def test_bad_arguments_name_themselves_and_send_nothing(client):
    owned = client.keepalive()
    kept = []
    for call, error, words in BAD_CALLS:
        if error is None:
            kept.append(call())  # the edge that is allowed
            continue
        with pytest.raises(error) as raised:
            call()
        assert words in str(raised.value), str(raised.value)
        assert str(raised.value).startswith("distarray.random."), str(raised.value)
    assert client.keepalive() == owned + len(kept)  # only the allowed edge made an array
