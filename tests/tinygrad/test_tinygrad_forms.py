"""Every form tinygrad 0.14 can hand its CPU renderer (docs/tinygrad.md, "Forms"): each one is
spelled in `.uop` or refused by name. Oracles: the reference interpreter for what an imported
program means, and tinygrad's own DEV=CPU (clang) for whole programs through DEV=CPU:KCC."""

from __future__ import annotations

import numpy as np
import pytest

from kcc.frontend.parser import parse
from kcc.frontend.printer import format_uop
from kcc.frontend.tinygrad_import import TgNode, TgParam, TinygradImportError, import_program
from kcc.ir.interp import run
from tests.frontend.test_tinygrad_import import Prog
from tinygrad_util import needs_tinygrad


def _fill(axis_arg: tuple) -> Prog:
    """out[i] = i + 1 for 8 elements, looped by a RANGE with tinygrad's arg `axis_arg`."""
    p = Prog()
    eight = p.const(8)
    out = p.add("PARAM", "int32", TgParam(0, "int32", 8), eight)
    r = p.add("RANGE", "int32", axis_arg, eight)
    v = p.add("ADD", "int32", None, r, p.const(1))
    st = p.add("STORE", None, None, p.add("INDEX", "int32", None, out, r), v)
    e = p.add("END", None, None, st, r)
    p.add("SINK", None, None, e)
    return p


@pytest.mark.parametrize("axis_arg", [(0, "LOOP"), (0, 0, 1, "WEAK"), (4, 0, 0, "WEAK"),
                                      (-1, 3, "UPCAST"), (2, 1, 0, 7, "THREAD")])
def test_range_keeps_every_axis_id_tinygrad_writes(axis_arg: tuple) -> None:
    """tinygrad 0.14 numbers a RANGE with any number of axis ids (Tensor.rand's
    `(0, 0, 1, WEAK)`, a conv's `(4, 0, 0, WEAK)`); they were refused before."""
    k = import_program(_fill(axis_arg).nodes, "E_fill")
    spelled = "(" + ", ".join(str(a) for a in axis_arg) + ")"
    assert spelled in k.text
    sink = parse(k.text, "E_fill.uop")
    np.testing.assert_array_equal(run(sink, [np.zeros(8, np.int32)])[0], np.arange(1, 9))
    assert spelled in format_uop(sink)          # kcc fmt keeps the arg


def test_parser_reads_long_range_args_and_refuses_bad_ones() -> None:
    from kcc.frontend.errors import SourceError
    head = "# kcc-uop 1\n%o = PARAM ParamArg(0, int32, 4)\n"
    good = (head + "%i = RANGE(4) (4, 0, 0, WEAK)\n%x = INDEX(%o, %i)\n%s = STORE(%x, 1)\n"
            "%e = END(%s, %i)\nSINK(%e) KernelInfo(name=\"k\")\n")
    assert parse(good).src[0].src[1].arg[:3] == (4, 0, 0)
    for bad in ("(4, 0, 0)", "(4, 0.5, WEAK)", "(WEAK)", "(4, 0, DEVICE)"):
        with pytest.raises(SourceError):
            parse(good.replace("(4, 0, 0, WEAK)", bad))


def test_noop_effects_are_dropped() -> None:
    """tinygrad's GROUP and SINK may list a NOOP (no effect); it is not written."""
    p = Prog()
    eight = p.const(8)
    out = p.add("PARAM", "int32", TgParam(0, "int32", 8), eight)
    r = p.add("RANGE", "int32", (0, "LOOP"), eight)
    st = p.add("STORE", None, None, p.add("INDEX", "int32", None, out, r), r)
    noop = p.add("NOOP", None, None)
    e = p.add("END", None, None, p.add("GROUP", None, None, st, noop), r)
    p.add("SINK", None, None, noop, e)
    k = import_program(p.nodes, "E_noop")
    assert "NOOP" not in k.text
    np.testing.assert_array_equal(run(parse(k.text), [np.zeros(8, np.int32)])[0], np.arange(8))


def test_volatile_buffer_is_kept() -> None:
    p = _fill((0, "LOOP"))
    p.nodes[2] = TgNode("PARAM", "int32", TgParam(0, "int32", 8, volatile=True), (1,))
    assert "volatile=true" in import_program(p.nodes, "E_vol").text


