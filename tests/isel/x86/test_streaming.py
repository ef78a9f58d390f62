"""Non-temporal (streaming) stores on x86 (kcc/isel/x86/stream.py, `--streaming-stores`).

What is checked: which STOREs the heuristic picks and refuses (write-only buffer, whole
vector, index a multiple of the lanes with the innermost counter's coefficient equal to them,
footprint against STREAM_MIN_BYTES under `auto`); that a streaming kernel's object holds both
versions, the entry's alignment test of the right pointers and an SFENCE; results against the
reference interpreter on aligned buffers (the streaming body) and misaligned ones (the
ordinary body: VMOVNTPS would fault there), on xmm/ymm/zmm, float32/float64/int32, with the
streamed pointer in a register and on the stack; the CLI option and a target refusing it. The
encodings are llvm-mc's (golden/x86/avx_move.s, evex.s, evex_vl.s, gpr.s;
tests/encode/x86/test_x86_encode.py decodes them back with capstone).
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.ir import Ops
from kcc.isel.x86.stream import STREAM_MIN_BYTES, affine, streaming_stores
from kcc.passes.linearize import linearize
from kcc.targets.manifest import check_launch
from kcc.targets.x86.objload import LoadedObject
from kcc.targets.pipeline import PIPELINE
from kcc.targets.x86.target import X86Target, compile_x86, disasm_object, launch
from x86_util import HAS_V4, assert_same, reference

REPO = Path(__file__).resolve().parents[3]
NT = re.compile(r"\bvmovnt(ps|pd|dq)\b")


def vadd(n: int, lanes: int, dt: str = "float32", inputs: int = 2, offset: int = 0,
         stride: int | None = None, read_out: bool = False, gate: bool = False,
         out_size: int | None = None) -> str:
    """d[i*stride + offset : +lanes] = x0 + x1 + … over n // lanes iterations; the output is
    the last argument (slot `inputs`), so with 6 inputs its pointer arrives on the stack."""
    stride = lanes if stride is None else stride
    it = n // lanes
    size = out_size or (it - 1) * stride + offset + lanes
    lines = ["# kcc-uop 1"]
    lines += [f"%x{k} = PARAM ParamArg({k}, {dt}, {n})" for k in range(inputs)]
    lines += [f"%d = PARAM ParamArg({inputs}, {dt}, {size})",
              f"%i = RANGE({it}) (0, LOOP)", f"%o = MUL(%i, {lanes})"]
    for k in range(inputs):
        lines += [f"%p{k} = SHRINK(%x{k}, %o, {lanes})", f"%v{k} = LOAD(%p{k})"]
    acc = "%v0"
    for k in range(1, inputs):
        lines.append(f"%s{k} = ADD({acc}, %v{k})")
        acc = f"%s{k}"
    if read_out:                       # d is read too: d += …
        lines += [f"%pr = SHRINK(%d, %o, {lanes})", "%vr = LOAD(%pr)", f"%sr = ADD({acc}, %vr)"]
        acc = "%sr"
    lines += [f"%od = MUL(%i, {stride})", f"%oo = ADD(%od, {offset})",
              f"%pd = SHRINK(%d, %oo, {lanes})"]
    if gate:
        lines += ["%g = CMPLT(%i, 3)", f"%st = STORE(%pd, {acc}, %g)"]
    else:
        lines.append(f"%st = STORE(%pd, {acc})")
    lines += ["%e = END(%st, %i)", 'SINK(%e) KernelInfo(name="vadd")']
    return "\n".join(lines) + "\n"


def schedule(text: str, arch: str = "x86-64-v3") -> list:
    """The linearized schedule the x86 selector sees (the pipeline's graph passes)."""
    t = X86Target(arch)
    state = parse(text, "k.uop")
    for step in PIPELINE:
        if step.kind == "graph":
            state = step.run(state, t.desc)
        elif step.kind == "linear":
            return linearize(state)
    raise AssertionError("no linearize step")


def picked(text: str, mode: str, arch: str = "x86-64-v3") -> list[int]:
    """The vector bytes of each STORE the heuristic picks."""
    return sorted(streaming_stores(schedule(text, arch), mode,
                                   64 if arch == "x86-64-v4" else 32).values())


# -- the heuristic --------------------------------------------------------------------------

def test_affine_decomposition():
    sink = parse(vadd(64, 8, offset=16, stride=8), "k.uop")
    st = next(u for u in sink.toposort() if u.op is Ops.STORE)
    terms, const = affine(st.src[0].src[1])
    assert const == 16 and list(terms.values()) == [8]
    assert next(iter(terms)).op is Ops.RANGE


def test_picks_a_write_only_contiguous_vector_store():
    # (loops of 1024 elements: a few widened blocks would be straight-line code,
    # passes/unroll_widened.py, and a store outside a loop is not streamed)
    assert picked(vadd(1024, 8), "always") == [32]
    # 255 iterations: 127 widened to 8 lanes, the tail's 4-lane store after them, a loop of
    # one trip folded to straight-line code (passes/unit_loops.py): a store outside a loop,
    # not streamed (15, 7 blocks of 8, would be straight-line code: passes/unroll_widened.py)
    assert picked(vadd(1020, 4), "always") == [32]
    # passes/widen.py runs 2 (v3) or 4 (v4) iterations of 4 lanes as one: still streamed
    assert picked(vadd(1024, 4), "always") == [32]
    assert picked(vadd(1024, 4), "always", "x86-64-v4") == [64]
    assert picked(vadd(1024, 16), "always", "x86-64-v4") == [64]
    assert picked(vadd(1024, 4, "float64"), "always") == [32]
    assert picked(vadd(1024, 8, "int32"), "always") == [32]
    # an offset that is a multiple of the lanes keeps every address aligned
    assert picked(vadd(1024, 8, offset=8), "always") == [32]


@pytest.mark.parametrize("why, text", [
    ("the buffer is also read", vadd(64, 8, read_out=True)),
    ("a gated store", vadd(64, 8, gate=True)),
    ("a scalar store", vadd(64, 1)),
    ("an offset that is not a multiple of the lanes", vadd(64, 8, offset=4)),
    ("not consecutive across the loop (a gap between vectors)", vadd(64, 8, stride=16)),
    # one iteration: nothing for passes/widen.py to pair into a whole register (31 would be:
    # 7 of 8 lanes and a tail of 2-lane stores, which are refused)
    ("a half-register vector (2 float32: 8 bytes)", vadd(2, 2)),
])
def test_refuses(why, text):
    assert picked(text, "always") == [], why


def test_auto_asks_for_the_footprint():
    # three buffers of n float32: 12n bytes against the threshold
    small = STREAM_MIN_BYTES // 12 // 8 * 8
    big = small + 64
    assert 12 * small < STREAM_MIN_BYTES <= 12 * big
    assert picked(vadd(small, 8), "auto") == []
    assert picked(vadd(big, 8), "auto") == [32]
    assert picked(vadd(small, 8), "always") == [32]
    assert picked(vadd(big, 8), "never") == []


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="auto, never, always"):
        streaming_stores([], "sometimes")


