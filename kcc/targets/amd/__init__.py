"""The AMD GPU target: HSACO code objects, the HIP driver launch and the emulator.

The registry imports this package (`"amd": "kcc.targets.amd"`) and reads `TARGET`,
built on first use by `target.py` (registry.lazy_target).
"""

from kcc.targets.registry import lazy_target

__getattr__ = lazy_target(__name__)
