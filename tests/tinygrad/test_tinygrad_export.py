"""Whole tinygrad programs exported for x86 (kcc.tinygrad.export, docs/export.md): the object
linked into a C program with `cc main.c NAME.o -lpthread -lm` gives tinygrad's DEV=CPU values,
and so does `kcc run NAME.json`; bad exports and inconsistent manifests are refused."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tinygrad_util import needs_tinygrad

pytestmark = needs_tinygrad

CC = shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")

MAIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "{name}.h"
static void *slurp(const char *path, size_t n) {{
  void *p = malloc(n ? n : 1); FILE *f = fopen(path, "rb");
  if (!f || fread(p, 1, n, f) != n) {{ fprintf(stderr, "cannot read %s\n", path); exit(2); }}
  fclose(f); return p;
}}
int main(int argc, char **argv) {{
{setup}
{body}
  return 0;
}}
"""


def c_main(ex: Any, setup: str | None = None) -> str:
    """A C program that reads inK.bin, runs the program, writes outK.bin (raw bytes); setup:
    statements before (default: NAME_set_threads(argv[1]) when given)."""
    p = ex.program
    if setup is None:
        setup = f"  if (argc > 1) {p.name}_set_threads(atoi(argv[1]));"
    body = []
    for k, i in enumerate(p.inputs):
        body.append(f'  void *in{k} = slurp("in{k}.bin", {p.buffer(i).nbytes});')
    for k, i in enumerate(p.outputs):
        body.append(f"  void *out{k} = malloc({p.buffer(i).nbytes});")
    args = [f"in{k}" for k in range(len(p.inputs))] + [f"out{k}" for k in range(len(p.outputs))]
    body.append(f"  int rc = {p.name}({', '.join(args)});")
    body.append(f'  if (rc) {{ fprintf(stderr, "%s\\n", {p.name}_error()); return 1; }}')
    for k, i in enumerate(p.outputs):
        body.append(f'  {{ FILE *f = fopen("out{k}.bin", "wb"); '
                    f"fwrite(out{k}, 1, {p.buffer(i).nbytes}, f); fclose(f); }}")
    return MAIN_C.format(name=p.name, setup=setup, body="\n".join(body))


def run_in_c(ex: Any, work: Path, threads: int = 0) -> list[np.ndarray]:
    """Link the exported object into a C program with cc (nothing else) and run it."""
    (work / "main.c").write_text(c_main(ex))
    return _run_c(ex, work, threads)


