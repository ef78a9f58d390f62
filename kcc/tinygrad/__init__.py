"""kcc as a tinygrad back end, and tinygrad computations captured as `.uop` kernels.

    import kcc.tinygrad                      # registers the renderer `KCC` of tinygrad's CPU
    DEV=CPU:KCC python my_model.py           # every kernel compiled by kcc's x86 back end
    pytest -p kcc.tinygrad tests/            # an existing tinygrad test suite, through kcc

    with kcc.tinygrad.capture("out/"):       # every kernel that runs: .uop, values, JSON
        y.realize()

    kcc.tinygrad.export(model, x, out="net/", name="net")   # net.o + net.h: a C entry point

This package is the only part of kcc that imports tinygrad (`pip install 'kcc[tinygrad]'`,
tinygrad 0.14.0). Registration extends the renderer list of tinygrad's CPU device (it is built
in `CPUDevice.__init__` and handed to `Compiled.__init__`, so kcc wraps the latter for CPU
devices and also extends CPU devices already open);
tinygrad itself is not changed. Spawned compile workers import this module again when they
unpickle the renderer, which registers it there too. See docs/tinygrad.md.
"""

from __future__ import annotations

import functools
from typing import Any

from kcc.tinygrad.renderer import KCCCompiler, KCCRenderer, program_to_uop

__all__ = ["KCCRenderer", "KCCCompiler", "program_to_uop", "register", "capture", "export"]


def _add(dev: Any) -> None:
    if KCCRenderer not in dev.renderers:
        dev.renderers = [*dev.renderers, KCCRenderer]


def register() -> None:
    """Make `KCC` a renderer of tinygrad's CPU device (idempotent).

    CPUDevice passes its renderer list to `Compiled.__init__` and selects a renderer before its
    own constructor returns, so the list is extended where Compiled stores it."""
    from tinygrad.device import Compiled, Device
    from tinygrad.runtime.ops_cpu import CPUDevice
    init = Compiled.__init__
    if not getattr(init, "_kcc_registered", False):
        @functools.wraps(init)
        def __init__(self: Any, device: str, allocator: Any, renderers: list, *args: Any,
                     **kwargs: Any) -> None:
            if isinstance(self, CPUDevice) and KCCRenderer not in renderers:
                renderers = [*renderers, KCCRenderer]
            init(self, device, allocator, renderers, *args, **kwargs)
        __init__._kcc_registered = True       # type: ignore[attr-defined]
        Compiled.__init__ = __init__          # type: ignore[method-assign]
    for ix in list(getattr(Device, "_opened_devices", ())):
        if ix.split(":")[0] == "CPU":
            _add(Device[ix])


def capture(out_dir: str, **kwargs: Any) -> Any:
    """A context manager writing every tinygrad kernel that runs inside it to out_dir
    (see kcc.tinygrad.recording.Capture)."""
    from kcc.tinygrad.recording import Capture
    return Capture(out_dir, **kwargs)


def export(fn: Any, *example_inputs: Any, **kwargs: Any) -> Any:
    """A whole tinygrad computation as one ahead-of-time artifact (kcc.tinygrad.exporting.export;
    docs/export.md)."""
    from kcc.tinygrad.exporting import export as _export
    return _export(fn, *example_inputs, **kwargs)


register()
