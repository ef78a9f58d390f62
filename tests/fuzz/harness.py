"""The differential harness: inputs biased toward the edges of the semantics, a NaN-aware
bit comparison, and the x86 (run and compare with the interpreter) and PTX (ptxas) checks.

The oracle is the reference interpreter (`kcc.ir.interp.run`, docs/semantics.md) for x86 and
`ptxas` for PTX; nothing here compares kcc with itself.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from kcc.frontend.printer import format_uop
from kcc.ir import KernelInfo, Ops, UOp
from kcc.ir.verify import verify
from kcc.targets.manifest import describe_kernel
from x86_util import compile_and_run as run_x86
from x86_util import reference as run_reference

F32 = np.finfo(np.float32)
F16 = np.finfo(np.float16)
F64 = np.finfo(np.float64)
# Special float values (as float64; each is converted to the buffer's dtype by numpy, RN).
SPECIAL_FLOATS = (np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5,
                  -2.5, 3.0, float(F32.tiny), -float(F32.tiny), 1e-45, -1e-45, 1.1e-38,
                  float(F16.tiny), 6e-8, 5e-324, float(F64.tiny), float(F32.max), -float(F32.max),
                  65504.0, 65520.0, -65504.0, 127.5, 255.9, -128.5, 32768.0, 2147483648.0,
                  -2147483904.0, 4294967296.0, 9.2e18, 1.8446744073709552e19, 1e300, 16777217.0)


def _ints(dt: np.dtype) -> np.ndarray:
    info = np.iinfo(dt)
    vals = {0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, info.max, info.max - 1, info.min,
            info.min + 1, info.max // 2, info.max // 2 + 1}
    if info.min < 0:
        vals |= {-1, -2, -3, -8}
    return np.array(sorted(vals), dtype=dt)


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 values to bfloat16 bit patterns (truncation is fine: any bits are an input)."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def special_array(dtname: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """n values of a dtype: about 40% drawn from its special values, the rest random."""
    special = rng.random(n) < 0.4
    if dtname == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtname in ("float16", "float32", "float64", "bfloat16"):
        mag = 10.0 ** rng.integers(-6, 7, n)
        base = rng.standard_normal(n) * mag
        pick = np.array(SPECIAL_FLOATS)[rng.integers(0, len(SPECIAL_FLOATS), n)]
        with np.errstate(over="ignore"):
            v = np.where(special, pick, base)
            if dtname == "bfloat16":
                return _bf16(v)
            return v.astype(dtname)
    dt = np.dtype(dtname)
    info = np.iinfo(dt)
    small = rng.integers(-20 if info.min < 0 else 0, 21, n).astype(dt)
    full = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    sp = _ints(dt)[rng.integers(0, len(_ints(dt)), n)]
    which = rng.integers(0, 2, n)
    return np.where(special, sp, np.where(which == 0, small, full))


def special_inputs(sink: UOp, seed: int) -> list:
    """Arguments in slot order: buffers (outputs too: a false-gated store leaves them) and
    scalars, biased toward NaN, ±inf, ±0, subnormals, INT_MIN and the unsigned maximum."""
    rng = np.random.default_rng(seed)
    out: list = []
    for a in describe_kernel(sink).args:
        n = a.size if a.kind == "buffer" else 1
        v = special_array(a.dtype, n, rng)
        out.append(v if a.kind == "buffer" else v[0])
    return out


def _nan_mask(dtname: str, x: np.ndarray) -> np.ndarray:
    if dtname == "bfloat16":
        return ((x & 0x7F80) == 0x7F80) & ((x & 0x007F) != 0)
    if x.dtype.kind == "f":
        return np.isnan(x)
    return np.zeros(x.shape, bool)


def mismatch(sink: UOp, got: list, want: list) -> str | None:
    """None when every buffer has the same bits (a NaN equals any NaN: payloads are
    unspecified, docs/semantics.md), else a description of the first difference."""
    for i, a in enumerate(describe_kernel(sink).args):
        g, w = got[i], want[i]
        if a.kind != "buffer":
            continue
        bits = f"u{g.itemsize}" if g.dtype != bool else "u1"
        nan = _nan_mask(a.dtype, g) & _nan_mask(a.dtype, w)
        bad = (g.view(bits) != w.view(bits)) & ~nan
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            return (f"argument {i} ({a.dtype}) differs at element {k}: kcc "
                    f"{g[k]!r} (bits {int(g.view(bits)[k]):#x}), interpreter {w[k]!r} "
                    f"(bits {int(w.view(bits)[k]):#x}); {int(bad.sum())} of {bad.size} differ")
    return None


def check_x86(sink: UOp, seed: int = 0, arch: str = "x86-64-v3") -> None:
    """Assert that kcc's x86 code and the interpreter agree on special-biased inputs; the
    failure message holds the kernel's .uop text and the input seed (to make a regression)."""
    verify(sink)                          # a generator bug, not a compiler bug, if this fails
    args = special_inputs(sink, seed)
    _compare_x86(sink, args, run_reference(sink, args), seed, arch)


