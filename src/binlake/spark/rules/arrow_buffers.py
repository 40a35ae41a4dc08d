"""Python values as Arrow arrays and Arrow arrays as numpy, through their
buffers: pyarrow imports pandas (0.27 s, most of a small run's own time)
to look at a Python scalar or list it makes Arrow, for `to_numpy`, for
`group_by` and for pyarrow.dataset. The table rules (binlake.spark.rules)
use these instead.
"""

from __future__ import annotations

from array import array

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def ints(values) -> pa.Array:
    """Integers (a numpy array or a sequence) as an Arrow int64 array."""
    data = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def texts(values: list, kind=None) -> pa.Array:
    """Texts (or bytes, `kind` binary; None: NULL) as an Arrow array."""
    data, offsets = bytearray(), array("q", [0])
    for value in values:
        if value is not None:
            data += value.encode() if isinstance(value, str) else value
        offsets.append(len(data))
    valid = None
    if any(v is None for v in values):
        valid = flags([v is not None for v in values]).buffers()[1]
    large = pa.large_binary() if kind == pa.binary() else pa.large_string()
    wide = pa.Array.from_buffers(large, len(values),
                                 [valid, pa.py_buffer(offsets), pa.py_buffer(data)])
    return wide.cast(kind or pa.string())


def flags(values) -> pa.Array:
    """Booleans (a numpy array or a sequence) as an Arrow array."""
    bits = np.packbits(np.asarray(values, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def numbers(values: pa.Array) -> np.ndarray:
    """A numeric Arrow array's values as numpy (NULLs: whatever they hold)."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if values.type == pa.bool_():
        return truths(values)
    width = values.type.bit_width // 8
    data = np.frombuffer(values.buffers()[1], dtype=f"<i{width}" if pa.types.is_integer(
        values.type) else f"<f{width}")
    return data[values.offset:values.offset + len(values)]


def truths(values: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy (NULL: False)."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if values.null_count:
        values = values.fill_null(_FALSE)
    bits = np.unpackbits(np.frombuffer(values.buffers()[1], dtype=np.uint8), bitorder="little")
    return bits[values.offset:values.offset + len(values)].astype(bool)


def nulls_of(values: pa.Array) -> np.ndarray:
    """Where an Arrow array is NULL, as numpy."""
    return truths(values.is_null())


def one(text: str) -> pa.Scalar:
    """A string scalar (pa.scalar would import pandas)."""
    return texts([text])[0]


_FALSE = flags([False])[0]


def equal_to(values: pa.Array, text: str) -> np.ndarray:
    return truths(pc.equal(values, one(text)))
