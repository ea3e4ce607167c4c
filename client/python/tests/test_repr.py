"""repr and Jupyter's _repr_html_ of a DistributedArray: NumPy's text of the values (summarised
above 1000 elements, from the corners alone), the layout, and a description without values when
the daemon cannot be reached. A repr never raises and never downloads a large array whole."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import distarray
from distarray import _repr, _transfer
from conftest import Daemon, random_array

PREFIX = "DistributedArray("


def numpy_text(values: np.ndarray) -> str:
    """What NumPy's repr prints for the values (with the same prefix)."""
    return np.array2string(values, separator=", ", prefix=PREFIX)


@pytest.fixture
def downloads(monkeypatch):
    """Counts what repr downloads: whole-array downloads, and region downloads with the number of
    elements each carried."""
    seen = {"whole": [], "regions": []}
    whole, region = _transfer.download, _transfer.download_region

    def count_whole(rpc, info, **kwargs):
        out = whole(rpc, info, **kwargs)
        seen["whole"].append(out.size)
        return out

    def count_region(rpc, info, region_proto, **kwargs):
        out = region(rpc, info, region_proto, **kwargs)
        seen["regions"].append(out.size)
        return out

    monkeypatch.setattr(_transfer, "download", count_whole)
    monkeypatch.setattr(_transfer, "download_region", count_region)
    return seen


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.uint64, np.bool_,
                                   np.complex64, ml_dtypes.bfloat16],
                         ids=lambda t: np.dtype(t).name)
def test_small_arrays_print_as_numpy(client, rng, dtype):
    values = random_array(rng, (5, 4), dtype)
    a = client.from_numpy(values, distarray.split_index_map(values.shape, 0, [0, 1]))
    text = repr(a)
    assert text.startswith(PREFIX + numpy_text(values) + ","), text
    assert "shape=(5, 4)" in text and f"dtype={np.dtype(dtype)}" in text
    assert f"handle={a.handle!r}" in text
    assert "layout='split along axis 0 over devices [0, 1]'" in text
    assert text.endswith(")")


@pytest.mark.parametrize("shape", [(2000,), (50, 40), (3, 2000), (1001, 1), (10, 10, 10, 10),
                                   (7, 4, 40), (6, 6, 6, 6)])
def test_large_arrays_summarise_from_the_corners(client, rng, downloads, shape):
    """Above 1000 elements the text is NumPy's summary, and only the shown elements come down:
    ``edgeitems`` (3) at each end of every axis longer than 6, the whole of the others."""
    values = random_array(rng, shape, np.float32)
    a = client.from_numpy(values, distarray.split_index_map(shape, 0, [0, 1, 2]))
    text = repr(a)
    assert text.startswith(PREFIX + numpy_text(values) + ","), text
    shown = math.prod(min(n, 6) for n in shape)
    assert sum(downloads["regions"]) + sum(downloads["whole"]) == shown
    if any(n > 6 for n in shape):
        assert downloads["whole"] == [], "a summarised array was downloaded whole"
        assert "..." in text
        assert len(downloads["regions"]) == 2 ** sum(n > 6 for n in shape)
    assert _repr.REPR_THRESHOLD == 1000 and _repr.REPR_EDGEITEMS == 3


def test_print_options_are_numpys(client, rng, downloads):
    values = random_array(rng, (40, 30), np.float64)
    a = client.from_numpy(values)
    with np.printoptions(precision=2, suppress=True, linewidth=120):
        text = repr(a)
        assert text.startswith(PREFIX + numpy_text(values) + ","), text
    assert sum(downloads["regions"]) == 36


def test_small_shapes_and_names(client):
    a = client.from_numpy(np.asarray(2.5))
    text = repr(a)
    assert text.startswith(PREFIX + "2.5,") and "shape=()" in text, text
    named = client.from_numpy(np.arange(3, dtype=np.int8), name="repr-named")
    try:
        text = repr(named)
        assert text.startswith(PREFIX + "[0, 1, 2],") and "name='repr-named'" in text, text
        assert "dtype=int8" in text
    finally:
        client.delete("repr-named")
    s = client.from_numpy(np.ones((2, 3)), mode="sum")
    assert "mode='sum'" in repr(s)


def test_layout_summaries(client):
    shape = (6, 4)
    cases = {
        "on device 2": distarray.on_device(2, 2),
        "replicated on devices [1, 3]": distarray.replicated_index_map(2, [1, 3]),
        "split along axis 1 over devices [3, 1, 2]": distarray.split_index_map(shape, 1,
                                                                               [3, 1, 2]),
        "4 chunks on devices [0, 1, 2, 3]": distarray.make_2d_index_map(
            [0, 3, 6], [0, 2, 4], [[0, 1], [2, 3]]),
    }
    for summary, index_map in cases.items():
        a = client.zeros(shape, index_map=index_map)
        assert _repr.layout_summary(a.info) == summary
        assert f"layout={summary!r}" in repr(a)


def test_repr_html(client, rng, downloads):
    values = random_array(rng, (300, 20), np.int32)
    index_map = distarray.make_2d_index_map([0, 100, 300], [0, 5, 20], [[0, 1], [2, {3, 0}]])
    a = client.from_numpy(values, index_map, name="repr-html")
    try:
        page = a._repr_html_()
    finally:
        client.delete("repr-html")
    import html

    assert html.escape(np.array2string(values, separator=", ")) in page
    assert sum(downloads["regions"]) == 36 and downloads["whole"] == []
    assert "repr-html" in page and "(300, 20)" in page and "int32" in page
    # One row per chunk: its device and its box.
    for device, box in [(0, "[0:100, 0:5]"), (1, "[0:100, 5:20]"), (2, "[100:300, 0:5]"),
                        (3, "[100:300, 5:20]"), (0, "[100:300, 5:20]")]:
        assert f"<td>{device}</td><td><code>{box}</code></td>" in page, (device, box)
    assert page.count("<tr><td>") == 5
    assert "100&times;15" in page


def test_repr_without_the_daemon(rng):
    """The daemon gone (or the client closed): repr and _repr_html_ still answer, with the
    description and the layout, and raise nothing."""
    daemon = Daemon()
    client = distarray.connect(daemon.address)
    try:
        a = client.from_numpy(random_array(rng, (4000,), np.float64),
                              distarray.split_index_map((4000,), 0, [0, 1]))
        assert "..." in repr(a)
    finally:
        assert daemon.stop() == 0
    text = repr(a)
    assert text == (f"DistributedArray(handle={a.handle!r}, shape=(4000,), dtype=float64, "
                    "mode='replica', devices=[0, 1])")
    page = a._repr_html_()
    assert "values unavailable" in page and "<td>1</td><td><code>[2000:4000]</code></td>" in page
    client.close()
    assert repr(a) == text


def test_repr_never_raises(client, rng, monkeypatch):
    a = client.from_numpy(random_array(rng, (3000,), np.float64))
    b = client.from_numpy(random_array(rng, (4,), np.float64))

    def broken(*args, **kwargs):
        raise RuntimeError("no values today")

    monkeypatch.setattr(_transfer, "download_region", broken)
    monkeypatch.setattr(_transfer, "download", broken)
    assert repr(a).startswith("DistributedArray(handle=")
    assert repr(b).startswith("DistributedArray(handle=")
    assert "values unavailable" in a._repr_html_()
