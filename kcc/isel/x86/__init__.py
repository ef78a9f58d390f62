"""x86-64 instruction selection: UOps to machine IR over x86 instruction forms.

`select.py` is the selector (the x86 value model is in its docstring); `vec`, `shuf`, `ivec`,
`kmask` and `alu` hold its rule families, `base` the selection state and constant pool, `regs`
the register names, `analysis` the per-kernel walks before selection, `stream` the choice of
non-temporal stores.
"""
