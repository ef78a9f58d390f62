"""Small CPU kernels as .uop text, shared by several test files (CLI, run, manifest, passes)."""

# A small CPU kernel with both kinds of scalar: a float32 with a declared range and an int8
# (range 0..8): out[i] = x[i] * s + float(k).
SCALE = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 16)
%x   = PARAM ParamArg(1, float32, 16)
%s   = PARAM ParamArg(2, float32, None, (-4.0, 4.0), addrspace=ALU)
%k   = PARAM ParamArg(3, int8, None, (0, 8), addrspace=ALU)
%i   = RANGE(16) (0, LOOP)    : weakint
%xi  = INDEX(%x, %i)
%xv  = LOAD(%xi)              : float32
%kf  = CAST(%k) float32
%m   = MUL(%xv, %s)           : float32
%v   = ADD(%m, %kf)           : float32
%oi  = INDEX(%out, %i)
%st  = STORE(%oi, %v)
%e   = END(%st, %i)
SINK(%e) KernelInfo(name="scale")
"""
# A second kernel for multi-kernel objects: out[i] = x[i] + 1.
INC = """# kcc-uop 1
%out = PARAM ParamArg(0, float32, 16)
%x   = PARAM ParamArg(1, float32, 16)
%i   = RANGE(16) (0, LOOP)    : weakint
%xi  = INDEX(%x, %i)
%xv  = LOAD(%xi)              : float32
%v   = ADD(%xv, 1.0)          : float32
%oi  = INDEX(%out, %i)
%st  = STORE(%oi, %v)
%e   = END(%st, %i)
SINK(%e) KernelInfo(name="inc")
"""


# tinygrad's triu on an 8 x 8 int32 matrix (the sweep's triu_int E_8_2_4): 8 x 2 iterations,
# an int4 store of 4 loads each gated by a compare of the counters (`(4*j + 1 < i + 1) != true`)
TRIU_TEXT = """# kcc-uop 1
%2 = PARAM ParamArg(0, int32, 64)
%3 = PARAM ParamArg(1, int32, 64)
%5 = CAST(true) bool
%7 = CAST(0) int32
%9 = CAST(1) int32
%11 = CAST(2) int32
%13 = CAST(3) int32
%15 = CAST(4) int32
%17 = CAST(8) int32
%18 = RANGE(%17) (0, WEAK)
%19 = ADD(%18, %9)
%20 = RANGE(%11, %18) (1, WEAK)
%21 = SHL(%20, %11)
%22 = MULACC(%18, %17, %21)
%23 = ADD(%22, %9)
%24 = INDEX(%3, %23)
%25 = MULACC(%20, %15, %9)
%26 = CMPLT(%25, %19)
%27 = CMPNE(%26, %5)
%28 = LOAD(%24, %7, %27)
%29 = ADD(%22, %11)
%30 = INDEX(%3, %29)
%31 = MULACC(%20, %15, %11)
%32 = CMPLT(%31, %19)
%33 = CMPNE(%32, %5)
%34 = LOAD(%30, %7, %33)
%35 = ADD(%22, %13)
%36 = INDEX(%3, %35)
%37 = MULACC(%20, %15, %13)
%38 = CMPLT(%37, %19)
%39 = CMPNE(%38, %5)
%40 = LOAD(%36, %7, %39)
%41 = INDEX(%3, %22)
%42 = CMPLT(%21, %19)
%43 = CMPNE(%42, %5)
%44 = LOAD(%41, %7, %43)
%45 = STACK(%44, %28, %34, %40)
%46 = SHRINK(%2, %22, %15)
%47 = STORE(%46, %45)
%48 = GROUP(%47)
%49 = END(%48, %20)
%50 = END(%49, %18)
SINK(%50) KernelInfo(name="E_8_2_4")
"""
