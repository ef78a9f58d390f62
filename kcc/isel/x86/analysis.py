"""What the x86 selector decides about a linearized kernel before it selects any node: the
loop index sums it strength-reduces (`induction_sums`), the float loads an ALU user reads as
its memory operand (`foldable_loads`), the int32 vector products whose users read only their
low 16 bits (`low_word_muls`) and the REG buffers that live in registers
(`promotable_buffers`), the float splats a wider splat already holds (`wider_splats`), and the
bytes of its buffer arguments (`footprint`, which the non-temporal store and prefetch rules ask
for). Each is a walk of the schedule
(kcc/isel/x86/select.py asks them once per kernel)."""

from __future__ import annotations

from kcc.ir import AddrSpace, UOp, dtypes
from kcc.ir.uop import base_buffer
from kcc.ir.consts import const_int
from kcc.ir.ops import LOW_BITS, Ops
from kcc.isel.x86.base import commit_const, fits32, strong_const
from kcc.isel.x86.regs import reg_class


MAX_IVS = 4          # strength-reduced sums per loop: each is a register carried around it

# a schedule's facts these walks share: each node's position, its users (each use, in
# schedule order), and the count of STORE/RANGE/END before each position
Facts = tuple[dict[UOp, int], dict[UOp, list[UOp]], list[int]]


def schedule_facts(lin: list[UOp]) -> Facts:
    """The facts of lin that induction_sums, foldable_loads and lane_loads read: built once
    by the selector for all three (each built its own before: three walks of every edge)."""
    pos = {u: k for k, u in enumerate(lin)}
    users: dict[UOp, list[UOp]] = {}
    for u in lin:
        for s in u.src:
            users.setdefault(s, []).append(u)
    barrier = [0] * (len(lin) + 1)        # count of STORE/RANGE/END before each position
    for k, u in enumerate(lin):
        barrier[k + 1] = barrier[k] + (u.op in (Ops.STORE, Ops.RANGE, Ops.END))
    return pos, users, barrier


def footprint(lin: list[UOp]) -> int | None:
    """Bytes of every buffer argument of the kernel (a GLOBAL PARAM declares its element
    count), or None if a size is not known at compile time."""
    total = 0
    for u in lin:
        if u.op is Ops.PARAM and u.arg.is_buffer:
            if not isinstance(u.arg.size, int):
                return None
            total += u.arg.size * u.arg.dtype.itemsize
    return total


def range_times_const(m: UOp) -> tuple[UOp, int] | None:
    """(r, c) when m is `MUL(r, c)`, `MUL(c, r)` or `SHL(r, k)` (c = 2^k, 0 <= k < its bits)
    of a RANGE r of m's dtype by a strong integer constant, else None (induction_sums here,
    viv.py's vector inductions)."""
    if m.op not in (Ops.MUL, Ops.SHL) or len(m.src) != 2:
        return None
    a, b = m.src
    if m.op is Ops.MUL and a.op is not Ops.RANGE:
        a, b = b, a
    c = strong_const(b)
    if a.op is not Ops.RANGE or a.dtype != m.dtype or c is None:
        return None
    c = int(c)
    if m.op is Ops.SHL:
        if not 0 <= c < m.dtype.bits:
            return None
        c = 1 << c
    return a, c


