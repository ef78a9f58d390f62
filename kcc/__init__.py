"""kcc."""

# The one place the version is written: pyproject.toml reads it ([tool.setuptools.dynamic]),
# and `kcc --version` prints it without importlib.metadata (a slow import at start-up).
__version__ = "0.1.0"