def test_cast_of_a_lane_is_a_value_not_a_place() -> None:
    """CAST(INDEX(vector value, lane)) converts one lane; only a CAST of a buffer or a place
    (a pointer reinterpretation) is refused."""
    p = Prog()
    two = p.const(2)
    out = p.add("PARAM", "float32", TgParam(0, "float32", 2), two)
    x = p.add("PARAM", "int32", TgParam(1, "int32", 2), two)
    vec = p.add("LOAD", "int32", None, p.add("SHRINK", "int32", None, x, p.const(0), two))
    lane = p.add("INDEX", "int32", None, vec, p.const(1))
    f = p.add("CAST", "float32", "float32", lane)
    st = p.add("STORE", None, None, p.add("INDEX", "float32", None, out, p.const(0)), f)
    p.add("SINK", None, None, st)
    sink = parse(import_program(p.nodes, "E_lane").text)
    res = run(sink, [np.zeros(2, np.float32), np.array([5, 7], np.int32)])
    np.testing.assert_array_equal(res[0], [7.0, 0.0])


def _swap(pos_op: str, new: TgNode, nth: int = 0):
    def mutate(ns: list[TgNode]) -> None:
        i = [i for i, n in enumerate(ns) if n.op == pos_op][nth]
        ns[i] = TgNode(new.op, new.dtype, new.arg, new.src or ns[i].src)
    return mutate


def _add_before_sink(*new: TgNode):
    def mutate(ns: list[TgNode]) -> None:
        sink = ns.pop()
        first = len(ns)
        ns.extend(new)
        ns.append(TgNode("SINK", None, None, (*sink.src, first + len(new) - 1)))
    return mutate


@pytest.mark.parametrize("mutate, message", [
    (_swap("RANGE", TgNode("RANGE", None, (0, "WEAK"))), "bound-less loop"),
    (_swap("RANGE", TgNode("RANGE", "int32", (-1, "DEVICE"))), "axis type DEVICE"),
    (_swap("RANGE", TgNode("RANGE", "int32", (0, "PLACEHOLDER"))), "axis type PLACEHOLDER"),
    (_swap("ADD", TgNode("CUSTOMI", "int32", "rand()")), r"CUSTOMI \(inline C source"),
    (_swap("ADD", TgNode("CALL", "int32", None)), "call of an external function"),
    (_swap("ADD", TgNode("INS", "int32", "add")), "machine instruction"),
    (_swap("ADD", TgNode("WMMA", "int32", None)), "WMMA arg None has no"),
    (_swap("ADD", TgNode("POW", "int32", None)), "op POW has no"),
    (_swap("INDEX", TgNode("INDEX", "int32", None, (1, 3, 3))), "INDEX with 3 srcs"),
    (_swap("ADD", TgNode("BITCAST", "int32", "int32", (2,))), "BITCAST of a buffer or place"),
    (_add_before_sink(TgNode("CAST", "float32", "float32", (7,))), "CAST of a buffer or place"),
    (_swap("RANGE", TgNode("SPECIAL", "int32", "idx0")), "SPECIAL 'idx0'"),
    (_add_before_sink(TgNode("LOAD", "int32", None, (7,)), TgNode("BARRIER", None, None, (10,))),
     "BARRIER that waits for loads"),
])
def test_forms_without_a_spelling_are_refused_by_name(mutate, message: str) -> None:
    p = _fill((0, "LOOP"))
    mutate(p.nodes)
    with pytest.raises(TinygradImportError, match=message):
        import_program(p.nodes, "E_fill")


# ---- whole programs through DEV=CPU:KCC against DEV=CPU (tinygrad's clang path) ----

def _on(dev: str, fn):
    from tinygrad.helpers import Context
    with Context(DEV=dev, PARALLEL=0):
        return fn()


def _rand_half() -> np.ndarray:
    from tinygrad import Tensor, dtypes
    Tensor.manual_seed(3)
    return Tensor.rand(64, dtype=dtypes.half).numpy()


