"""An allocation checker written independently of the allocator.

It knows nothing of intervals, hints or the allocator's working copy.  It pairs the
instructions of the allocated function that the allocator did not insert (every kind except
MOVE, SPILL and FILL) one to one with the original instructions, then executes the allocated
code symbolically: for every physical register and frame slot it tracks which value it holds
(an original virtual register, the current value of a physical register named directly in the
original code, or nothing), following forward branches and loop back edges to a fixed point
(where paths disagree, the location holds nothing).  Then it verifies that

* every register read by an original instruction holds the value the original operand named,
* fixed operands are in their register and tied DEFs share their USE's register,
* every register operand names a register its instruction's encoding can name (the target's
  ``operand_regs``, e.g. no xmm16-31 in a VEX-only form), inserted copies included,
* a clobber destroys its register (so a value left there is caught when it is next read),
* callee-saved registers not reported in ``callee_saved_used`` are never written,
* spill slots lie inside the 16-byte aligned frame and are aligned to their size,
* a fill reads a slot at the width it was written (the target's ``slot_bytes`` reads the
  width off the spill and fill instructions themselves), and that width holds the whole value:
  at least the bytes any operand of the value reports by the target's ``value_bytes``
  (computed here from the original function, values a copy joins sharing one width),
* an original instruction whose ``slot`` is set reads one plain USE operand from that frame
  slot instead of a register (a fill folded into it): the slot holds that operand's value, at
  least as wide as the read and as the value,
* a slot the target keeps in a register (its ``slot_home``: AMD keeps spilled SGPRs in lanes of
  a VGPR) is named with one register by every spill and fill of it, and any other write of
  that register (an original instruction, a copy, a fill, a clobber) destroys the slot's value,
  so a fill after it is caught,
* an instruction the target calls ``early_clobber`` (it may write a result before it has
  read every source) has no DEF sharing a register unit with one of its USEs,
* a rematerialization (``REMAT``) repeats, into some register, an original instruction that
  the target calls ``rematerializable`` and that reads no register; it gives that register the
  value the original instruction defined,
* an original instruction may read a read-only constant in place of a register holding it
  (the target's ``constant_bytes`` names the loads whose value is their memory's bytes; x86
  folds them into their readers after allocation): the same memory operand and ``arg`` as
  the load, no more bytes than it loads, or the sources swapped where the target's
  ``commute`` says the bits stay the same; such a load may be gone from the allocated code,
  and a read of its value anywhere fails as any read of a register that does not hold it.
  Loads of one constant by one form are one value (which of them a kept load is paired
  with does not matter).
"""

from __future__ import annotations

from typing import Any

from kcc.ir.mir import (INSERTED_KINDS, Imm, Inst, Kind, Label, Mem, MFunction, PReg, RegOp,
                        Role, VReg, format_inst)
from kcc.regalloc.target import (TargetRegInfo, hook, operand_regs, reg_units, slot_bytes,
                                 slot_home)


class CheckError(AssertionError):
    """The allocated function does not implement the original one."""


Loc = Any      # a PReg, or ("slot", offset, size)
Value = Any    # a VReg, ("p", name) for a physical register's own value, or None


def _same(a: Value, b: Value) -> bool:
    return a is b or (isinstance(a, tuple) and a == b)


def _show(v: Value) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, tuple):
        return f"the value of physical {v[1]}"
    return repr(v)