def _run_c(ex: Any, work: Path, threads: int = 0) -> list[np.ndarray]:
    """Build work/main.c with the object and run it on the example inputs."""
    from kcc.targets.program import np_dtype
    p = ex.program
    exe = work / "main"
    subprocess.run([CC, "-Wall", "-Werror", f"-I{ex.out}", str(work / "main.c"),
                    str(ex.path("object")), "-lpthread", "-lm", "-o", str(exe)], check=True)
    for k, a in enumerate(ex.inputs):
        (work / f"in{k}.bin").write_bytes(np.ascontiguousarray(a).tobytes())
    res = subprocess.run([str(exe), str(threads)], cwd=work, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    return [np.frombuffer((work / f"out{k}.bin").read_bytes(),
                          np_dtype(p.buffer(i).dtype)).reshape(p.buffer(i).shape)
            for k, i in enumerate(p.outputs)]


def assert_same(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 1e-4,
                atol: float = 1e-6) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


# -- the models ------------------------------------------------------------------------------

def _cnn() -> tuple[Any, list[np.ndarray]]:
    """conv + BatchNorm (eval, running statistics set) + relu + max pooling + avg pooling."""
    from tinygrad import Tensor, nn
    rng = np.random.default_rng(1)
    conv, bn = nn.Conv2d(3, 8, 3), nn.BatchNorm(8)
    bn.running_mean.assign(Tensor(rng.normal(size=8).astype(np.float32)))
    bn.running_var.assign(Tensor(rng.uniform(0.5, 2, size=8).astype(np.float32)))
    lin = nn.Linear(8 * 3 * 3, 10)

    def f(x: Any) -> Any:
        y = bn(conv(x)).relu().max_pool2d(2)
        y = y.avg_pool2d(2)
        return lin(y.flatten(1))
    return f, [rng.normal(size=(2, 3, 14, 14)).astype(np.float32)]


def _mlp() -> tuple[Any, list[np.ndarray]]:
    from tinygrad import nn
    rng = np.random.default_rng(2)
    l1, l2 = nn.Linear(256, 512), nn.Linear(512, 10)

    def f(x: Any) -> Any:
        return l2(l1(x).relu()).softmax()
    return f, [rng.normal(size=(64, 256)).astype(np.float32)]


def _attention() -> tuple[Any, list[np.ndarray]]:
    """A pre-norm transformer block: causal attention and an MLP, LayerNorm and residuals."""
    from tinygrad import nn
    rng = np.random.default_rng(3)
    d, heads = 32, 4
    ln1, ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
    qkv, proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
    up, down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def f(x: Any) -> Any:
        b, t, _ = x.shape
        q, k, v = qkv(ln1(x)).reshape(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        a = q.scaled_dot_product_attention(k, v, is_causal=True)
        x = x + proj(a.transpose(1, 2).reshape(b, t, d))
        return x + down(up(ln2(x)).gelu())
    return f, [rng.normal(size=(2, 8, d)).astype(np.float32)]


def _ints() -> tuple[Any, list[np.ndarray]]:
    """Integer inputs and outputs, several of each."""
    rng = np.random.default_rng(4)

    def f(a: Any, b: Any) -> Any:
        return (a * 3 + b) // 2, (a ^ b).sum(axis=1), (a < b)
    return f, [rng.integers(-1000, 1000, size=(16, 24), dtype=np.int32),
               rng.integers(-1000, 1000, size=(16, 24), dtype=np.int32)]


def _half() -> tuple[Any, list[np.ndarray]]:
    """float16 in and out, with a float32 second output."""
    rng = np.random.default_rng(5)
    w = rng.normal(size=(16, 8)).astype(np.float16)

    def f(x: Any) -> Any:
        from tinygrad import Tensor
        y = (x @ Tensor(w)).relu()
        return y, y.float().mean(axis=0)
    return f, [rng.normal(size=(4, 16)).astype(np.float16)]


MODELS = {"cnn": _cnn, "mlp": _mlp, "attention": _attention, "ints": _ints, "half": _half}
# float16: kcc rounds every float16 op, tinygrad's clang path keeps float within an
# expression (docs/tinygrad.md, "What differs"): one float16 ulp is about 1e-3
RTOL = {"half": 2e-2}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: Any) -> dict[str, Any]:
    import kcc.tinygrad as ktg
    base = tmp_path_factory.mktemp("export")
    out = {}
    for name, make in MODELS.items():
        f, ins = make()
        out[name] = ktg.export(f, *ins, out=base / name, name=f"net_{name}")
    return out


@needs_cc
@pytest.mark.parametrize("model", list(MODELS))
def test_exported_object_in_a_c_program_gives_tinygrads_values(exported, model, tmp_path):
    ex = exported[model]
    got = run_in_c(ex, tmp_path)
    assert_same(got, ex.outputs, RTOL.get(model, 1e-4), 1e-3 if model == "half" else 1e-6)


@needs_cc
def test_worker_threads_give_the_same_values(exported, tmp_path):
    """The MLP's matmul runs on several gidx workers; 1, 2 and 5 threads agree."""
    from kcc.targets.program import worker_count
    ex = exported["mlp"]
    assert max(worker_count(k) for k in ex.program.kernels) > 1
    for t in (1, 2, 5):
        assert_same(run_in_c(ex, tmp_path, t), ex.outputs)


@pytest.mark.parametrize("model", ["cnn", "ints"])
def test_kcc_run_on_the_program_manifest(exported, model, tmp_path):
    from click.testing import CliRunner

    from kcc.cli import main
    ex = exported[model]
    args = []
    for k, a in enumerate(ex.inputs):
        np.save(tmp_path / f"in{k}.npy", a)
        args.append(str(tmp_path / f"in{k}.npy"))
    res = CliRunner().invoke(main, ["run", str(ex.path("manifest")), *args, "-o",
                                    str(tmp_path / "res")])
    assert res.exit_code == 0, res.output
    got = [np.load(tmp_path / "res" / f"out{k}.npy") for k in range(len(ex.outputs))]
    assert_same(got, ex.outputs)
    res = CliRunner().invoke(main, ["run", str(ex.path("manifest")), *args, "--check"])
    assert res.exit_code == 1 and "--check apply to single kernels" in res.output


def test_header_is_valid_c_and_cxx_and_names_the_sizes(exported):
    ex = exported["ints"]
    h = ex.path("header").read_text()
    assert "int net_ints(const int32_t *in0, const int32_t *in1, int32_t *out0, " \
           "int32_t *out1, bool *out2);" in h
    assert "#define net_ints_IN0_ELEMENTS 384" in h and "#define net_ints_OUT1_ELEMENTS 16" in h
    assert "kcc" not in h.split("*/", 1)[1].replace("KCC_PROGRAM", "")
    for cc, lang in ((shutil.which("cc"), "c"), (shutil.which("c++") or shutil.which("g++"),
                                                  "c++")):
        if cc:
            subprocess.run([cc, "-x", lang, "-fsyntax-only", "-Wall", "-Werror", "-"],
                           input=f'#include "{ex.path("header")}"\n', text=True, check=True)


def test_kernel_names_are_unique_and_prefixed(exported):
    from kcc.targets.program import check_program
    p = exported["cnn"].program
    names = [k.name for k in p.kernels]
    assert len(set(names)) == len(names) and all(n.startswith("net_cnn_") for n in names)
    check_program(p)


def test_object_links_only_libc_symbols(exported):
    """The object's undefined symbols are the runtime's libc calls, nothing else."""
    from elftools.elf.elffile import ELFFile

    from kcc.targets.x86.program import LIBC
    with open(exported["mlp"].path("object"), "rb") as f:
        undef = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                 if s["st_shndx"] == "SHN_UNDEF" and s.name}
    assert undef and undef <= set(LIBC)


