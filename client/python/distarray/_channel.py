"""How the SDK's channels connect and retry (the C++ SDK's client/channel.h does the same).

Retries: the daemon answers UNAVAILABLE while it drains (and a restarting daemon refuses
connections), which docs/api.md calls retryable. gRPC retries a call by the channel's service
config; it lists only the calls that change nothing on the daemon, so running one twice is
harmless (a call cut off part-way may have done its work once already).

Connecting: a connection that is refused (nothing listens there) fails within about half a second
instead of waiting out the whole connect timeout, and the error says which of the two happened.
"""

from __future__ import annotations

import json
import threading
import time

import grpc

from ._errors import UnavailableError

#: Calls retried on UNAVAILABLE: reads, downloads (retried only before their first message
#: arrives), Synchronize, and the session's KeepAlive and EndSession.
RETRIED_METHODS = (
    "GetServerInfo", "DescribeArray", "ListArrays", "DownloadArray", "DownloadToSharedMemory",
    "Synchronize", "KeepAlive", "EndSession",
)

#: At most 5 attempts (gRPC's cap), 0.1 s to 1 s apart with jitter: about 1.5 s in all.
SERVICE_CONFIG = {
    "methodConfig": [{
        "name": [{"service": "distarray.v1.ArrayService", "method": m} for m in RETRIED_METHODS],
        "retryPolicy": {
            "maxAttempts": 5,
            "initialBackoff": "0.1s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"],
        },
    }],
}

#: Options of every SDK channel: the service config, and a short first reconnect backoff (100 ms
#: instead of gRPC's 1 s), so a refused first attempt is tried again soon and a restarted daemon
#: is found while retries still wait for it. (Not grpc.min_reconnect_backoff_ms: despite its
#: name gRPC takes it as each attempt's connect timeout, 20 s by default.)
CHANNEL_OPTIONS = [
    ("grpc.service_config", json.dumps(SERVICE_CONFIG)),
    ("grpc.enable_retries", 1),
    ("grpc.initial_reconnect_backoff_ms", 100),
]

#: Once an attempt failed, how long the channel's next attempts get before connecting is given
#: up as refused. It rides out the odd failed attempt a loaded machine has been seen to make.
FAILED_RETRY_WINDOW = 0.5


def wait_for_channel(channel: grpc.Channel, address: str, timeout: float) -> None:
    """Waits until ``channel`` is connected, or raises UnavailableError: once an attempt has
    failed (refused: nothing listens at ``address``; or a TLS handshake failed) and the channel's
    retries have not connected within FAILED_RETRY_WINDOW, or after ``timeout`` seconds while an
    attempt is still under way (a host that does not answer), each with its own message."""
    changed = threading.Condition()
    state = [None]

    def on_change(connectivity: grpc.ChannelConnectivity) -> None:
        with changed:
            state[0] = connectivity
            changed.notify_all()

    start = time.monotonic()
    deadline = start + timeout
    failed_at = None
    channel.subscribe(on_change, try_to_connect=True)
    try:
        with changed:
            while state[0] != grpc.ChannelConnectivity.READY:
                now = time.monotonic()
                if state[0] == grpc.ChannelConnectivity.TRANSIENT_FAILURE and failed_at is None:
                    failed_at = now
                until = deadline
                if failed_at is not None:
                    until = min(deadline, failed_at + FAILED_RETRY_WINDOW)
                if now >= until:
                    break
                changed.wait(until - now)
            else:
                return
    finally:
        channel.unsubscribe(on_change)
    if failed_at is not None and time.monotonic() < deadline:
        raise UnavailableError(
            grpc.StatusCode.UNAVAILABLE,
            f"cannot connect to {address}: the connection failed (refused: is distarrayd running "
            "and listening there? or unreachable, or its TLS handshake failed) and failed again "
            "when retried",
        )
    raise UnavailableError(
        grpc.StatusCode.UNAVAILABLE,
        f"no distarrayd answered at {address} within {timeout:g} s"
        + (" (connection attempts failed)" if failed_at is not None else
           " (the connection was still being attempted: a host or port that drops packets?)"),
    )
