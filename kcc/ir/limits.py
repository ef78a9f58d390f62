"""Every size limit kcc enforces, in one table: what `kcc compile` accepts, `kcc run` and
the loaders accept too, and a file is refused before it is read past its limit.

A limit is a sanity bound far above any real kernel, there so that a hostile or broken input
is refused with one error line instead of exhausting memory (README.md, "Using it").
"""

from __future__ import annotations

# A buffer's element count (ParamArg size), checked by the IR's rule table (kcc/ir/rules.py)
# for every graph and by the manifest reader for every manifest: 2^40 elements is 4 TiB of
# float32, beyond any machine kcc runs on, and keeps every byte offset within int64.
MAX_BUFFER_ELEMENTS = 2**40

# A launch dimension (CUDA's gridDim.x limit; kcc.targets.dims).
MAX_DIM = 2**31 - 1

# Input files: read only when they are regular files (never a device, FIFO or directory) of
# at most this many bytes (kcc/frontend/files.py).
MAX_SOURCE_BYTES = 256 * 2**20       # a .uop (a 200,000-node kernel is about 10 MiB)
MAX_MANIFEST_BYTES = 64 * 2**20      # a manifest's JSON
MAX_OBJECT_BYTES = 16 * 2**30        # an object: a program's object holds its weights