def test_edited_manifest_is_refused(exported, tmp_path):
    """A launch whose argument no longer matches its buffer, and a changed object."""
    from kcc.targets.program import ProgramError, run_program
    ex = exported["ints"]
    shutil.copytree(ex.out, tmp_path / "p")
    m = tmp_path / "p" / ex.files["manifest"]
    doc = json.loads(m.read_text())
    doc["buffers"][doc["inputs"][0]]["size"] += 1
    m.write_text(json.dumps(doc))
    with pytest.raises(ProgramError, match=r"launch \d+ .*argument \d+ is int32\[384\]"):
        run_program(m, ex.inputs)
    doc = json.loads(ex.path("manifest").read_text())
    doc["launches"].reverse()           # consistent in itself, but not the object's program
    m.write_text(json.dumps(doc))
    with pytest.raises(ProgramError, match="manifest's 'launches' is not the object's"):
        run_program(m, ex.inputs)
    shutil.copy(ex.path("manifest"), m)
    obj = tmp_path / "p" / ex.files["object"]
    obj.write_bytes(obj.read_bytes() + b"\0")
    with pytest.raises(ProgramError, match="was changed since"):
        run_program(m, ex.inputs)


def test_non_empty_folder_is_refused_unless_forced(tmp_path):
    import kcc.tinygrad as ktg
    from kcc.tinygrad.exporting import ExportError
    (tmp_path / "keep.txt").write_text("x")
    f, ins = _ints()
    with pytest.raises(ExportError, match="is not empty"):
        ktg.export(f, *ins, out=tmp_path, name="p")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["keep.txt"]
    ex = ktg.export(f, *ins, out=tmp_path, name="p", force=True)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["keep.txt", "p.h", "p.json", "p.o"]
    assert ex.outputs


def test_bad_name_and_a_failing_function_leave_nothing(tmp_path):
    import kcc.tinygrad as ktg
    from kcc.tinygrad.exporting import ExportError
    f, ins = _ints()
    for bad_name in ("no-pe", "free", "main", "int"):
        with pytest.raises(ExportError, match="not a C identifier"):
            ktg.export(f, *ins, out=tmp_path / "a", name=bad_name)

    def bad(a: Any, b: Any) -> Any:
        raise RuntimeError("boom")
    with pytest.raises(ExportError, match="raised RuntimeError: boom"):
        ktg.export(bad, *ins, out=tmp_path / "b")
    assert list(tmp_path.iterdir()) == []


