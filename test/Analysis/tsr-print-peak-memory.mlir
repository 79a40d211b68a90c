// RUN: tessera-opt %s -split-input-file --tsr-print-peak-memory -verify-diagnostics -o /dev/null

// A buffer lives from its op to its last use; a reshape is a view of its
// operand (it keeps the matmul's buffer alive until the neg reads it); the
// returned value lives to the end. At the neg, the matmul's 256 bytes and
// the neg's 256 are live: the peak. Arguments are the caller's.
// expected-remark @+1 {{predicted peak 512 bytes at 'tsr.neg' (2 buffers live)}}
func.func @views(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<64xf32> {
  %e = tsr.exp %x : tensor<4x8xf32>
  // expected-note @+1 {{256 bytes: tsr.matmul}}
  %m = tsr.matmul %e, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %r = tsr.reshape %m : tensor<4x16xf32> to tensor<64xf32>
  // expected-note @+1 {{256 bytes: tsr.neg}}
  %n = tsr.neg %r : tensor<64xf32>
  return %n : tensor<64xf32>
}

// -----

// An elementwise op with one elementwise user is fused into it: the exp
// gets no buffer, and its operand (the matmul's result) is read where the
// add runs. Constants are globals.
// expected-remark @+1 {{predicted peak 512 bytes at 'tsr.add' (2 buffers live)}}
func.func @fusion(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{256 bytes: tsr.matmul}}
  %m = tsr.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %e = tsr.exp %m : tensor<4x16xf32>
  %c = tsr.constant dense<1.0> : tensor<4x16xf32>
  // expected-note @+1 {{256 bytes: tsr.add}}
  %a = tsr.add %e, %c : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %a : tensor<4x16xf32>
}

// -----

// A function that allocates nothing.
// expected-remark @+1 {{predicted peak 0 bytes}}
func.func @nothing(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
