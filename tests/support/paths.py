"""Where the test inputs are: the repository, its examples, and tests/data (the .uop kernels of
the tests, the parser's example files, tinygrad reproducers)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "data"
KERNELS = DATA / "kernels"                 # .uop kernels the tests compile
SHARED_KERNELS = KERNELS / "shared"       # the shared examples (the project's copy)
