//===- BufferizableOpInterfaceImpl.h - Bufferization of tsr -----*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSR_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define TESSERA_DIALECT_TSR_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace tsr {
/// Registers one-shot bufferization's model of tsr.remat_barrier, the one
/// tsr op that lowering leaves to bufferization (its result is its
/// operand's buffer).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace tsr
} // namespace mlir

#endif // TESSERA_DIALECT_TSR_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
