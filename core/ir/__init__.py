"""The HPVM IR: types, kernel IR, the dataflow graph, tensor ops, text form,
verifier."""
from .graph import (
    EDGE_KINDS, FORMAT_VERSION, BindIn, BindOut, ConstantBody, Edge, Graph,
    GraphBody, KernelBody, Module, Node, TensorBody,
)
from .kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, Binary, Call, Cast, Compare,
    Const, Expr, ExprStmt, For, If, InstanceCount, InstanceId, Intrinsic,
    KernelFunction, Let, Load, Return, Select, Stmt, Store, Unary, Var, While,
)
from .parameter import DIRECTIONS, Parameter
from .types import (
    BOOL, F16, F32, F64, I8, I16, I32, I64, SCALAR_TYPES, U8, U16, U32, U64,
    BufferType, ScalarType, scalar_type_of_dtype,
)