def induction_sums(lin: list[UOp], facts: Facts | None = None
                   ) -> dict[UOp, list[tuple[UOp, UOp | None, int]]]:
    """Integer sums to strength-reduce, by loop: (node, init, step) for `init + r*step`
    (`ADD(init, MUL(r, c))`, `ADD(init, SHL(r, k))`, either order, `MULACC(r, c, init)`,
    init independent of the loop's RANGE r) and for a bare `MUL(r, c)` / `SHL(r, k)` that is
    read elsewhere, or a `MULACC(r, c, 0)` (init None: 0). Wrapping integer arithmetic makes
    `init + r*step` and the counter that starts at init and adds step each iteration the same
    bits. init is scheduled before the loop (so it does not depend on r and its register
    exists at the RANGE). A constant init is left alone (it is an address displacement
    already), and so is a step that does not fit an imm32. facts: schedule_facts(lin), when
    the caller has them."""
    pos, users, _ = facts or schedule_facts(lin)
    out: dict[UOp, list[tuple[UOp, UOp | None, int]]] = {}

    def scaled(m: UOp) -> tuple[UOp, int] | None:
        """(r, step) when m is MUL(r, c), MUL(c, r) or SHL(r, k) of a RANGE r."""
        if m.op not in (Ops.MUL, Ops.SHL) or not m.dtype.is_int or m.shape or \
                m.dtype.itemsize not in (4, 8) or m.dtype.is_weak:
            return None
        rc = range_times_const(m)
        if rc is None:
            return None
        a, c = rc
        step = commit_const(c, m.dtype)
        step = commit_const(step, dtypes.int64 if m.dtype.itemsize == 8 else dtypes.int32)
        return (a, int(step)) if fits32(int(step)) else None

    taken: set[UOp] = set()
    for u in lin:
        if u.op is Ops.MULACC and u not in taken:
            # MULACC(r, c, init) = init + r*c (tinygrad's column index j*C + i)
            pairs = [(UOp(Ops.MUL, u.src[:2]), u.src[2])]
        elif u.op is Ops.ADD and u not in taken:
            pairs = [(u.src[1], u.src[0]), (u.src[0], u.src[1])]
        else:
            continue
        for m, init in pairs:
            rs = scaled(m)
            if rs is None or init.dtype != u.dtype or strong_const(init) is not None:
                continue
            r, step = rs
            ivs = out.setdefault(r, [])
            if len(ivs) < MAX_IVS and pos[init] < pos[r]:   # computed before the loop
                ivs.append((u, init, step))
                taken.add(u)
            break
    for u in lin:
        # MULACC(r, c, 0) is MUL(r, c) (kcc/passes/unit_loops.py folds a one-trip counter
        # into the addend, and simplify keeps it: conv1d's r_2_16_12_8_3 multiplied by 14)
        rs = scaled(UOp(Ops.MUL, u.src[:2])) if u.op is Ops.MULACC and u not in taken and \
            strong_const(u.src[2]) == 0 and u.src[2].dtype == u.dtype else scaled(u)
        if rs is None or all(x in taken for x in users.get(u, [])):
            continue
        ivs = out.setdefault(rs[0], [])
        if len(ivs) < MAX_IVS:
            ivs.append((u, None, rs[1]))
    return out


_FOLD_INTO = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV})
# integer vector ops whose VEX/EVEX form reads its second operand from memory (VPADDD …
# ymm, ymm, m256), and those of them that commute (a load as the first operand is read there:
# x86_ivec.ivec_alu swaps the operands of these, so the two must agree)
INT_COMMUTES = frozenset({Ops.ADD, Ops.MUL, Ops.AND, Ops.OR, Ops.XOR, Ops.MAX})
_IFOLD_INTO = INT_COMMUTES | {Ops.SUB}


_COMPARES = frozenset({Ops.CMPLT, Ops.CMPEQ, Ops.CMPNE})


def _same_segment(x: UOp, users: dict[UOp, list[UOp]], pos: dict[UOp, int],
                  barrier: list[int]) -> bool:
    """Whether x's users and theirs lie before the next STORE/RANGE/END after x: a compare's
    mask may be made where it is read (x86-64-v4 keeps an opmask and makes the lane-mask
    vector at its reader, x86_kmask.lane_mask; ADD(acc, CAST(compare)) reads the compare
    itself, x86_kmask.add_bool_lanes), and reading its folded load there must still read
    what the load would have."""
    seg = barrier[pos[x]]
    for y in users.get(x, []):
        if barrier[pos[y]] != seg or any(barrier[pos[z]] != seg for z in users.get(y, [])):
            return False
    return True


def widening_cast_load(u: UOp, x: UOp) -> bool:
    """Whether x is a CAST of the integer vector load u to integer lanes twice, four or
    eight times as wide (the same lane count): VPMOVSX/VPMOVZX read exactly the load's n
    lanes from memory (SDM Vol. 2B "PMOVSX": `vpmovsxbd ymm, m64`), so the load is its
    memory operand (clang's code for int8_sum r_37_9) instead of a VMOVQ and the move; on
    x86-64-v4 also 16 byte or word lanes to the dwords of a zmm (`vpmovsxbd zmm, m128`)."""
    if x.op is not Ops.CAST or not u.shape or x.shape != u.shape:
        return False
    sd, dt = u.dtype, x.dtype
    return sd.is_int and dt.is_int and not sd.is_bool and not dt.is_bool \
        and dt.itemsize in (2 * sd.itemsize, 4 * sd.itemsize, 8 * sd.itemsize) \
        and u.shape[0] * sd.itemsize in (2, 4, 8, 16, 32) \
        and (u.shape[0] * dt.itemsize in (16, 32) or u.shape[0] == 16 and dt.itemsize == 4)


