"""Values to JSON and back, checked; everything that is not a value stays home as a reference.

What crosses, by value: None, bool, int, float, str, bytes; NumPy arrays, NumPy scalars and JAX
arrays (dtype + shape + raw bytes, for plain numeric dtypes only); tuples; lists and dicts of
values. Modules cross by name and each side uses its own copy. Anything else (functions,
compiled programs, jaxprs, files) crosses as a reference: a number that only the side holding the
object can turn back into it, plus its type name for messages. A reference handed back to the
side that owns it turns back into the very object.

Decoding never runs code: it builds ints, floats, strings and arrays from JSON and bytes, and
refuses (ChannelError) anything out of shape: unknown tags, object or structured dtypes, sizes
that do not match, too deep, too many items, unknown references.
"""
from __future__ import annotations

import base64
import importlib
import math
import sys
import types

import numpy as np

MAX_DEPTH = 24
MAX_ITEMS = 200_000          # list, tuple and dict entries in one message, all levels together
MAX_ARRAY_BYTES = 32 << 20
MAX_STRING = 4 << 20
MAX_REPR = 200
# Dtypes that cross by value: fixed-size numbers and booleans (ml_dtypes' bfloat16 included).
ARRAY_DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", "bfloat16",
})
# Modules a trusted side may import by a name the student's side sends (the root package decides).
MODULE_ROOTS = frozenset({
    "numpy", "jax", "jaxlib", "ml_dtypes", "matplotlib", "IPython", "json", "statistics", "time",
    "timeit", "math", "tempfile", "pathlib", "os", "sys", "functools", "itertools", "collections",
    "contextlib", "io", "platform", "random", "dataclasses", "typing", "operator", "inspect",
    "textwrap", "re", "string", "copy", "warnings", "gc", "perfcourse",
})


class ChannelError(Exception):
    """The peer sent something this side will not read."""


def _dtype(name) -> np.dtype:
    if not isinstance(name, str) or name not in ARRAY_DTYPES:
        raise ChannelError(f"refused an array of dtype {str(name)[:40]!r}")
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _jax_array_type():
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    return getattr(jax, "Array", None)


def type_name(value) -> str:
    kind = type(value)
    return f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', kind.__name__)}"


