"""The CUDA target: PTX / cubin and the CUDA driver launch.

The registry imports this package (`"cuda": "kcc.targets.cuda"`) and reads `TARGET`,
built on first use by `target.py` (registry.lazy_target).
"""

from kcc.targets.registry import lazy_target

__getattr__ = lazy_target(__name__)
