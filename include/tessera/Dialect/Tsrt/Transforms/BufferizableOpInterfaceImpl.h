//===- BufferizableOpInterfaceImpl.h - Bufferization of tsrt ----*- C++ -*-===//
#ifndef TESSERA_DIALECT_TSRT_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define TESSERA_DIALECT_TSRT_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace tsrt {
/// Registers one-shot bufferization's model of the tsrt collectives and of
/// tsrt.wait (the dialect promises it: a context that loads tsrt without it
/// stops at the first bufferization query).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace tsrt
} // namespace mlir

#endif // TESSERA_DIALECT_TSRT_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
