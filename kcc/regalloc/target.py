"""The narrow interface through which a target describes its registers to the allocator."""

from __future__ import annotations

from kcc.ir.mir import Inst, PReg, RegOp

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Callable


class AllocationError(ValueError):
    """The function cannot be allocated (conflicting constraints, too many operands...)."""


class TargetRegInfo:
    """Registers, frame slots and copy instructions of a target: the base class every target's
    register info subclasses (x86: kcc/targets/x86/reginfo.py, AMD: kcc/isel/amd/regs.py, the
    tests' toy target), so each shows what it overrides. The four makers and ``classes`` /
    ``callee_saved`` are required; every optional hook below has a default here that means "the
    target has none", and the allocator asks ``hook(target, name)``, which is None for a hook
    the target did not override (so it skips that work entirely).

    ``classes`` lists the allocatable registers per class in preference order (caller-saved
    first, so callee-saved ones are only touched under pressure).  A target whose classes
    alias (an SGPR pair over two SGPRs, xmm inside ymm) may also define
    ``reg_units(p) -> tuple[str, ...]``: registers conflict when their units intersect; the
    default unit of a register is its name.

    Optional hooks: ``is_copy(inst) -> bool`` marks the selector's own register copies (one
    DEF, one USE register operand, nothing else done), which the allocator coalesces when
    the two values never differ while both are live (``coalesce``);
    ``rematerializable(inst) -> bool`` marks instructions with one DEF and no register inputs
    that compute the same value wherever they run and touch nothing else (flags included), so
    a spilled value they define is re-created at its uses instead of stored and reloaded;
    ``operand_regs(inst, k) -> frozenset[PReg] | None`` narrows register operand ``k`` of
    ``inst`` to the registers its encoding can name (x86-64-v4: a VEX-only form cannot name
    xmm16-31), ``None`` meaning any register of the class.  A variable gets a register every
    one of its operands allows; the copies, spills and fills the target makes must accept any
    register of their class.

    Slot sizes: ``value_bytes(inst, k) -> int`` gives the bytes of the register that operand
    ``k`` of an input instruction reads or writes *as a value* (for a memory operand: of its
    base and index registers), a power of two.  A read reports every byte the meaningful bytes
    of the instruction's results depend on; a write reports the bytes its readers may rely on
    (a scalar ``addss`` writes 4, even though it also writes the register's upper lanes).
    A spilled value gets a slot of the largest size any of its operands reports (values that
    a copy joins get the same size), filled and spilled at that width.  Without the hook a
    slot is ``spill_slot_size(cls)``.  ``slot_bytes(inst) -> int`` tells the checker how many
    bytes a spill or fill the target made actually stores or loads (it reads the instruction,
    not the allocator's bookkeeping), and a folded instruction reads from its slot.

    Slots in registers: ``slot_home(inst) -> PReg | None`` names the register a spill or fill
    keeps its slot in, where the target keeps slots in registers rather than memory (AMD keeps
    spilled SGPRs in lanes of a VGPR); the spill or fill names that register as an operand
    after its value, and the checker treats any other write of it as destroying the slot.

    Folded reloads: ``fold_fill(inst, k, slot_offset, size) -> Inst | None`` returns the input
    instruction ``inst`` with its register USE operand ``k`` replaced by a memory operand
    reading the ``size``-byte frame slot at the offset (and nothing else changed), or None
    where the form cannot read memory there with the register's meaning.  The allocator then
    reads a spilled value there instead of reloading it into a temporary; the result's
    ``slot`` names the slot.

    Early clobbers: ``early_clobber(inst) -> bool`` marks instructions (a target's pseudo
    instructions, expanded after allocation into several) that may write a result register
    before they have read every source. The allocator does not model that (a source's life
    ends where it is read, a result's starts after), so the selector must not emit one whose
    sources and results could meet; the checker rejects an allocation in which a DEF of such
    an instruction shares a register unit with one of its USEs (a spilled source filled into
    a result's register just before it, say), where it would otherwise see only the right
    values read.

    Tuples in place: ``subreg_copy(inst) -> tuple[int, tuple[int, ...]] | None`` marks an
    instruction that copies between the registers of a tuple operand (its index first) and
    one single-register operand per register of the tuple (their indexes, in register order;
    an index may repeat), every source read before any result is written (a parallel copy:
    the target expands it after allocation into moves of the registers that differ). The
    scan then prefers registers that put each part where the tuple has it (a vector load's
    lanes in the loaded tuple, a vector store's values where its data tuple will be), so the
    copy becomes nothing. Only a preference: the checker verifies such an instruction like
    any other, by the values its operands name.

    Constants read in place: ``constant_bytes(inst) -> int`` gives the bytes an instruction
    loads from read-only memory when its value is exactly those bytes (an unmasked whole
    load of a constant pool entry), else 0. A target that folds such loads into their readers
    after allocation (x86: kcc/targets/x86/foldconst.py) still passes the checker: a reader
    may read the load's memory operand (with the load's ``arg``, which names the entry) in
    place of a register holding its value, no more bytes than the load reads, and an original
    load of this kind may be gone (its value must then never be read). ``commute(inst, load)
    -> Inst | None`` gives the original ``inst`` with two sources swapped (an immediate
    adjusted) where that computes the same bits, ``load`` defining the source that moves to
    the memory operand; the checker pairs a reader with that form when the plain one fails.
    """

    classes: dict[str, list[PReg]]
    callee_saved: set[PReg]

    def spill_slot_size(self, cls: str) -> int:
        """Bytes of the largest frame slot for class ``cls`` (a power of two): the size of a
        slot when the target does not define ``value_bytes``."""
        raise NotImplementedError(f"{type(self).__name__}.spill_slot_size")

    def make_move(self, cls: str, dst: PReg, src: PReg) -> Inst:
        """An instruction copying ``src`` to ``dst``: a DEF ``dst`` and a USE ``src``."""
        raise NotImplementedError(f"{type(self).__name__}.make_move")

    def make_spill(self, cls: str, src: PReg, slot_offset: int, size: int) -> Inst:
        """An instruction storing the low ``size`` bytes of ``src`` (a USE operand) to the
        frame slot at the offset (aligned to ``size`` within the frame)."""
        raise NotImplementedError(f"{type(self).__name__}.make_spill")

    def make_fill(self, cls: str, dst: PReg, slot_offset: int, size: int) -> Inst:
        """An instruction loading ``dst`` (a DEF operand) from the ``size``-byte frame slot at
        the offset."""
        raise NotImplementedError(f"{type(self).__name__}.make_fill")


    # -- optional hooks (defaults: the target has none) ---------------------------------------
    def reg_units(self, p: PReg) -> tuple[str, ...]:
        """The register units of ``p`` (registers conflict when their units intersect)."""
        return (p.name,)

    def is_copy(self, inst: Inst) -> bool:
        """Whether ``inst`` is one of the selector's own register copies (coalesced)."""
        return False

    def rematerializable(self, inst: Inst) -> bool:
        """Whether the value ``inst`` defines is re-created at its uses when spilled."""
        return False

    def operand_regs(self, inst: Inst, k: int) -> frozenset[PReg] | None:
        """The registers operand ``k`` of ``inst`` may name (None: any of its class)."""
        return None

    def value_bytes(self, inst: Inst, k: int) -> int:
        """The bytes of operand ``k``'s register that are a value (sizes spill slots)."""
        raise NotImplementedError("value_bytes")

    def slot_bytes(self, inst: Inst) -> int:
        """The bytes a spill or fill the target made stores or loads."""
        r = next(o.reg for o in inst.operands if isinstance(o, RegOp))
        return int(self.spill_slot_size(r.cls))

    def slot_home(self, inst: Inst) -> PReg | None:
        """The register a spill's or fill's slot is kept in (None: memory)."""
        return None

    def fold_fill(self, inst: Inst, k: int, slot_offset: int, size: int) -> Inst | None:
        """``inst`` reading its USE operand ``k`` from the frame slot (None: it cannot)."""
        return None

    def early_clobber(self, inst: Inst) -> bool:
        """Whether ``inst`` may write a result before it has read every source."""
        return False

    def subreg_copy(self, inst: Inst) -> tuple[int, tuple[int, ...]] | None:
        """``inst`` as a parallel copy between tuple operand and single-register operands:
        (tuple operand, part operand per register), or None."""
        return None

    def constant_bytes(self, inst: Inst) -> int:
        """The bytes ``inst`` loads from read-only memory as its whole value (0: none)."""
        return 0

    def commute(self, inst: Inst, load: Inst) -> Inst | None:
        """``inst`` with its sources swapped, computing the same bits (None: it cannot)."""
        return None


