"""A small 3×3 conv2d kernel written the way tinygrad 0.14 writes its conv2d
(r_4_16_56_14_2_4_4_32_3_3): a REG accumulator of 16 floats (4 output columns × 4 output
channels, element 4·x + c), zeroed, then a REDUCE loop over the input channels whose body
loads three input rows (4 lanes each, the outer two gated by the row's padding), the scalar
left and right neighbours of each row (gated by the column's and the row's padding), the
36 weights as scalar loads (w[c·CS + r·9 + t], lanes c at stride CS), and adds, lane by lane,
nine products to each accumulator element; the output columns are stored as 4-lane vectors
of one channel after the loop.

out[c, oy, 4g + x] = Σ_r Σ_ky Σ_kx in[r, oy + ky - 1, 4g + x + kx - 1] · w[c, r, ky, kx]
(zero outside the image), image H × W with W = 4·G.
"""

from __future__ import annotations


def conv_kernel(h: int = 3, groups: int = 3, ci: int = 2, name: str = "conv") -> str:
    """The kernel's .uop text: h rows, 4·groups columns, ci input channels, 4 outputs."""
    w = 4 * groups
    cs = ci * 9                                   # the stride of one output channel's weights
    t = ["# kcc-uop 1", f"%y = PARAM ParamArg(0, float32, {4 * h * w})",
         f"%x = PARAM ParamArg(1, float32, {ci * h * w})",
         f"%w = PARAM ParamArg(2, float32, {4 * cs})",
         "%acc = BUFFER ParamArg(0, float32, 16, addrspace=REG)",
         "%z = CAST(0.0) float32", "%z4 = STACK(%z, %z, %z, %z)",
         f"%oy = RANGE({h}) (1, LOOP)", f"%g = RANGE({groups}, %oy) (2, LOOP)",
         "%x0 = SHL(%g, 2)", "%top = CMPLT(0, %oy)", f"%bot = CMPLT(%oy, {h - 1})",
         "%lft = CMPLT(0, %g)", f"%rgt = CMPLT(%g, {groups - 1})",
         "%init = AFTER(%acc, %g, %oy)"]
    t += [f"%i{e} = INDEX(%init, {e})" for e in range(16)]
    t += [f"%s{e} = STORE(%i{e}, %z)" for e in range(16)]
    t += [f"%r = RANGE({ci}, %g) (0, REDUCE)", f"%rb = MUL(%r, {h * w})",
          f"%yb = MUL(%oy, {w})", "%b0 = ADD(%rb, %yb)", "%b = ADD(%b0, %x0)",
          "%wb = MUL(%r, 9)"]
    gates = {0: "%top", 1: None, 2: "%bot"}
    for ky in range(3):
        off = (ky - 1) * w
        rg = gates[ky]
        t.append(f"%ro{ky} = ADD(%b, {off})" if off else f"%ro{ky} = ADD(%b, 0)")
        t.append(f"%rp{ky} = SHRINK(%x, %ro{ky}, 4)")
        t.append(f"%row{ky} = LOAD(%rp{ky}, %z4, {rg})" if rg else
                 f"%row{ky} = LOAD(%rp{ky})")
        t += [f"%v{ky}_{j} = INDEX(%row{ky}, {j})" for j in range(4)]
        for side, d, cg in (("l", off - 1, "%lft"), ("r", off + 4, "%rgt")):
            g = cg
            if rg:
                t.append(f"%g{side}{ky} = AND({rg}, {cg})")
                g = f"%g{side}{ky}"
            t += [f"%o{side}{ky} = ADD(%b, {d})", f"%p{side}{ky} = INDEX(%x, %o{side}{ky})",
                  f"%{side}{ky} = LOAD(%p{side}{ky}, %z, {g})"]
    for c in range(4):
        for k in range(9):
            t += [f"%wo{c}_{k} = ADD(%wb, {c * cs + k})", f"%wp{c}_{k} = INDEX(%w, %wo{c}_{k})",
                  f"%w{c}_{k} = LOAD(%wp{c}_{k})"]
    deps = ", ".join(f"%s{e}" for e in range(16))
    t.append(f"%cur = AFTER(%acc, {deps}, %r)")
    stores = []
    for x in range(4):
        for c in range(4):
            e = 4 * x + c
            t += [f"%ci{e} = INDEX(%cur, {e})", f"%a{e} = LOAD(%ci{e})"]
            terms = []
            for ky in range(3):
                for kx in range(3):
                    col = x + kx - 1
                    src = f"%l{ky}" if col < 0 else f"%r{ky}" if col > 3 else f"%v{ky}_{col}"
                    m = f"%m{e}_{ky}{kx}"
                    t.append(f"{m} = MUL({src}, %w{c}_{3 * ky + kx})")
                    terms.append(m)
            acc = terms[0]
            for k, m in enumerate(terms[1:], 1):
                t.append(f"%q{e}_{k} = ADD({acc}, {m})")
                acc = f"%q{e}_{k}"
            t += [f"%n{e} = ADD(%a{e}, {acc})", f"%u{e} = STORE(%ci{e}, %n{e})"]
            stores.append(f"%u{e}")
    t += [f"%grp = GROUP({', '.join(stores)})", "%er = END(%grp, %r)",
          "%fin = AFTER(%acc, %er)"]
    outs = []
    for c in range(4):
        lanes = []
        for x in range(4):
            e = 4 * x + c
            t += [f"%fi{e} = INDEX(%fin, {e})", f"%f{e} = LOAD(%fi{e})"]
            lanes.append(f"%f{e}")
        t += [f"%o{c} = STACK({', '.join(lanes)})", f"%yo{c}a = MUL(%oy, {w})",
              f"%yo{c}b = ADD(%yo{c}a, %x0)", f"%yo{c} = ADD(%yo{c}b, {c * h * w})",
              f"%yp{c} = SHRINK(%y, %yo{c}, 4)", f"%ys{c} = STORE(%yp{c}, %o{c})"]
        outs.append(f"%ys{c}")
    t += [f"%og = GROUP({', '.join(outs)})", "%eg = END(%og, %g)", "%eo = END(%eg, %oy)",
          f'SINK(%eo) KernelInfo(name="{name}")']
    return "\n".join(t) + "\n"
