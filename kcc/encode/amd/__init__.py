"""AMD GPU encoding for gfx1100 (RDNA3) and gfx942 (CDNA3): one face for the encoder, the decoder
and the LLVM assembly syntax.

    from kcc.encode.amd import encode, decode, disassemble, format_inst, parse_inst

`table.py` holds the row type, operand kinds and inline constants (groups derived from the rows),
`gfx11.py` / `gfx9.py` the rows of each arch as text tables, `operands.py` the `Inst`/operand
vocabulary, `fields.py` what the three share (errors, lookup, operand codes), `encoder.py`,
`decode.py` and `syntax.py` the three directions.
"""

from kcc.encode.amd.decode import decode, disassemble
from kcc.encode.amd.encoder import encode
from kcc.encode.amd.fields import AmdDecodeError, AmdEncodeError, lookup
from kcc.encode.amd.syntax import format_inst, parse_inst

__all__ = ["AmdEncodeError", "AmdDecodeError", "encode", "decode", "disassemble", "format_inst",
           "parse_inst", "lookup"]