OPTIONAL_HOOKS = ("reg_units", "is_copy", "rematerializable", "operand_regs", "value_bytes",
                  "slot_bytes", "slot_home", "fold_fill", "early_clobber", "subreg_copy",
                  "constant_bytes", "commute")


def hook(target: object, name: str) -> Callable[..., Any] | None:
    """The target's implementation of optional hook ``name``, or None where it keeps the base
    class's default (or, for an object that does not subclass TargetRegInfo, lacks it)."""
    fn = getattr(target, name, None)
    if fn is None:
        return None
    if isinstance(target, TargetRegInfo) and \
            getattr(type(target), name, None) is getattr(TargetRegInfo, name):
        return None
    return fn  # type: ignore[no-any-return]


def operand_regs(target: object, inst: Inst, k: int) -> frozenset[PReg] | None:
    """The registers operand ``k`` of ``inst`` may name according to ``target`` (``None``:
    any register of its class)."""
    fn = hook(target, "operand_regs")
    return fn(inst, k) if fn is not None else None


def slot_bytes(target: object, inst: Inst) -> int:
    """The bytes a target's spill or fill ``inst`` stores or loads, by ``target.slot_bytes``,
    else the class's ``spill_slot_size``."""
    fn = hook(target, "slot_bytes")
    if fn is not None:
        return int(fn(inst))
    r = next(o.reg for o in inst.operands if isinstance(o, RegOp))
    return int(target.spill_slot_size(r.cls))  # type: ignore[attr-defined]


def slot_home(target: object, inst: Inst) -> PReg | None:
    """The register ``target`` keeps the slot of spill or fill ``inst`` in (``slot_home``),
    or None: a slot in memory."""
    fn = hook(target, "slot_home")
    return fn(inst) if fn is not None else None


def reg_units(target: object, p: PReg) -> tuple[str, ...]:
    """The register units of ``p`` according to ``target`` (its name by default)."""
    fn = hook(target, "reg_units")
    return tuple(fn(p)) if fn is not None else (p.name,)
