"""A thin libcuda (CUDA driver API) binding through ctypes: load a module, copy, launch.

Only the driver API is used (no runtime, no nvcc): cuInit, cuDeviceGet,
cuDevicePrimaryCtxRetain, cuCtxSetCurrent, cuModuleLoadData (a cubin, or NUL-terminated PTX
that the driver JIT-compiles), cuModuleGetFunction, cuMemAlloc_v2, cuMemcpyHtoD_v2,
cuMemcpyDtoH_v2, cuMemFree_v2, cuLaunchKernel with kernelParams, cuCtxSynchronize, and
cuGetErrorString for messages. A missing library or device raises `CudaUnavailable` with the
reason; a failing call raises `CudaError` naming the call and the driver's message.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from kcc.targets.gpu_runtime import load_library

CUresult = ctypes.c_int
CUdeviceptr = ctypes.c_uint64


class CudaUnavailable(Exception):
    """No usable CUDA driver or device on this machine (the message says which)."""


class CudaError(Exception):
    """A CUDA driver call that failed."""


_LIB_NAMES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")
_SCALAR_CTYPES = {"bool": ctypes.c_uint8, "int8": ctypes.c_int8, "uint8": ctypes.c_uint8,
                  "int16": ctypes.c_int16, "uint16": ctypes.c_uint16,
                  "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
                  "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
                  "float16": ctypes.c_uint16, "bfloat16": ctypes.c_uint16,
                  "float32": ctypes.c_float, "float64": ctypes.c_double}


def _load_lib() -> ctypes.CDLL:
    return load_library("KCC_LIBCUDA", _LIB_NAMES, "cuda", CudaUnavailable,
                        "libcuda (the NVIDIA driver library)")


class Driver:
    """The process-wide driver state: library, device 0, its primary context."""

    _instance: "Driver | None" = None

    @classmethod
    def get(cls) -> "Driver":
        """The shared driver (initialized once); CudaUnavailable when there is none."""
        if cls._instance is None:
            cls._instance = Driver()
        return cls._instance

    def __init__(self) -> None:
        self.lib = _load_lib()
        self._sig()
        r = self.lib.cuInit(0)
        if r != 0:
            raise CudaUnavailable(f"cuInit failed: {self.error_string(r)}")
        count = ctypes.c_int(0)
        r = self.lib.cuDeviceGetCount(ctypes.byref(count))
        if r != 0 or count.value == 0:
            raise CudaUnavailable("no CUDA device is present" if r == 0 else
                                  f"cuDeviceGetCount failed: {self.error_string(r)}")
        self.dev = ctypes.c_int(0)
        self.check(self.lib.cuDeviceGet(ctypes.byref(self.dev), 0), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), self.dev),
                   "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def _sig(self) -> None:
        L, p, vp = self.lib, ctypes.POINTER, ctypes.c_void_p
        for name, args in {
            "cuInit": [ctypes.c_uint], "cuDeviceGetCount": [p(ctypes.c_int)],
            "cuDeviceGet": [p(ctypes.c_int), ctypes.c_int],
            "cuDevicePrimaryCtxRetain": [p(vp), ctypes.c_int], "cuCtxSetCurrent": [vp],
            "cuModuleLoadData": [p(vp), vp], "cuModuleUnload": [vp],
            "cuModuleGetFunction": [p(vp), vp, ctypes.c_char_p],
            "cuMemAlloc_v2": [p(CUdeviceptr), ctypes.c_size_t], "cuMemFree_v2": [CUdeviceptr],
            "cuMemcpyHtoD_v2": [CUdeviceptr, vp, ctypes.c_size_t],
            "cuMemcpyDtoH_v2": [vp, CUdeviceptr, ctypes.c_size_t],
            "cuLaunchKernel": [vp] + [ctypes.c_uint] * 7 + [vp, p(vp), p(vp)],
            "cuCtxSynchronize": [], "cuGetErrorString": [CUresult, p(ctypes.c_char_p)],
            "cuDeviceGetAttribute": [p(ctypes.c_int), ctypes.c_int, ctypes.c_int],
        }.items():
            try:
                fn = getattr(L, name)
            except AttributeError:
                raise CudaUnavailable(f"libcuda lacks {name}") from None
            fn.argtypes = args
            fn.restype = CUresult

    def error_string(self, r: int) -> str:
        s = ctypes.c_char_p()
        if self.lib.cuGetErrorString(r, ctypes.byref(s)) == 0 and s.value:
            return f"{s.value.decode()} (CUresult {r})"
        return f"CUresult {r}"

    def check(self, r: int, what: str) -> None:
        """CudaError naming the call unless r is CUDA_SUCCESS."""
        if r != 0:
            raise CudaError(f"{what} failed: {self.error_string(r)}")

    def compute_capability(self) -> tuple[int, int]:
        """(major, minor) of device 0 (attributes 75 and 76)."""
        mj, mn = ctypes.c_int(), ctypes.c_int()
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(mj), 75, self.dev), "attr")
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(mn), 76, self.dev), "attr")
        return mj.value, mn.value

    # -- modules ---------------------------------------------------------------------------------
    def load_module(self, image: bytes) -> ctypes.c_void_p:
        """cuModuleLoadData on a cubin, or PTX text (NUL-terminated here)."""
        if not image.startswith(b"\x7fELF") and not image.endswith(b"\0"):
            image = image + b"\0"
        buf = ctypes.create_string_buffer(image, len(image))
        mod = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(mod), buf), "cuModuleLoadData")
        return mod

    def unload_module(self, mod: ctypes.c_void_p) -> None:
        self.check(self.lib.cuModuleUnload(mod), "cuModuleUnload")

    def function(self, mod: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()),
                   f"cuModuleGetFunction({name})")
        return fn

    # -- memory ----------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        p = CUdeviceptr()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(p), nbytes), "cuMemAlloc_v2")
        return p.value

    def free(self, ptr: int) -> None:
        self.check(self.lib.cuMemFree_v2(ptr), "cuMemFree_v2")

    def htod(self, ptr: int, arr: np.ndarray) -> None:
        a = np.ascontiguousarray(arr)
        if a.nbytes:
            self.check(self.lib.cuMemcpyHtoD_v2(ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD_v2")

    def dtoh(self, arr: np.ndarray, ptr: int) -> None:
        if not arr.flags.c_contiguous:
            raise CudaError("cuMemcpyDtoH_v2 needs a C-contiguous destination array")
        if arr.nbytes:
            self.check(self.lib.cuMemcpyDtoH_v2(arr.ctypes.data, ptr, arr.nbytes),
                       "cuMemcpyDtoH_v2")

    # -- launching -------------------------------------------------------------------------------
    def launch(self, fn: ctypes.c_void_p, grid: list[int], block: list[int],
               params: list[tuple[str, Any]], shared: int = 0) -> None:
        """cuLaunchKernel with kernelParams: one pointer per argument, in order.

        params: ("ptr", device address) or ("val", numpy scalar of the argument's dtype).
        """
        holders: list[Any] = []
        for kind, v in params:
            if kind == "ptr":
                holders.append(CUdeviceptr(v))
            else:
                a = np.asarray(v)
                name = "float16" if a.dtype == np.float16 else a.dtype.name
                ct = _SCALAR_CTYPES.get(name)
                if ct is None:
                    raise CudaError(f"no kernel parameter type for {a.dtype}")
                holders.append(ct.from_buffer_copy(a.tobytes()))
        arr = (ctypes.c_void_p * max(len(holders), 1))(
            *[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders])
        self.check(self.lib.cuLaunchKernel(fn, *grid, *block, shared, None, arr, None),
                   "cuLaunchKernel")

    def synchronize(self) -> None:
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")


def available() -> str | None:
    """None when a CUDA device can be used, else the reason it cannot."""
    try:
        Driver.get()
    except (CudaUnavailable, CudaError) as e:
        return str(e)
    return None