class _Checker:
    def __init__(self, before: MFunction, after: MFunction, target: TargetRegInfo) -> None:
        self.b, self.a, self.t = before, after, target
        self.alias: dict[PReg, list[PReg]] = {}
        regs: list[PReg] = [p for rs in target.classes.values() for p in rs]
        regs += list(target.callee_saved)
        for inst in after.insts:
            regs += [r for r in (*inst.uses(), *inst.defs(), *inst.clobbers)
                     if isinstance(r, PReg)]
        regs += [p for _, p in after.params]
        uniq = list(dict.fromkeys(regs))
        units = {p: set(reg_units(target, p)) for p in uniq}
        # index registers by unit: linear in the register file (AMD has ~10^4 tuples)
        order = {p: k for k, p in enumerate(uniq)}
        by_unit: dict[object, list[PReg]] = {}
        for p in uniq:
            for u in units[p]:
                by_unit.setdefault(u, []).append(p)
        for p in uniq:
            near = {q for u in units[p] for q in by_unit[u] if q != p}
            self.alias[p] = sorted(near, key=order.__getitem__)
        self.units = units
        self.need = _value_widths(before, target)
        self.folds: dict[int, tuple[int, VReg]] = {}   # inst -> (operand, value) read from a slot
        self.ndefs: dict[int, int] = {}
        self.homes: dict[tuple[int, int], PReg] = {}      # (slot, size) -> its register
        self.homed: dict[str, set[tuple[int, int]]] = {}   # register unit -> slots in it
        for v, _ in before.params:
            self.ndefs[id(v)] = 1 + self.ndefs.get(id(v), 0)
        for inst in before.insts:
            for r in inst.defs():
                self.ndefs[id(r)] = 1 + self.ndefs.get(id(r), 0)
        self.constant: dict[int, int] = {}    # inst -> operand read from a constant in place
        self._load_of: dict[int, Inst] | None = None   # value -> its constant load
        self.same: dict[int, VReg] = {}      # constant value -> the first of its twins
        self._shape: set[int] = set()        # original loads of a read-only constant
        self.kills: dict[int, list[Value]] = {}   # inst -> values of gone loads before it
        if hook(target, "constant_bytes") is not None:
            self._find_constants()

    def fail(self, i: int, msg: str) -> CheckError:
        return CheckError(f"{self.a.name}: after inst {i} '{format_inst(self.a.insts[i])}': {msg}")

    # -- static checks ---------------------------------------------------------------------
    def pair(self) -> dict[int, Inst]:
        """Map each allocated original instruction's index to its instruction in ``before``
        (an original constant load may be gone: ``constant_bytes``)."""
        orig = [i for i, x in enumerate(self.a.insts) if x.kind not in INSERTED_KINDS]
        pairs = self._align(orig)
        early = hook(self.t, "early_clobber")
        for i, b in list(pairs.items()):
            a = self.a.insts[i]
            b = pairs[i] = self._constant_reads(i, a, b)
            folded = a.kind is Kind.OP and b.slot is None and a.slot is not None
            arg = b.arg if i not in self.constant else a.arg
            if (a.op, a.kind, a.arg, a.slot if not folded else None, a.clobbers) != (
                    b.op, b.kind, arg, b.slot, b.clobbers):
                raise self.fail(i, f"does not match original '{format_inst(b)}'")
            if len(a.operands) != len(b.operands):
                raise self.fail(i, "operand count changed")
            if folded:
                self._pair_fold(i, a, b)
            for k, (ao, bo) in enumerate(zip(a.operands, b.operands)):
                if self.folds.get(i, (None,))[0] != k and self.constant.get(i) != k:
                    self._pair_operand(i, k, a, ao, bo)
            outs = [o.reg for o in a.operands if isinstance(o, RegOp) and o.is_def]
            for k, r in enumerate(outs):
                if any(self.units[r] & self.units[q] for q in outs[k + 1:]):
                    raise self.fail(i, f"two results in {r!r} (or registers sharing it)")
            if early is not None and early(a):
                self._early_clobber(i, a)
        return pairs

    def _align(self, orig: list[int]) -> dict[int, Inst]:
        """Pair the allocated originals with ``before``'s instructions in order, passing over
        original constant loads that are gone. A gone load still ends the value its register
        held before (``self.kills``, applied at the next original instruction), so a read
        of that register's old value after it fails."""
        before = self.b.insts
        if len(orig) != len(before) and self._load_of is not None:
            pairs, j, dead = {}, 0, []
            for i in orig:
                a = self.a.insts[i]
                while j < len(before) and id(before[j]) in self._shape and \
                        not _same_shape(a, before[j]):
                    dead.append(self._tok(_main(before[j])[0]))
                    j += 1
                if j == len(before):
                    break
                if dead:
                    self.kills[i], dead = dead, []
                pairs[i], j = before[j], j + 1
            if len(pairs) == len(orig) and all(id(x) in self._shape for x in before[j:]):
                return pairs
            self.kills.clear()
        if len(orig) != len(before):
            raise CheckError(f"{self.a.name}: {len(orig)} original instructions after "
                             f"allocation, {len(before)} before")
        return dict(zip(orig, before))

    def _find_constants(self) -> None:
        """The loads of read-only constants (``self._shape``) and the values that only loads
        of one constant by one form define (a selector may define one value in several
        places, each the same load): those are constants, and loads of one constant by one
        form are one value — which of them a kept load is paired with does not matter."""
        size = hook(self.t, "constant_bytes")
        keys: dict[int, set] = {id(v): {None} for v, _ in self.b.params}
        loads: dict[int, Inst] = {}
        for x in self.b.insts:
            regs = [o for o in x.operands if isinstance(o, RegOp)]
            shape = (x.kind is Kind.OP and size(x) > 0 and len(regs) == 1    # type: ignore
                     and regs[0].role is Role.DEF and isinstance(regs[0].reg, VReg)
                     and not x.clobbers and all(not isinstance(o, Mem) or (
                         o.base is None and o.index is None) for o in x.operands))
            key = (x.op, repr(x.arg), tuple(repr(o) for o in x.operands[1:])) if shape \
                else None
            if shape:
                self._shape.add(id(x))
            for r in x.defs():
                keys.setdefault(id(r), set()).add(key)
                if key is not None:
                    loads.setdefault(id(r), x)
        first: dict[tuple, VReg] = {}
        self._load_of = {}
        for v, x in loads.items():
            if len(keys[v]) == 1:
                self._load_of[v] = x
                w = self.same[v] = first.setdefault(next(iter(keys[v])), _main(x)[0])
                self.need[id(w)] = max(self.need.get(id(w), 0), self.need.get(v, 0))
        self._where = {id(x): k for k, x in enumerate(self.b.insts)}

    def _reaching_load(self, b: Inst, r: Any) -> Inst | None:
        """The constant load whose value original ``b`` reads in ``r``: the one load of a
        constant value, or the load defining ``r`` last before ``b`` in straight-line code
        (no label, branch or loop boundary between)."""
        if id(r) in self._load_of:                    # type: ignore[operator]
            return self._load_of[id(r)]               # type: ignore[index]
        if self.ndefs.get(id(r), 0) <= 1:
            return None           # its one definition is no constant load: no walk back
        insts = self.b.insts
        for k in range(self._where[id(b)] - 1, -1, -1):
            x = insts[k]
            if x.kind is not Kind.OP:
                return None
            if any(d is r for d in x.defs()):
                return x if id(x) in self._shape else None
        return None

    def _constant_reads(self, i: int, a: Inst, b: Inst) -> Inst:
        """``b`` (or its commuted form) when allocated ``a`` reads one of its USEs, a value
        an original constant load defined, from that load's memory operand; the operand is
        then recorded as read in place. Else ``b`` unchanged (the usual pairing follows)."""
        if a.kind is not Kind.OP or a.slot is not None or b.arg is not None \
                or not isinstance(a.arg, dict) or self._load_of is None:
            return b
        for c in (b, *self._commuted(b)):
            if len(c.operands) != len(a.operands):
                continue
            ks = [k for k, (ao, co) in enumerate(zip(a.operands, c.operands))
                  if isinstance(ao, Mem) and isinstance(co, RegOp)]
            if len(ks) != 1:
                continue
            co = c.operands[ks[0]]
            load = self._reaching_load(b, co.reg)
            if co.role is not Role.USE or co.fixed is not None or load is None:
                continue
            mem = next(o for o in load.operands if isinstance(o, Mem))
            size = hook(self.t, "constant_bytes")(load)       # type: ignore[misc]
            if a.operands[ks[0]] != mem or a.arg != load.arg:
                continue
            if not 0 < slot_bytes(self.t, a) <= size:
                raise self.fail(i, f"reads {slot_bytes(self.t, a)} bytes of a "
                                   f"{size}-byte constant in place")
            self.constant[i] = ks[0]
            return c
        return b

    def _commuted(self, b: Inst) -> list[Inst]:
        """``b`` with a constant source swapped to another source's place, by the target's
        ``commute``, for each constant it reads."""
        swap = hook(self.t, "commute")
        if swap is None:
            return []
        loads = [self._reaching_load(b, o.reg) for o in b.operands
                 if isinstance(o, RegOp) and o.role is Role.USE]
        return [c for c in (swap(b, x) for x in loads if x is not None) if c is not None]

    def _early_clobber(self, i: int, a: Inst) -> None:
        """No result of an instruction that may write before it reads shares a register
        unit with a source (its own DEF | USE operand aside)."""
        ops = [(k, o) for k, o in enumerate(a.operands) if isinstance(o, RegOp)]
        for k, d in ops:
            if not d.is_def:
                continue
            for m, u in ops:
                if m != k and u.is_use and self.units[d.reg] & self.units[u.reg]:
                    raise self.fail(i, f"result {d.reg!r} reads a source {u.reg!r} in a "
                                       f"register it shares, and the instruction may write "
                                       f"its results before reading all its sources")

    def _pair_fold(self, i: int, a: Inst, b: Inst) -> None:
        """An original instruction whose ``slot`` names a frame slot reads one USE register
        operand of the original from that slot (a memory operand instead of a reload)."""
        ks = [k for k, (ao, bo) in enumerate(zip(a.operands, b.operands))
              if isinstance(bo, RegOp) and isinstance(ao, Mem)]
        if len(ks) != 1:
            raise self.fail(i, f"reads a slot in place of {len(ks)} register operands")
        bo = b.operands[ks[0]]
        if bo.role is not Role.USE or bo.fixed is not None or not isinstance(bo.reg, VReg):
            raise self.fail(i, f"operand {ks[0]} cannot be read from a slot")
        size = slot_bytes(self.t, a)
        if size <= 0 or a.slot < 0 or a.slot + size > self.a.frame_size:
            raise self.fail(i, f"slot {a.slot} (size {size}) outside the frame of "
                               f"{self.a.frame_size} bytes")
        self.folds[i] = (ks[0], bo.reg)

    def _fold_read(self, i: int, inst: Inst, st: dict) -> None:
        """A slot read in place of a register holds the operand's value, in a slot at least
        as wide as the read and as the value."""
        k, want = self.folds[i]
        want = self._tok(want)
        size = slot_bytes(self.t, inst)
        have = [(loc[2], v) for loc, v in st.items() if isinstance(loc, tuple)
                and loc[1] == inst.slot and v is not None]
        got = next(((n, v) for n, v in have if _same(v, want)), None)
        if got is None:
            raise self.fail(i, f"operand {k} reads slot {inst.slot} holding "
                               f"{_show(have[0][1]) if have else 'nothing'}, expected "
                               f"{_show(want)}")
        if got[0] < max(size, self.need.get(id(want), 0)):
            raise self.fail(i, f"operand {k} reads {size} bytes of {_show(want)} from a "
                               f"{got[0]}-byte slot; the value has "
                               f"{self.need.get(id(want), 0)} bytes")

    def _pair_operand(self, i: int, k: int, a: Inst, ao: Any, bo: Any) -> None:
        if type(ao) is not type(bo):
            raise self.fail(i, f"operand {k} changed kind")
        if isinstance(bo, (Imm, Label)):
            if ao != bo:
                raise self.fail(i, f"operand {k} changed from {bo!r}")
            return
        regs = [(ao.reg, bo.reg)] if isinstance(bo, RegOp) else [
            (ao.base, bo.base), (ao.index, bo.index)]
        if isinstance(bo, Mem) and (ao.scale, ao.disp) != (bo.scale, bo.disp):
            raise self.fail(i, f"memory operand {k} changed")
        for ar, br in regs:
            if (ar is None) != (br is None) or not (ar is None or isinstance(ar, PReg)):
                raise self.fail(i, f"operand {k} is {ar!r}, not a physical register")
            if isinstance(br, PReg) and ar != br:
                raise self.fail(i, f"operand {k} must stay {br!r}")
            if isinstance(br, VReg) and ar.cls != br.cls:
                raise self.fail(i, f"operand {k}: {ar!r} is not of class {br.cls}")
        if isinstance(bo, RegOp):
            if ao.role != bo.role:
                raise self.fail(i, f"operand {k} changed role")
            if bo.fixed is not None and ao.reg != bo.fixed:
                raise self.fail(i, f"operand {k} must be in {bo.fixed!r}, is in {ao.reg!r}")
            if bo.tied is not None and ao.reg != a.operands[bo.tied].reg:
                raise self.fail(i, f"operand {k} is tied to operand {bo.tied} but is in "
                                   f"another register")

    def static(self) -> None:
        """Frame, slot, callee-saved and inserted-instruction shape checks."""
        a = self.a
        if a.frame_size < 0 or a.frame_size % 16:
            raise CheckError(f"{a.name}: frame size {a.frame_size} is not 16-byte aligned")
        extra = [p for p in a.callee_saved_used if p not in self.t.callee_saved]
        if extra:
            raise CheckError(f"{a.name}: {extra} reported as callee-saved but are not")
        saved = set().union(*(self.units[p] for p in a.callee_saved_used))
        guarded = set().union(*(self.units[p] for p in self.t.callee_saved)) - saved
        if [p for _, p in a.params] != [p for _, p in self.b.params]:
            raise CheckError(f"{a.name}: parameter registers changed")
        for i, inst in enumerate(a.insts):
            for r in (*inst.defs(), *inst.clobbers):
                if isinstance(r, PReg) and self.units[r] & guarded:
                    raise self.fail(i, f"writes callee-saved {r!r}, which is not reported")
            if inst.kind in INSERTED_KINDS:
                self._inserted_shape(i, inst)
                if inst.kind in (Kind.SPILL, Kind.FILL):
                    self._home(i, inst)
            for k, o in enumerate(inst.operands):
                if isinstance(o, RegOp) and isinstance(o.reg, PReg):
                    ok = operand_regs(self.t, inst, k)
                    if ok is not None and o.reg not in ok:
                        raise self.fail(i, f"operand {k} cannot be {o.reg!r} (the encoding "
                                           f"of {inst.op} cannot name it)")

    def _inserted_shape(self, i: int, inst: Inst) -> None:
        d, s = _main(inst)
        if inst.kind is Kind.MOVE and (d is None or s is None):
            raise self.fail(i, "a move needs a DEF and a USE register operand")
        if inst.kind is Kind.SPILL and s is None or inst.kind is Kind.FILL and d is None:
            raise self.fail(i, f"a {inst.kind.value} needs its register operand")
        if inst.kind is Kind.REMAT:
            self._remat_source(i, inst)
            return
        if inst.kind in (Kind.SPILL, Kind.FILL):
            size = slot_bytes(self.t, inst)
            if size <= 0 or inst.slot is None or inst.slot < 0 or inst.slot % size or \
                    inst.slot + size > self.a.frame_size:
                raise self.fail(i, f"slot {inst.slot} (size {size}) outside the frame of "
                                   f"{self.a.frame_size} bytes or misaligned")

    def _home(self, i: int, inst: Inst) -> None:
        """Record the register a spill's or fill's slot is kept in (``slot_home``); every
        spill and fill of one slot must name the same one, as an operand."""
        home = slot_home(self.t, inst)
        if home is None:
            return
        if not any(isinstance(o, RegOp) and o.reg == home for o in inst.operands):
            raise self.fail(i, f"keeps its slot in {home!r} but does not name it")
        key = (inst.slot, slot_bytes(self.t, inst))
        have = self.homes.setdefault(key, home)
        if have != home:
            raise self.fail(i, f"slot {key[0]} (size {key[1]}) is kept in {have!r} by another "
                               f"spill or fill, here in {home!r}")
        for u in self.units[home]:
            self.homed.setdefault(u, set()).add(key)

    def _remat_source(self, i: int, inst: Inst) -> Inst:
        """The original instruction a REMAT repeats, after checking that it may."""
        ok = hook(self.t, "rematerializable")
        k = inst.slot
        if ok is None or k is None or not 0 <= k < len(self.b.insts):
            raise self.fail(i, "a rematerialization must name an original instruction")
        b = self.b.insts[k]
        regs = [o for o in b.operands if isinstance(o, RegOp)]
        if (b.kind is not Kind.OP or not ok(b) or len(regs) != 1 or not regs[0].is_def
                or regs[0].is_use or not isinstance(regs[0].reg, VReg) or b.clobbers
                or any(isinstance(o, Mem) and (o.base or o.index) for o in b.operands)):
            raise self.fail(i, f"'{format_inst(b)}' cannot be rematerialized")
        if self.ndefs.get(id(regs[0].reg), 0) != 1:
            # another definition could have changed the value since: not a constant
            raise self.fail(i, f"{regs[0].reg!r} has other definitions than "
                               f"'{format_inst(b)}'; it cannot be rematerialized")
        if (inst.op, inst.arg, inst.clobbers, len(inst.operands)) != \
                (b.op, b.arg, b.clobbers, len(b.operands)):
            raise self.fail(i, f"does not repeat '{format_inst(b)}'")
        for ao, bo in zip(inst.operands, b.operands):
            if isinstance(bo, RegOp):
                if not (isinstance(ao, RegOp) and ao.role == bo.role
                        and isinstance(ao.reg, PReg) and ao.reg.cls == bo.reg.cls):
                    raise self.fail(i, f"does not repeat '{format_inst(b)}'")
            elif ao != bo:
                raise self.fail(i, f"does not repeat '{format_inst(b)}'")
        return b

    # -- symbolic execution ----------------------------------------------------------------
    def cfg(self) -> list[list[int]]:
        insts = self.a.insts
        where = {x.label(): i for i, x in enumerate(insts)
                 if x.kind in (Kind.LABEL, Kind.LOOP_BEGIN)}
        succ: list[list[int]] = []
        for i, x in enumerate(insts):
            nxt = [i + 1] if i + 1 < len(insts) else []
            if x.kind is Kind.RET:
                succ.append([])
            elif x.kind in (Kind.JUMP, Kind.BRANCH, Kind.LOOP_END):
                if x.label() not in where:
                    raise self.fail(i, f"branch to unknown label {x.label()!r}")
                tgt = [where[x.label()]]
                succ.append(tgt if x.kind is Kind.JUMP else nxt + tgt)
            else:
                succ.append(nxt)
        return succ

    def _kill(self, st: dict, tok: Value) -> None:
        """A new definition of ``tok``'s register: no location holds its old value (but a
        constant's every definition gives the same bits)."""
        if isinstance(tok, VReg) and id(tok) in self.same:
            return
        for loc in list(st):
            if _same(st[loc], tok):
                st[loc] = None

    def _tok(self, r: Any) -> Value:
        """The value a register of the original names (a constant's twins are one value)."""
        return self.same.get(id(r), r) if isinstance(r, VReg) else ("p", r.name)

    def get(self, st: dict, loc: Loc) -> Value:
        if loc in st:
            return st[loc]
        return ("p", loc.name) if isinstance(loc, PReg) else None

    def write(self, st: dict, r: PReg, v: Value) -> None:
        for q in self.alias[r]:
            st[q] = None
        st[r] = v
        if self.homed:
            for u in self.units[r]:          # a register holding slots: they are gone
                for off, size in self.homed.get(u, ()):
                    st[("slot", off, size)] = None

    def write_slot(self, st: dict, off: int, size: int, v: Value) -> None:
        for loc in list(st):
            if isinstance(loc, tuple) and loc != ("slot", off, size) and \
                    loc[1] < off + size and off < loc[1] + loc[2]:
                st[loc] = None
        st[("slot", off, size)] = v

    def transfer(self, i: int, st: dict, pairs: dict[int, Inst]) -> dict:
        st = dict(st)
        inst = self.a.insts[i]
        if inst.kind is Kind.REMAT:
            b = self._remat_source(i, inst)
            d = _main(inst)[0]
            for c in inst.clobbers:
                self.write(st, c, None)
            self.write(st, d, self._tok(_main(b)[0]))
            return st
        if inst.kind in INSERTED_KINDS:
            d, s = _main(inst)
            if inst.kind is Kind.SPILL:
                self.write_slot(st, inst.slot, slot_bytes(self.t, inst), self.get(st, s))
                for c in inst.clobbers:      # (AMD: the frame SGPR of a far slot)
                    self.write(st, c, None)
                return st
            v = self.get(st, s) if inst.kind is Kind.MOVE else \
                self.get(st, ("slot", inst.slot, slot_bytes(self.t, inst)))
            for r in (*inst.defs(), *inst.clobbers):
                if isinstance(r, PReg) and r != d:
                    self.write(st, r, None)
            self.write(st, d, v)
            return st
        b = pairs[i]
        for tok in self.kills.get(i, ()):
            self._kill(st, tok)         # a gone constant load's definition
        for c in inst.clobbers:
            self.write(st, c, None)
        new = []
        for ao, bo in zip(inst.operands, b.operands):
            if isinstance(bo, RegOp) and bo.is_def:
                new.append((ao.reg, self._tok(bo.reg)))
        for _, tok in new:
            self._kill(st, tok)
        for r, tok in new:
            self.write(st, r, tok)
        return st

    def run(self) -> None:
        self.static()
        pairs = self.pair()
        succ = self.cfg()
        n = len(self.a.insts)
        state: list[dict | None] = [None] * n
        if n == 0:
            return
        state[0] = {p: v for v, p in self.b.params}
        npred = [0] * n
        for ss in succ:
            for s in ss:
                npred[s] += 1
        npred[0] += 1                        # the function entry
        changed = True
        while changed:
            changed = False
            for i in range(n):
                if state[i] is None:
                    continue
                out = self.transfer(i, state[i], pairs)
                for s in succ[i]:
                    if npred[s] == 1:        # one way in: no meet needed
                        if state[s] is None or not _eq(out, state[s]):
                            state[s] = out
                            changed = True
                        continue
                    merged = out if state[s] is None else self.join(state[s], out)
                    if state[s] is None or not _eq(merged, state[s]):
                        state[s] = merged
                        changed = True
        for i, inst in enumerate(self.a.insts):
            if inst.kind is Kind.FILL and state[i] is not None:
                self._fill_width(i, inst, state[i])
        for i, b in pairs.items():
            st = state[i]
            if st is None:
                continue
            if i in self.kills:          # gone constant loads just before it
                st = dict(st)
                for tok in self.kills[i]:
                    self._kill(st, tok)
            a = self.a.insts[i]
            if i in self.folds:
                self._fold_read(i, a, st)
            for k, (ao, bo) in enumerate(zip(a.operands, b.operands)):
                if self.folds.get(i, (None,))[0] == k or self.constant.get(i) == k:
                    continue        # read from a slot or from the read-only constant
                reads = [(ao.reg, bo.reg)] if isinstance(bo, RegOp) and bo.is_use else \
                    [(x, y) for x, y in ((ao.base, bo.base), (ao.index, bo.index))
                     if y is not None] if isinstance(bo, Mem) else []
                for ar, br in reads:
                    have, want = self.get(st, ar), self._tok(br)
                    if not _same(have, want):
                        raise self.fail(i, f"operand {k} reads {ar!r} holding {_show(have)}, "
                                           f"expected {_show(want)}")

    def _fill_width(self, i: int, inst: Inst, st: dict) -> None:
        """A fill reads its slot at the width the slot was written, and that width holds the
        whole value it reloads."""
        size = slot_bytes(self.t, inst)
        v = self.get(st, ("slot", inst.slot, size))
        if v is None:
            for loc, w in st.items():
                if isinstance(loc, tuple) and w is not None and loc[1] < inst.slot + size \
                        and inst.slot < loc[1] + loc[2]:
                    raise self.fail(i, f"reads {size} bytes at slot {inst.slot}, which holds "
                                       f"{_show(w)} written as {loc[2]} bytes at {loc[1]}")
            return
        need = self.need.get(id(v), 0) if isinstance(v, VReg) else 0
        if size < need:
            raise self.fail(i, f"reloads {_show(v)} from a {size}-byte slot; the value has "
                               f"{need} bytes")

    def join(self, x: dict, y: dict) -> dict:
        out = {}
        for loc in {**x, **y}:
            u, v = self.get(x, loc), self.get(y, loc)
            out[loc] = u if _same(u, v) else None
        return out


