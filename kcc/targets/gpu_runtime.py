"""What the CUDA and HIP loaders share: finding the vendor library through ctypes, and running
one kernel with its buffers copied to the device and the written ones copied back.

Each loader (kcc/targets/cuda/driver.py, kcc/targets/amd/hip_driver.py) wraps its own API calls;
a runtime passed here needs only alloc/free/htod/dtoh, which both provide.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any, Callable, Protocol

import numpy as np


class DeviceMemory(Protocol):
    """The part of a GPU runtime that moves buffers (both loaders' runtimes have it)."""

    def alloc(self, nbytes: int) -> int: ...
    def free(self, ptr: int) -> None: ...
    def htod(self, ptr: int, arr: np.ndarray) -> None: ...
    def dtoh(self, arr: np.ndarray, ptr: int) -> None: ...


def load_library(override_env: str, names: tuple[str, ...], find: str | None,
                 unavailable: type[Exception], what: str) -> ctypes.CDLL:
    """The first of `names` that loads. The environment variable `override_env` names the
    library explicitly instead (a non-standard install, or the recording stand-in the tests
    build to check a loader without a GPU); `find` is also tried through
    ctypes.util.find_library. Raises `unavailable` naming `what` when none loads."""
    override = os.environ.get(override_env)
    candidates = [override] if override else list(names)
    found = ctypes.util.find_library(find) if find and not override else None
    if found:
        candidates.append(found)
    errors = []
    for n in candidates:
        try:
            return ctypes.CDLL(n)
        except OSError as e:
            errors.append(str(e))
    raise unavailable(f"{what} was not found: " + "; ".join(errors[:2]))


def with_device_buffers(rt: DeviceMemory, desc: Any, values: list[Any],
                        run: Callable[[dict[int, int]], None]) -> None:
    """Copy each buffer argument of `desc` to the device, call run(slot → device address),
    copy the buffers the kernel writes back into the caller's arrays, free them all (also
    when run raises). `values` are normalized by manifest.check_launch."""
    ptrs: list[tuple[int, np.ndarray, bool]] = []
    pointers: dict[int, int] = {}
    try:
        for a, v in zip(desc.args, values):
            if a.kind == "buffer":
                dptr = rt.alloc(max(v.nbytes, 1))
                ptrs.append((dptr, v, "w" in a.access))
                pointers[a.slot] = dptr
                rt.htod(dptr, v)
        run(pointers)
        for dptr, v, written in ptrs:
            if written:
                rt.dtoh(v, dptr)
    finally:
        for dptr, _, _ in ptrs:
            rt.free(dptr)
