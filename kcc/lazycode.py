"""Function bodies loaded when first called: the code a bundle (kcc/bundle.py) gives a module.

A small `kcc compile` loads ~1.8 MB of kcc's code and never calls ~40% of it (the passes' and
the x86 selector's paths for other kernels: bench/cold_code.py); unmarshalling code is a
quarter of the process's instructions above the interpreter's start (issue 24, item 4). Here
a module's code is rewritten for the bundle: each plain function or method of the module or
of its classes (not a closure, generator or coroutine, not a lambda or comprehension) that
no process has called yet becomes a stub of the same signature, name, first line and
docstring whose body is one call:

    def f(a, b, /, c, *args, d, **kw):
        return __kcc_lazy__(OFFSET, LENGTH)(a, b, c, *args, d=d, **kw)

`__kcc_lazy__` (kcc.bundle.lazy, a builtin while a bundle is installed) reads the function's
real code from the bundle file (OFFSET and LENGTH within the module's part of it), puts it in
place of the stub's on the function object (found in the module's namespace or its classes),
and returns the function to call. From then on the function is the one a `.pyc` import makes.
At exit the process notes the functions it called this way; the bundle's next version makes
them whole again ("eager"), so the stubs left are those of code no process has run.

Only the bundle's own loading (exec_module) sees stubs: `get_code` gives the module's code as
compiled, kept whole in the file beside them.
"""

from __future__ import annotations

import marshal

CodeType = type((lambda: None).__code__)

# co_flags (Include/cpython/code.h): a function whose frame is not a plain call's
_NOT_PLAIN = 0x0020 | 0x0080 | 0x0100 | 0x0200   # GENERATOR, COROUTINE, ITERABLE_COROUTINE,
_VARARGS, _VARKEYWORDS = 0x0004, 0x0008          # ASYNC_GENERATOR
_OPTIMIZED = 0x0001
_MIN_SIZE = 400         # a smaller function costs about what its stub does: kept whole

# a function's place in its module: (qualified name, first line)
Key = tuple[str, int]


def key(code: CodeType) -> Key:
    """Which function of its module code is (stable across processes and rewrites)."""
    return (code.co_qualname, code.co_firstlineno)


def _eligible(code: CodeType) -> bool:
    return bool(code.co_flags & _OPTIMIZED) and not code.co_flags & _NOT_PLAIN and \
        not code.co_freevars and not code.co_name.startswith("<")


def _is_class_body(code: CodeType) -> bool:
    # a class body runs in a namespace dict (no CO_OPTIMIZED), as a module's does
    return not code.co_flags & _OPTIMIZED and not code.co_name.startswith("<")


def _stub(code: CodeType, offset: int, length: int) -> CodeType:
    """The stub of code (above), whose real code is at offset, length bytes."""
    n_pos = code.co_argcount
    n_kw = code.co_kwonlyargcount
    names = code.co_varnames
    params = list(names[:n_pos])
    args = list(names[:n_pos])
    i = n_pos
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    if code.co_flags & _VARARGS:
        star = names[n_pos + n_kw]
        params.append("*" + star)
        args.append("*" + star)
    elif n_kw:
        params.append("*")
    params += names[i:i + n_kw]
    args += [f"{n}={n}" for n in names[i:i + n_kw]]
    if code.co_flags & _VARKEYWORDS:
        kw = names[n_pos + n_kw + bool(code.co_flags & _VARARGS)]
        params.append("**" + kw)
        args.append("**" + kw)
    source = (f"def {code.co_name}({', '.join(params)}):\n"
              f"    return __kcc_lazy__({offset}, {length})({', '.join(args)})\n")
    outer = compile(source, code.co_filename, "exec", dont_inherit=True)
    [stub] = [c for c in outer.co_consts if isinstance(c, CodeType)]
    doc = code.co_consts[0] if code.co_consts and isinstance(code.co_consts[0], str) else None
    # consts[0] is what a function's __doc__ is made from (Objects/funcobject.c); the stub's
    # body loads only its two numbers
    return stub.replace(co_consts=(doc,) + stub.co_consts[1:], co_name=code.co_name,
                        co_qualname=code.co_qualname, co_firstlineno=code.co_firstlineno,
                        co_filename=code.co_filename)


def _functions(code: CodeType, eager: frozenset[Key],
               out: list[tuple[CodeType, bytes]]) -> None:
    """The functions of code (a module's or a class body's) to stub, in order, into out, each
    with its marshal (marshalled once: its size decides, and it is the blob)."""
    for k in code.co_consts:
        if isinstance(k, CodeType):
            if _is_class_body(k):
                _functions(k, eager, out)
            elif _eligible(k) and key(k) not in eager:
                blob = marshal.dumps(k)
                if len(blob) >= _MIN_SIZE:
                    out.append((k, blob))


def _rebuild(code: CodeType, stubs: dict[int, CodeType]) -> CodeType:
    """code with each function of stubs (by identity) replaced by its stub."""
    consts = list(code.co_consts)
    changed = False
    for i, k in enumerate(consts):
        if not isinstance(k, CodeType):
            continue
        new = _rebuild(k, stubs) if _is_class_body(k) else stubs.get(id(k), k)
        if new is not k:
            consts[i] = new
            changed = True
    return code.replace(co_consts=tuple(consts)) if changed else code


def split(code: CodeType, eager: frozenset[Key]) -> tuple[CodeType, bytes]:
    """(the module code with stubs, the blobs of the stubbed functions' code): offsets in the
    stubs count from the start of the stubbed module's marshal, which the blobs follow."""
    funcs: list[tuple[CodeType, bytes]] = []
    _functions(code, eager, funcs)
    if not funcs:
        return code, b""
    # the stubs' offsets depend on the stubbed module's size, which depends on the offsets'
    # digits: stubs for a guess first, then again until the size is stable
    size = len(marshal.dumps(code))
    for _ in range(6):
        stubs, pos = {}, size
        for f, b in funcs:
            stubs[id(f)] = _stub(f, pos, len(b))
            pos += len(b)
        out = _rebuild(code, stubs)
        got = len(marshal.dumps(out))
        if got == size:
            return out, b"".join(b for _, b in funcs)
        size = got
    raise ValueError("stub offsets did not settle")
