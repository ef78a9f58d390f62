"""In-process object loader: objects from the system C compiler and from kcc's writer.

Expected results come from numpy; machine code for the writer-made object is hand-written
bytes that the test first decodes with capstone.
"""

from __future__ import annotations

import ctypes
import gc
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from capstone import CS_ARCH_X86, CS_MODE_64, Cs

from kcc.targets.elf import (
    EM_AMDGPU, R_X86_64_64, R_X86_64_PC32, R_X86_64_PLT32, SHF_ALLOC, SHF_EXECINSTR,
    SHF_WRITE, Reloc, Symbol, write_relocatable)
from kcc.targets.x86.objload import LoadedObject, ObjectLoadError

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("readelf") is None,
                                reason="needs cc and readelf on PATH")

TEXT = SHF_ALLOC | SHF_EXECINSTR
TABLE = np.array([1.0, 0.5, 0.25, 0.125, 2.0, 4.0, 8.0, 16.0])

C_SOURCE = r"""
static const double table[8] = {1.0, 0.5, 0.25, 0.125, 2.0, 4.0, 8.0, 16.0};
static int calls;
/* global: called through R_X86_64_PLT32 */
__attribute__((noinline)) double helper(double x, long i) { return x * table[i & 7]; }
/* static: a direct call, or a relocation when each function has its own section */
__attribute__((noinline)) static double twice(double x) { return x + x + table[3]; }
void scale(const double *x, double *y, long n) {
    for (long i = 0; i < n; i++) y[i] = helper(x[i], i) + twice(x[i]);
    calls++;
}
int ncalls(void) { return calls; }
/* absolute pointers in data: R_X86_64_64 */
static const double a = 3.0, b = 7.0;
static const double *const ptrs[2] = {&a, &b};
double viaptr(int i) { return *ptrs[i & 1]; }
/* with -fno-pic: movl $table, %eax is R_X86_64_32 */
const double *table_address(void) { return table; }
"""

VARIANTS = {
    "nopic": (["-fno-pic"], {"R_X86_64_32S", "R_X86_64_32", "R_X86_64_64", "R_X86_64_PC32",
                             "R_X86_64_PLT32"}),
    "pie": (["-fpie"], {"R_X86_64_64", "R_X86_64_PC32", "R_X86_64_PLT32"}),
    "sections": (["-fno-pic", "-ffunction-sections", "-fdata-sections",
                  "-fno-asynchronous-unwind-tables"],
                 {"R_X86_64_32S", "R_X86_64_64", "R_X86_64_PC32", "R_X86_64_PLT32"}),
}


def cc_object(tmp_path: Path, source: str, *flags: str) -> bytes:
    """Compile ``source`` with the system C compiler to a relocatable object."""
    src, obj = tmp_path / "k.c", tmp_path / "k.o"
    src.write_text(source)
    subprocess.run(["cc", "-c", "-O2", *flags, str(src), "-o", str(obj)], check=True)
    return obj.read_bytes()


