"""kcc's target-neutral graph passes (each `(sink, TargetDesc) -> sink`).

The pipeline that runs them, in order, with the verifier after each, is
`kcc.targets.pipeline` (`PIPELINE`; `kcc compile --dump-after NAME` prints the graph after any
one); `target.py` is what a pass may ask of a target.
"""
