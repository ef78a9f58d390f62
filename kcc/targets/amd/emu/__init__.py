"""kcc's functional emulator of gfx1100 / gfx942 code objects (`core.py` the machine and
its dispatch, `ops.py` the scalar/memory ops, `valu.py` the vector ALU ops)."""
