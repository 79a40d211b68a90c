// RUN: tessera-opt %s -split-input-file --tsr-print-peak-memory -verify-diagnostics -o /dev/null
// RUN: tessera-opt %s -split-input-file --tsr-print-peak-memory=buffer-padding=0 -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPAD
// RUN: not tessera-opt %s -split-input-file --tsr-print-peak-memory=buffer-padding=-8 -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// Every figure below is what tsr-cpu-memory-plan computes on the same
// function lowered for the CPU target (the allocator's count): the
// prediction models the lowering exactly on these.

// NEGATIVE: error: tsr-print-peak-memory: buffer-padding must not be negative (got -8)

// A buffer lives from its op to its last use; a reshape is a view of its
// operand (it keeps the matmul's buffer alive until the neg reads it); the
// returned value is written into the caller's out-parameter
// (tsr-results-to-out-params), so the neg allocates nothing. At the
// matmul, the exp's 128 bytes and the matmul's 256 are live, each with the
// 64 bytes the allocator adds to an aligned buffer: the peak. Arguments
// are the caller's.
// NOPAD: remark: predicted peak 384 bytes at 'tsr.matmul' (2 buffers live, 0 bytes of allocator padding)
// expected-remark @+1 {{predicted peak 512 bytes at 'tsr.matmul' (2 buffers live, 128 bytes of allocator padding)}}
func.func @views(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<64xf32> {
  // expected-note @+1 {{128 bytes: tsr.exp}}
  %e = tsr.exp %x : tensor<4x8xf32>
  // expected-note @+1 {{256 bytes: tsr.matmul}}
  %m = tsr.matmul %e, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %r = tsr.reshape %m : tensor<4x16xf32> to tensor<64xf32>
  %n = tsr.neg %r : tensor<64xf32>
  return %n : tensor<64xf32>
}

// -----

// An elementwise op with one elementwise user is fused into it: the exp
// gets no buffer, and its operand (the matmul's result) is read where the
// add runs, which writes the result's out-parameter. Constants are
// globals.
// expected-remark @+1 {{predicted peak 320 bytes at 'tsr.matmul' (1 buffer live, 64 bytes of allocator padding)}}
func.func @fusion(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-note @+1 {{256 bytes: tsr.matmul}}
  %m = tsr.matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  %e = tsr.exp %m : tensor<4x16xf32>
  %c = tsr.constant dense<1.0> : tensor<4x16xf32>
  %a = tsr.add %e, %c : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %a : tensor<4x16xf32>
}

// -----

// A function that allocates nothing.
// expected-remark @+1 {{predicted peak 0 bytes}}
func.func @nothing(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A convolution runs as its lowering's steps: pad x (2·3·10·10 floats),
// gather the im2col columns [3·9, 2·8·8] from the padded copy, multiply by
// the weights into the GEMM result [4, 2·8·8], then add the bias into the
// result [2, 4, 8, 8]. The peak is the gather, with the padded copy and the
// columns live: 2400 + 13824 bytes, 64 more each.
// expected-remark @+1 {{predicted peak 16352 bytes at 'tsr.conv' (2 buffers live, 128 bytes of allocator padding)}}
func.func @conv(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x8x8xf32> {
  // expected-note @+2 {{13824 bytes: tsr.conv scratch (im2col columns)}}
  // expected-note @+1 {{2400 bytes: tsr.conv scratch (padded input)}}
  %y = tsr.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// -----

// A convolution's training step: forward, sum(relu(y)) as the loss, and
// the gradients of the weights and the bias. The relu is fused into the
// loss's reduction, the greater into the where. The peak is in the weight
// gradient, which gathers the transposed im2col columns of x (13824 bytes)
// and transposes dy by group (2048) before its GEMM: the scratch the tsr
// program does not show is 85% of it. The conv's own scratch died with its
// step, and the results are the caller's.
// expected-remark @+1 {{predicted peak 18112 bytes at 'tsr.conv_backward_filter' (3 buffers live, 192 bytes of allocator padding)}}
func.func @conv_step(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> (tensor<f32>, tensor<4x3x3x3xf32>, tensor<4xf32>) {
  %y = tsr.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %r = tsr.relu %y : tensor<2x4x8x8xf32>
  %l = tsr.reduce_sum %r {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x4x8x8xf32>) -> tensor<f32>
  %zero = tsr.constant dense<0.0> : tensor<f32>
  %one = tsr.constant dense<1.0> : tensor<f32>
  %pos = tsr.greater %y, %zero : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xi1>
  // expected-note @+1 {{2048 bytes: tsr.where}}
  %dy = tsr.where %pos, %one, %zero : tensor<2x4x8x8xi1>, tensor<f32>, tensor<f32> -> tensor<2x4x8x8xf32>
  // expected-note @+2 {{13824 bytes: tsr.conv_backward_filter scratch (im2col columns)}}
  // expected-note @+1 {{2048 bytes: tsr.conv_backward_filter scratch (dy by group)}}
  %dw = tsr.conv_backward_filter %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  %db = tsr.reduce_sum %dy {axes = array<i64: 0, 2, 3>, keepdims = false} : (tensor<2x4x8x8xf32>) -> tensor<4xf32>
  return %l, %dw, %db : tensor<f32>, tensor<4x3x3x3xf32>, tensor<4xf32>
}

// -----

// Both gradients of one dy transpose it by group alike; CSE keeps the first
// transposition, which the data gradient makes: one buffer, live until the
// weight gradient's GEMM reads it. The peak is the data gradient's scratch
// (the results are the caller's).
// expected-remark @+1 {{predicted peak 16496 bytes at 'tsr.conv_backward_data' (3 buffers live, 192 bytes of allocator padding)}}
func.func @conv_grads(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) {
  // expected-note @+3 {{13824 bytes: tsr.conv_backward_data scratch (column gradients)}}
  // expected-note @+2 {{2048 bytes: tsr.conv_backward_data scratch (dy by group)}}
  // expected-note @+1 {{432 bytes: tsr.conv_backward_data scratch (transposed weights)}}
  %dx = tsr.conv_backward_data %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  %dw = tsr.conv_backward_filter %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return %dx, %dw : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
}

// -----

// The exp has two users, but both end up in the sub's loop nest (the neg
// is fused into the sub, which then reads the exp twice): it is fused too,
// and the sub writes its out-parameter, which the caller allocates.
// expected-remark @+1 {{predicted peak 0 bytes}}
func.func private @half(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tsr.exp %x : tensor<4x8xf32>
  %n = tsr.neg %e : tensor<4x8xf32>
  %s = tsr.sub %n, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// A call holds what its callee holds at its peak (here nothing). The
// caller allocates the callee's results before the call, unaligned (no
// padding), and copies them into its own out-parameters; an argument whose buffer does not start at its first element
// (the second half of %x) is copied first, since functions take row-major
// buffers.
// expected-remark @+1 {{predicted peak 448 bytes at 'func.call' (3 buffers live, 64 bytes of allocator padding)}}
func.func @calls(%x: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = tsr.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 4, 8>, steps = array<i64: 1, 1>} : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = tsr.slice %x {starts = array<i64: 4, 0>, limits = array<i64: 8, 8>, steps = array<i64: 1, 1>} : (tensor<8x8xf32>) -> tensor<4x8xf32>
  // expected-note @+1 {{128 bytes: func.call}}
  %ya = call @half(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-note @+2 {{128 bytes: func.call scratch (row-major argument)}}
  // expected-note @+1 {{128 bytes: func.call}}
  %yb = call @half(%b) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %ya, %yb : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Two convolutions of one input with the same geometry gather the same
// im2col columns, which CSE shares: the first convolution's columns stay
// live through its bias step until the second's GEMM reads them, and the
// second pads nothing (the results are the caller's).
// expected-remark @+1 {{predicted peak 12544 bytes at 'tsr.conv' (2 buffers live, 128 bytes of allocator padding)}}
func.func @two_convs(%x: tensor<2x4x6x6xf32>, %w: tensor<6x4x3x3xf32>, %v: tensor<5x4x3x3xf32>) -> (tensor<2x6x6x6xf32>, tensor<2x5x6x6xf32>) {
  // expected-note @+2 {{10368 bytes: tsr.conv scratch (im2col columns)}}
  // expected-note @+1 {{2048 bytes: tsr.conv scratch (padded input)}}
  %y = tsr.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x4x6x6xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
  %z = tsr.conv %x, %v {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x4x6x6xf32>, tensor<5x4x3x3xf32>) -> tensor<2x5x6x6xf32>
  return %y, %z : tensor<2x6x6x6xf32>, tensor<2x5x6x6xf32>
}

// -----

// MaxPoolGrad finds each window's maximum and argmax (i64) in one
// reduction, then routes dy by argmax into dx, the caller's buffer: the
// peak holds the maxima and the argmax.
// expected-remark @+1 {{predicted peak 1664 bytes at 'tsr.max_pool_grad' (2 buffers live, 128 bytes of allocator padding)}}
func.func @max_pool_grad(%x: tensor<2x4x8x8xf32>, %dy: tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32> {
  // expected-note @+2 {{1024 bytes: tsr.max_pool_grad scratch (window argmax)}}
  // expected-note @+1 {{512 bytes: tsr.max_pool_grad scratch (window maxima)}}
  %dx = tsr.max_pool_grad %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32>
  return %dx : tensor<2x4x8x8xf32>
}

// -----

// A slice with positive steps is a strided view of its operand, which it
// keeps alive; a reshape that joins dimensions that are not contiguous in
// the view cannot be one, and bufferization copies it (here into the
// caller's out-parameter, as the neg writes its own).
// expected-remark @+1 {{predicted peak 1600 bytes at 'tsr.exp' (1 buffer live, 64 bytes of allocator padding)}}
func.func @slices(%x: tensor<4x8x12xf32>) -> (tensor<4x8x4xf32>, tensor<4x32xf32>) {
  // expected-note @+1 {{1536 bytes: tsr.exp}}
  %e = tsr.exp %x : tensor<4x8x12xf32>
  %a = tsr.slice %e {starts = array<i64: 0, 0, 0>, limits = array<i64: 4, 8, 4>, steps = array<i64: 1, 1, 1>} : (tensor<4x8x12xf32>) -> tensor<4x8x4xf32>
  %b = tsr.slice %e {starts = array<i64: 0, 0, 4>, limits = array<i64: 4, 8, 8>, steps = array<i64: 1, 1, 1>} : (tensor<4x8x12xf32>) -> tensor<4x8x4xf32>
  %n = tsr.neg %a : tensor<4x8x4xf32>
  %r = tsr.reshape %b : tensor<4x8x4xf32> to tensor<4x32xf32>
  return %n, %r : tensor<4x8x4xf32>, tensor<4x32xf32>
}

// -----

// linalg folds a transpose of a transpose into one of the inner operand:
// here the identity, so %back is %w and %t dies at the first matmul, which
// writes its out-parameter.
// expected-remark @+1 {{predicted peak 832 bytes at 'tsr.transpose' (3 buffers live, 192 bytes of allocator padding)}}
func.func @transpose_twice(%w: tensor<8x16xf32>, %x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
  %t = tsr.transpose %w {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = tsr.matmul %x, %t : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  // expected-note @+1 {{128 bytes: tsr.exp}}
  %e = tsr.exp %y : tensor<4x8xf32>
  %back = tsr.transpose %t {perm = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  // expected-note @+1 {{256 bytes: tsr.matmul}}
  %g = tsr.matmul %e, %back : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  // expected-note @+1 {{256 bytes: tsr.transpose}}
  %gt = tsr.transpose %g {perm = array<i64: 1, 0>} : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %d = tsr.matmul %gt, %e : tensor<16x4xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
  return %y, %d : tensor<4x8xf32>, tensor<16x8xf32>
}

// -----

// A collective writes a buffer bufferization allocates (aligned): the
// all-reduce would write into its operand's, but the reduce-scatter still
// reads %m, so it gets a copy; a block dimension other than 0 is
// transposed to the front first (a scratch), and the result back into the
// caller's out-parameter. (The memory plan of the lowered function says
// 1152 too.)
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // expected-remark @+1 {{predicted peak 1152 bytes at 'tsr.reduce_scatter' (2 buffers live, 128 bytes of allocator padding)}}
  func.func @collectives(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<4x16xf32>) {
    // expected-note @+1 {{512 bytes: tsr.matmul}}
    %m = tsr.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %r = tsr.all_reduce %m {mesh_axes = ["dp"], reduction = #tsr.reduction<sum>} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    // expected-note @+1 {{512 bytes: tsr.reduce_scatter scratch (operand with the block dimension first)}}
    %s = tsr.reduce_scatter %m {dim = 1 : i64, mesh_axes = ["dp"], reduction = #tsr.reduction<sum>} : (tensor<8x16xf32>) -> tensor<8x8xf32>
    %t = tsr.reshape %s : tensor<8x8xf32> to tensor<4x16xf32>
    return %r, %t : tensor<8x16xf32>, tensor<4x16xf32>
  }
}

// -----

// A matrix times a vector (a 1-D rhs has no batch dimensions to broadcast).
// expected-remark @+1 {{predicted peak 72 bytes at 'tsr.matmul' (1 buffer live, 64 bytes of allocator padding)}}
func.func @matrix_vector(%a: tensor<2x3xf32>, %v: tensor<3xf32>) -> tensor<2xf32> {
  // expected-note @+1 {{8 bytes: tsr.matmul}}
  %y = tsr.matmul %a, %v : tensor<2x3xf32>, tensor<3xf32> -> tensor<2xf32>
  %n = tsr.neg %y : tensor<2xf32>
  return %n : tensor<2xf32>
}

// -----

// An all-reduce whose operand nothing reads afterwards writes in place:
// one buffer until the neg, which writes the out-parameter.
module attributes {tsr.mesh = #tsr.mesh<["dp"=2]>} {
  // expected-remark @+1 {{predicted peak 576 bytes at 'tsr.matmul' (1 buffer live, 64 bytes of allocator padding)}}
  func.func @in_place(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
    // expected-note @+1 {{512 bytes: tsr.matmul}}
    %m = tsr.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %r = tsr.all_reduce %m {mesh_axes = ["dp"], reduction = #tsr.reduction<sum>} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %n = tsr.neg %r : tensor<8x16xf32>
    return %n : tensor<8x16xf32>
  }
}

// -----

// A result that updates an argument (tsr.updates) is written over it by
// its elementwise op when every other reader of the argument runs before
// (tsr-donate-updates): %w2 takes no buffer. %v2 cannot (the matmul after
// it reads %v): it is written into its own out-parameter, as %m is.
// expected-remark @+1 {{predicted peak 0 bytes}}
func.func @donated(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>,
                   %g: tensor<16x16xf32>, %v: tensor<16x16xf32>)
    -> (tensor<16x16xf32> {tsr.updates = 1 : i64},
        tensor<16x16xf32> {tsr.updates = 3 : i64}, tensor<8x16xf32>) {
  %w2 = tsr.sub %w, %g : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
  %v2 = tsr.add %v, %g : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
  %m = tsr.matmul %x, %v : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  return %w2, %v2, %m : tensor<16x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>
}

// -----

// Results that are views of a buffer of the function's own: a 3-D product
// (computed as a 2-D GEMM and reshaped back) and a reshape of another. Each
// buffer is returned once, so tsr-results-to-out-params makes the caller's
// out-parameter, viewed the other way, the buffer: the products allocate
// nothing, and only the exp's 256 bytes are the function's.
// expected-remark @+1 {{predicted peak 320 bytes at 'tsr.exp' (1 buffer live, 64 bytes of allocator padding)}}
func.func @reshaped_results(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>) -> (tensor<2x4x16xf32>, tensor<128xf32>) {
  // expected-note @+1 {{256 bytes: tsr.exp}}
  %e = tsr.exp %x : tensor<2x4x8xf32>
  %m = tsr.matmul %e, %w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %n = tsr.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %r = tsr.reshape %n : tensor<2x4x16xf32> to tensor<128xf32>
  return %m, %r : tensor<2x4x16xf32>, tensor<128xf32>
}

// -----

// A repeated layer's update cell writes the results tsr-outline-layers
// marks over the arguments they replace: it allocates nothing for them.
// @step passes the parameters' own buffers, which the calls are the last
// to read: no buffer either. @late reads %w1 after its update, so the
// caller copies %w1 into an aligned buffer of its own for the call to
// write (64 bytes and 64 of padding); %r is its own out-parameter.
// expected-remark @+1 {{predicted peak 0 bytes}}
func.func private @cell(%w: tensor<16xf32>, %g: tensor<16xf32>)
    -> (tensor<16xf32> {tsr.updates = 0 : i64}) {
  %n = tsr.sub %w, %g : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %n : tensor<16xf32>
}
// expected-remark @+1 {{predicted peak 0 bytes}}
func.func @step(%w0: tensor<16xf32>, %w1: tensor<16xf32>, %g: tensor<16xf32>)
    -> (tensor<16xf32> {tsr.updates = 0 : i64},
        tensor<16xf32> {tsr.updates = 1 : i64}) {
  %n0 = call @cell(%w0, %g) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %n1 = call @cell(%w1, %g) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %n0, %n1 : tensor<16xf32>, tensor<16xf32>
}
// expected-remark @+1 {{predicted peak 128 bytes at 'func.call' (1 buffer live, 64 bytes of allocator padding)}}
func.func @late(%w0: tensor<16xf32>, %w1: tensor<16xf32>, %g: tensor<16xf32>)
    -> (tensor<16xf32> {tsr.updates = 0 : i64},
        tensor<16xf32> {tsr.updates = 1 : i64}, tensor<16xf32>) {
  %n0 = call @cell(%w0, %g) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  // expected-note @+1 {{64 bytes: func.call}}
  %n1 = call @cell(%w1, %g) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %r = tsr.mul %w1, %w1 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %n0, %n1, %r : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
