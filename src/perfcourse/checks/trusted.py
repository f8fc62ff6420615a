"""Take a student's result into a plain NumPy copy before comparing it, or refuse it.

A result object can answer `==` with True for anything, claim any `.shape` or `.dtype`, or
hand NumPy doctored values from `__array__`. Hidden tests compare copies made here instead:
only an exact `numpy.ndarray` or an exact JAX array type is accepted (never a subclass or a
look-alike), and its shape and dtype are checked on the copy.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import CheckFailed

_NUMPY_ARRAY = np.ndarray
_JAX_ARRAY = type(jnp.zeros(()))


class UntrustedResult(CheckFailed):
    """A result that is not a plain array of the expected dtype and shape."""


def array(value, *, dtype=None, shape=None) -> np.ndarray:
    kind = type(value)
    if kind is not _NUMPY_ARRAY and kind is not _JAX_ARRAY:
        raise UntrustedResult(f"expected a JAX or NumPy array, got an object of type {kind.__name__}")
    copy = np.array(value, copy=True)
    if type(copy) is not _NUMPY_ARRAY:
        raise UntrustedResult("the result did not convert to a plain NumPy array")
    if dtype is not None and copy.dtype != np.dtype(dtype):
        raise UntrustedResult(f"expected dtype {np.dtype(dtype)}, got {copy.dtype}")
    if shape is not None and copy.shape != tuple(shape):
        raise UntrustedResult(f"expected shape {tuple(shape)}, got {copy.shape}")
    return copy
