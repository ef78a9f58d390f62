"""A thin libamdhip64 (HIP runtime, module API) binding through ctypes: load a code object,
copy, launch.

Calls: hipGetDeviceCount, hipSetDevice, hipModuleLoadData (an HSACO image),
hipModuleGetFunction, hipMalloc, hipMemcpy (host↔device), hipFree, hipModuleLaunchKernel with
the kernarg buffer passed through the `extra` array (HIP_LAUNCH_PARAM_BUFFER_POINTER,
HIP_LAUNCH_PARAM_BUFFER_SIZE, HIP_LAUNCH_PARAM_END), hipDeviceSynchronize, hipModuleUnload and
hipGetErrorString. A missing library or device raises `HipUnavailable` with the reason; a
failing call raises `HipError` naming the call and the runtime's message. The kernarg buffer
is laid out as kcc.isel.amd.select.kernarg_layout says (the offsets the manifest records).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from kcc.targets.gpu_runtime import load_library, with_device_buffers

# hip_runtime_api.h: the `extra` array's keys, and hipMemcpyKind
HIP_LAUNCH_PARAM_BUFFER_POINTER = 0x01
HIP_LAUNCH_PARAM_BUFFER_SIZE = 0x02
HIP_LAUNCH_PARAM_END = 0x03
HIP_MEMCPY_HOST_TO_DEVICE, HIP_MEMCPY_DEVICE_TO_HOST = 1, 2

_LIB_NAMES = ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
              "/opt/rocm/lib/libamdhip64.so")


class HipUnavailable(Exception):
    """No usable HIP runtime or AMD GPU on this machine (the message says which)."""


class HipError(Exception):
    """A HIP call that failed."""


def _load_lib() -> ctypes.CDLL:
    return load_library("KCC_LIBAMDHIP64", _LIB_NAMES, None, HipUnavailable,
                        "libamdhip64 (the ROCm HIP runtime)")


class Runtime:
    """The process-wide HIP state: the library and device 0."""

    _instance: "Runtime | None" = None

    @classmethod
    def get(cls) -> "Runtime":
        """The shared runtime; HipUnavailable when there is none."""
        if cls._instance is None:
            cls._instance = Runtime()
        return cls._instance

    def __init__(self) -> None:
        self.lib = _load_lib()
        self._sig()
        n = ctypes.c_int(0)
        r = self.lib.hipGetDeviceCount(ctypes.byref(n))
        if r != 0 or n.value == 0:
            raise HipUnavailable("no AMD GPU is present" if r == 0 else
                                 f"hipGetDeviceCount failed: {self.error_string(r)}")
        self.check(self.lib.hipSetDevice(0), "hipSetDevice")

    def _sig(self) -> None:
        L, p, vp, sz = self.lib, ctypes.POINTER, ctypes.c_void_p, ctypes.c_size_t
        for name, args in {
            "hipGetDeviceCount": [p(ctypes.c_int)], "hipSetDevice": [ctypes.c_int],
            "hipModuleLoadData": [p(vp), vp], "hipModuleUnload": [vp],
            "hipModuleGetFunction": [p(vp), vp, ctypes.c_char_p],
            "hipMalloc": [p(vp), sz], "hipFree": [vp],
            "hipMemcpy": [vp, vp, sz, ctypes.c_int],
            "hipModuleLaunchKernel": [vp] + [ctypes.c_uint] * 7 + [vp, p(vp), p(vp)],
            "hipDeviceSynchronize": [],
        }.items():
            try:
                fn = getattr(L, name)
            except AttributeError:
                raise HipUnavailable(f"libamdhip64 lacks {name}") from None
            fn.argtypes = args
            fn.restype = ctypes.c_int
        fn = getattr(L, "hipGetErrorString", None)
        if fn is not None:
            fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_char_p

    def error_string(self, r: int) -> str:
        fn = getattr(self.lib, "hipGetErrorString", None)
        s = fn(r) if fn is not None else None
        return f"{s.decode()} (hipError_t {r})" if s else f"hipError_t {r}"

    def check(self, r: int, what: str) -> None:
        """HipError naming the call unless r is hipSuccess."""
        if r != 0:
            raise HipError(f"{what} failed: {self.error_string(r)}")

    def load_module(self, image: bytes) -> tuple[ctypes.c_void_p, Any]:
        buf = ctypes.create_string_buffer(image, len(image))
        mod = ctypes.c_void_p()
        self.check(self.lib.hipModuleLoadData(ctypes.byref(mod), buf), "hipModuleLoadData")
        return mod, buf

    def function(self, mod: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.check(self.lib.hipModuleGetFunction(ctypes.byref(fn), mod, name.encode()),
                   f"hipModuleGetFunction({name})")
        return fn

    def alloc(self, nbytes: int) -> int:
        p = ctypes.c_void_p()
        self.check(self.lib.hipMalloc(ctypes.byref(p), nbytes), "hipMalloc")
        return p.value or 0

    def free(self, ptr: int) -> None:
        self.check(self.lib.hipFree(ptr), "hipFree")

    def htod(self, ptr: int, arr: np.ndarray) -> None:
        a = np.ascontiguousarray(arr)
        if a.nbytes:
            self.check(self.lib.hipMemcpy(ptr, a.ctypes.data, a.nbytes,
                                          HIP_MEMCPY_HOST_TO_DEVICE), "hipMemcpy")

    def dtoh(self, arr: np.ndarray, ptr: int) -> None:
        if not arr.flags.c_contiguous:
            raise HipError("hipMemcpy needs a C-contiguous destination array")
        if arr.nbytes:
            self.check(self.lib.hipMemcpy(arr.ctypes.data, ptr, arr.nbytes,
                                          HIP_MEMCPY_DEVICE_TO_HOST), "hipMemcpy")

    def launch(self, fn: ctypes.c_void_p, grid: list[int], block: list[int],
               kernarg: bytes, lds: int = 0) -> None:
        """hipModuleLaunchKernel with the packed kernarg buffer in `extra`."""
        buf = ctypes.create_string_buffer(kernarg, max(len(kernarg), 1))
        size = ctypes.c_size_t(len(kernarg))
        extra = (ctypes.c_void_p * 5)(HIP_LAUNCH_PARAM_BUFFER_POINTER,
                                      ctypes.cast(buf, ctypes.c_void_p),
                                      HIP_LAUNCH_PARAM_BUFFER_SIZE,
                                      ctypes.cast(ctypes.byref(size), ctypes.c_void_p),
                                      HIP_LAUNCH_PARAM_END)
        self.check(self.lib.hipModuleLaunchKernel(fn, *grid, *block, lds, None, None, extra),
                   "hipModuleLaunchKernel")

    def synchronize(self) -> None:
        self.check(self.lib.hipDeviceSynchronize(), "hipDeviceSynchronize")


def pack_kernarg(desc: Any, values: list[Any], pointers: dict[int, int]) -> bytes:
    """The kernarg segment: each argument at the manifest's offset (a buffer's device address,
    a scalar's bytes in the low bytes of its slot)."""
    facts = desc.target["amd"]
    out = bytearray(facts["kernarg_size"])
    for a, v, off in zip(desc.args, values, facts["kernarg_offsets"]):
        if a.kind == "buffer":
            out[off:off + 8] = int(pointers[a.slot]).to_bytes(8, "little")
        else:
            raw = np.asarray(v).tobytes()
            out[off:off + len(raw)] = raw
    return bytes(out)


def launch_hip(image: bytes, desc: Any, values: list[Any]) -> None:
    """Run one kernel of a code object: copy buffers in, launch grid × block, copy the written
    buffers back into the caller's arrays (values normalized by manifest.check_launch)."""
    rt = Runtime.get()
    mod, keep = rt.load_module(image)
    fn = rt.function(mod, desc.name)

    def run(pointers: dict[int, int]) -> None:
        grid, block = desc.launch_dims(values)     # symbolic sizes: evaluated per launch
        if 0 not in grid:                          # a dimension of 0 launches nothing
            rt.launch(fn, grid, block, pack_kernarg(desc, values, pointers))
            rt.synchronize()
    try:
        with_device_buffers(rt, desc, values, run)
    finally:
        rt.check(rt.lib.hipModuleUnload(mod), "hipModuleUnload")
        del keep


def available() -> str | None:
    """None when an AMD GPU can be used through HIP, else the reason it cannot."""
    try:
        Runtime.get()
    except (HipUnavailable, HipError) as e:
        return str(e)
    return None