def _conv_bn_gelu() -> np.ndarray:
    from tinygrad import Tensor, nn
    from tinygrad.helpers import Context
    Tensor.manual_seed(0)
    c1, bn, c2 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm(8), nn.Conv2d(8, 8, 3, stride=2)
    x = Tensor.randn(2, 3, 16, 16)
    with Context(TRAINING=1):                  # BatchNorm from the batch's statistics
        y = c2(bn(c1(x)).relu()).gelu()
        return np.concatenate([y.numpy().ravel(), bn.running_mean.numpy()])


@needs_tinygrad
def test_issue_reproducer_rand_half_is_bit_exact() -> None:
    """`Tensor.rand(64, dtype=dtypes.half)` stopped with `RANGE arg (0, 0, 1, 'WEAK') has no
    .uop v1 spelling`; tinygrad's random numbers are bit-exact through kcc."""
    import kcc.tinygrad  # noqa: F401
    np.testing.assert_array_equal(_on("CPU:KCC", _rand_half), _on("CPU", _rand_half))


def _permuted_flatten() -> np.ndarray:
    from tinygrad import Tensor
    a = np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5)
    t = (Tensor(a).permute(2, 1, 0).reshape(10, 12) + 1).permute(1, 0)
    return t.reshape(-1).contiguous().numpy()


@needs_tinygrad
def test_split_ranges_of_a_permuted_flatten() -> None:
    """tinygrad splits a RANGE used modulo a constant into (…, 0, AxisType) and (…, 1,
    AxisType), and splits those again: this view's kernel has `RANGE (0, 0, 0, 0, WEAK)`,
    refused before."""
    import kcc.tinygrad  # noqa: F401
    np.testing.assert_array_equal(_on("CPU:KCC", _permuted_flatten), _on("CPU", _permuted_flatten))


@needs_tinygrad
def test_issue_reproducer_conv_batchnorm_relu_conv_gelu() -> None:
    """The issue's Conv2d -> BatchNorm (training) -> relu -> Conv2d(stride=2) -> gelu (its
    `RANGE arg (4, 0, 0, 'WEAK')`): matches clang to float rounding (no FMA contraction)."""
    import kcc.tinygrad  # noqa: F401
    got, want = _on("CPU:KCC", _conv_bn_gelu), _on("CPU", _conv_bn_gelu)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@needs_tinygrad
def test_bound_less_loop_kernel_is_refused_by_name() -> None:
    """A custom kernel with UOp.loop() (a void RANGE closed by END(body, loop, cond)) is a
    CompileError naming the form, never a crash or a wrong result."""
    import kcc.tinygrad  # noqa: F401
    from tinygrad import Tensor, UOp, dtypes
    from tinygrad.device import CompileError
    from tinygrad.dtype import AddrSpace
    from tinygrad.uop.ops import KernelInfo

    def kernel(c: UOp) -> UOp:
        loop = UOp.loop(0)
        i = UOp.placeholder((1,), dtypes.int, 0, addrspace=AddrSpace.REG)
        i = i.after(i[0].store(0))
        inc = i.after(loop)[0].load() + 1
        i = i.after(i[0].store(inc).end(loop, inc < 10))
        return c[0].store(i[0].load()).sink(arg=KernelInfo(name="wait_loop"))

    def prog() -> np.ndarray:
        c = Tensor.empty(1, dtype=dtypes.int)
        return Tensor.custom_kernel(c, fxn=kernel)[0].numpy()
    assert _on("CPU", prog)[0] == 10
    with pytest.raises(CompileError, match="bound-less loop"):
        _on("CPU:KCC", prog)


def _core_id_before(var_slot: int, core_slot: int) -> Prog:
    """out[core_id*4 + r] = x[core_id*4 + r + st] for 2 workers of 4, st a Variable."""
    p = Prog()
    eight = p.const(8)
    out = p.add("PARAM", "int32", TgParam(0, "int32", 8), eight)
    x = p.add("PARAM", "int32", TgParam(1, "int32", 16), p.const(16))
    st = p.add("PARAM", "int32", TgParam(var_slot, "int32", None, "ALU", (0, 8), "st"))
    core = p.add("PARAM", "int32", TgParam(core_slot, "int32", None, "ALU", (0, 1), "core_id"))
    four = p.const(4)
    r = p.add("RANGE", "int32", (0, "LOOP"), four)
    i = p.add("ADD", "int32", None, p.add("MUL", "int32", None, core, four), r)
    v = p.add("LOAD", "int32", None,
              p.add("INDEX", "int32", None, x, p.add("ADD", "int32", None, i, st)))
    e = p.add("END", None, None, p.add("STORE", None, None,
                                       p.add("INDEX", "int32", None, out, i), v), r)
    p.add("SINK", None, None, e)
    return p


