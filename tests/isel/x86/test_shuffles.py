"""Lane permutations on x86 (kcc/isel/x86/shuf.py): STACKs whose lanes are lanes of float
vectors — transposes, splats (from memory and from registers), 128-bit block concats and
broadcasts, in-block orders, random permutations — against the interpreter, on x86-64-v3 and
(where the CPU has AVX-512) x86-64-v4; and the instruction counts the selector promises."""

from __future__ import annotations

import io
import random

import capstone
import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from kcc.frontend.parser import parse
from kcc.targets.x86.target import compile_x86
from x86_util import ARCHS, HAS_V4, assert_same, compile_and_run, random_inputs, reference

# The kernels here are small: 512-bit vectors are asked for, so their zmm forms are what is
# selected (by default x86-64-v4 compiles a kernel of little work with ymm at most,
# kcc/targets/x86/arch.py `_narrow_v4`)
W512 = "512"

SHUFFLES = ("shuf", "unpck", "perm", "insert", "extract", "broadcast", "movddup", "blend")


def kernel(dt: str, srcs: list[tuple[int, bool]], lanes: list[list[tuple[int, int]]],
           name: str = "perm") -> str:
    """out[i] = STACK(lanes) for each output row: srcs are (width, computed) vectors loaded
    at consecutive offsets of one buffer (computed: the loaded value plus itself, so it lives
    only in a register); each lane is (source, lane)."""
    n = len(lanes[0])
    total = sum(w for w, _ in srcs)
    outs = len(lanes)
    t = [f"%o = PARAM ParamArg(0, {dt}, {4 * n * outs})",
         f"%a = PARAM ParamArg(1, {dt}, {4 * total})",
         # 1 iteration: nothing for passes/widen.py to widen (3 would be: a main loop of 2
         # with a tail), so the lanes stay as written (widened, a splat of a 4-lane load would
         # be one of an 8-lane load's blocks)
         "%i = RANGE(1) (0, LOOP)", f"%ib = MUL(%i, {total})", f"%ob = MUL(%i, {n * outs})"]
    off = 0
    used = {j for row in lanes for j, _ in row}
    for j, (w, computed) in enumerate(srcs):
        if j not in used:                      # the parser refuses an unused node
            off += w
            continue
        t += [f"%x{j} = ADD(%ib, {off})", f"%p{j} = SHRINK(%a, %x{j}, {w})",
              f"%l{j} = LOAD(%p{j})"]
        if computed:
            t.append(f"%v{j} = ADD(%l{j}, %l{j})")
        off += w
    stores = []
    for r, row in enumerate(lanes):
        names = []
        for q, (j, k) in enumerate(row):
            src = f"%v{j}" if srcs[j][1] else f"%l{j}"
            t.append(f"%e{r}_{q} = INDEX({src}, {k})")
            names.append(f"%e{r}_{q}")
        t += [f"%s{r} = STACK({', '.join(names)})", f"%y{r} = ADD(%ob, {r * n})",
              f"%q{r} = SHRINK(%o, %y{r}, {n})", f"%st{r} = STORE(%q{r}, %s{r})"]
        stores.append(f"%st{r}")
    t += [f"%g = GROUP({', '.join(stores)})", "%e = END(%g, %i)",
          f'SINK(%e) KernelInfo(name="{name}")']
    return "# kcc-uop 1\n" + "\n".join(t) + "\n"


def check(text: str, arch: str) -> None:
    sink = parse(text, "<perm>")
    for seed in (0, 1):
        args = random_inputs(sink, seed)
        got = compile_and_run(sink, args, arch, vector_width=W512)
        assert_same(sink, got, reference(sink, args))


def _insts(text: str, arch: str, ops: bool = False) -> list[str]:
    """The mnemonics (with ops: and operands) of the compiled kernel (capstone)."""
    obj, _ = compile_x86([parse(text, "<perm>")], arch, vector_width=W512)
    elf = ELFFile(io.BytesIO(obj))
    code = elf.get_section_by_name(".text").data()
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return [f"{i.mnemonic} {i.op_str}" if ops else i.mnemonic for i in md.disasm(code, 0)]


def _shuffles(text: str, arch: str) -> int:
    """How many lane-moving instructions the compiled kernel has."""
    return sum(any(s in m for s in SHUFFLES) for m in _insts(text, arch))