def reloc_types(obj: bytes, tmp_path: Path) -> set[str]:
    """Relocation type names in ``obj`` according to readelf."""
    path = tmp_path / "r.o"
    path.write_bytes(obj)
    out = subprocess.run(["readelf", "-rW", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return set(re.findall(r"\b(R_X86_64_\w+)", out))


def maps_overlapping(lo: int, hi: int) -> list[tuple[int, int, str]]:
    """Mappings of this process (from /proc/self/maps) that overlap [lo, hi)."""
    found = []
    with open("/proc/self/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            if start < hi and lo < end:
                found.append((start, end, perms))
    return found


def perms_at(addr: int) -> str:
    (entry,) = maps_overlapping(addr, addr + 1)
    return entry[2]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_cc_object_runs(tmp_path: Path, variant: str) -> None:
    flags, expected_relocs = VARIANTS[variant]
    obj = cc_object(tmp_path, C_SOURCE, *flags)
    # The object really exercises the relocation types this variant is meant to cover.
    assert expected_relocs <= reloc_types(obj, tmp_path)
    with LoadedObject(obj) as lo:
        dp = ctypes.POINTER(ctypes.c_double)
        scale = lo.function("scale", None, [dp, dp, ctypes.c_long])
        x = np.linspace(-3.0, 5.0, 37)
        y = np.full_like(x, np.nan)
        scale(x.ctypes.data_as(dp), y.ctypes.data_as(dp), x.size)
        want = x * TABLE[np.arange(x.size) & 7] + (x + x + TABLE[3])
        np.testing.assert_array_equal(y, want)
        ncalls = lo.function("ncalls", ctypes.c_int, [])
        assert ncalls() == 1
        scale(x.ctypes.data_as(dp), y.ctypes.data_as(dp), 0)
        assert ncalls() == 2  # .bss is writable and shared between the functions
        viaptr = lo.function("viaptr", ctypes.c_double, [ctypes.c_int])
        assert [viaptr(0), viaptr(1)] == [3.0, 7.0]
        table_address = lo.function("table_address", ctypes.c_void_p, [])
        assert table_address() == lo.address("table")  # a unique local symbol
        got = np.ctypeslib.as_array(ctypes.cast(table_address(), dp), shape=(8,))
        np.testing.assert_array_equal(got, TABLE)
        # Page permissions: code r-x, constants r--, .bss rw-, nothing both w and x.
        assert perms_at(lo.address("scale")).startswith("r-x")
        assert perms_at(lo.address("table")).startswith("r--")
        assert perms_at(lo.address("ptrs")).startswith("r--")  # relocated, then read-only
        assert perms_at(lo.address("calls")).startswith("rw-")
        lo_addr = min(s.address for s in lo.sections)
        hi_addr = max(s.address + s.size for s in lo.sections)
        spans = maps_overlapping(lo_addr, hi_addr)
        assert spans and not any("w" in p and "x" in p for _, _, p in spans)
        for sec in lo.sections:
            assert sec.size == 0 or perms_at(sec.address).startswith(sec.perms)


# Hand-written code for the writer-made object, checked with capstone below.
#   float kf_axpb(float x)   = x * pool[1] + pool[2]
#   float kf_call(float x)   = kf_axpb(x) + pool[0]              (PLT32 to a global)
#   float kf_indirect(float x) = (*fptr)(x), fptr in .rodata    (R_X86_64_64 in data)
KF_AXPB = bytes.fromhex("c5fa5905 00000000 c5fa5805 00000000 c3".replace(" ", ""))
KF_CALL = bytes.fromhex("4883ec08 e800000000 4883c408 c5fa5805 00000000 c3"
                        .replace(" ", ""))
KF_INDIRECT = bytes.fromhex("488b05 00000000 ffe0".replace(" ", ""))
CAPSTONE_TEXT = {
    "kf_axpb": ["vmulss xmm0, xmm0, dword ptr [rip]", "vaddss xmm0, xmm0, dword ptr [rip]",
                "ret"],
    "kf_call": ["sub rsp, 8", "call 9", "add rsp, 8", "vaddss xmm0, xmm0, dword ptr [rip]",
                "ret"],
    "kf_indirect": ["mov rax, qword ptr [rip]", "jmp rax"],
}
POOL = np.array([1.5, 3.0, 0.25, 0.0], dtype=np.float32)


def writer_object(pool_align: int = 64, machine: int | None = None,
                  extra_reloc: Reloc | None = None) -> bytes:
    codes = {"kf_axpb": KF_AXPB, "kf_call": KF_CALL, "kf_indirect": KF_INDIRECT}
    text, starts = bytearray(), {}
    for name, code in codes.items():
        text += b"\xcc" * (-len(text) % 16)
        starts[name] = len(text)
        text += code
    a, c, i = starts["kf_axpb"], starts["kf_call"], starts["kf_indirect"]
    rodata = POOL.tobytes() + bytes(8)  # the function pointer at pool offset 16
    relocs = [Reloc(".text", a + 4, R_X86_64_PC32, ".rodata", 4 - 4),
              Reloc(".text", a + 12, R_X86_64_PC32, ".rodata", 8 - 4),
              Reloc(".text", c + 5, R_X86_64_PLT32, "kf_axpb", -4),
              Reloc(".text", c + 17, R_X86_64_PC32, ".rodata", 0 - 4),
              Reloc(".text", i + 3, R_X86_64_PC32, "fptr", -4),
              Reloc(".rodata", 16, R_X86_64_64, "kf_axpb", 0)]
    if extra_reloc:
        relocs.append(extra_reloc)
    symbols = [Symbol(n, ".text", s, len(codes[n])) for n, s in starts.items()]
    symbols.append(Symbol("fptr", ".rodata", 16, 8, "object", "local"))
    kwargs = {} if machine is None else {"machine": machine}
    return write_relocatable({".text": (bytes(text), 16, TEXT),
                              ".rodata": (rodata, pool_align, SHF_ALLOC)},
                             symbols, relocs, **kwargs)


def test_handwritten_bytes_decode_as_intended() -> None:
    md = Cs(CS_ARCH_X86, CS_MODE_64)
    for name, code in {"kf_axpb": KF_AXPB, "kf_call": KF_CALL,
                       "kf_indirect": KF_INDIRECT}.items():
        insns = list(md.disasm(code, 0))
        assert sum(i.size for i in insns) == len(code)
        assert [f"{i.mnemonic} {i.op_str}".strip() for i in insns] == CAPSTONE_TEXT[name]


@pytest.mark.parametrize("pool_align", [64, 8192])
def test_writer_object_runs(pool_align: int) -> None:
    with LoadedObject(writer_object(pool_align)) as lo:
        f32 = ctypes.c_float
        axpb = lo.function("kf_axpb", f32, [f32])
        call = lo.function("kf_call", f32, [f32])
        indirect = lo.function("kf_indirect", f32, [f32])
        for x in np.float32([2.0, -1.25, 1e30]):
            want = np.float32(x * POOL[1]) + POOL[2]
            assert np.float32(axpb(x)) == want
            assert np.float32(call(x)) == np.float32(want + POOL[0])
            assert np.float32(indirect(x)) == want
        (ro,) = [s for s in lo.sections if s.name == ".rodata"]
        assert ro.address % pool_align == 0 and ro.perms == "r--"
        assert perms_at(ro.address).startswith("r--")
        assert perms_at(lo.address("kf_axpb")).startswith("r-x")
        assert ctypes.c_uint64.from_address(lo.address("fptr")).value == lo.address("kf_axpb")


def test_function_keeps_mapping_alive_and_close() -> None:
    lo = LoadedObject(writer_object())
    axpb = lo.function("kf_axpb", ctypes.c_float, [ctypes.c_float])
    del lo
    gc.collect()
    assert axpb(2.0) == 6.25
    lo2 = LoadedObject(writer_object())
    lo2.close()
    lo2.close()  # a second close is harmless
    with pytest.raises(ObjectLoadError, match="closed"):
        lo2.address("kf_axpb")


def test_symbol_lookup_errors() -> None:
    with LoadedObject(writer_object()) as lo:
        with pytest.raises(LookupError, match="'nope' is not defined"):
            lo.address("nope")
        with pytest.raises(LookupError, match="not in an executable section"):
            lo.function("fptr", None, [])


def test_refuses_undefined_symbol(tmp_path: Path) -> None:
    obj = cc_object(tmp_path, "double ext(double);\ndouble f(double x) { return ext(x) + 1; }\n")
    with pytest.raises(ObjectLoadError, match="undefined symbol 'ext'"):
        LoadedObject(obj)
    made = writer_object(extra_reloc=Reloc(".text", 0x3C, R_X86_64_PLT32, "memcpy", -4))
    with pytest.raises(ObjectLoadError, match="undefined symbol 'memcpy'"):
        LoadedObject(made)


def test_refuses_unsupported_relocation(tmp_path: Path) -> None:
    # Position-independent code reaches a global through the GOT (R_X86_64_REX_GOTPCRELX).
    obj = cc_object(tmp_path, "int g;\nint f(void) { return g; }\n", "-fpic")
    assert reloc_types(obj, tmp_path) & {"R_X86_64_REX_GOTPCRELX", "R_X86_64_GOTPCREL"}
    with pytest.raises(ObjectLoadError, match=r"unsupported relocation type (42|9) at \.text"):
        LoadedObject(obj)


def test_refuses_wrong_machine_and_type(tmp_path: Path) -> None:
    with pytest.raises(ObjectLoadError, match="machine 224, not x86-64"):
        LoadedObject(writer_object(machine=EM_AMDGPU))
    src = tmp_path / "s.c"
    src.write_text("int f(void) { return 1; }\n")
    so = tmp_path / "s.so"
    subprocess.run(["cc", "-shared", "-fpic", str(src), "-o", str(so)], check=True)
    with pytest.raises(ObjectLoadError, match="only relocatable objects"):
        LoadedObject(so.read_bytes())


@pytest.mark.parametrize("data,message", [
    (b"", "not an ELF file"),
    (b"hello world" * 10, "not an ELF file"),
    (b"\x7fELF\x01\x01\x01" + bytes(57), "not an ELF64 little-endian"),
    ("text", "expected the object's bytes"),
])
def test_refuses_non_elf(data: bytes, message: str) -> None:
    with pytest.raises(ObjectLoadError, match=message):
        LoadedObject(data)


def test_refuses_damaged_object() -> None:
    data = writer_object()
    for cut in (64, 100, len(data) - 8):
        with pytest.raises(ObjectLoadError):
            LoadedObject(data[:cut])
    rng = np.random.default_rng(7)
    for _ in range(300):  # random byte damage: a clear error or a clean load, never a crash
        broken = bytearray(data)
        for pos in rng.integers(0, len(data), size=4):
            broken[pos] = int(rng.integers(0, 256))
        try:
            LoadedObject(bytes(broken)).close()
        except ObjectLoadError:
            pass


def test_writable_data_section_is_rw() -> None:
    # int bump(void) { return ++counter; } with counter in .data
    text = bytes.fromhex("8b0500000000 ffc0 890500000000 c3".replace(" ", ""))
    md = Cs(CS_ARCH_X86, CS_MODE_64)
    assert [f"{i.mnemonic} {i.op_str}".strip() for i in md.disasm(text, 0)] == [
        "mov eax, dword ptr [rip]", "inc eax", "mov dword ptr [rip], eax", "ret"]
    data = write_relocatable(
        {".text": (text, 16, TEXT), ".data": (np.int32([41]).tobytes(), 4, SHF_ALLOC | SHF_WRITE)},
        [Symbol("bump", ".text", 0, len(text)), Symbol("counter", ".data", 0, 4, "object")],
        [Reloc(".text", 2, R_X86_64_PC32, "counter", -4),
         Reloc(".text", 10, R_X86_64_PC32, "counter", -4)])
    with LoadedObject(data) as lo:
        bump = lo.function("bump", ctypes.c_int, [])
        assert [bump(), bump()] == [42, 43]
        assert perms_at(lo.address("counter")).startswith("rw-")
        assert perms_at(lo.address("bump")).startswith("r-x")