# -- the object --------------------------------------------------------------------------------

def _listing(text: str, mode: str, arch: str = "x86-64-v3") -> str:
    obj, _ = compile_x86([parse(text, "k.uop")], arch, streaming_stores=mode)
    return disasm_object(obj)


def test_object_has_both_versions_and_the_entry_check():
    asm = _listing(vadd(64, 8), "always")
    lines = [ln.split(None, 1)[-1] for ln in asm.splitlines() if re.match(r"\s+[0-9a-f]+:", ln)]
    insts = [re.sub(r"^([0-9a-f]{2} )+\s*", "", ln).strip() for ln in lines]
    # entry: the output pointer (slot 2: rdx) tested against 32-byte alignment
    assert insts[0] == "mov rax, rdx" and insts[1] == "test al, 0x1f"
    assert insts[2].startswith("jne ")
    assert len(NT.findall(asm)) == 1 and asm.count("vmovups ymmword ptr [rdx") == 1
    assert asm.count("sfence") == 1 and asm.count("ret") == 2
    # the streaming body fences before it returns
    body = insts[:insts.index("ret")]
    assert "sfence" in body and NT.search(" ".join(body))
    # never / a small kernel under auto: one version, no check
    for mode in ("never", "auto"):
        plain = _listing(vadd(64, 8), mode)
        assert not NT.search(plain) and "sfence" not in plain and plain.count("ret") == 1


@pytest.mark.parametrize("arch, lanes", [("x86-64-v3", 8), ("x86-64-v4", 16)])
def test_ordinary_body_is_the_never_object(arch, lanes):
    """The second body is the allocated streaming code with ordinary stores and no SFENCE:
    byte for byte what --streaming-stores=never compiles (same registers, same frame)."""
    from elftools.elf.elffile import ELFFile
    sink = parse(vadd(64, lanes, inputs=3), "k.uop")
    both, _ = compile_x86([sink], arch, streaming_stores="always")
    never, _ = compile_x86([sink], arch, streaming_stores="never")
    both_t, never_t = (ELFFile(io.BytesIO(o)).get_section_by_name(".text").data()
                       for o in (both, never))
    assert both_t.endswith(never_t) and len(both_t) > len(never_t)
    assert NT.search(disasm_object(both)) and not NT.search(disasm_object(never))