TRANSPOSE = [[(j, k) for j in range(4)] for k in range(4)]
# tinygrad's matmul tile at 16 lanes: (a0[k]×4, a1[k]×4, a2[k]×4, a3[k]×4) for each k
TILE_A = [[(j, k) for j in range(4) for _ in range(4)] for k in range(4)]
TILE_B = [[(0, c) for _ in range(4) for c in range(4)]]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("computed", [False, True])
def test_transpose_4x4(arch: str, computed: bool) -> None:
    text = kernel("float32", [(4, computed)] * 4, TRANSPOSE)
    check(text, arch)
    # 4 UNPCKL/HPS shared by two outputs each + 4 SHUFPS (lane-by-lane inserts took 28)
    assert _shuffles(text, arch) <= 8


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("computed", [False, True])
def test_matmul_tile_operands(arch: str, computed: bool) -> None:
    text = kernel("float32", [(4, computed)] * 4, TILE_A)
    check(text, arch)
    # the concat of the four rows is built once (3 inserts), then one SHUFPS per k; ymm
    # halves on x86-64-v3: two concats of two rows (1 insert each), two SHUFPS per k
    assert _shuffles(text, arch) <= (3 + 4 if arch == "x86-64-v4" else 2 + 8)
    text = kernel("float32", [(4, computed)], TILE_B)
    check(text, arch)
    assert _shuffles(text, arch) <= 1


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_splat_from_memory_is_a_broadcast(arch: str, dt: str) -> None:
    w = 4 if dt == "float32" else 2
    rows = [[(0, k)] * n for k in range(w) for n in (w, 2 * w)]
    for row in rows:
        text = kernel(dt, [(w, False)], [row])
        check(text, arch)
        insts = _insts(text, arch, ops=True)
        # the lane is read from memory (the source buffer is the second argument, rsi) by
        # the broadcast: no vector load of the source, no shuffle
        reads = [i for i in insts if "[rsi" in i]
        assert len(reads) == 1 and reads[0].startswith(("vbroadcast", "vmovddup")), insts
        assert not any(i.startswith("vshuf") for i in insts), insts


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("computed", [False, True])
def test_block_shapes(arch: str, dt: str, computed: bool) -> None:
    c = 4 if dt == "float32" else 2
    src = [(c, computed), (c, computed), (2 * c, computed), (4 * c, computed)]
    rows = [
        [(0, k) for k in range(c)] * 2,                         # a block repeated (ymm)
        [(0, k) for k in range(c)] * 4,                         # … (zmm)
        [(0, k) for k in range(c)] + [(1, k) for k in range(c)],   # two blocks joined
        [(2, k) for k in reversed(range(2 * c))],               # reversed ymm
        [(3, k) for k in range(c, 4 * c)] + [(3, k) for k in range(c)],   # rotated zmm
        [(3, 4 * c - 1 - k) for k in range(4 * c)],             # reversed zmm
        [(2, c + k % c) for k in range(4 * c)],                 # high block of a ymm, ×4
        [(j, 0) for j in (0, 1, 2, 3) for _ in range(c)],       # splats of four vectors
    ]
    for row in rows:
        check(kernel(dt, src, [row]), arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dt", ["float32", "float64", "int32", "uint32", "int64"])
def test_random_permutations(arch: str, dt: str) -> None:
    """Random lane picks of 1-4 sources into 1-3 STACKs (integer lanes move like floats)."""
    rng = random.Random(11)
    c = 4 if dt in ("float32", "int32", "uint32") else 2
    for case in range(12):
        # integer vectors are xmm/ymm on x86 (no zmm integer rows)
        widths = [c, 2 * c] if dt.startswith(("int", "uint")) else [c, 2 * c, 4 * c]
        srcs = [(rng.choice(widths), rng.random() < 0.5) for _ in range(rng.randint(1, 4))]
        n = rng.choice(widths)
        rows = [[(j := rng.randrange(len(srcs)), rng.randrange(srcs[j][0])) for _ in range(n)]
                for _ in range(rng.randint(1, 3))]
        check(kernel(dt, srcs, rows, f"perm{case}"), arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_adjacent_loads_joined_are_one_wider_load(arch: str) -> None:
    """Two (four) 4-lane loads of consecutive addresses STACKed in order: one ymm (zmm) load."""
    for n in (2, 4):
        text = kernel("float32", [(4, False)] * n, [[(j, k) for j in range(n)
                                                     for k in range(4)]])
        check(text, arch)
        if n == 4 and arch == "x86-64-v3":
            continue                       # 16 lanes are two ymm halves there
        reads = [i for i in _insts(text, arch, ops=True) if "[rsi" in i]
        assert len(reads) == 1 and reads[0].startswith("vmovups") \
            and ("ymm" if n == 2 else "zmm") in reads[0], reads


# (32 iterations: a nest of 8 is unrolled by kcc/passes/unroll_tiny.py into 8 copies of the
# body, each read by the same instructions)
GATHER = """# kcc-uop 1
%o = PARAM ParamArg(0, float32, 256)
%a = PARAM ParamArg(1, float32, 256)
%i = RANGE(32) (0, LOOP)
%ob = MUL(%i, 8)
%x0 = INDEX(%a, %i)
%y1 = ADD(%i, 32)
%x1 = INDEX(%a, %y1)
%y2 = ADD(%i, 64)
%x2 = INDEX(%a, %y2)
%y3 = ADD(%i, 96)
%x3 = INDEX(%a, %y3)
%l0 = LOAD(%x0)
%l1 = LOAD(%x1)
%l2 = LOAD(%x2)
%l3 = LOAD(%x3)
%s = STACK(%l0, %l1, %l2, %l3, %l2, %l2, %l2, %l2)
%q = SHRINK(%o, %ob, 8)
%st = STORE(%q, %s)
%e = END(%st, %i)
SINK(%e) KernelInfo(name="gather")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_strided_scalar_loads_are_read_by_the_inserts_and_broadcasts(arch: str) -> None:
    """conv2d's weights: scalar loads 128 bytes apart STACKed. One VMOVSS, three
    VBROADCASTSS reading memory blended in (VBLENDPS: not VINSERTPS m32, port 5 only), one
    VBROADCASTSS from memory for the repeated lane."""
    check(GATHER, arch)
    insts = _insts(GATHER, arch, ops=True)
    reads = [i for i in insts if "[rsi" in i]
    assert sorted(r.split()[0] for r in reads) == ["vbroadcastss"] * 4 + ["vmovss"], reads
    assert sum(i.split()[0] == "vblendps" for i in insts) == 3, insts


@pytest.mark.parametrize("arch", ARCHS)
def test_int32_transpose_is_shuffles(arch: str) -> None:
    """Integer lanes use the float shuffles: a 4x4 int32 transpose is 8, no lane extracts."""
    text = kernel("int32", [(4, True)] * 4, TRANSPOSE)
    check(text, arch)
    ms = _insts(text, arch)
    assert _shuffles(text, arch) <= 8 and not any(m.startswith("vpextr") for m in ms), ms


STORE_BETWEEN = """# kcc-uop 1
%y = PARAM ParamArg(0, float32, 4)
%a = PARAM ParamArg(1, float32, 4)
%pa = SHRINK(%a, 0, 4)
%va = LOAD(%pa)
%n1 = ADD(%va, %va)
%st1 = STORE(%pa, %n1)
%l1 = INDEX(%va, 1)
%sp = STACK(%l1, %l1, %l1, %l1)
%m = MUL(%sp, %n1)
%py = SHRINK(%y, 0, 4)
%st2 = STORE(%py, %m)
%g = GROUP(%st1, %st2)
SINK(%g) KernelInfo(name="store_between")
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_a_store_between_a_load_and_its_lane_splat_keeps_the_register(arch: str) -> None:
    """a[0:4] is loaded, then overwritten with 2·a, then lane 1 of the loaded value is
    splatted: the splat must not broadcast a[1] from memory (it would read the new 2·a[1];
    the selector once missed the store, whose operands it tested with the encoder's types)."""
    check(STORE_BETWEEN, arch)
    sink = parse(STORE_BETWEEN)
    args = [np.zeros(4, np.float32), np.array([1, 2, 3, 4], np.float32)]
    got = compile_and_run(sink, args, arch, vector_width=W512)
    assert list(got[0]) == [4.0, 8.0, 12.0, 16.0]
    assert not any("broadcast" in i and "[rsi" in i for i in _insts(STORE_BETWEEN, arch,
                                                                    ops=True))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [8, 16])
@pytest.mark.parametrize("k", range(4))
def test_repeated_column_of_loaded_rows_is_transposed_at_full_width(arch: str, n: int,
                                                                    k: int) -> None:
    """A column of four just-loaded rows in every 128-bit block ((r0[k], …, r3[k]) ×n/4, as
    conv2d's weights at 16 lanes): each row is read into every block by one VBROADCASTF128 /
    VBROADCASTF32X4 from memory and the transpose's UNPCK/SHUFPS (3) run at the full width,
    so no block insert or VSHUFF32X4 repeats the result (ymm only on x86-64-v3). One column
    a kernel: a store to another buffer may alias the rows, so the rows are not read again
    from memory after it."""
    if n == 16 and arch == "x86-64-v3":
        n = 8
    text = kernel("float32", [(4, False)] * 4, [[(j, k) for j in range(4)] * (n // 4)])
    check(text, arch)
    insts = _insts(text, arch)
    assert insts.count("vbroadcastf128" if n == 8 else "vbroadcastf32x4") == 4, insts
    assert not [i for i in insts if i.startswith(("vinsertf", "vshuff", "vperm"))], insts
    assert _shuffles(text, arch) == 4 + 3, insts


@pytest.mark.parametrize("dt", ["float32", "float64", "int32"])
@pytest.mark.parametrize("computed", [False, True])
def test_reversed_vector_is_a_block_swap_and_an_in_block_shuffle(dt: str, computed: bool) -> None:
    """A ymm's (v4: a zmm's) lanes reversed (passes/widen_stride.py's reversed load): one
    VPERMPD of the 64-bit pairs (VSHUFF32X4 of a zmm's blocks) and one in-block shuffle, no
    128-bit extracts or inserts (shuf.py block_swap); bit-identical (test_block_shapes)."""
    c = 4 if dt in ("float32", "int32") else 2
    for arch, w, swap in (("x86-64-v3", 2 * c, "vpermpd"), ("x86-64-v4", 4 * c, "vshuff32x4")):
        if dt != "float32" and arch == "x86-64-v4":
            continue        # no zmm integer loads (x86_desc), no zmm SHUFPD row (in_block)
        text = kernel(dt, [(w, computed)], [[(0, w - 1 - k) for k in range(w)]])
        ms = [m for m in _insts(text, arch) if any(s in m for s in SHUFFLES)]
        assert ms[0] == swap and len(ms) == 2 and "shuf" in ms[1], ms
        if arch == "x86-64-v3" or HAS_V4:
            check(text, arch)
