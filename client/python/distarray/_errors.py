"""Exceptions raised for the daemon's gRPC status codes."""

from __future__ import annotations

import functools
from typing import Callable, Dict, Optional, Type, TypeVar

import grpc

__all__ = [
    "DistarrayError",
    "CancelledError",
    "UnknownError",
    "InvalidArgumentError",
    "DeadlineExceededError",
    "NotFoundError",
    "AlreadyExistsError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "FailedPreconditionError",
    "AbortedError",
    "OutOfRangeError",
    "UnimplementedError",
    "InternalError",
    "UnavailableError",
    "DataLossError",
    "UnauthenticatedError",
    "TracedValueError",
]


class DistarrayError(Exception):
    """An error the daemon (or the connection to it) answered.

    ``code`` is the ``grpc.StatusCode`` and ``message`` the daemon's message, passed through
    unchanged (it names the offending field, e.g. ``spec.index_map.chunks[1].slices[0]``). Catch a
    subclass (``NotFoundError``, ``InvalidArgumentError``...) for one code.
    """

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message

    def __reduce__(self):  # picklable across processes, like other exceptions
        return (error_for, (self.code, self.message))


class CancelledError(DistarrayError):
    """CANCELLED: the call was cancelled, or an upload was idle too long."""


class UnknownError(DistarrayError):
    """UNKNOWN."""


class InvalidArgumentError(DistarrayError, ValueError):
    """INVALID_ARGUMENT: a bad shape, dtype, index map, op, name...; the message names the field."""


class DeadlineExceededError(DistarrayError, TimeoutError):
    """DEADLINE_EXCEEDED: the call's deadline passed (nothing was registered)."""


class NotFoundError(DistarrayError, KeyError):
    """NOT_FOUND: an unknown or deleted handle, name or program id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return Exception.__str__(self)


class AlreadyExistsError(DistarrayError):
    """ALREADY_EXISTS: the array name is taken."""


class PermissionDeniedError(DistarrayError, PermissionError):
    """PERMISSION_DENIED: the credentials do not allow this call."""


class ResourceExhaustedError(DistarrayError, MemoryError):
    """RESOURCE_EXHAUSTED: a device memory limit, a plan too large, too many calls."""


class FailedPreconditionError(DistarrayError):
    """FAILED_PRECONDITION: not valid in the array's state (an upload into a SUM-mode array)."""


class AbortedError(DistarrayError):
    """ABORTED."""


class OutOfRangeError(DistarrayError, IndexError):
    """OUT_OF_RANGE: a region outside the array."""


class UnimplementedError(DistarrayError, NotImplementedError):
    """UNIMPLEMENTED: a declared dtype or op the daemon does not serve (yet)."""


class InternalError(DistarrayError):
    """INTERNAL: an unexpected device failure; the message carries its name."""


class UnavailableError(DistarrayError, ConnectionError):
    """UNAVAILABLE: no daemon answers, it is draining, or a device is in an error state."""


class DataLossError(DistarrayError):
    """DATA_LOSS."""


class UnauthenticatedError(DistarrayError, PermissionError):
    """UNAUTHENTICATED: a missing or unknown token (``connect(token=...)``)."""


_BY_CODE: Dict[grpc.StatusCode, Type[DistarrayError]] = {
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.UNKNOWN: UnknownError,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.ABORTED: AbortedError,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRangeError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DATA_LOSS: DataLossError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
}

for _code, _cls in _BY_CODE.items():
    _cls.code = _code


class TracedValueError(TypeError, AttributeError):
    """An op that needs what a traced value (a ``Var`` of a program being built) does not have
    yet: its rank, shape or dtype, which the daemon learns only when the program runs. The
    message names the function and what it needs. A TypeError; also an AttributeError, so
    ``getattr(v, "shape", None)`` and ``hasattr`` still find that a traced value has no shape."""


def traced_value_error(what: str, needs: str) -> TracedValueError:
    """The error for ``what`` (a function's name) reaching the ``needs`` ("rank", "dtype") of a
    traced value."""
    hint = ("pass the axes explicitly where the function takes them (e.g. permute_dims(x, "
            "axes), squeeze(x, axis)), or call it outside the traced function"
            if needs == "rank" else
            "convert explicitly first (astype), or call it outside the traced function")
    return TracedValueError(
        f"{what} needs the array's {needs}, which a traced value does not have yet (the daemon "
        f"learns it when the program runs): {hint}")


def error_for(code: grpc.StatusCode, message: str) -> DistarrayError:
    """The exception for a status code and message."""
    return _BY_CODE.get(code, DistarrayError)(code, message)


def from_rpc_error(error: grpc.RpcError) -> DistarrayError:
    """Converts a grpc.RpcError (a call's failure) into a DistarrayError."""
    code: Optional[grpc.StatusCode] = error.code() if hasattr(error, "code") else None
    details: Optional[str] = error.details() if hasattr(error, "details") else None
    if details is None:  # not a call's status (e.g. a channel closed under the call)
        details = str(error)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "(no message)")


F = TypeVar("F", bound=Callable)


def translate_errors(fn: F) -> F:
    """Decorator: grpc.RpcError raised inside ``fn`` surfaces as a DistarrayError."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    return wrapper  # type: ignore[return-value]