def test_stack_passed_pointer_is_checked_from_the_stack():
    asm = _listing(vadd(64, 8, inputs=6), "always")
    # slot 6 is the seventh pointer: [rsp + 8] at the entry, before the prologue
    assert re.search(r"mov rax, qword ptr \[rsp \+ 8\]", asm)


def test_zmm_and_int_forms():
    assert "vmovntps zmmword ptr" in _listing(vadd(64, 16), "always", "x86-64-v4")
    assert "vmovntdq ymmword ptr" in _listing(vadd(64, 8, "int32"), "always")
    assert "vmovntpd ymmword ptr" in _listing(vadd(64, 4, "float64"), "always")


@pytest.mark.skipif(shutil.which("llvm-mc") is None, reason="llvm-mc is not installed")
def test_asm_text_assembles_to_the_object(tmp_path):
    """`--emit asm` of a two-version kernel (the entry, both bodies, their labels) assembled by
    llvm-mc gives the bytes of kcc's own object."""
    sink = parse(vadd(64, 8, inputs=6), "k.uop")
    obj, _ = compile_x86([sink], "x86-64-v3", streaming_stores="always")
    asm, _ = compile_x86([sink], "x86-64-v3", "asm", streaming_stores="always")
    (tmp_path / "k.s").write_bytes(asm)
    subprocess.run(["llvm-mc", "-triple=x86_64", "-filetype=obj", str(tmp_path / "k.s"), "-o",
                    str(tmp_path / "k.o")], check=True)
    from elftools.elf.elffile import ELFFile
    text = [ELFFile(io.BytesIO(b)).get_section_by_name(".text").data()
            for b in (obj, (tmp_path / "k.o").read_bytes())]
    assert text[0] == text[1] and b"\x0f\xae\xf8" in text[0]       # SFENCE


# -- results against the interpreter -------------------------------------------------------------

def _buffer(n: int, dt: np.dtype, misalign: int, rng) -> np.ndarray:
    """n random elements starting `misalign` bytes past a 64-byte boundary."""
    raw = np.zeros(n * dt.itemsize + 128, np.uint8)
    off = (-raw.ctypes.data) % 64 + misalign
    a = raw[off:off + n * dt.itemsize].view(dt)
    if dt.kind == "f":
        a[:] = rng.standard_normal(n)
    else:
        a[:] = rng.integers(-1000, 1000, n)
    return a


CASES = [("x86-64-v3", 8, "float32", 2), ("x86-64-v3", 4, "float32", 2),
         ("x86-64-v3", 4, "float64", 2), ("x86-64-v3", 8, "int32", 2),
         ("x86-64-v3", 8, "float32", 6), ("x86-64-v4", 16, "float32", 2),
         ("x86-64-v4", 8, "float64", 6), ("x86-64-v4", 4, "float32", 2)]


@pytest.mark.parametrize("arch, lanes, dt, inputs", CASES)
def test_results_aligned_and_misaligned(arch, lanes, dt, inputs):
    if arch == "x86-64-v4" and not HAS_V4:
        pytest.skip("this CPU has no AVX-512 (x86-64-v4 objects cannot run here)")
    n = 400 * lanes             # (a loop: 40 vectors would be straight-line code)
    sink = parse(vadd(n, lanes, dt, inputs), "k.uop")
    obj, descs = compile_x86([sink], arch, streaming_stores="always")
    assert NT.search(disasm_object(obj))
    ndt = np.dtype(dt)
    vbytes = lanes * ndt.itemsize
    rng = np.random.default_rng(lanes + inputs)
    lo = LoadedObject(obj)
    try:
        # aligned: the streaming body; off by one element, and (for ymm/zmm) by 16 bytes:
        # aligned for an xmm store only, so the entry must still choose the ordinary body
        for mis in sorted({0, ndt.itemsize, 16 if vbytes > 16 else 0}):
            args = [_buffer(n, ndt, 0, rng) for _ in range(inputs)] + [_buffer(n, ndt, mis, rng)]
            assert args[-1].ctypes.data % 64 == mis
            want = reference(sink, args)
            launch(lo, descs[0], check_launch(descs[0], args))
            assert_same(sink, args, want)
    finally:
        lo.close()


TWO_OUTPUTS = """# kcc-uop 1
%a = PARAM ParamArg(0, float32, 256)
%d = PARAM ParamArg(1, float32, 256)
%e = PARAM ParamArg(2, float64, 256)
%i = RANGE(64) (0, LOOP)
%o = MUL(%i, 4)
%pa = SHRINK(%a, %o, 4)
%va = LOAD(%pa)
%s = ADD(%va, %va)
%pd = SHRINK(%d, %o, 4)
%st = STORE(%pd, %s)
%w = CAST(%va) float64
%pe = SHRINK(%e, %o, 4)
%st2 = STORE(%pe, %w)
%g = GROUP(%st, %st2)
%end = END(%g, %i)
SINK(%end) KernelInfo(name="two")
"""