def foldable_loads(lin: list[UOp], evex: bool = False,
                   facts: Facts | None = None) -> frozenset[UOp]:
    """Float loads whose one user can read them as its memory operand (`vaddps x, x, [mem]`,
    `vinsertps x, x, [mem], imm`): an ungated LOAD of float32/float64 used once, by a float
    ADD/SUB/MUL/FDIV as its second operand (ADD and MUL also as the first: they commute), by
    a float32 STACK built with inserts as a lane other than the first, or (evex) by a WHERE
    as its true value (a masked blend's or zero-masked move's r/m operand,
    kcc/isel/x86/kmask.py; a WHERE without an opmask form loads it there); between the load
    and its user in the schedule lies no STORE and no loop boundary, so reading memory at
    the user gives the same value. VEX and EVEX forms take unaligned memory operands (SDM
    Vol. 1 §14.9), so the place's alignment does not matter. A scalar float load whose one
    user is a BITCAST to an integer is read by that BITCAST as a MOV from memory. An integer
    vector load whose one user is an integer vector ADD/SUB/MUL/AND/OR/XOR/MAX of its lanes
    (the second operand; of a commuting op either) is that op's r/m operand (`vpmulld ymm,
    ymm, [mem]`: clang's code for i32_mul_wrap and uint16_max), and on x86-64-v4 the
    source of a shift of its lanes (`shift_reads_memory`: `vpsrlq ymm, [mem], 13`); a rule
    that takes no memory operand reads it into a register where it selects
    (X86Selector.reg). facts:
    schedule_facts(lin), when the caller has them."""
    pos, users, barrier = facts or schedule_facts(lin)
    out = set()
    for u in lin:
        if u.op is not Ops.LOAD or len(u.src) != 1 or reg_class(u.dtype) != "vec" \
                and not (u.shape and u.dtype.is_int):
            continue
        us = users.get(u, [])
        if len(us) != 1 or barrier[pos[us[0]]] != barrier[pos[u] + 1]:
            continue
        x = us[0]
        if widening_cast_load(u, x):
            out.add(u)          # VPMOVSX/ZX's source read in place (x86_ivec.vcast_int)
            continue
        if u.shape and u.dtype.itemsize * u.shape[0] not in (16, 32, 64):
            continue                  # the packed form would read a whole register's bytes
        if reg_class(u.dtype) != "vec":       # an integer vector: only as an ALU's operand
            if x.op in _IFOLD_INTO and x.dtype.is_int and x.shape == u.shape \
                    and (x.src[1] is u) != (x.src[0] is u) \
                    and (x.src[1] is u or x.op in INT_COMMUTES):
                out.add(u)      # an integer vector op's r/m operand (x86_ivec.ivec_alu)
            elif evex and x.op in _COMPARES and x.src[0] is not x.src[1] \
                    and (x.src[1] is u or x.op is not Ops.CMPLT) \
                    and _same_segment(x, users, pos, barrier):
                out.add(u)      # VPCMPD k, a, [mem] (x86_kmask.kcompare; cast_bool2f r_64_4)
            elif shift_reads_memory(u, x, evex):
                out.add(u)
        elif x.op in _FOLD_INTO and x.dtype.is_float and (
                x.src[1] is u or (x.op in (Ops.ADD, Ops.MUL) and x.src[0] is u)):
            out.add(u)
        elif evex and x.op is Ops.WHERE and x.src[1] is u and x.src[2] is not u:
            out.add(u)
        elif x.op in _COMPARES and u.shape and x.src[0] is not x.src[1] \
                and (x.src[1] is u or x.op is not Ops.CMPLT) \
                and _same_segment(x, users, pos, barrier):
            out.add(u)          # VCMPPS k/vector, a, [mem] (x86_kmask.kcompare, x86_vec.fmask)
        elif x.op is Ops.BITCAST and not u.shape and reg_class(x.dtype) == "gpr":
            out.add(u)          # the bits straight into a GPR: MOV r32/r64, [mem]
        elif x.op is Ops.STACK and not u.shape and u.dtype == dtypes.float32 \
                and x.src[0] is not u and len(set(x.src)) == len(x.src) \
                and strong_const(x) is None:
            out.add(u)
    return frozenset(out)


def shift_reads_memory(u: UOp, x: UOp, evex: bool) -> bool:
    """Whether x, u's one user, is a shift of u's 32/64-bit lanes whose immediate form may
    read u from memory: the EVEX rows (x86-64-v4; the VEX forms' source is a register
    only). A shift by a vector amount reads u into a register where it selects."""
    return evex and x.op in (Ops.SHL, Ops.SHR) and x.src[0] is u and x.src[1] is not u \
        and u.dtype.itemsize in (4, 8)


