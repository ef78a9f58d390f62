"""AMD GPU instruction selection (gfx1100 wave32, gfx942 wave64): UOps to machine IR.

`select.py` is the selector; `alu`, `cast` its rule families, `base` the selection state,
`regs` the register classes the allocator sees, `lower` what follows allocation (waits,
register tuples, the final instruction list).
"""
