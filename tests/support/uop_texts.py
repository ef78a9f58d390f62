"""Small CPU kernels as .uop text, shared by the CLI, run and manifest tests."""

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
