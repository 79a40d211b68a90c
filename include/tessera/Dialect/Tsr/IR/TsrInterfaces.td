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
    The sharding rule of an op as data (`ShardingRule`, TsrInterfaces.h):
    every operand and result dimension as a product of factors, each factor
    parallel (it indexes the result: split it and every rank computes its
    block), reduction (summed over: split it and every rank holds a partial
    sum) or replicated (it cannot be split: a softmax's axis, a normalized
    dimension). Matmul [m, k] x [k, n] -> [m, n] has factors m, n parallel
    and k reduction; a reshape [b, 768] -> [b, 12, 64] has factors b, 12, 64
    with operand dimension 1 the compound 12·64. Sharding propagation
    derives from it which shardings are legal, which need a collective and
    which leave a partial sum; the partition rewrites an op whose rule holds
    as the same op on its blocks. Ops without the interface that are
    `Elementwise` get the elementwise rule (numpy broadcasting); any other
    op is replicated. The upstream `shard` dialect's `ShardingInterface`
    says the same with loop iterator types and indexing maps, which cannot
    express a reshape's compound dimensions (Shardy's factor form can).
  }];
  let methods = [
    InterfaceMethod<"The rule; fails (with an error) if the op's types do "
                    "not allow one.",
      "::mlir::FailureOr<::mlir::tsr::ShardingRule>", "getShardingRule",
      (ins)>,
  ];
}

#endif // TESSERA_DIALECT_TSR_TSRINTERFACES_TD