def test_a_compile_refusal_names_the_kernel(tmp_path, monkeypatch):
    """kcc's refusal of a kernel reaches the user with the kernel's name and kcc's message,
    and no file is left."""
    import kcc.tinygrad as ktg
    from kcc.isel.x86.select import SelectError
    from kcc.targets.x86 import target as x86mod
    from kcc.tinygrad.exporting import ExportError

    def refuse(self: Any, lin: Any, sink: Any) -> Any:
        raise SelectError("cannot select op FOO")
    monkeypatch.setattr(x86mod.X86Target, "select", refuse)
    f, ins = _ints()
    with pytest.raises(ExportError, match=r"kernel p_\w+: cannot select op FOO"):
        ktg.export(f, *ins, out=tmp_path / "a", name="p")
    assert list(tmp_path.iterdir()) == []


@needs_cc
def test_external_weights_load_from_the_weights_file(tmp_path):
    """weights="external": NAME.weights (safetensors layout) read by NAME_load_weights in the C
    program and by kcc run; without loading, the entry refuses with a message."""
    import kcc.tinygrad as ktg
    from kcc.targets.program import run_program
    f, ins = _cnn()
    ex = ktg.export(f, *ins, out=tmp_path / "p", name="net", weights="external")
    data = ex.path("weights").read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    assert (8 + n) % 64 == 0 and all(v["data_offsets"][1] <= len(data) - 8 - n
                                     for k, v in header.items() if k != "__metadata__")
    assert "int net_load_weights(const char *path);" in ex.path("header").read_text()
    w = ex.path("weights")
    load = (f'  if (net_load_weights("{w}")) {{ fprintf(stderr, "%s\\n", net_error()); '
            "return 1; }")
    work = tmp_path / "c"
    work.mkdir()
    (work / "main.c").write_text(c_main(ex, load))
    assert_same(_run_c(ex, work), ex.outputs)
    assert_same(run_program(ex.path("manifest"), ex.inputs), ex.outputs)
    (work / "main.c").write_text(c_main(ex, "  (void)argc; (void)argv;"))
    with pytest.raises(AssertionError, match="no weights loaded"):
        _run_c(ex, work)


SCRIPT = """
from tinygrad import nn
lin = nn.Linear(32, 4)
def net(x, y):
    return (lin(x) * 2).relu(), y + 1
"""