# what may read such a lane: float arithmetic, a conversion, a store. Not a compare (its
# lanes may be compared at once, x86_vec.lane_test), nor a STACK (x86_vec.build128 reads
# the vector itself to insert its lanes), which read the vector where they are
_LANE_USERS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.MAX, Ops.MULACC, Ops.NEG,
                         Ops.SQRT, Ops.CAST, Ops.STORE})


def lane_loads(lin: list[UOp], facts: Facts | None = None) -> frozenset[UOp]:
    """Float vector loads read only lane by lane (every user an INDEX of a constant lane:
    tinygrad's float4 loads summed or compared lane by lane): each lane is then read from
    memory where it is used, a scalar load or its user's memory operand (`vaddss x, x,
    [mem + 4k]`), instead of a vector load and a shuffle a lane (SHUFPS runs on one port;
    loads on two or three). Between the load and each user lies no STORE and no loop
    boundary (the foldable_loads rule), so every lane reads the value the load would have.
    Only lanes read by _LANE_USERS: others may read the vector itself. facts:
    schedule_facts(lin), when the caller has them."""
    pos, users, barrier = facts or schedule_facts(lin)
    out = set()
    for u in lin:
        if u.op is not Ops.LOAD or len(u.src) != 1 or not u.shape \
                or u.dtype not in (dtypes.float32, dtypes.float64):
            continue
        us = users.get(u, [])
        if us and all(x.op is Ops.INDEX and x.src[0] is u and const_int(x.src[1]) is not None
                      and barrier[pos[x]] == barrier[pos[u] + 1]
                      and all(y.op in _LANE_USERS for y in users.get(x, [])) for x in us):
            out.add(u)
    return frozenset(out)


def int_lane_loads(lin: list[UOp], facts: Facts | None = None) -> frozenset[UOp]:
    """int32 vector loads of an argument the kernel never stores, read only lane by lane."""
    # each lane is then read from memory where it is used (`imul ecx, [mem + 4k], 300`), not
    # extracted (VPEXTRD: two micro-ops, one on port 5; int16's E_64_4 stores each lane's
    # product as it goes). The buffer is stored nowhere, so a STORE (to another buffer) may
    # lie between the load and a lane's reader; a loop boundary may not (the address's
    # registers), neither before the INDEX nor before its readers
    pos, users, _ = facts or schedule_facts(lin)
    stored = {base_buffer(n.src[0].src[0]) for n in lin if n.op is Ops.STORE}
    loops = [0] * (len(lin) + 1)          # count of RANGE/END before each position
    for k, u in enumerate(lin):
        loops[k + 1] = loops[k] + (u.op in (Ops.RANGE, Ops.END))
    out = set()
    for u in lin:
        if u.op is not Ops.LOAD or len(u.src) != 1 or not u.shape \
                or u.dtype not in (dtypes.int32, dtypes.uint32) or u.src[0].op is not Ops.SHRINK:
            continue
        b = base_buffer(u.src[0].src[0])
        if b.op is not Ops.PARAM or b.arg.addrspace is not AddrSpace.GLOBAL or b in stored:
            continue
        at = loops[pos[u] + 1]
        us = users.get(u, [])
        if us and all(x.op is Ops.INDEX and x.src[0] is u and const_int(x.src[1]) is not None
                      and loops[pos[x]] == at
                      and all((y.op in _LANE_USERS or _splat_of(y, x)) and loops[pos[y]] == at
                              for y in users.get(x, [])) for x in us):
            out.add(u)
    return frozenset(out)


def _splat_of(y: UOp, x: UOp) -> bool:
    """Whether y is a STACK of x alone (its lane in every lane: a broadcast from memory,
    x86_shuf.splat through loaded_mem: 16, 32 or 64 bytes)."""
    return y.op is Ops.STACK and all(s is x for s in y.src) \
        and len(y.src) * x.dtype.itemsize in (16, 32, 64)


def promotable_buffers(lin: list[UOp]) -> dict[UOp, list[tuple[int, int]]]:
    """REG buffers whose every access is an ungated LOAD/STORE at a constant place, with the
    places (start, lanes) pairwise equal or disjoint: each place can live in a register."""
    places: dict[UOp, set[tuple[int, int]]] = {}
    bad: set[UOp] = set()
    for u in lin:
        if u.op not in (Ops.INDEX, Ops.SHRINK) or u.src[0].kind != "buffer":
            continue
        b = u.src[0]
        while b.op is Ops.AFTER:
            b = b.src[0]
        if b.op is not Ops.BUFFER or b.arg.addrspace is not AddrSpace.REG:
            continue
        start = strong_const(u.src[1])
        lanes = u.shape[0] if u.op is Ops.SHRINK else 1
        if start is None or not 0 <= int(start) <= b.arg.size - lanes:
            bad.add(b)
            continue
        places.setdefault(b, set()).add((int(start), lanes))
    for u in lin:
        if u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3:
            b = u.src[0].src[0]
            while b.op is Ops.AFTER:
                b = b.src[0]
            bad.add(b)
    out = {}
    for b, cells in places.items():
        spans = sorted(cells)
        if b in bad or any(a[0] + a[1] > c[0] for a, c in zip(spans, spans[1:])):
            continue
        out[b] = spans
    return out