def test_core_id_numbered_before_a_variable_stays_a_scalar_argument() -> None:
    """tinygrad numbers a JIT's bound Variable after core_id (test_jit's
    test_hcq_core_id_runtimevar_merge); kcc's gidx0 comes after every PARAM, so core_id must
    then stay a scalar PARAM at its slot. Such kernels were refused before."""
    k = import_program(_core_id_before(3, 2).nodes, "E_core")
    assert k.worker_param and k.worker_slot == 2 and k.workers == 2 and k.slots == [0, 1, 2, 3]
    assert "SPECIAL" not in k.text and 'name="core_id"' in k.text
    sink = parse(k.text)
    x = np.arange(16, dtype=np.int32)
    got = np.zeros(8, np.int32)
    for core in range(2):                        # tinygrad calls once per core_id
        got = run(sink, [got, x, np.int32(core), np.int32(5)])[0]
    np.testing.assert_array_equal(got, x[5:13])
    # core_id last: still kcc's worker index
    k = import_program(_core_id_before(2, 3).nodes, "E_core")
    assert not k.worker_param and '"gidx0"' in k.text


@needs_tinygrad
def test_jit_variable_numbered_after_core_id() -> None:
    """test_jit's test_hcq_core_id_runtimevar_merge: a threaded kernel whose Variable tinygrad
    numbers after core_id, through DEV=CPU:KCC."""
    import kcc.tinygrad  # noqa: F401
    from tinygrad import Tensor, TinyJit, Variable

    def prog() -> np.ndarray:
        n = 262144

        @TinyJit
        def f(x, st):
            return (x + 1).contiguous().realize(), x.shrink(((st, st + n),)).contiguous().realize()
        x = Tensor.arange(2 * n).clone().realize()
        outs = [np.concatenate([t.numpy() for t in f(x, Variable("a", 0, n).bind(s))])
                for s in (0, 7, 3)]
        return np.concatenate(outs)
    np.testing.assert_array_equal(_on("CPU:KCC", prog), _on("CPU", prog))


def test_vector_cast_bitcast_shrink_and_after_chains() -> None:
    """A vector CAST and BITCAST (shape kept), SHRINK loads and stores, an INDEX lane of a
    vector, a REG accumulator through AFTER(AFTER(acc, store), range) and a BARRIER over an
    effect: all spelled as tinygrad writes them; the interpreter gives the expected values."""
    p = Prog()
    four = p.const(4)
    out = p.add("PARAM", "float32", TgParam(0, "float32", 4), four)
    bits = p.add("PARAM", "uint32", TgParam(1, "uint32", 4), four)
    x = p.add("PARAM", "int32", TgParam(2, "int32", 4), four)
    acc = p.add("BUFFER", "int32", TgParam(0, "int32", 1, "REG"), p.const(1))
    zero = p.const(0)
    vec = p.add("LOAD", "int32", None, p.add("SHRINK", "int32", None, x, zero, four))
    f = p.add("CAST", "float32", "float32", vec)
    st_out = p.add("STORE", None, None, p.add("SHRINK", "float32", None, out, zero, four), f)
    u = p.add("BITCAST", "uint32", "uint32", vec)
    st_bits = p.add("STORE", None, None, p.add("SHRINK", "uint32", None, bits, zero, four), u)
    init = p.add("STORE", None, None, p.add("INDEX", "int32", None, acc, zero), zero)
    r = p.add("RANGE", "int32", (1, 0, "REDUCE"), four)
    acc_r = p.add("AFTER", "int32", None, p.add("AFTER", "int32", None, acc, init), r)
    place = p.add("INDEX", "int32", None, acc_r, zero)
    lane = p.add("INDEX", "int32", None, vec, p.const(3))
    add = p.add("ADD", "int32", None, p.add("LOAD", "int32", None, place), lane)
    end = p.add("END", None, None, p.add("STORE", None, None, place, add), r)
    total = p.add("LOAD", "int32", None,
                  p.add("INDEX", "int32", None, p.add("AFTER", "int32", None, acc, end), zero))
    bar = p.add("BARRIER", None, None, st_out)
    st_x = p.add("STORE", None, None,
                 p.add("INDEX", "int32", None, p.add("AFTER", "int32", None, x, bar), zero), total)
    p.add("SINK", None, None, p.add("GROUP", None, None, st_bits, st_x, st_bits))
    k = import_program(p.nodes, "E_vec")
    for spelled in ("SHRINK(", "CAST(%", "BITCAST(%", "AFTER(%", "BARRIER(%", "(1, 0, REDUCE)"):
        assert spelled in k.text
    xs = np.array([-2, 0, 5, 7], np.int32)
    res = run(parse(k.text), [np.zeros(4, np.float32), np.zeros(4, np.uint32), xs.copy()])
    np.testing.assert_array_equal(res[0], xs.astype(np.float32))
    np.testing.assert_array_equal(res[1], xs.view(np.uint32))
    assert res[2][0] == 28


