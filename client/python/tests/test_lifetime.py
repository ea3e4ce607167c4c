"""Handles released with their Python objects, named arrays persistent, sessions and leases."""

from __future__ import annotations

import gc
import time

import numpy as np

import distarray


def exists(client, handle):
    try:
        client.attach(handle)
        return True
    except distarray.NotFoundError:
        return False


def test_del_releases_the_handle(client):
    a = client.from_numpy(np.arange(10.0))
    handle = a.handle
    b = a + 1  # results are owned too
    b_handle = b.handle
    assert exists(client, handle) and exists(client, b_handle)
    del a, b
    gc.collect()
    assert not exists(client, handle) and not exists(client, b_handle)


def test_temporaries_are_released(client):
    before = client.keepalive()
    x = client.from_numpy(np.ones((4, 4)))
    y = distarray.sqrt(x * 2 + 1) - 1  # three temporaries die on the way
    assert client.keepalive() == before + 2  # x and y only
    del x, y


def test_named_arrays_persist_and_attach(daemon):
    with distarray.connect(daemon.address) as first:
        first.from_numpy(np.arange(5, dtype=np.int16), name="lifetime-named")
        kept = first.from_numpy(np.arange(3.0)).release()  # unnamed, released
        dropped = first.from_numpy(np.arange(3.0)).handle  # dies at once
    with distarray.connect(daemon.address) as second:
        a = distarray.attach(second, "lifetime-named")
        assert not a.owned and a.name == "lifetime-named"
        np.testing.assert_array_equal(a.to_numpy(), np.arange(5, dtype=np.int16))
        del a
        gc.collect()
        assert exists(second, "lifetime-named")  # attached objects do not own
        assert not exists(second, dropped)
        # A released unnamed array belongs to the session, which the close ended.
        assert not exists(second, kept)
        second.delete("lifetime-named")
        assert not exists(second, "lifetime-named")


def test_close_deletes_owned_arrays(daemon):
    client = distarray.connect(daemon.address)
    a = client.from_numpy(np.arange(4.0))
    handle = a.handle
    client.close()
    assert client.closed
    with distarray.connect(daemon.address) as other:
        assert not exists(other, handle)
    del a  # the finalizer of a closed client's array does nothing


def test_keepalive_keeps_the_session(short_lease_daemon):
    address = short_lease_daemon.address
    with distarray.connect(address) as alive, distarray.connect(address, keepalive=False) as idle:
        kept = alive.from_numpy(np.arange(3.0))
        lost = idle.from_numpy(np.arange(3.0))
        lost_handle = lost.handle
        time.sleep(3.5)  # past the 2 s lease (expiry within about 1.25 leases)
        with distarray.connect(address, session=False) as observer:
            assert exists(observer, kept.handle)
            assert not exists(observer, lost_handle)
        np.testing.assert_array_equal(kept.to_numpy(), np.arange(3.0))


def test_session_metadata(daemon):
    with distarray.connect(daemon.address, session_id="pytest-session-1") as c:
        assert c.session_id == "pytest-session-1"
        assert ("distarray-session", "pytest-session-1") in c._rpc.metadata
    with distarray.connect(daemon.address, session=False, token="t0k") as c:
        assert c.session_id is None
        assert c._rpc.metadata == (("authorization", "Bearer t0k"),)


def test_closing_ends_the_session(daemon):
    """A closed client's session ends at once: it leaves live_sessions and its released unnamed
    arrays go, without waiting for the lease."""
    with distarray.connect(daemon.address, session=False) as observer:
        before = observer.server_info().live_sessions
        with distarray.connect(daemon.address) as client:
            released = client.from_numpy(np.arange(4.0))
            handle = released.release()
            assert observer.server_info().live_sessions == before + 1
        assert observer.server_info().live_sessions == before
        assert not exists(observer, handle)


def test_pickle_and_copy_are_refused_with_advice(client):
    import copy
    import pickle

    a = client.from_numpy(np.arange(4.0))
    for attempt in (pickle.dumps, copy.deepcopy, copy.copy):
        try:
            attempt(a)
        except TypeError as e:
            message = str(e)
        else:
            raise AssertionError(f"{attempt.__name__} of an array did not raise")
        assert "__cinit__" not in message
        assert "name=" in message and "client.attach(" in message, message
    # A named array, attached by name, is the way across processes.
    named = client.from_numpy(np.arange(3.0), name="pickle-named")
    try:
        np.testing.assert_array_equal(client.attach("pickle-named").to_numpy(), np.arange(3.0))
    finally:
        client.delete(named)