def vector_width(seed: int) -> str:
    """The x86 `--vector-width` a fuzzed kernel compiles with: the default on even seeds, 512
    on odd ones, so x86-64-v4's small kernels are checked both with ymm (the default for
    little work) and with the zmm forms."""
    return "512" if seed % 2 else "auto"


def _compare_x86(sink: UOp, args: list, want: list, seed: int, arch: str,
                 fp_contract: str = "off") -> None:
    """Run kcc's x86 object of sink on args and assert it wrote what the oracle did (want);
    the message names the seed and holds the kernel's text."""
    width = vector_width(seed)
    try:
        got = run_x86(sink, args, arch, fp_contract=fp_contract, vector_width=width)
    except Exception as e:
        raise AssertionError(f"x86 compile/run failed: {type(e).__name__}: {e}\n"
                             f"seed={seed}\n{format_uop(sink)}") from e
    msg = mismatch(sink, got, want)
    if msg:
        how = "" if fp_contract == "off" else f"fp-contract {fp_contract}, "
        how += "" if width == "auto" else f"vector-width {width}, "
        raise AssertionError(f"{msg}\n{how}seed={seed}\n{format_uop(sink)}")


def check_x86_streaming(sink: UOp, seed: int = 0, arch: str = "x86-64-v3") -> None:
    """check_x86 with `--streaming-stores=always` (kcc/isel/x86/stream.py), every buffer run
    twice: 64-byte aligned (a streaming kernel takes its non-temporal body) and one element
    past that (its ordinary body: VMOVNTPS there would fault)."""
    import numpy as np

    from kcc.targets.manifest import check_launch
    from kcc.targets.x86.objload import LoadedObject
    from kcc.targets.x86.target import compile_x86, launch
    verify(sink)
    args = special_inputs(sink, seed)
    want = run_reference(sink, args)
    obj, descs = compile_x86([sink], arch, streaming_stores="always",
                             vector_width=vector_width(seed))
    lo = LoadedObject(obj)
    try:
        for shift in (0, 1):
            mine = []
            for a in args:
                if isinstance(a, np.ndarray):
                    raw = np.zeros(a.nbytes + 128, np.uint8)
                    off = (-raw.ctypes.data) % 64 + shift * a.itemsize
                    b = raw[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
                    b[...] = a
                    mine.append(b)
                else:
                    mine.append(a)
            launch(lo, descs[0], check_launch(descs[0], mine))
            msg = mismatch(sink, mine, want)
            if msg:
                raise AssertionError(f"{msg}\nstreaming stores, buffers shifted by {shift} "
                                     f"element(s); seed={seed}\n{format_uop(sink)}")
    finally:
        lo.close()


def check_x86_contract(sink: UOp, seed: int = 0, arch: str = "x86-64-v3") -> None:
    """check_x86 with `--fp-contract=fast`: kcc may fuse a float MUL into the ADD using it, so
    the oracle is the interpreter on the graph right after the pipeline's `contract` pass
    (dumped as .uop text and parsed back: the fusions kcc chose, each one rounding, as
    docs/semantics.md defines MULACC); everything after it (devectorize, decompose, isel,
    register allocation, encoding) must then be exact."""
    import io

    from kcc.frontend.parser import parse
    from kcc.targets.x86.target import compile_x86
    verify(sink)
    args = special_inputs(sink, seed)
    dump = io.StringIO()
    compile_x86([sink], arch, dump_after="contract", out=dump, fp_contract="fast",
                vector_width=vector_width(seed))        # the graph _compare_x86 compiles
    head, _, text = dump.getvalue().partition("\n")
    assert head == "; after contract", head
    fused = parse(text, "after-contract.uop")
    _compare_x86(sink, args, run_reference(fused, args), seed, arch, fp_contract="fast")


def find_ptxas() -> str | None:
    """ptxas on PATH (or the pip wheel's), via the CUDA target's own finder."""
    from kcc.targets.cuda.target import find_ptxas as find
    return find()


def check_ptxas(sinks: list[UOp], arch: str = "sm_90") -> None:
    """Compile the kernels to one PTX module (renamed k0, k1, …) and assert ptxas accepts it."""
    from kcc.targets.cuda.target import compile_cuda
    sinks = [s.replace(arg=KernelInfo(f"k{i}")) for i, s in enumerate(sinks)]
    for s in sinks:
        verify(s)
    texts = "\n".join(format_uop(s) for s in sinks)
    try:
        ptx, _ = compile_cuda(sinks, arch, "ptx")
    except Exception as e:
        raise AssertionError(f"PTX compile failed: {type(e).__name__}: {e}\n{texts}") from e
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_bytes(ptx)
        r = subprocess.run([find_ptxas() or "ptxas", f"-arch={arch}", str(src), "-o",
                            str(Path(d) / "k.cubin")], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"ptxas rejected the PTX: {r.stderr.strip()}\n"
                             f"{_ptx_context(ptx.decode(), r.stderr)}\n{texts}")


def _ptx_context(ptx: str, err: str) -> str:
    """The PTX lines ptxas complains about (`line N`), with two lines around each."""
    import re
    lines = ptx.split("\n")
    out = []
    for m in re.finditer(r"line (\d+)", err):
        k = int(m.group(1)) - 1
        out += [f"{j + 1}: {lines[j]}" for j in range(max(0, k - 2), min(len(lines), k + 3))]
    return "\n".join(out[:40])


def n_examples(default: int) -> int:
    """KCC_FUZZ_EXAMPLES=N runs more examples (randomized); the default is a fixed batch."""
    return int(os.environ.get("KCC_FUZZ_EXAMPLES", default))


def derandomize() -> bool:
    return "KCC_FUZZ_EXAMPLES" not in os.environ


def ops_in(sink: UOp) -> set[Ops]:
    return {n.op for n in sink.toposort()}


# what the AMD back end refuses on purpose (docs/architecture.md, "AMD value model")
AMD_REFUSALS = ("not supported on AMD", "kcc has no decomposition")


def check_amd(sinks: list[UOp], arch: str, seed: int = 0) -> int:
    """Compile each kernel for AMD (the allocation re-verified by the checker) and assert that
    llvm-mc-19 assembles its listing; where kcc's AMD emulator exists, also run it on
    special-biased inputs against the interpreter. Returns how many kernels compiled (the
    others were refused on purpose, with one of AMD_REFUSALS)."""
    import shutil

    from kcc.targets.amd.target import AmdTarget, compile_amd_code, has_encoder, hsaco
    from kcc.targets.amd.target import emulate
    mc = shutil.which("llvm-mc-19")
    done = 0
    for i, s in enumerate(sinks):
        s = s.replace(arg=KernelInfo(f"k{i}"))
        verify(s)
        try:
            (code,) = compile_amd_code([s], arch)
        except Exception as e:                      # noqa: BLE001 - refusals are named
            if any(r in str(e) for r in AMD_REFUSALS):
                continue
            raise AssertionError(f"AMD compile failed: {type(e).__name__}: {e}\n"
                                 f"{format_uop(s)}") from e
        done += 1
        assert AmdTarget(arch).check_alloc
        if mc is not None:
            r = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}",
                                "-filetype=obj", "-o", os.devnull],
                               input="\n".join(code.asm) + "\n", capture_output=True,
                               text=True)
            if r.returncode != 0 or r.stderr:
                raise AssertionError(f"llvm-mc-19 rejected the listing: {r.stderr[:1500]}\n"
                                     f"{format_uop(s)}")
        if has_encoder() and _has_emulator():
            from kcc.targets.manifest import check_launch
            args = special_inputs(s, seed)
            want = run_reference(s, args)
            got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            emulate(hsaco([code]), code.desc, check_launch(code.desc, got))
            msg = mismatch(s, got, want)
            if msg:
                raise AssertionError(f"{msg}\narch={arch} seed={seed}\n{format_uop(s)}")
    return done


def _has_emulator() -> bool:
    import importlib.util
    return importlib.util.find_spec("kcc.targets.amd.emu.core") is not None
