"""kcc."""

# The one place the version is written: pyproject.toml reads it ([tool.setuptools.dynamic]),
# and `kcc --version` prints it without importlib.metadata (a slow import at start-up).
__version__ = "0.1.0"

# kcc's own start-up makes thousands of long-lived objects (code, classes, tables) and no
# garbage: the cyclic collector is paused for it (kcc/collector.py says why; its collections
# here were 7% of a `kcc compile saxpy.uop` process), and left as it was after
import gc as _gc

_gc_was_enabled = _gc.isenabled()
_gc.disable()
try:
    # kcc's modules load from one file of code objects (kcc/bundle.py)
    import os as _os
    from _frozen_importlib_external import cache_from_source as _cache_from_source

    from kcc.bundle import install as _bundle

    _bundle(_os.path.dirname(_cache_from_source(__file__)))

    # dataclasses' generated methods load from the bytecode cache instead of being compiled
    # in every process (kcc/startup.py: a third of the compile path's import time)
    from kcc.startup import install_dataclass_cache as _install

    _install()
finally:
    if _gc_was_enabled:
        _gc.enable()