def test_two_streamed_buffers_are_both_checked():
    """d (xmm stores) and e (ymm stores of float64) both stream: the entry ORs both pointers
    and tests 32-byte alignment; a misaligned e alone must choose the ordinary body."""
    sink = parse(TWO_OUTPUTS, "k.uop")
    obj, descs = compile_x86([sink], "x86-64-v3", streaming_stores="always")
    asm = disasm_object(obj)
    assert "mov rax, rsi" in asm and "or rax, rdx" in asm and "test al, 0x1f" in asm
    assert len(NT.findall(asm)) == 2
    rng = np.random.default_rng(5)
    lo = LoadedObject(obj)
    try:
        for mis_d, mis_e in ((0, 0), (0, 8), (16, 0), (4, 24)):
            args = [_buffer(256, np.dtype("float32"), 0, rng),
                    _buffer(256, np.dtype("float32"), mis_d, rng),
                    _buffer(256, np.dtype("float64"), mis_e, rng)]
            want = reference(sink, args)
            launch(lo, descs[0], check_launch(descs[0], args))
            assert_same(sink, args, want)
    finally:
        lo.close()


def test_misaligned_output_runs_the_ordinary_body_in_a_fresh_process(tmp_path):
    """A misaligned pointer must not reach VMOVNTPS (#GP: the process would die): run it in
    a child process so that a fault fails this test rather than the whole session."""
    code = f"""
import sys
sys.path[:0] = [{str(REPO)!r}, {str(REPO / 'tests' / 'support')!r}]
import numpy as np
from kcc.frontend.parser import parse
from kcc.targets.manifest import check_launch
from kcc.targets.x86.objload import LoadedObject
from kcc.targets.x86.target import compile_x86, launch
from x86_util import reference
sink = parse(open({str(tmp_path / 'k.uop')!r}).read(), "k.uop")
obj, d = compile_x86([sink], "x86-64-v3", streaming_stores="always")
raw = np.zeros(4 * 256 + 128, np.uint8)
off = (-raw.ctypes.data) % 64 + 4
out = raw[off:off + 4 * 256].view(np.float32)
a = np.arange(256, dtype=np.float32); b = np.ones(256, np.float32)
want = reference(sink, [a, b, out.copy()])[2]
launch(LoadedObject(obj), d[0], check_launch(d[0], [a, b, out]))
assert np.array_equal(out, want), "wrong result"
print("ok")
"""
    (tmp_path / "k.uop").write_text(vadd(256, 8))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_auto_streams_a_large_kernel_and_matches_the_interpreter():
    n = (STREAM_MIN_BYTES // 12 // 8 + 8) * 8      # just above the threshold: 3 x ~11 MB
    sink = parse(vadd(n, 8), "k.uop")
    obj, descs = compile_x86([sink], "x86-64-v3")          # auto, the default
    assert NT.search(disasm_object(obj))
    rng = np.random.default_rng(3)
    args = [_buffer(n, np.dtype("float32"), 0, rng) for _ in range(3)]
    want = reference(sink, args)
    lo = LoadedObject(obj)
    try:
        launch(lo, descs[0], check_launch(descs[0], args))
    finally:
        lo.close()
    assert_same(sink, args, want)


# -- the option ----------------------------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcc.cli", *args], capture_output=True,
                          text=True, cwd=REPO)


def test_cli_option(tmp_path):
    src = tmp_path / "k.uop"
    src.write_text(vadd(64, 8))
    for mode, streams in (("always", True), ("never", False), ("auto", False)):
        out = tmp_path / f"{mode}.o"
        r = _cli("compile", "-t", "x86", str(src), "-o", str(out), "--streaming-stores", mode)
        assert r.returncode == 0, r.stderr
        r = _cli("disasm", str(out))
        assert bool(NT.search(r.stdout)) == streams, mode
    r = _cli("compile", "-t", "x86", str(src), "-o", str(tmp_path / "x.o"),
             "--streaming-stores", "sometimes")
    assert r.returncode != 0 and "sometimes" in r.stderr
    r = _cli("compile", "--help")
    assert "--streaming-stores [auto|never|always]" in r.stdout


def test_gpu_target_refuses_the_option(tmp_path):
    src = tmp_path / "k.uop"
    src.write_text(vadd(64, 8))
    r = _cli("compile", "-t", "cuda", str(src), "-o", str(tmp_path / "k.ptx"),
             "--streaming-stores", "always")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "--streaming-stores=always" in r.stderr and "-t x86 does" in r.stderr