def test_cli_tinygrad_export_then_kcc_run(tmp_path):
    """kcc tinygrad-export script.py:fn --input … -o dir/ writes the program; kcc run runs it
    and gives the values tinygrad gives on the same inputs."""
    from click.testing import CliRunner

    from kcc.cli import main
    from kcc.tinygrad.exporting import example_input, load_function
    (tmp_path / "model.py").write_text(SCRIPT)
    out = tmp_path / "prog"
    res = CliRunner().invoke(main, ["tinygrad-export", f"{tmp_path / 'model.py'}:net",
                                    "--input", "4x32:float32", "--input", "3:int32",
                                    "-t", "x86", "-o", str(out), "--name", "m"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["m.h", "m.json", "m.o"]
    ins = [example_input("4x32:float32", 0), example_input("3:int32", 1)]
    for k, a in enumerate(ins):
        np.save(tmp_path / f"in{k}.npy", a)
    res = CliRunner().invoke(main, ["run", str(out / "m.json"), str(tmp_path / "in0.npy"),
                                    str(tmp_path / "in1.npy"), "-o", str(tmp_path / "res")])
    assert res.exit_code == 0, res.output
    # tinygrad itself on the same inputs (the script's weights are its own again: load the
    # function anew and compare with its outputs through a fresh export's reference)
    import kcc.tinygrad as ktg
    ex = ktg.export(load_function(f"{tmp_path / 'model.py'}:net"), *ins,
                    out=tmp_path / "again", name="m")
    got = [np.load(tmp_path / "res" / f"out{k}.npy") for k in range(2)]
    assert got[1].tolist() == (ins[1] + 1).tolist()
    assert got[0].shape == ex.outputs[0].shape == (4, 4)


@pytest.mark.parametrize("argv, msg", [
    (["nofile.py:net", "--input", "4:float32"], "nofile.py: no such file"),
    (["{model}:nope", "--input", "4:float32"], "defines no function 'nope'"),
    (["{model}:net", "--input", "4xx:float32"], "expected SHAPE:DTYPE"),
    (["{model}:net", "--input", "4x32:float32", "--input", "3:int32", "--name", "a-b"],
     "not a C identifier"),
])
def test_cli_tinygrad_export_refusals(tmp_path, argv, msg):
    from click.testing import CliRunner

    from kcc.cli import main
    (tmp_path / "model.py").write_text(SCRIPT)
    argv = [a.replace("{model}", str(tmp_path / "model.py")) for a in argv]
    res = CliRunner().invoke(main, ["tinygrad-export", *argv, "-o", str(tmp_path / "o")])
    assert res.exit_code == 1 and msg in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


REPO = Path(__file__).resolve().parents[2]


@needs_cc
def test_example_mnist_main_c_runs_the_x86_export(tmp_path):
    """examples/export: mnist_cnn.py exported for x86 and examples/export/main.c built with
    cc print tinygrad's probabilities for main.c's image."""
    import kcc.tinygrad as ktg
    from kcc.tinygrad.exporting import load_function
    fn = load_function(f"{REPO / 'examples/export/mnist_cnn.py'}:net")
    image = np.zeros((1, 1, 28, 28), np.float32)
    image[0, 0, 4:24, 12:16] = 1
    ex = ktg.export(fn, image, out=tmp_path / "mnist", name="mnist")
    exe = tmp_path / "mnist_main"
    subprocess.run([CC, "-Wall", "-Werror", str(REPO / "examples/export/main.c"),
                    f"-I{ex.out}", str(ex.path("object")), "-lpthread", "-lm", "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe), "2"], capture_output=True, text=True, check=True).stdout
    probs = [float(line.split(":")[1]) for line in out.splitlines()
             if line.startswith("class")]
    np.testing.assert_allclose(probs, ex.outputs[0].reshape(-1), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("target", ["amd", "cuda"])
def test_example_transformer_block_exports_for_the_gpus(tmp_path, target):
    import kcc.tinygrad as ktg
    from kcc.tinygrad.exporting import example_input, load_function
    fn = load_function(f"{REPO / 'examples/export/transformer_block.py'}:block")
    ex = ktg.export(fn, example_input("1x4x64:float32"), out=tmp_path / "b", name="block",
                    target=target)
    assert {"object", "launcher", "header", "manifest", "weights"} <= set(ex.files)
    if CC:
        subprocess.run([CC, "-Wall", "-Werror", "-c", str(ex.path("launcher")),
                        f"-I{ex.out}", "-o", str(tmp_path / "l.o")], check=True)


def _mutations(doc: Any, path: tuple = ()) -> Any:
    """(path, value) pairs: every field deleted or replaced by a value of another type."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield path + (k,), None
            yield path + (k,), "x"
            yield path + (k,), -1
            yield from _mutations(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield path + (i,), {"a": 1}
            yield path + (i,), 2**41
            yield from _mutations(v, path + (i,))


def test_damaged_program_manifests_are_refused_with_a_message(exported, tmp_path):
    """Every field of a program manifest deleted or given a wrong value: kcc run refuses with
    a ProgramError or LaunchError (a message), never another exception; the original runs."""
    import copy

    from kcc.targets.manifest import LaunchError
    from kcc.targets.program import ProgramError, run_program
    ex = exported["ints"]
    shutil.copytree(ex.out, tmp_path / "p")
    m = tmp_path / "p" / ex.files["manifest"]
    doc = json.loads(m.read_text())
    n = 0
    for path, value in _mutations(doc):
        bad = copy.deepcopy(doc)
        at = bad
        for key in path[:-1]:
            at = at[key]
        if value is None and isinstance(at, dict):
            del at[path[-1]]
        else:
            at[path[-1]] = value
        if bad == doc:
            continue
        m.write_text(json.dumps(bad))
        try:
            run_program(m, ex.inputs)
        except (ProgramError, LaunchError):
            n += 1
    assert n > 200
    m.write_text(json.dumps(doc))
    assert_same(run_program(m, ex.inputs), ex.outputs)
