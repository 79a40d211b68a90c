// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-emulate{order=sideways}))" --split-input-file --verify-diagnostics

// expected-error @+1 {{tsr-gpu-emulate: order 'sideways' is not one of forward, reverse, shuffle}}
func.func @order() {
  return
}