class Codec:
    """One side's view: the objects it lent out by reference, and proxies for the peer's.

    `make_proxy(handle, info)` builds this side's stand-in for a peer object; `wrap_container`
    (optional) may turn a decoded list or dict that carries the peer's handle into something
    that can refresh itself.
    """

    def __init__(self, make_proxy, wrap_container=None, import_modules: bool = True, lend_modules: bool = True):
        self.lent: dict[int, object] = {}
        self.referenced: set[int] = set()   # handles lent as references (not as refreshable containers)
        self._handle_of: dict[int, int] = {}
        self._proxies: dict[int, object] = {}
        self.make_proxy = make_proxy
        self.wrap_container = wrap_container
        self.import_modules = import_modules
        # False on the trusted side: its modules cross by name only, so the peer gets its own copy
        # or nothing, never a reference it could call into (a module is a capability: exec, files).
        self.lend_modules = lend_modules

    # --- this side's objects ----------------------------------------------------------------
    def lend(self, value) -> int:
        key = id(value)
        handle = self._handle_of.get(key)
        if handle is None or self.lent.get(handle) is not value:
            handle = len(self.lent) + 1
            self.lent[handle] = value
            self._handle_of[key] = handle
        return handle

    def lent_object(self, handle):
        if type(handle) is not int or handle not in self.lent:
            raise ChannelError(f"no object with reference {str(handle)[:20]}")
        return self.lent[handle]

    # --- encode -----------------------------------------------------------------------------
    def encode(self, value, _depth: int = 0, _count: list | None = None):
        count = _count if _count is not None else [0]
        count[0] += 1
        if _depth > MAX_DEPTH or count[0] > MAX_ITEMS:
            return self._reference(value)
        kind = type(value)
        if value is None or kind is bool or kind is str:
            return value
        if kind is int:
            return value if abs(value) < 2 ** 53 else {"$t": "int", "v": str(value)}
        if kind is float:
            return value if math.isfinite(value) else {"$t": "float", "v": repr(value)}
        if kind is bytes:
            return {"$t": "bytes", "v": base64.b64encode(value).decode()}
        peer = getattr(self, "peer_handle", None)
        if peer is not None:
            handle = peer(value)
            if handle is not None:
                return {"$t": "peer", "h": handle}
        if kind is tuple:
            return {"$t": "tuple", "v": [self.encode(v, _depth + 1, count) for v in value]}
        if kind is list:
            return {"$t": "list", "v": [self.encode(v, _depth + 1, count) for v in value], "h": self.lend(value)}
        if kind is dict and all(type(k) in (str, int, float, bool, tuple) or k is None for k in value):
            return {"$t": "dict", "h": self.lend(value),
                    "v": [[self.encode(k, _depth + 1, count), self.encode(v, _depth + 1, count)]
                          for k, v in value.items()]}
        if kind is types.ModuleType:
            if not self.lend_modules:
                return {"$t": "module", "name": value.__name__}
            reference = self._reference(value)
            reference["$t"], reference["name"] = "module", value.__name__
            return reference
        array = self._array(value)
        if array is not None:
            return array
        return self._reference(value)

    def _array(self, value):
        jax_array = _jax_array_type()
        if type(value) is np.ndarray:
            kind, data = "numpy", value
        elif isinstance(value, np.generic) and type(value).__module__ in ("numpy", "ml_dtypes"):
            kind, data = "scalar", np.asarray(value)
        elif jax_array is not None and isinstance(value, jax_array) and type(value).__name__ == "ArrayImpl":
            try:
                data = np.asarray(value)
            except Exception:  # a deleted or donated buffer: send it as a reference
                return None
            kind = "jax"
        else:
            return None
        if data.dtype.name not in ARRAY_DTYPES or data.nbytes > MAX_ARRAY_BYTES:
            return None
        return {"$t": "array", "kind": kind, "dtype": data.dtype.name, "shape": list(data.shape),
                "v": base64.b64encode(np.ascontiguousarray(data).tobytes()).decode()}

    def _reference(self, value):
        handle = self.lend(value)
        self.referenced.add(handle)
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__}>"
        return {"$t": "ref", "h": handle, "type": type_name(value),
                "callable": callable(value), "repr": text[:MAX_REPR]}

    # --- decode -----------------------------------------------------------------------------
    def decode(self, data, _depth: int = 0, _count: list | None = None):
        count = _count if _count is not None else [0]
        count[0] += 1
        if _depth > MAX_DEPTH or count[0] > MAX_ITEMS:
            raise ChannelError("a value nested too deep or with too many items")
        kind = type(data)
        if data is None or kind in (bool, int, float):
            return data
        if kind is str:
            if len(data) > MAX_STRING:
                raise ChannelError("a string longer than the channel carries")
            return data
        if kind is not dict:
            raise ChannelError(f"unexpected {kind.__name__} in a message")
        tag = data.get("$t")
        if tag == "int":
            return int(_text(data.get("v"), 5000))
        if tag == "float":
            text = _text(data.get("v"), 10)
            if text not in ("nan", "inf", "-inf"):
                raise ChannelError("a float that is not a number")
            return float(text)
        if tag == "bytes":
            return base64.b64decode(_text(data.get("v"), MAX_STRING), validate=True)
        if tag == "tuple":
            return tuple(self.decode(v, _depth + 1, count) for v in _items(data))
        if tag == "list":
            value = [self.decode(v, _depth + 1, count) for v in _items(data)]
            return self._container(value, data.get("h"))
        if tag == "dict":
            value = {}
            for pair in _items(data):
                if type(pair) is not list or len(pair) != 2:
                    raise ChannelError("a dict entry that is not a pair")
                key = self.decode(pair[0], _depth + 1, count)
                if type(key) not in (str, int, float, bool, tuple) and key is not None:
                    raise ChannelError("a dict key that is not a plain value")
                value[key] = self.decode(pair[1], _depth + 1, count)
            return self._container(value, data.get("h"))
        if tag == "array":
            return self._decode_array(data)
        if tag == "module":
            module = self._module(_text(data.get("name"), 200))
            if module is not None:
                return module
            if "h" not in data:
                raise ChannelError("a module this side does not have, sent by name only")
        if tag == "peer":
            return self.lent_object(data.get("h"))
        if tag in ("ref", "module"):
            handle = data.get("h")
            if type(handle) is not int:
                raise ChannelError("a reference without a number")
            proxy = self._proxies.get(handle)
            if proxy is None:
                info = {"type": _text(data.get("type", "?"), 300), "callable": data.get("callable") is True,
                        "repr": _text(data.get("repr", ""), MAX_REPR + 10)}
                proxy = self._proxies[handle] = self.make_proxy(handle, info)
            return proxy
        raise ChannelError(f"unknown value tag {str(tag)[:20]!r}")

    def _container(self, value, handle):
        if self.wrap_container is not None and type(handle) is int:
            return self.wrap_container(value, handle)
        return value

    @staticmethod
    def _decode_array(data):
        dtype = _dtype(data.get("dtype"))
        shape = data.get("shape")
        if type(shape) is not list or len(shape) > 32 or any(type(n) is not int or n < 0 for n in shape):
            raise ChannelError("an array shape that is not a list of sizes")
        raw = base64.b64decode(_text(data.get("v"), 2 * MAX_ARRAY_BYTES), validate=True)
        if len(raw) != math.prod(shape) * dtype.itemsize:
            raise ChannelError("an array whose bytes do not match its shape and dtype")
        array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        kind = data.get("kind")
        if kind == "numpy":
            return array
        if kind == "scalar":
            return array.reshape(())[()]
        if kind == "jax":
            import jax.numpy as jnp

            return jnp.asarray(array)
        raise ChannelError(f"unknown array kind {str(kind)[:20]!r}")

    def _module(self, name: str):
        """This side's own copy of a module the peer named: one already imported here, or a
        top-level package on the list (importing a submodule by a peer's say-so could run code
        such as a package's __main__)."""
        if not self.import_modules:
            return None
        if name in sys.modules:
            return sys.modules[name]
        if "." not in name and name in MODULE_ROOTS:
            try:
                return importlib.import_module(name)
            except ImportError:
                return None
        return None


def _text(value, limit: int) -> str:
    if type(value) is not str or len(value) > limit:
        raise ChannelError("a text field that is missing or too long")
    return value


def _items(data) -> list:
    items = data.get("v")
    if type(items) is not list:
        raise ChannelError("a container without items")
    return items
