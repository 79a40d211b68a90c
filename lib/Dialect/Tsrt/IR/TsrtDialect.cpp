//===- TsrtDialect.cpp - The tsrt dialect ---------------------------------===//
#include "tessera/Dialect/Tsrt/IR/TsrtDialect.h"
#include "tessera/Dialect/Tsrt/IR/TsrtOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"

using namespace mlir;
using namespace mlir::tsrt;

#include "tessera/Dialect/Tsrt/IR/TsrtDialect.cpp.inc"

MLIR_DEFINE_EXPLICIT_TYPE_ID(mlir::tsrt::CommunicatorResource)

void TsrtDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "tessera/Dialect/Tsrt/IR/TsrtOps.cpp.inc"
      >();
  declarePromisedInterfaces<bufferization::BufferizableOpInterface, AllReduceOp,
                            ReduceScatterOp, AllGatherOp, AllToAllOp,
                            BroadcastOp, WaitOp>();
}