def low_word_muls(lin: list[UOp]) -> frozenset[UOp]:
    """int32 vector MUL/MULACC nodes of which every use reads only the low 16 bits of each
    lane: through wrapping ADD/SUB/MUL/MULACC/NEG/AND/OR/XOR (bit i of their result depends
    only on bits 0..i of their operands) to an integer CAST of at most 16 bits (a narrowing
    CAST keeps the low bits; docs/semantics.md, CAST int → int). Their product may be VPMULLW
    on the dwords' words: a dword's low word is then the low 16 bits of the low words'
    product, which are those of the dwords' product (SDM "PMULLW"); the high word is
    another value that no use reads. One µop where VPMULLD is two (tinygrad's int8 matmul:
    int32 products summed and truncated to int8). Demanded bits, computed users first (the
    schedule lists a node after its sources)."""
    if not any(u.op in (Ops.MUL, Ops.MULACC) and u.shape
               and u.dtype in (dtypes.int32, dtypes.uint32) for u in lin):
        return frozenset()      # (no such product: most kernels, and then no demand walk)
    demand: dict[UOp, int] = {}
    for u in reversed(lin):
        d = demand.get(u, 0)
        low = u.op in LOW_BITS and u.dtype is not None and u.dtype.is_int
        cast = u.op is Ops.CAST and u.dtype is not None and u.dtype.is_int
        for s in u.src:
            sd = s.dtype
            if sd is None or not sd.is_int:
                continue
            if low and sd == u.dtype:
                need = d
            elif cast:
                need = min(d, sd.bits)
            else:
                need = sd.bits
            if need > demand.get(s, 0):
                demand[s] = need
    return frozenset(u for u in lin if u.op in (Ops.MUL, Ops.MULACC) and u.shape
                     and u.dtype in (dtypes.int32, dtypes.uint32) and demand.get(u, 32) <= 16)


def wider_splats(lin: list[UOp]) -> dict[UOp, UOp]:
    """Splats (a STACK of one non-constant scalar: float32/64 of 16, 32 or 64 bytes, or any
    integer vector) whose lanes a wider splat of the same scalar, made before them in the
    same loop nest (the same open RANGEs: across an inner loop, not out of one), already holds
    in its low lanes: each narrower one → that wider one, whose register it reads as its own
    (an xmm or ymm operand is the low part of the ymm or zmm register). One broadcast for
    both instead of one each: conv1d's 12 columns as 8 + 4 lanes read each weight at both
    widths (two embedded-broadcast loads a tap the load ports were short of); a widened row's
    narrow last block (kcc/passes/widen_stride.py `_narrow`) beside its full blocks, one_hot
    E_64_10's byte (VMOVD and VPBROADCASTD, two port-5 micro-ops) and shrink_expand's float."""
    out: dict[UOp, UOp] = {}
    widest: dict[tuple[UOp, tuple[UOp, ...]], UOp] = {}   # (scalar, nest) → widest splat
    nest: tuple[UOp, ...] = ()
    for u in lin:
        if u.op is Ops.RANGE:
            nest += (u,)
            continue
        if u.op is Ops.END:
            nest = tuple(r for r in nest if r not in u.src[1:])
            continue
        if u.op is not Ops.STACK or u.dtype is None or not _splat_kind(u):
            continue
        s = u.src[0]
        if any(x is not s for x in u.src) or strong_const(s) is not None:
            continue
        w = widest.get((s, nest))
        if w is not None and len(w.src) > len(u.src):
            out[u] = w
        elif w is None or len(u.src) > len(w.src):
            widest[s, nest] = u
    return out


def _splat_kind(u: UOp) -> bool:
    """u's lanes are a float32/64 xmm, ymm or zmm or an integer vector (the splats
    `wider_splats` pairs: bools are opmasks or byte masks, halves their own path)."""
    dt = u.dtype
    if dt in (dtypes.float32, dtypes.float64):
        return dt.itemsize * len(u.src) in (16, 32, 64)
    return dt.is_int
