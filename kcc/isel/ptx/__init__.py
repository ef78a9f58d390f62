"""PTX instruction selection: UOps to PTX instructions (`select.py`; `alu.py` the ALU rules;
`wmma.py` WMMA as mma.sync)."""
