//===- TsrInterfaces.td - Interfaces of tsr ops -------------*- tablegen -*-===//
#ifndef TESSERA_DIALECT_TSR_TSRINTERFACES_TD
#define TESSERA_DIALECT_TSR_TSRINTERFACES_TD

include "mlir/IR/OpBase.td"

def Tsr_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::tsr";
  let description = [{
    The static cost of one execution of an op, the input of Tessera's cost
    model (remat, pipeline split and sharding decisions all read it). FLOPs
    count multiply and add separately; bytes count every operand read once
    and every result written once.
  }];
  let methods = [
    InterfaceMethod<"Floating-point (or integer) operations of one execution.",
      "int64_t", "getFlops", (ins), [{}], [{
        return ::mlir::tsr::detail::defaultFlops($_op);
      }]>,
    InterfaceMethod<"Bytes read and written by one execution.",
      "int64_t", "getBytesAccessed", (ins), [{}], [{
        return ::mlir::tsr::detail::defaultBytesAccessed($_op);
      }]>,
  ];
}

def Tsr_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::tsr";
  let description = [{
    The gradient rule of an op, used by reverse-mode autodiff. Given the
    adjoints of the op's results (null for results that do not reach the
    loss), `buildGradients` emits tsr ops computing the adjoint of every
    differentiable operand (null for the others) at the builder's insertion
    point. Broadcast operands receive adjoints already reduced to their own
    shape.
  }];
  let methods = [
    InterfaceMethod<"Whether operand `index` carries a gradient.",
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), [{}], [{
        return ::mlir::isa<::mlir::FloatType>(
            ::mlir::getElementTypeOrSelf($_op->getOperand(index).getType()));
      }]>,
    InterfaceMethod<"Emit the adjoints of the operands.",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def Tsr_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::tsr";
  let description = [{
    The sharding rule of an op as data: an einsum-like mapping from named
    factors to tensor dimensions (`ij,jk->ik` for matmul, with `j` a
    reduction factor), from which sharding propagation derives which shardings
    are legal, which need a collective and which leave a partial sum.
  }];
  let methods = [
    InterfaceMethod<"The factor mapping, e.g. `ij,jk->ik`; empty if the op "
                    "must be replicated.",
      "std::string", "getShardingRule", (ins)>,
  ];
}

#endif // TESSERA_DIALECT_TSR_TSRINTERFACES_TD
