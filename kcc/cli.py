"""The `kcc` command line: small click commands that call the layers.

    kcc check FILE...        parse and verify; `path: ok` per good file, errors on stderr
    kcc fmt FILE [-i]        the canonical text, to stdout or in place
    kcc compile FILE... -t T one object (+ manifest) for target T (kcc.targets.registry)
    kcc run SOURCE ARG...    run a .uop (--interp or -t T) or a manifest; save the buffers
    kcc disasm FILE          the instructions of an object (the target that claims it lists it)
    kcc targets              the targets, their arches and emit kinds
    kcc tinygrad-capture S   run a tinygrad script, write every kernel it runs as .uop

A bad input file is reported as `path:line:col: error: message` with the line and a caret, and
the command exits with status 1; it never shows a Python traceback.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

import click

from kcc.frontend.errors import SourceError
from kcc.frontend.lexer import decode_source
from kcc.frontend.parser import ParseResult, parse_result, read_source
from kcc.frontend.printer import format_uop, leading_comments
from kcc.targets import registry


def _version() -> str:
    try:
        return metadata.version("kcc")
    except metadata.PackageNotFoundError:
        return "unknown"


def load(path: str) -> tuple[ParseResult, str]:
    """Read, parse and verify a `.uop` file (`-` is stdin); returns the result and the text."""
    if path == "-":
        data, name = sys.stdin.buffer.read(), "<stdin>"
    else:
        data, name = read_source(path), path
    text = decode_source(data, name)
    return parse_result(text, name), text


def _fail(err: SourceError) -> None:
    click.echo(err.render(), err=True)


@click.group()
@click.version_option(_version(), "--version", prog_name="kcc")
def main() -> None:
    """kcc: an ahead-of-time kernel compiler for .uop graphs."""


@main.command()
@click.argument("files", nargs=-1, required=True)
def check(files: tuple[str, ...]) -> None:
    """Parse and verify each FILE; exit 1 if any is refused."""
    failed = False
    for path in files:
        try:
            res, _ = load(path)
        except SourceError as e:
            _fail(e)
            failed = True
            continue
        click.echo(f"{res.path}: ok (kernel {res.sink.arg.name}, {len(res.sink.toposort())} "
                   "nodes)")
    sys.exit(1 if failed else 0)


@main.command()
@click.argument("file")
@click.option("-i", "--in-place", is_flag=True, help="Rewrite FILE instead of printing.")
def fmt(file: str, in_place: bool) -> None:
    """Print FILE in canonical form (renumbered, typed, leading comments kept)."""
    if in_place and file == "-":
        raise click.UsageError("-i needs a file, not stdin")
    try:
        res, text = load(file)
    except SourceError as e:
        _fail(e)
        sys.exit(1)
    out = format_uop(res.sink, leading_comments(text))
    if not in_place:
        click.echo(out, nl=False)
        return
    try:
        with open(file, "w", encoding="utf-8", newline="\n") as f:
            f.write(out)
    except OSError as e:
        _fail(SourceError(file, 0, 0, f"cannot write the file: {e.strerror or e}"))
        sys.exit(1)


# -- compile, run, disasm ------------------------------------------------------------------------

class TargetName(click.ParamType):
    """A target name from kcc.targets.registry (checked when parsed, so a target registered
    at run time is accepted too)."""

    name = "target"

    def get_metavar(self, param: click.Parameter, *args: object) -> str:
        return "[" + "|".join(registry.names()) + "]"

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None):
        if value in registry.names():
            return value
        self.fail(f"{value!r} is not a target (choose from {', '.join(registry.names())}; "
                  "`kcc targets` lists them)", param, ctx)


TARGET = TargetName()


class CliError(Exception):
    """A user-facing error: printed as `error: …`, exit status 1."""


def _die(msg: str) -> None:
    click.echo(f"error: {msg}", err=True)
    sys.exit(1)


def _load_all(files: tuple[str, ...]) -> list:
    sinks = []
    for path in files:
        try:
            res, _ = load(path)
        except SourceError as e:
            _fail(e)
            sys.exit(1)
        sinks.append(res.sink)
    return sinks


def _compile(sinks: list, target: str, arch: str | None, emit: str | None,
             dump_after: str | None) -> tuple[bytes, list, str, str]:
    """Run the pipeline for target; returns (output bytes, kernel descs, arch, emit)."""
    from kcc.targets.pipeline import PASS_NAMES
    if dump_after is not None and dump_after not in PASS_NAMES:
        raise CliError(f"unknown pass {dump_after!r} for --dump-after (choose from "
                       f"{', '.join(PASS_NAMES)})")
    spec = registry.get(target)
    arch = arch or spec.default_arch
    emit = emit or spec.default_emit
    out = sys.stdout if dump_after else None
    try:
        spec.check_arch(arch)
        spec.emit(emit)
        c = spec.compile(sinks, arch, emit, dump_after, out)
    except Exception as e:                   # noqa: BLE001 — never a traceback for a user
        raise CliError(_compile_message(e)) from None
    return c.data, c.descs, c.arch, c.emit


def _compile_message(e: Exception) -> str:
    """A compile failure as one line: the message of an error kcc reports on purpose (a
    construct the target cannot compile), else an internal error to report, with its type
    (KCC_TRACEBACK=1 re-raises it with the traceback, for kcc developers)."""
    if isinstance(e, registry.CompileError):
        return str(e)
    if os.environ.get("KCC_TRACEBACK"):
        raise e
    return f"internal compiler error ({type(e).__name__}: {e}); please report it with the input"


@main.command("compile")
@click.argument("files", nargs=-1, required=True)
@click.option("-t", "--target", type=TARGET, required=True,
              help="Target (`kcc targets` lists each with its arches and emit kinds).")
@click.option("--arch", help="The target's architecture (default: the target's default; "
              "`kcc targets` lists them).")
@click.option("-o", "--output", help="Output file (default: first input with .o/.cubin/.ptx/.s).")
@click.option("--manifest", help="Manifest path (default: the output with .json).")
@click.option("--header", help="Also write a C header with the kernels' prototypes "
              "(targets whose objects C links, e.g. x86).")
@click.option("--emit", help="Output kind (default: the target's first; `kcc targets` lists "
              "them).")
@click.option("--dump-after", help="Print the graph or machine listing after this pass.")
@click.option("--time-passes", is_flag=True, help="Print the time of each pass (stderr).")
def compile_cmd(files: tuple[str, ...], target: str, arch: str | None, output: str | None,
                manifest: str | None, header: str | None, emit: str | None,
                dump_after: str | None, time_passes: bool) -> None:
    """Compile FILE… (one kernel each) into one object and a JSON launch manifest."""
    from kcc.targets.manifest import write_manifest
    from kcc.targets.pipeline import format_pass_times
    from kcc.targets.pipeline import time_passes as timer
    sinks = _load_all(files)
    try:
        with timer() as times:
            data, descs, arch, emit = _compile(sinks, target, arch, emit, dump_after)
    except CliError as e:
        _die(str(e))
    if time_passes:
        click.echo(format_pass_times(times), err=True, nl=False)
    spec = registry.get(target)
    kind = spec.emit(emit)
    out = Path(output) if output else Path(Path(files[0]).stem + kind.suffix)
    try:
        out.write_bytes(data)
        mpath = Path(manifest) if manifest else out.with_suffix(".json")
        write_manifest(mpath, target, arch, descs, out if kind.loadable else None)
        if header:
            text = spec.header(descs, "KCC_KERNELS_H")
            if text is None:
                _die(f"--header: -t {target} has no C header (C prototypes of the object's "
                     "functions)")
            Path(header).write_text(text)
    except OSError as e:
        _die(f"cannot write output: {e.filename}: {e.strerror}")
    click.echo(f"wrote {out} and {mpath} ({len(descs)} kernel{'s' * (len(descs) != 1)})",
               err=True)


def _parse_args(desc, raw: tuple[str, ...], random_fill: bool, seed: int) -> list:
    """Kernel arguments from the command line: .npy paths for buffers, numbers for scalars."""
    import numpy as np
    from kcc.ir import dtypes
    if len(raw) > len(desc.args):
        raise CliError(f"kernel {desc.name} takes {len(desc.args)} arguments, got {len(raw)}")
    if len(raw) < len(desc.args) and not random_fill:
        missing = desc.args[len(raw)]
        raise CliError(f"kernel {desc.name} takes {len(desc.args)} arguments, got {len(raw)} "
                       f"(argument {missing.slot} is missing; --random fills missing inputs)")
    rng = np.random.default_rng(seed)
    out = []
    for i, a in enumerate(desc.args):
        npdt = dtypes.by_name(a.dtype).np
        label = f"argument {a.slot}" + (f" ({a.name})" if a.name else "")
        if i < len(raw):
            if a.kind == "buffer":
                # np.load falls back to unpickling a file without the .npy magic, which
                # allow_pickle=False refuses with a misleading message: check the magic first
                try:
                    with open(raw[i], "rb") as f:
                        magic = f.read(6)
                except OSError as e:
                    raise CliError(f"{label}: cannot read {raw[i]!r}: {e.strerror}") from None
                if magic != b"\x93NUMPY":
                    raise CliError(f"{label}: {raw[i]!r} is not a .npy file")
                try:
                    arr = np.load(raw[i], allow_pickle=False)
                except (OSError, ValueError) as e:
                    raise CliError(f"{label}: cannot read {raw[i]!r} as .npy: {e}") from None
                out.append(np.ascontiguousarray(arr))
            else:
                try:
                    v = float(raw[i]) if dtypes.by_name(a.dtype).is_float else int(raw[i], 0)
                except ValueError:
                    raise CliError(f"{label}: {raw[i]!r} is not a {a.dtype} number") from None
                out.append(v)
        elif a.kind == "buffer":
            out.append(_random_buffer(rng, npdt, a.size, a.dtype))
        else:
            lo, hi = a.range if a.range else (1, 8)
            out.append(npdt.type(rng.integers(int(lo), int(hi) + 1) if npdt.kind in "iub"
                                 else rng.uniform(float(lo), float(hi))))
    return out


def _random_buffer(rng, npdt, n: int, name: str):
    import numpy as np
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if name == "bfloat16":
        return (rng.standard_normal(n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if npdt.kind == "f":
        return rng.standard_normal(n).astype(npdt)
    return rng.integers(0, 16, n).astype(npdt)


@main.command("run")
@click.argument("source")
@click.argument("args", nargs=-1)
@click.option("--interp", is_flag=True, help="Run the .uop in the reference interpreter.")
@click.option("-t", "--target", type=TARGET, help="Compile the .uop for TARGET.")
@click.option("--arch", help="Target architecture (as for compile).")
@click.option("--kernel", help="Kernel name, when a manifest holds several.")
@click.option("-o", "--outdir", default="kcc-out", show_default=True,
              help="Folder for arg{slot}.npy after the run.")
@click.option("--random", "random_fill", is_flag=True, help="Fill missing inputs randomly.")
@click.option("--seed", default=0, show_default=True, help="Seed for --random and --check.")
@click.option("--check", is_flag=True,
              help="Random inputs; compare the compiled kernel with the interpreter.")
@click.option("--emulate", is_flag=True,
              help="Run the code object in kcc's emulator instead of on a device (-t amd).")
def run_cmd(source: str, args: tuple[str, ...], interp: bool, target: str | None,
            arch: str | None, kernel: str | None, outdir: str, random_fill: bool, seed: int,
            check: bool, emulate: bool) -> None:
    """Run SOURCE (a .uop, or a manifest .json) on ARG… (.npy buffers, numbers for scalars);
    saves every buffer as OUTDIR/arg{slot}.npy."""
    try:
        _run(source, args, interp, target, arch, kernel, outdir, random_fill or check, seed,
             check, emulate)
    except CliError as e:
        _die(str(e))


def _run(source, args, interp, target, arch, kernel, outdir, random_fill, seed, check,
         emulate=False):
    import numpy as np
    from kcc.targets.manifest import (KernelDesc, LaunchError, check_launch, describe_kernel,
                                      read_manifest)
    sink = None
    if source.endswith(".json"):
        if interp:
            raise CliError("--interp runs a .uop, not a manifest")
        try:
            doc = read_manifest(Path(source))
        except LaunchError as e:
            raise CliError(str(e)) from None
        descs = [KernelDesc.from_json(k) for k in doc["kernels"]]
        names = [d.name for d in descs]
        if kernel is None and len(descs) > 1:
            raise CliError(f"{source} holds {len(descs)} kernels ({', '.join(names)}); "
                           "choose one with --kernel")
        if kernel is not None and kernel not in names:
            raise CliError(f"{source} has no kernel {kernel!r} (it has {', '.join(names)})")
        desc = descs[names.index(kernel)] if kernel else descs[0]
        if doc["target"] not in registry.names():     # from a newer kcc, or edited
            raise CliError(f"{source} is for target {doc['target']!r}, which this kcc cannot "
                           f"run (it runs {', '.join(registry.names())})")
        if target is not None and target != doc["target"]:
            raise CliError(f"{source} was compiled for {doc['target']}, not {target}")
        target = doc["target"]
        if doc.get("object") is None:      # written for --emit asm: nothing to load
            raise CliError(f"{source} describes no object (it was written with --emit asm); "
                           "assemble the .s and run it from C, or compile with --emit obj")
        data = (Path(source).parent / doc["object"]["file"]).read_bytes()
    else:
        if (target is None) == (not interp):
            raise CliError("choose one of --interp or -t TARGET to run a .uop")
        sink = _load_all((source,))[0]
        if kernel is not None and kernel != sink.arg.name:
            raise CliError(f"{source} holds kernel {sink.arg.name!r}, not {kernel!r}")
        desc = describe_kernel(sink)
        data = None
        if target is not None:
            data, descs, _, _ = _compile([sink], target, arch, None, None)
            desc = descs[0]
    if emulate and data is None:
        raise CliError("--emulate runs a compiled kernel: give -t TARGET or a manifest")
    values = _parse_args(desc, args, random_fill, seed)
    try:
        values = check_launch(desc, values)
    except LaunchError as e:
        raise CliError(str(e)) from None
    ref = [v.copy() if isinstance(v, np.ndarray) else v for v in values] if check else None
    if data is None:
        _interpret(sink, values)
    else:
        _launch(target, data, desc, values, emulate)
    if check:
        if sink is None:
            raise CliError("--check needs a .uop source (the interpreter runs the graph)")
        _interpret(sink, ref)
        ulp = _check_ulp(sink)
        bad = [a.slot for a, v, r in zip(desc.args, values, ref) if isinstance(v, np.ndarray)
               and _differs(v, r, ulp)]
        if bad:
            how = f"by more than {ulp} ulp" if ulp else "(bit-exact comparison)"
            raise CliError(f"{desc.name}: {target} differs from the interpreter {how} in "
                           f"argument(s) {', '.join(map(str, bad))}")
        click.echo(f"{desc.name}: {target} matches the interpreter", err=True)
    out = Path(outdir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for a, v in zip(desc.args, values):
            if a.kind == "buffer":
                np.save(out / f"arg{a.slot}.npy", v)
    except OSError as e:
        raise CliError(f"cannot write {e.filename}: {e.strerror}") from None
    click.echo(f"saved {sum(a.kind == 'buffer' for a in desc.args)} buffers to {out}/",
               err=True)


# docs/transcendentals.md: EXP2/LOG2/SIN are within 2 ulp of the exact value and the
# interpreter rounds its float64 result once more; a kernel using them is compared within this
# many ulp (floats only), every other kernel bit for bit (docs/semantics.md: exact ops).
TRANSCENDENTAL_ULP = 4


def _check_ulp(sink) -> int:
    from kcc.ir import Ops
    approx = {Ops.EXP2, Ops.LOG2, Ops.SIN}
    return TRANSCENDENTAL_ULP if any(n.op in approx for n in sink.toposort()) else 0


def _differs(got, want, ulp: int) -> bool:
    """True if got and want differ: in bits, or (floats, ulp > 0) by more than ulp ulps."""
    import numpy as np
    same = got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")
    if ulp and got.dtype.kind == "f":
        same |= np.isclose(got, want, rtol=ulp * np.finfo(got.dtype).eps, atol=0,
                           equal_nan=True)
    return not bool(same.all())


def _interpret(sink, values: list) -> None:
    """Run the reference interpreter; a runtime fault (an out-of-bounds access whose index
    only the data decides) is an error line, not a traceback."""
    from kcc.ir.interp import InterpError
    from kcc.ir.interp import run as interp_run
    try:
        interp_run(sink, values)
    except InterpError as e:
        raise CliError(f"the interpreter stopped: {e}") from None


def _launch(target: str, data: bytes, desc, values: list, emulate: bool = False) -> None:
    from kcc.targets.manifest import LaunchError
    spec = registry.get(target)
    try:
        if emulate:
            spec.emulate(data, desc, values)
        else:
            spec.launch(data, desc, values)
    except LaunchError as e:
        raise CliError(str(e)) from None


@main.command("disasm")
@click.argument("file")
@click.option("--att", is_flag=True, help="AT&T syntax (x86).")
def disasm_cmd(file: str, att: bool) -> None:
    """Print the instructions of a compiled object (an x86 .o, a cubin, PTX, …: the target
    that recognizes FILE lists it)."""
    try:
        data = Path(file).read_bytes()
    except OSError as e:
        _die(f"cannot read {file}: {e.strerror}")
    # an ELF too short for its 64-byte header is refused here, before any target guesses
    if data[:4] == b"\x7fELF" and len(data) < 64:
        _die(f"{file}: truncated ELF file ({len(data)} bytes, the header alone is 64)")
    targets = registry.all_targets()
    spec = next((t for t in targets if t.claims(data, file)), None)
    if spec is None:
        kinds = ", ".join(t.lists for t in targets if t.lists)
        if data[:4] == b"\x7fELF":
            machine = int.from_bytes(data[18:20], "little")
            _die(f"{file}: an ELF file for machine {machine}, not {kinds}")
        _die(f"{file} is not {kinds}")
    try:
        click.echo(spec.disasm(data, att), nl=False)
    except registry.DisasmError as e:
        _die(f"{file}: {e}")


@main.command("targets")
def targets_cmd() -> None:
    """List the targets: name, arches (default first) and emit kinds."""
    for t in registry.all_targets():
        arches = [t.default_arch] + [a for a in t.arches if a != t.default_arch]
        click.echo(f"{t.name}: {t.summary}\n  --arch {', '.join(arches)}\n"
                   f"  --emit {', '.join(e.name for e in t.emits)}")


@main.command("tinygrad-capture", context_settings={"ignore_unknown_options": True})
@click.argument("script")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--outdir", default="kcc-capture", show_default=True,
              help="Where the .uop files, values and capture.json go.")
@click.option("--no-gpu", is_flag=True, help="Skip the PTX- and HIP-style lowerings.")
def tinygrad_capture_cmd(script: str, script_args: tuple[str, ...], outdir: str,
                         no_gpu: bool) -> None:
    """Run the tinygrad SCRIPT and capture every kernel it runs (docs/tinygrad.md)."""
    import runpy
    try:
        import kcc.tinygrad as ktg
    except ImportError as e:
        _die(f"tinygrad is not importable ({e}); install it with pip install 'kcc[tinygrad]'")
    if not os.path.isfile(script):
        _die(f"{script}: no such file")
    argv = sys.argv
    sys.argv = [script, *script_args]
    failure = None
    try:
        with ktg.capture(outdir, gpu=not no_gpu) as cap:
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as e:            # the script's own exit: keep its status
                if e.code not in (None, 0):
                    failure = f"{script} exited with status {e.code}"
            except Exception as e:             # the script's error, shown as the script's
                import traceback
                traceback.print_exc()
                failure = f"{script} raised {type(e).__name__}: {e}"
    finally:
        sys.argv = argv
    n = len(cap.kernels)
    bad = sum(1 for k in cap.kernels if k.error)
    click.echo(f"captured {n} kernel run{'s' if n != 1 else ''} to {outdir}/capture.json"
               + (f" ({bad} not importable, see their 'error')" if bad else ""))
    if failure:
        _die(f"{failure} (the kernels it ran before are captured)")


if __name__ == "__main__":
    main()
