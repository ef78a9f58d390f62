"""kcc."""

# The one place the version is written: pyproject.toml reads it ([tool.setuptools.dynamic]),
# and `kcc --version` prints it without importlib.metadata (a slow import at start-up).
__version__ = "0.1.0"

# dataclasses' generated methods load from the bytecode cache instead of being compiled in every
# process (kcc/startup.py: a third of the compile path's import time)
from kcc.startup import install_dataclass_cache as _install

_install()
