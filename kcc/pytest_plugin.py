"""The pytest plugin (entry point `kcc.tinygrad` in the `pytest11` group).

Installed with kcc, pytest loads this module in every session; it registers tinygrad's `KCC`
renderer only when `DEV` asks for it (`DEV=CPU:KCC pytest …`) and tinygrad is importable, so
sessions that do not use kcc pay nothing and an environment without tinygrad is unaffected (this
module lives outside kcc.tinygrad, which imports tinygrad). `pytest -p kcc.tinygrad …` loads
that package itself, which always registers.
"""

from __future__ import annotations

import os

if "KCC" in os.environ.get("DEV", "").upper().split(":"):
    try:
        import kcc.tinygrad  # noqa: F401  (registers on import)
    except ImportError:       # tinygrad missing: nothing to register
        pass