@pytest.mark.parametrize("value, dtype, want", [
    (2**64 + 1, "uint64", 1), (2**64 + 1, "int64", 1), (-(2**64) - 1, "uint64", 2**64 - 1),
    (2**65 + 255, "int8", -1), (2**64 + 1, "float32", np.float32(2.0**64))])
def test_folded_constant_outside_64_bits_is_cast_to_its_dtype(value: int, dtype: str,
                                                            want) -> None:
    """tinygrad folds `Tensor(uint64.max) + 2` to CAST(2**64 + 1) uint64 (test_dtype's
    test_uint_overflow); the literal lies outside int64 and uint64, so the importer writes
    the value the CAST gives (its low bits), as tinygrad's C renderer truncates it."""
    p = Prog()
    out = p.add("PARAM", dtype, TgParam(0, dtype, 1), p.const(1))
    c = p.add("CAST", dtype, dtype, p.add("CONST", "weakint", value))
    st = p.add("STORE", None, None, p.add("INDEX", dtype, None, out, p.const(0)), c)
    p.add("SINK", None, None, st)
    k = import_program(p.nodes, "E_big")
    npdt = np.dtype(dtype)
    assert run(parse(k.text), [np.zeros(1, npdt)])[0][0] == np.array(want).astype(npdt)


@needs_tinygrad
def test_uint64_overflow_of_a_folded_constant() -> None:
    import kcc.tinygrad  # noqa: F401
    from tinygrad import Tensor, dtypes

    def prog() -> np.ndarray:
        v = dtypes.uint64.max
        return np.stack([(Tensor(v, dtype=dtypes.uint64) + 2).numpy(),
                         (Tensor(v, dtype=dtypes.uint64) * 2).numpy()])
    got = _on("CPU:KCC", prog)
    np.testing.assert_array_equal(got, _on("CPU", prog))
    np.testing.assert_array_equal(got, [1, 2**64 - 2])


def test_empty_program_is_a_kernel_that_does_nothing() -> None:
    """tinygrad hands over a lone SINK (no sources) for a zero-size output (test_tensor's
    TestZeroShapeTensor::test_pad, ::test_shrink_into_zero); `.uop` needs an effect, so it is
    one store to a private byte, which kcc's x86 back end compiles to an empty function."""
    from kcc.targets.x86.target import compile_x86
    k = import_program([TgNode("NOOP", None, None), TgNode("SINK", None, None, (0,))], "E_2")
    sink = parse(k.text)
    assert k.slots == [] and run(sink, []) == []
    obj, descs = compile_x86([sink])
    assert obj and len(descs) == 1


@needs_tinygrad
def test_zero_size_outputs() -> None:
    import kcc.tinygrad  # noqa: F401
    from tinygrad import Tensor

    def prog() -> np.ndarray:
        Tensor.manual_seed(0)
        t = Tensor.rand(3, 2, 0).pad((None, None, (1, 1)), value=1).numpy()
        r = Tensor.rand(3, 4).realize()
        return np.concatenate([t.ravel(), r.shrink(((2, 2), None)).numpy().ravel(),
                               r.shrink((None, (2, 2))).numpy().ravel()])
    np.testing.assert_array_equal(_on("CPU:KCC", prog), _on("CPU", prog))
