"""The UOp IR: nodes, dtypes, the one type rule table, patterns and graph rewriting."""

from kcc.ir.dtype import DType, dtypes, promote
from kcc.ir.ops import Ops
from kcc.ir.pattern import PatternMatcher, UPat, graph_rewrite
from kcc.ir.rules import IRError, dtype_of, fmt_utype, utype_of
from kcc.ir.uop import AddrSpace, AxisType, KernelInfo, ParamArg, UOp, UType, toposort

__all__ = ["DType", "dtypes", "promote", "Ops", "PatternMatcher", "UPat", "graph_rewrite",
           "IRError", "dtype_of", "fmt_utype", "utype_of", "AddrSpace", "AxisType", "KernelInfo",
           "ParamArg", "UOp", "UType", "toposort"]
