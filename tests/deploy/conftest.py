import functools

import pytest

import render


@functools.lru_cache(maxsize=None)
def _rendered(name):
    return tuple(render.render_overlay(name))


@pytest.fixture(params=render.OVERLAYS)
def overlay(request):
    """(name, documents) of one rendered overlay."""
    return request.param, list(_rendered(request.param))


def rendered(name):
    return list(_rendered(name))