def _value_widths(fn: MFunction, target: Any) -> dict[int, int]:
    """The bytes each virtual register of ``fn`` carries (by id): the widest report of the
    target's ``value_bytes`` over its operands, one width for the two sides of a copy
    (``is_copy``); empty when the target has no ``value_bytes``."""
    bytes_of = hook(target, "value_bytes")
    if bytes_of is None:
        return {}
    is_copy = hook(target, "is_copy")
    width: dict[int, int] = {}
    up: dict[int, int] = {}             # copy partners: a forest, each tree one width

    def root(x: int) -> int:
        while up.get(x, x) != x:
            x = up[x]
        return x

    for inst in fn.insts:
        if is_copy is not None and inst.kind is Kind.OP and is_copy(inst):
            a, b = root(id(inst.defs()[0])), root(id(inst.uses()[0]))
            if a != b:
                up[a] = b
            continue
        for k, o in enumerate(inst.operands):
            regs = (o.reg,) if isinstance(o, RegOp) else (o.base, o.index) \
                if isinstance(o, Mem) else ()
            for r in regs:
                if isinstance(r, VReg):
                    width[id(r)] = max(width.get(id(r), 0), bytes_of(inst, k))
    tree: dict[int, int] = {}
    for x, n in width.items():
        tree[root(x)] = max(tree.get(root(x), 0), n)
    return {x: tree[root(x)] for x in {*width, *up} if root(x) in tree}


def _same_shape(a: Inst, b: Inst) -> bool:
    """Whether allocated ``a`` could be original ``b`` itself (same form, kind, argument and
    non-register operands)."""
    return (a.op, a.kind, a.arg, len(a.operands)) == (b.op, b.kind, b.arg, len(b.operands)) \
        and all(type(x) is type(y) and (isinstance(x, RegOp) or x == y)
                for x, y in zip(a.operands, b.operands))


def _eq(x: dict, y: dict) -> bool:
    return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)


def _main(inst: Inst) -> tuple[Any, Any]:
    d = next((o.reg for o in inst.operands if isinstance(o, RegOp) and o.is_def), None)
    s = next((o.reg for o in inst.operands if isinstance(o, RegOp) and o.is_use), None)
    return d, s


def check_allocation(before: MFunction, after: MFunction, target: TargetRegInfo) -> None:
    """Raise ``CheckError`` unless ``after`` is a correct register allocation of ``before``.

    ``before`` is the function given to the allocator, ``after`` its result and ``target``
    the register description it was allocated for (classes, callee-saved registers, slot
    sizes and, if defined, ``reg_units``).
    """
    _Checker(before, after, target).run()
