"""x86-64 encoding: `table.py` one row per instruction form (`row.py` the row type),
`encoder.py` the encoder, Intel-syntax printer and assembler."""
