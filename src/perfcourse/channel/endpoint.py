"""A symmetric request/reply protocol over one stream socket.

Frames: 4 bytes of length (big-endian), then that many bytes of UTF-8 JSON. A request is
{"id": N, "op": NAME, "args": [...], "kwargs": {...}} with values encoded by `codec`; its reply is
{"re": N, "ok": VALUE} or {"re": N, "error": {"type", "message", "where"}}. While a side waits for
the reply to its own request it answers the peer's requests, so calls can nest both ways (student
code calling back into an object the trusted side handed it).
"""
from __future__ import annotations

import builtins
import json
import socket
import struct
import traceback

from .codec import ChannelError, Codec

MAX_FRAME = 80 << 20
_LENGTH = struct.Struct(">I")


class PeerError(Exception):
    """The peer's code raised; `kind` is the exception's type name there, `where` its traceback."""

    def __init__(self, kind: str, message: str, where: str = ""):
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind, self.message, self.where = kind, message, where


class ChannelClosed(ChannelError):
    pass


class PeerException(RuntimeError):
    """An exception of a type this side does not rebuild, raised by the peer's code."""


_BUILTIN_ERRORS = {name: value for name, value in vars(builtins).items()
                   if isinstance(value, type) and issubclass(value, Exception)}


def as_exception(error: PeerError) -> Exception:
    """The peer's exception as the same builtin type where there is one (so `except KeyError`,
    `getattr(obj, name, default)` and error outputs read as in one process), else PeerException."""
    kind = _BUILTIN_ERRORS.get(error.kind)
    exc = None
    if kind is not None:
        try:
            exc = kind(error.message)
        except Exception:
            exc = None
    exc = exc or PeerException(str(error))
    exc.peer_traceback = error.where
    return exc


class Endpoint:
    """One end of the socket. `handle(op, args, kwargs)` answers the peer's requests."""

    def __init__(self, sock: socket.socket, codec: Codec, handle):
        self.sock, self.codec, self.handle = sock, codec, handle
        self._next_id = 0
        self.broken = False

    # --- frames -------------------------------------------------------------------------------
    def send(self, message: dict) -> None:
        data = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
        if len(data) > MAX_FRAME:
            raise ChannelError(f"a message of {len(data)} bytes is larger than the channel carries")
        self.sock.sendall(_LENGTH.pack(len(data)) + data)

    def receive(self) -> dict:
        (length,) = _LENGTH.unpack(self._exactly(_LENGTH.size))
        if length > MAX_FRAME:
            raise ChannelError(f"the peer announced a message of {length} bytes")
        try:
            message = json.loads(self._exactly(length).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ChannelError(f"the peer sent a message that is not JSON ({exc})") from None
        except RecursionError:  # JSON nested deeper than the parser recurses (the codec allows 24)
            raise ChannelError("the peer sent a message nested too deep") from None
        if type(message) is not dict:
            raise ChannelError("the peer sent a message that is not an object")
        return message

    def _exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self.sock.recv(min(left, 1 << 20))
            if not chunk:
                raise ChannelClosed("the other kernel closed the channel")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    # --- requests ----------------------------------------------------------------------------
    def request(self, op: str, *args, **kwargs):
        """Ask the peer; answer its requests meanwhile; return the decoded reply or raise PeerError."""
        if self.broken:
            raise ChannelClosed("the channel to the other kernel was interrupted")
        self._next_id += 1
        number = self._next_id
        try:
            self.send({"id": number, "op": op, "args": [self.codec.encode(value) for value in args],
                       "kwargs": [[key, self.codec.encode(value)] for key, value in kwargs.items()]})
            while True:
                message = self.receive()
                if "op" in message:
                    self.answer(message)
                    continue
                if message.get("re") != number:
                    raise ChannelError("the peer replied out of turn")
                if "error" in message:
                    error = message["error"] if type(message["error"]) is dict else {}
                    raise PeerError(_short(error.get("type"), 100) or "Error", _short(error.get("message"), 4000),
                                    _short(error.get("where"), 8000))
                return self.codec.decode(message.get("ok"))
        except (ChannelError, OSError, KeyboardInterrupt):
            # A reply may still be on its way: this socket can no longer be trusted to pair them.
            self.broken = True
            raise

    def answer(self, message: dict) -> None:
        number = message.get("id")
        try:
            op = message.get("op")
            if type(op) is not str or type(message.get("args")) is not list \
                    or type(message.get("kwargs")) is not list:
                raise ChannelError("a malformed request")
            args = [self.codec.decode(v) for v in message["args"]]
            kwargs = {}
            for pair in message["kwargs"]:
                key = pair[0] if type(pair) is list and len(pair) == 2 else None
                if type(key) is not str:
                    raise ChannelError("a keyword that is not a string")
                kwargs[key] = self.codec.decode(pair[1])
            result = self.handle(op, args, kwargs)
            reply = {"re": number, "ok": self.codec.encode(result)}
        except (ChannelClosed, KeyboardInterrupt):
            raise
        except BaseException as exc:  # the answer to a request that failed is an error reply
            reply = {"re": number, "error": {"type": type(exc).__name__, "message": _message(exc),
                                             "where": _where(exc)}}
        self.send(reply)


def _short(value, limit: int) -> str:
    return value[:limit] if type(value) is str else ""


def _message(exc: BaseException) -> str:
    try:
        if len(exc.args) == 1 and type(exc.args[0]) is str:  # KeyError's str() adds quotes
            return exc.args[0][:4000]
        return str(exc)[:4000]
    except Exception:
        return "(its message could not be read)"


def _where(exc: BaseException) -> str:
    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=8))[-6000:]
    except Exception:
        return ""
