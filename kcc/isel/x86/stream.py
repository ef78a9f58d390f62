"""Which vector stores of an x86 kernel are non-temporal (streaming) stores.

A non-temporal store (VMOVNTPS/VMOVNTPD/VMOVNTDQ, SDM "MOVNTPS — Store Packed
Single-Precision Floating-Point Values Using Non-Temporal Hint") writes whole cache lines to
memory without first reading them into the cache (no write-allocate), so a loop that streams
its output through memory moves 12 bytes an element for `d = a + b` instead of 16. It pays
only when the written lines would leave the caches before anyone read them again, and it is
correct only at an aligned address (a misaligned one faults: #GP). The selector turns a STORE
into one when `streaming_stores` picks it:

- the STORE is ungated and writes a whole vector register (16, 32 or 64 bytes: an xmm, ymm
  or zmm of float32, float64 or int32 lanes) into a GLOBAL kernel argument (a PARAM buffer,
  not volatile) that the kernel never loads from (the manifest's access "w");
- its index is an affine sum of loop counters, worker indices and other integer values whose
  every coefficient and constant is a multiple of the lane count, so the address is the
  buffer's base plus a multiple of the vector's bytes: aligned whenever the base pointer is
  (the selector checks the base at run time, below); and the coefficient of its innermost
  loop's counter is the lane count: consecutive iterations write consecutive vectors (whole
  lines, which is what the CPU's write-combining buffers merge);
- `auto` (the default) also asks for the kernel's footprint, every buffer argument's bytes
  (a GLOBAL PARAM declares its element count, so this is known at compile time), to be at
  least STREAM_MIN_BYTES (32 MiB): a fixed, conservative stand-in for the last-level cache
  (this host's L3 is 32 MiB; a compile does not read the machine it runs on, so that every
  host writes the same object). Below that the output may still sit in the cache for the
  next kernel, and ordinary stores are better. `always` streams every store that qualifies
  otherwise, whatever the size; `never` none.

Alignment: nothing guarantees it. kcc's manifest and loader pass whatever pointer the caller
has (a numpy view may start at any element), and tinygrad's CPU allocator maps whole pages but
hands out sub-buffers at offsets. So a kernel with streaming stores comes in two versions
(kcc/targets/x86/versions.py: the same allocated code, its non-temporal stores made ordinary
in the second): the entry tests the base pointers of the streamed buffers and runs the
streaming body when all are aligned to the widest streamed vector, else the ordinary body.
The streaming body ends with SFENCE (SDM "SFENCE"): non-temporal stores are weakly ordered,
and the fence makes them visible before anything the caller does after the kernel returns
(a thread joining a worker, the next launch).
"""

from __future__ import annotations

from kcc.encode.x86.table import FORMS
from kcc.ir import AddrSpace, UOp
from kcc.ir.ops import Ops
from kcc.ir.affine import affine
from kcc.ir.uop import base_buffer
from kcc.isel.x86.analysis import footprint

MODES = ("auto", "never", "always")
# the footprint (bytes of every buffer argument) from which `auto` streams (see above)
STREAM_MIN_BYTES = 32 << 20
# the whole-register widths a streaming store writes (xmm, ymm, zmm)
STREAM_BYTES = (16, 32, 64)
# ordinary vector store form → its non-temporal twin (same operands), from the table's rows;
# NONTEMPORAL and ORDINARY (its inverse) are made when first asked for (module __getattr__):
# the walk over the table's ~1,250 forms was 1% of a small compile's process, which streams
# nothing (issue 24, item 4)
_TWINS = {"vmovups_": "vmovntps_", "vmovupd_": "vmovntpd_", "vmovdqu_": "vmovntdq_"}


def _nontemporal() -> dict[str, str]:
    """NONTEMPORAL, made (with ORDINARY) the first time."""
    global NONTEMPORAL, ORDINARY
    if "NONTEMPORAL" in globals():
        return NONTEMPORAL
    NONTEMPORAL = {f: _TWINS[f[:8]] + f[8:] for f in FORMS
                   if f[:8] in _TWINS and f[8:9] == "m" and _TWINS[f[:8]] + f[8:] in FORMS}
    ORDINARY = {nt: f for f, nt in NONTEMPORAL.items()}
    return NONTEMPORAL


def __getattr__(name: str) -> dict[str, str]:
    if name in ("NONTEMPORAL", "ORDINARY"):
        _nontemporal()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def stream_form(u: UOp, form: str, stream: dict[UOp, int], align: dict[UOp, int]) -> str:
    """The selector's store form for STORE u: form's non-temporal twin when u is in stream
    (noting in align the alignment its buffer's base pointer needs), else form."""
    n = stream.get(u)
    if n is None:
        return form
    nt = _nontemporal().get(form)
    if nt is None or FORMS[nt].operands[0].kind != f"m{n * 8}":
        return form
    buf = base_buffer(u.src[0].src[0])
    align[buf] = max(n, align.get(buf, 0))
    return nt


def streaming_stores(lin: list[UOp], mode: str, max_bytes: int = 32) -> dict[UOp, int]:
    """The STOREs of the schedule lin to select as non-temporal stores, each with the
    alignment (bytes) its address needs; max_bytes is the widest vector the target has (32:
    ymm, 64: zmm on x86-64-v4). The rules are the module's docstring."""
    if mode not in MODES:
        raise ValueError(f"streaming stores are {', '.join(MODES)}, not {mode!r}")
    if mode == "never":
        return {}
    if mode == "auto":
        size = footprint(lin)
        if size is None or size < STREAM_MIN_BYTES:
            return {}
    loaded = {base_buffer(u.src[0].src[0] if u.src[0].op in (Ops.INDEX, Ops.SHRINK)
                          else u.src[0]) for u in lin if u.op is Ops.LOAD}
    out: dict[UOp, int] = {}
    loops: list[UOp] = []
    for u in lin:
        if u.op is Ops.RANGE:
            loops.append(u)
        elif u.op is Ops.END:
            loops.pop()
        elif u.op is Ops.STORE and loops:
            n = _stream_bytes(u, loops[-1], loaded, max_bytes)
            if n:
                out[u] = n
    return out


def _stream_bytes(u: UOp, loop: UOp, loaded: set[UOp], max_bytes: int) -> int:
    """The vector bytes of STORE u if it may stream in its innermost loop, else 0."""
    if len(u.src) != 2 or u.src[0].op is not Ops.SHRINK:
        return 0
    place = u.src[0]
    buf = base_buffer(place.src[0])
    if (buf.op is not Ops.PARAM or buf.arg.addrspace is not AddrSpace.GLOBAL
            or buf.arg.volatile or buf in loaded):
        return 0
    lanes, dt = place.shape[0], place.dtype
    nbytes = lanes * dt.itemsize
    if nbytes not in STREAM_BYTES or nbytes > max_bytes or not (
            dt.is_float and dt.itemsize in (4, 8) or dt.is_int and dt.itemsize == 4):
        return 0
    terms, const = affine(place.src[1])        # (without a leaf test: never None)
    if const % lanes or any(k % lanes for k in terms.values()) or terms.get(loop) != lanes:
        return 0
    return nbytes
