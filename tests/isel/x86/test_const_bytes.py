"""kcc/isel/x86/base.py const_bytes: a float16 constant's .rodata bits without numpy."""

import struct

import numpy as np

from kcc.ir.dtype import dtypes
from kcc.isel.x86.base import const_bytes


def test_float16_bits_equal_numpys_on_every_value() -> None:
    """Every float16 bit pattern (±0, subnormals, ±inf, NaNs) encodes as numpy writes it."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    values = bits.view(np.float16)
    for b, v in zip(bits.tolist(), values):
        assert const_bytes(float(v), dtypes.float16) == struct.pack("<H", b) or np.isnan(v), b
    # a NaN takes numpy's bits (the struct path is for non-NaN values only)
    assert const_bytes(float("nan"), dtypes.float16) == np.float16("nan").tobytes()
