"""The x86-64 target: ELF objects, their in-process loader and the x86 launch.

The registry imports this package (`"x86": "kcc.targets.x86"`) and reads `TARGET`,
built on first use by `target.py` (registry.lazy_target).
"""

from kcc.targets.registry import lazy_target

__getattr__ = lazy_target(__name__)
