// RUN: tessera-opt %s --pass-pipeline="builtin.module(func.func(tsr-gpu-gemm))" --split-input-file | FileCheck %s

// A product into a fresh buffer that a zero fill started: the fill goes and
// cuBLASLt overwrites the buffer (beta 0).
// CHECK-LABEL: func.func @fresh
// CHECK: %[[C:.*]] = memref.alloc() : memref<8x4xf32>
// CHECK-NOT: linalg.fill
// CHECK: tsrt.gpu_gemm ins(%arg0, %arg1 : memref<8x16xf32>, memref<16x4xf32>) outs(%[[C]] : memref<8x4xf32>)
// CHECK-NOT: accumulate
// CHECK-NOT: linalg.matmul
func.func @fresh(%a: memref<8x16xf32>, %b: memref<16x4xf32>) -> memref<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x4xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return %c : memref<8x4xf32>
}

// -----

// Batches of bf16 operands into f32; a destination the caller passes in is
// added to (linalg's semantics).
// CHECK-LABEL: func.func @batched_bf16
// CHECK: tsrt.gpu_gemm ins(%arg0, %arg1 : memref<3x8x16xbf16>, memref<3x16x4xbf16>) outs(%arg2 : memref<3x8x4xf32>) {accumulate = true}
func.func @batched_bf16(%a: memref<3x8x16xbf16>, %b: memref<3x16x4xbf16>, %c: memref<3x8x4xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x8x16xbf16>, memref<3x16x4xbf16>) outs(%c : memref<3x8x4xf32>)
  return
}

// -----

// The fill stays where something reads the buffer before the product, or
// where it fills another value than zero.
// CHECK-LABEL: func.func @read_between
// CHECK: linalg.fill
// CHECK: memref.load
// CHECK: tsrt.gpu_gemm {{.*}} {accumulate = true}
// CHECK-LABEL: func.func @fill_one
// CHECK: linalg.fill
// CHECK: tsrt.gpu_gemm {{.*}} {accumulate = true}
func.func @read_between(%a: memref<8x16xf32>, %b: memref<16x4xf32>) -> (memref<8x4xf32>, f32) {
  %zero = arith.constant 0.0 : f32
  %i = arith.constant 0 : index
  %c = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x4xf32>)
  %v = memref.load %c[%i, %i] : memref<8x4xf32>
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return %c, %v : memref<8x4xf32>, f32
}
func.func @fill_one(%a: memref<8x16xf32>, %b: memref<16x4xf32>) -> memref<8x4xf32> {
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%one : f32) outs(%c : memref<8x4xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return %c : memref<8x4xf32>
}

// -----

// What cuBLASLt is not given stays for tsr-gpu-map: integer products, mixed
// operand types, strided views, an empty reduction, maps of the user's own.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: tsrt.gpu_gemm
// CHECK-COUNT-5: linalg.matmul
func.func @kept(%i: memref<8x16xi32>, %j: memref<16x4xi32>, %k: memref<8x4xi32>,
                %h: memref<8x16xbf16>, %f: memref<16x4xf32>, %c: memref<8x4xf32>,
                %big: memref<8x32xf32>, %e: memref<8x0xf32>, %e2: memref<0x4xf32>,
                %t: memref<16x8xf32>) {
  linalg.matmul ins(%i, %j : memref<8x16xi32>, memref<16x4xi32>) outs(%k : memref<8x4xi32>)
  linalg.matmul ins(%h, %f : memref<8x16xbf16>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  %view = memref.subview %big[0, 0] [8, 16] [1, 1] : memref<8x32xf32> to memref<8x16xf32, strided<[32, 1]>>
  linalg.matmul ins(%view, %f : memref<8x16xf32, strided<[32, 1]>>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  linalg.matmul ins(%e, %e2 : memref<8x0xf32>, memref<0x4xf32>) outs(%c : memref<8x4xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%t, %f : memref<16x8xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return
}

// -----

// A transpose of the last two dimensions into a buffer only the product
// reads: cuBLASLt reads the source transposed, and the copy and its buffer
// go (the gradients' X^T·dY and dY·W^T, attention's Q·K^T).
// CHECK-LABEL: func.func @transposed
// CHECK-NOT: linalg.transpose
// CHECK-NOT: memref.alloc() : memref<16x8xf32>
// CHECK: tsrt.gpu_gemm ins(%arg0, %arg1 : memref<16x8xf32>, memref<16x4xf32>) outs(%{{.*}} : memref<8x4xf32>) {transpose_a = true}
// CHECK: tsrt.gpu_gemm ins(%arg2, %arg3 : memref<2x8x16xf32>, memref<2x4x16xf32>) outs(%{{.*}} : memref<2x8x4xf32>) {transpose_b = true}
// CHECK-NOT: memref.dealloc
func.func @transposed(%x: memref<16x8xf32>, %dy: memref<16x4xf32>, %q: memref<2x8x16xf32>, %k: memref<2x4x16xf32>) -> (memref<8x4xf32>, memref<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %xt = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%x : memref<16x8xf32>) outs(%xt : memref<8x16xf32>) permutation = [1, 0]
  %dw = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%dw : memref<8x4xf32>)
  linalg.matmul ins(%xt, %dy : memref<8x16xf32>, memref<16x4xf32>) outs(%dw : memref<8x4xf32>)
  memref.dealloc %xt : memref<8x16xf32>
  %kt = memref.alloc() : memref<2x16x4xf32>
  linalg.transpose ins(%k : memref<2x4x16xf32>) outs(%kt : memref<2x16x4xf32>) permutation = [0, 2, 1]
  %s = memref.alloc() : memref<2x8x4xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<2x8x4xf32>)
  linalg.batch_matmul ins(%q, %kt : memref<2x8x16xf32>, memref<2x16x4xf32>) outs(%s : memref<2x8x4xf32>)
  memref.dealloc %kt : memref<2x16x4xf32>
  return %dw, %s : memref<8x4xf32>, memref<2x8x4xf32>
}

// -----

// The copy stays where its source is written between it and the product
// (the product must read the values the copy took), where something else
// reads the transposed buffer, or where the permutation moves the batch.
// CHECK-LABEL: func.func @transposes_kept
// CHECK-COUNT-3: linalg.transpose
// CHECK-NOT: transpose_
func.func @transposes_kept(%x: memref<16x8xf32>, %dy: memref<16x4xf32>, %c: memref<8x4xf32>,
                           %b3: memref<16x2x8xf32>, %d3: memref<2x16x4xf32>, %c3: memref<2x8x4xf32>) -> f32 {
  %one = arith.constant 1.0 : f32
  %i = arith.constant 0 : index
  %xt = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%x : memref<16x8xf32>) outs(%xt : memref<8x16xf32>) permutation = [1, 0]
  linalg.fill ins(%one : f32) outs(%x : memref<16x8xf32>)
  linalg.matmul ins(%xt, %dy : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  %xt2 = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%x : memref<16x8xf32>) outs(%xt2 : memref<8x16xf32>) permutation = [1, 0]
  linalg.matmul ins(%xt2, %dy : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  %v = memref.load %xt2[%i, %i] : memref<8x16xf32>
  %bt = memref.alloc() : memref<2x8x16xf32>
  linalg.transpose ins(%b3 : memref<16x2x8xf32>) outs(%bt : memref<2x8x16xf32>) permutation = [1, 2, 0]
  linalg.batch_matmul ins(%bt, %d3 : memref<2x8x16xf32>, memref<2x16x4xf32>) outs(%c3 : memref<2x8x4xf32>)
  return %v : f32
}

// -----

// Nor where the source is freed between the copy and the product (early
// deallocation frees a buffer after its last use, the copy).
// CHECK-LABEL: func.func @transpose_source_freed
// CHECK: linalg.transpose
// CHECK: memref.dealloc
// CHECK: tsrt.gpu_gemm {{.*}} {accumulate = true}
// CHECK-NOT: transpose_
func.func @transpose_source_freed(%dy: memref<16x4xf32>, %c: memref<8x4xf32>) {
  %x = memref.alloc() : memref<16x8xf32>
  %xt = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%x : memref<16x8xf32>) outs(%xt : memref<8x16xf32>) permutation = [1, 0]
  memref.dealloc %x : memref<16x8xf32>
  linalg.matmul ins(%xt, %dy : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  memref.dealloc %xt : memref<8x16xf32>
  return
}

// -----

// The elementwise consumer of a fresh product goes into cuBLASLt's
// epilogue where it is one cuBLASLt computes: the bias of each column then
// ReLU (the product's buffer goes; the output's allocation moves before the
// product), the bias alone, ReLU alone (also on a batch).
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @epilogues
// CHECK: %[[Y:.*]] = memref.alloc() : memref<8x4xf32>
// CHECK-NEXT: tsrt.gpu_gemm ins(%arg0, %arg1 : memref<8x16xf32>, memref<16x4xf32>) outs(%[[Y]] : memref<8x4xf32>) bias(%arg2 : memref<4xf32>) {epilogue = "relu_bias"}
// CHECK: tsrt.gpu_gemm ins(%arg0, %arg1 : memref<8x16xf32>, memref<16x4xf32>) outs(%{{.*}} : memref<8x4xf32>) bias(%arg2 : memref<4xf32>) {epilogue = "bias"}
// CHECK: tsrt.gpu_gemm ins(%arg3, %arg4 : memref<2x8x16xf32>, memref<2x16x4xf32>) outs(%{{.*}} : memref<2x8x4xf32>) {epilogue = "relu"}
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.alloc() : memref<8x4xf32>
// CHECK: return
func.func @epilogues(%x: memref<8x16xf32>, %w: memref<16x4xf32>, %b: memref<4xf32>,
                     %bx: memref<2x8x16xf32>, %bw: memref<2x16x4xf32>)
    -> (memref<8x4xf32>, memref<8x4xf32>, memref<2x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x4xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  %y = memref.alloc() : memref<8x4xf32>
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<8x4xf32>, memref<4xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<8x4xf32>
  %c2 = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<8x4xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%c2 : memref<8x4xf32>)
  %y2 = memref.alloc() : memref<8x4xf32>
  linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b, %c2 : memref<4xf32>, memref<8x4xf32>) outs(%y2 : memref<8x4xf32>) {
  ^bb0(%q: f32, %p: f32, %o: f32):
    %s = arith.addf %q, %p : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c2 : memref<8x4xf32>
  %c3 = memref.alloc() : memref<2x8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<2x8x4xf32>)
  linalg.batch_matmul ins(%bx, %bw : memref<2x8x16xf32>, memref<2x16x4xf32>) outs(%c3 : memref<2x8x4xf32>)
  %y3 = memref.alloc() : memref<2x8x4xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c3 : memref<2x8x4xf32>) outs(%y3 : memref<2x8x4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = arith.maximumf %zero, %p : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c3 : memref<2x8x4xf32>
  return %y, %y2, %y3 : memref<8x4xf32>, memref<8x4xf32>, memref<2x8x4xf32>
}

// -----

// What stays a kernel: a consumer that computes more than cuBLASLt's
// epilogue (a GELU), a product that another op reads as well, and one that
// accumulates into the caller's buffer.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @no_epilogue
// CHECK-NOT: epilogue
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: epilogue
// CHECK: return
func.func @no_epilogue(%x: memref<8x16xf32>, %w: memref<16x4xf32>, %acc: memref<8x4xf32>)
    -> (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x4xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  %y = memref.alloc() : memref<8x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x4xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %e = math.erf %p : f32
    %r = arith.mulf %p, %e : f32
    linalg.yield %r : f32
  }
  %c2 = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<8x4xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%c2 : memref<8x4xf32>)
  %y2 = memref.alloc() : memref<8x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2 : memref<8x4xf32>) outs(%y2 : memref<8x4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = arith.maximumf %p, %zero : f32
    linalg.yield %r : f32
  }
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%acc : memref<8x4xf32>)
  %y3 = memref.alloc() : memref<8x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%acc : memref<8x4xf32>) outs(%y3 : memref<8x4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = arith.maximumf %p, %zero : f32
    linalg.yield %r : f32
  }
  return %y, %c2, %y2, %y3 : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>
}

// -----

// The bias gradient beside a weight gradient is cuBLASLt's BGRAD epilogue:
// dW = xᵀ·dy with db = sum over the rows of dy (the product's k) is
// bias_grad_b; dWᵀ = dyᵀ·x (a weight stored [out, in]) with the same sum is
// bias_grad_a; in bf16 the sum widens each element. The sums and their
// fills go; the gradients' readers after both stay.
#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_gradients
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<16x8xf32>, %[[DY:[a-z0-9]+]]: memref<16x4xf32>, %[[XH:[a-z0-9]+]]: memref<16x8xbf16>, %[[DYH:[a-z0-9]+]]: memref<16x4xbf16>
// CHECK: %[[DB:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
// CHECK: tsrt.gpu_gemm ins(%[[X]], %[[DY]] : memref<16x8xf32>, memref<16x4xf32>) outs(%{{.*}} : memref<8x4xf32>) bias(%[[DB]] : memref<4xf32>) {epilogue = "bias_grad_b", transpose_a = true}
// CHECK: %[[DB2:.*]] = memref.alloc() : memref<4xf32>
// CHECK: tsrt.gpu_gemm ins(%[[DYH]], %[[XH]] : memref<16x4xbf16>, memref<16x8xbf16>) outs(%{{.*}} : memref<4x8xf32>) bias(%[[DB2]] : memref<4xf32>) {epilogue = "bias_grad_a", transpose_a = true}
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bias_gradients(%x: memref<16x8xf32>, %dy: memref<16x4xf32>, %xh: memref<16x8xbf16>, %dyh: memref<16x4xbf16>) -> (memref<8x4xf32>, memref<4xf32>, memref<4x8xf32>, memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %db = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%db : memref<4xf32>)
  linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<16x4xf32>) outs(%db : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  %xt = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%x : memref<16x8xf32>) outs(%xt : memref<8x16xf32>) permutation = [1, 0]
  %dw = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%dw : memref<8x4xf32>)
  linalg.matmul ins(%xt, %dy : memref<8x16xf32>, memref<16x4xf32>) outs(%dw : memref<8x4xf32>)
  memref.dealloc %xt : memref<8x16xf32>
  %dyt = memref.alloc() : memref<4x16xbf16>
  linalg.transpose ins(%dyh : memref<16x4xbf16>) outs(%dyt : memref<4x16xbf16>) permutation = [1, 0]
  %dwt = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%dwt : memref<4x8xf32>)
  linalg.matmul ins(%dyt, %xh : memref<4x16xbf16>, memref<16x8xbf16>) outs(%dwt : memref<4x8xf32>)
  memref.dealloc %dyt : memref<4x16xbf16>
  %db2 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%db2 : memref<4xf32>)
  linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%dyh : memref<16x4xbf16>) outs(%db2 : memref<4xf32>) {
  ^bb0(%in: bf16, %acc: f32):
    %e = arith.extf %in : bf16 to f32
    %s = arith.addf %acc, %e : f32
    linalg.yield %s : f32
  }
  return %dw, %db, %dwt, %db2 : memref<8x4xf32>, memref<4xf32>, memref<4x8xf32>, memref<4xf32>
}

// -----

// The sum stays where it does more than add, where its operand is written
// between it and the product, or where something reads the vector before
// the product.
#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_gradient_squares
// CHECK: linalg.generic
// CHECK-NOT: bias_grad
func.func @bias_gradient_squares(%x: memref<16x8xf32>, %dy: memref<16x4xf32>) -> (memref<8x4xf32>, memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %db = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%db : memref<4xf32>)
  linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<16x4xf32>) outs(%db : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.mulf %in, %in : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  }
  %dw = memref.alloc() : memref<8x4xf32>
  tsrt.gpu_gemm ins(%x, %dy : memref<16x8xf32>, memref<16x4xf32>) outs(%dw : memref<8x4xf32>) {transpose_a = true}
  return %dw, %db : memref<8x4xf32>, memref<4xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_gradient_operand_written
// CHECK: linalg.generic
// CHECK-NOT: bias_grad
func.func @bias_gradient_operand_written(%x: memref<16x8xf32>, %dy: memref<16x4xf32>) -> (memref<8x4xf32>, memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %db = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%db : memref<4xf32>)
  linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<16x4xf32>) outs(%db : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%dy : memref<16x4xf32>)
  %dw = memref.alloc() : memref<8x4xf32>
  tsrt.gpu_gemm ins(%x, %dy : memref<16x8xf32>, memref<16x4xf32>) outs(%dw : memref<8x4xf32>) {transpose_a = true}
  return %dw, %db : memref<8x4xf32>, memref<4xf32>
}

// -----

#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_gradient_read_before
// CHECK: linalg.generic
// CHECK-NOT: bias_grad
func.func @bias_gradient_read_before(%x: memref<16x8xf32>, %dy: memref<16x4xf32>, %probe: memref<4xf32>) -> (memref<8x4xf32>, memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %db = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%db : memref<4xf32>)
  linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%dy : memref<16x4xf32>) outs(%db : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  memref.copy %db, %probe : memref<4xf32> to memref<4xf32>
  %dw = memref.alloc() : memref<8x4xf32>
  tsrt.gpu_gemm ins(%x, %dy : memref<16x8xf32>, memref<16x4xf32>) outs(%dw : memref<8x4xf32>) {transpose_a = true}
  return %dw, %db : memref<8x4xf32>, memref<4xf32>
}

// -----

// A [B, S, N] gradient flattened into the product's rows: its sum over B
// and S is the sum over the product's k.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @bias_gradient_of_rows
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<8x4xf32>, %[[DY:[a-z0-9]+]]: memref<2x4x3xf32>
// CHECK: %[[DB:.*]] = memref.alloc() : memref<3xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[ROWS:.*]] = memref.collapse_shape %[[DY]]
// CHECK: tsrt.gpu_gemm ins(%[[X]], %[[ROWS]] : memref<8x4xf32>, memref<8x3xf32>) outs(%{{.*}} : memref<4x3xf32>) bias(%[[DB]] : memref<3xf32>) {epilogue = "bias_grad_b", transpose_a = true}
func.func @bias_gradient_of_rows(%x: memref<8x4xf32>, %dy: memref<2x4x3xf32>) -> (memref<4x3xf32>, memref<3xf32>) {
  %zero = arith.constant 0.0 : f32
  %db = memref.alloc() : memref<3xf32>
  linalg.fill ins(%zero : f32) outs(%db : memref<3xf32>)
  linalg.generic {indexing_maps = [#id3, #last], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy : memref<2x4x3xf32>) outs(%db : memref<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  %rows = memref.collapse_shape %dy [[0, 1], [2]] : memref<2x4x3xf32> into memref<8x3xf32>
  %dw = memref.alloc() : memref<4x3xf32>
  tsrt.gpu_gemm ins(%x, %rows : memref<8x4xf32>, memref<8x3xf32>) outs(%dw : memref<4x3xf32>) {transpose_a = true}
  return %dw, %db : memref<4x3xf32>, memref<3xf32>
}

// -----

// A hidden ReLU in a training step: pre = x·W1 + b1 is read by the ReLU
// and by its gradient select(pre > 0, dh, 0), dh = dy·W2ᵀ. The forward
// product writes h with RELU_AUX_BIAS and a mask of 4 rows of 16 bytes
// (130 columns padded to 256 bits); the backward product writes dpre with
// DRELU reading it; both kernels and pre's buffer go.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @relu_backward
// CHECK: %[[H:.*]] = memref.alloc() : memref<4x130xf32>
// CHECK: %[[MASK:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x32xi8>
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<4x8xf32>, memref<8x130xf32>) outs(%[[H]] : memref<4x130xf32>) bias(%{{.*}} : memref<130xf32>) aux(%[[MASK]] : memref<4x32xi8>) {epilogue = "relu_aux_bias"}
// CHECK: %[[DPRE:.*]] = memref.alloc() : memref<4x130xf32>
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<4x2xf32>, memref<130x2xf32>) outs(%[[DPRE]] : memref<4x130xf32>) aux(%[[MASK]] : memref<4x32xi8>) {epilogue = "drelu", transpose_b = true}
// CHECK-NEXT: memref.dealloc %[[MASK]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[H]], %[[DPRE]]
func.func @relu_backward(%x: memref<4x8xf32>, %w1: memref<8x130xf32>, %b1: memref<130xf32>,
                         %dy: memref<4x2xf32>, %w2: memref<130x2xf32>) -> (memref<4x130xf32>, memref<4x130xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x130xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x130xf32>)
  linalg.matmul ins(%x, %w1 : memref<4x8xf32>, memref<8x130xf32>) outs(%c : memref<4x130xf32>)
  %pre = memref.alloc() : memref<4x130xf32>
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b1 : memref<4x130xf32>, memref<130xf32>) outs(%pre : memref<4x130xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<4x130xf32>
  %h = memref.alloc() : memref<4x130xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%pre : memref<4x130xf32>) outs(%h : memref<4x130xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %w2t = memref.alloc() : memref<2x130xf32>
  linalg.transpose ins(%w2 : memref<130x2xf32>) outs(%w2t : memref<2x130xf32>) permutation = [1, 0]
  %dh = memref.alloc() : memref<4x130xf32>
  linalg.fill ins(%zero : f32) outs(%dh : memref<4x130xf32>)
  linalg.matmul ins(%dy, %w2t : memref<4x2xf32>, memref<2x130xf32>) outs(%dh : memref<4x130xf32>)
  memref.dealloc %w2t : memref<2x130xf32>
  %dpre = memref.alloc() : memref<4x130xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%pre, %dh : memref<4x130xf32>, memref<4x130xf32>) outs(%dpre : memref<4x130xf32>) {
  ^bb0(%p: f32, %g: f32, %out: f32):
    %positive = arith.cmpf ogt, %p, %zero : f32
    %d = arith.select %positive, %g, %zero : f32
    linalg.yield %d : f32
  }
  memref.dealloc %dh : memref<4x130xf32>
  memref.dealloc %pre : memref<4x130xf32>
  return %h, %dpre : memref<4x130xf32>, memref<4x130xf32>
}

// -----

// Kept: pre is also returned (a third reader), and elsewhere the gradient's
// product dh is read by another op too. Each pair keeps its kernels.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @relu_backward_kept
// CHECK-NOT: aux(
// CHECK-NOT: drelu
// CHECK: return
func.func @relu_backward_kept(%x: memref<4x8xf32>, %w1: memref<8x16xf32>, %dy: memref<4x2xf32>,
                              %w2t: memref<2x16xf32>, %probe: memref<4x16xf32>)
    -> (memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %pre = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%pre : memref<4x16xf32>)
  linalg.matmul ins(%x, %w1 : memref<4x8xf32>, memref<8x16xf32>) outs(%pre : memref<4x16xf32>)
  %h = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%pre : memref<4x16xf32>) outs(%h : memref<4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %dh = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%dh : memref<4x16xf32>)
  linalg.matmul ins(%dy, %w2t : memref<4x2xf32>, memref<2x16xf32>) outs(%dh : memref<4x16xf32>)
  %dpre = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%pre, %dh : memref<4x16xf32>, memref<4x16xf32>) outs(%dpre : memref<4x16xf32>) {
  ^bb0(%p: f32, %g: f32, %out: f32):
    %positive = arith.cmpf ogt, %p, %zero : f32
    %d = arith.select %positive, %g, %zero : f32
    linalg.yield %d : f32
  }
  memref.dealloc %dh : memref<4x16xf32>
  return %h, %dpre, %pre : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>
}

// -----

// GELU's tanh approximation of the product plus a bias, as tsr.gelu
// {approximate = tanh} lowers it after elementwise fusion with the bias
// add: cuBLASLt's GELU_BIAS. Of the product alone: GELU. GELU of erf
// (ONNX's default) is another function and keeps its kernel.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @gelu_epilogues
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<16x4xf32>) outs(%[[Y:.*]] : memref<8x4xf32>) bias(%{{.*}} : memref<4xf32>) {epilogue = "gelu_bias"}
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<16x4xf32>) outs(%[[Z:.*]] : memref<8x4xf32>) {epilogue = "gelu"}
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<8x16xf32>, memref<16x4xf32>) outs(%[[C:.*]] : memref<8x4xf32>){{$}}
// CHECK: linalg.generic
// CHECK: math.erf
// CHECK-NOT: linalg.generic
func.func @gelu_epilogues(%x: memref<8x16xf32>, %w: memref<16x4xf32>, %b: memref<4xf32>)
    -> (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %k = arith.constant 0.044715 : f32
  %s = arith.constant 0.797884583 : f32
  %r = arith.constant 0.707106769 : f32
  %c0 = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c0 : memref<8x4xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%c0 : memref<8x4xf32>)
  %y = memref.alloc() : memref<8x4xf32>
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c0, %b : memref<8x4xf32>, memref<4xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %v = arith.addf %in, %bias : f32
    %sq = arith.mulf %v, %v : f32
    %cube = arith.mulf %v, %sq : f32
    %kc = arith.mulf %k, %cube : f32
    %sum = arith.addf %v, %kc : f32
    %inner = arith.mulf %s, %sum : f32
    %t = math.tanh %inner : f32
    %hx = arith.mulf %half, %v : f32
    %onet = arith.addf %one, %t : f32
    %g = arith.mulf %hx, %onet : f32
    linalg.yield %g : f32
  }
  memref.dealloc %c0 : memref<8x4xf32>
  %c1 = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c1 : memref<8x4xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%c1 : memref<8x4xf32>)
  %z = memref.alloc() : memref<8x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c1 : memref<8x4xf32>) outs(%z : memref<8x4xf32>) {
  ^bb0(%v: f32, %out: f32):
    %sq = arith.mulf %v, %v : f32
    %cube = arith.mulf %v, %sq : f32
    %kc = arith.mulf %k, %cube : f32
    %sum = arith.addf %v, %kc : f32
    %inner = arith.mulf %s, %sum : f32
    %t = math.tanh %inner : f32
    %hx = arith.mulf %half, %v : f32
    %onet = arith.addf %one, %t : f32
    %g = arith.mulf %hx, %onet : f32
    linalg.yield %g : f32
  }
  memref.dealloc %c1 : memref<8x4xf32>
  %c2 = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<8x4xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x4xf32>) outs(%c2 : memref<8x4xf32>)
  %e = memref.alloc() : memref<8x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2 : memref<8x4xf32>) outs(%e : memref<8x4xf32>) {
  ^bb0(%v: f32, %out: f32):
    %u = arith.mulf %v, %r : f32
    %erf = math.erf %u : f32
    %hx = arith.mulf %half, %v : f32
    %onee = arith.addf %one, %erf : f32
    %g = arith.mulf %hx, %onee : f32
    linalg.yield %g : f32
  }
  memref.dealloc %c2 : memref<8x4xf32>
  return %y, %z, %e : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>
}

// -----

// A hidden GELU (tanh) in a training step, as autodiff and elementwise
// fusion leave it: pre = x·W1 + b1 is read by GELU and by its input
// gradient dh · gelu'(pre) (some products and sums written the other way
// round, as canonicalization may). The forward product writes h with
// GELU_AUX_BIAS and pre into an f32 matrix of 4 rows of 16 (13 columns
// padded to 8); the backward product writes dpre with DGELU reading it;
// both kernels and pre's buffer go.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @gelu_backward
// CHECK: %[[H:.*]] = memref.alloc() : memref<4x13xf32>
// CHECK: %[[PRE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<4x8xf32>, memref<8x13xf32>) outs(%[[H]] : memref<4x13xf32>) bias(%{{.*}} : memref<13xf32>) aux(%[[PRE]] : memref<4x16xf32>) {epilogue = "gelu_aux_bias"}
// CHECK: %[[DPRE:.*]] = memref.alloc() : memref<4x13xf32>
// CHECK: tsrt.gpu_gemm ins(%{{.*}}, %{{.*}} : memref<4x2xf32>, memref<13x2xf32>) outs(%[[DPRE]] : memref<4x13xf32>) aux(%[[PRE]] : memref<4x16xf32>) {epilogue = "dgelu", transpose_b = true}
// CHECK-NEXT: memref.dealloc %[[PRE]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[H]], %[[DPRE]]
func.func @gelu_backward(%x: memref<4x8xf32>, %w1: memref<8x13xf32>, %b1: memref<13xf32>,
                         %dy: memref<4x2xf32>, %w2: memref<13x2xf32>) -> (memref<4x13xf32>, memref<4x13xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %k = arith.constant 0.044715 : f32
  %k3 = arith.constant 0.134145 : f32
  %s = arith.constant 0.797884583 : f32
  %c = memref.alloc() : memref<4x13xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x13xf32>)
  linalg.matmul ins(%x, %w1 : memref<4x8xf32>, memref<8x13xf32>) outs(%c : memref<4x13xf32>)
  %pre = memref.alloc() : memref<4x13xf32>
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b1 : memref<4x13xf32>, memref<13xf32>) outs(%pre : memref<4x13xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %v = arith.addf %in, %bias : f32
    linalg.yield %v : f32
  }
  memref.dealloc %c : memref<4x13xf32>
  %h = memref.alloc() : memref<4x13xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%pre : memref<4x13xf32>) outs(%h : memref<4x13xf32>) {
  ^bb0(%v: f32, %out: f32):
    %sq = arith.mulf %v, %v : f32
    %cube = arith.mulf %v, %sq : f32
    %kc = arith.mulf %cube, %k : f32
    %sum = arith.addf %v, %kc : f32
    %inner = arith.mulf %sum, %s : f32
    %hx = arith.mulf %v, %half : f32
    %t = math.tanh %inner : f32
    %onet = arith.addf %t, %one : f32
    %g = arith.mulf %hx, %onet : f32
    linalg.yield %g : f32
  }
  %w2t = memref.alloc() : memref<2x13xf32>
  linalg.transpose ins(%w2 : memref<13x2xf32>) outs(%w2t : memref<2x13xf32>) permutation = [1, 0]
  %dh = memref.alloc() : memref<4x13xf32>
  linalg.fill ins(%zero : f32) outs(%dh : memref<4x13xf32>)
  linalg.matmul ins(%dy, %w2t : memref<4x2xf32>, memref<2x13xf32>) outs(%dh : memref<4x13xf32>)
  memref.dealloc %w2t : memref<2x13xf32>
  %dpre = memref.alloc() : memref<4x13xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dh, %pre : memref<4x13xf32>, memref<4x13xf32>) outs(%dpre : memref<4x13xf32>) {
  ^bb0(%g: f32, %p: f32, %out: f32):
    %0 = arith.mulf %p, %p : f32
    %1 = arith.mulf %0, %p : f32
    %2 = arith.mulf %k, %1 : f32
    %3 = arith.addf %p, %2 : f32
    %4 = arith.mulf %3, %s : f32
    %5 = math.tanh %4 : f32
    %6 = arith.mulf %0, %k3 : f32
    %7 = arith.addf %one, %6 : f32
    %8 = arith.mulf %7, %s : f32
    %9 = arith.mulf %5, %5 : f32
    %10 = arith.subf %one, %9 : f32
    %11 = arith.mulf %8, %10 : f32
    %12 = arith.mulf %p, %half : f32
    %13 = arith.mulf %12, %11 : f32
    %14 = arith.addf %5, %one : f32
    %15 = arith.mulf %14, %half : f32
    %16 = arith.addf %13, %15 : f32
    %17 = arith.mulf %g, %16 : f32
    linalg.yield %17 : f32
  }
  memref.dealloc %dh : memref<4x13xf32>
  memref.dealloc %pre : memref<4x13xf32>
  return %h, %dpre : memref<4x13xf32>, memref<4x13xf32>
}

// -----

// Kept: a gradient that is not GELU's derivative (k where 3k belongs, so
// not what DGELU computes) keeps both kernels and pre, the forward product
// with GELU_BIAS's fold refused too (pre has a second reader).
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @gelu_backward_kept
// CHECK-NOT: aux(
// CHECK-NOT: dgelu
// CHECK: math.tanh
// CHECK: math.tanh
// CHECK: return
func.func @gelu_backward_kept(%x: memref<4x8xf32>, %w1: memref<8x16xf32>, %dy: memref<4x2xf32>,
                              %w2t: memref<2x16xf32>) -> (memref<4x16xf32>, memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %k = arith.constant 0.044715 : f32
  %s = arith.constant 0.797884583 : f32
  %pre = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%pre : memref<4x16xf32>)
  linalg.matmul ins(%x, %w1 : memref<4x8xf32>, memref<8x16xf32>) outs(%pre : memref<4x16xf32>)
  %h = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%pre : memref<4x16xf32>) outs(%h : memref<4x16xf32>) {
  ^bb0(%v: f32, %out: f32):
    %sq = arith.mulf %v, %v : f32
    %cube = arith.mulf %v, %sq : f32
    %kc = arith.mulf %k, %cube : f32
    %sum = arith.addf %v, %kc : f32
    %inner = arith.mulf %s, %sum : f32
    %t = math.tanh %inner : f32
    %hx = arith.mulf %half, %v : f32
    %onet = arith.addf %one, %t : f32
    %g = arith.mulf %hx, %onet : f32
    linalg.yield %g : f32
  }
  %dh = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%dh : memref<4x16xf32>)
  linalg.matmul ins(%dy, %w2t : memref<4x2xf32>, memref<2x16xf32>) outs(%dh : memref<4x16xf32>)
  %dpre = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dh, %pre : memref<4x16xf32>, memref<4x16xf32>) outs(%dpre : memref<4x16xf32>) {
  ^bb0(%g: f32, %p: f32, %out: f32):
    %0 = arith.mulf %p, %p : f32
    %1 = arith.mulf %0, %p : f32
    %2 = arith.mulf %k, %1 : f32
    %3 = arith.addf %p, %2 : f32
    %4 = arith.mulf %3, %s : f32
    %5 = math.tanh %4 : f32
    %6 = arith.mulf %0, %k : f32
    %7 = arith.addf %one, %6 : f32
    %8 = arith.mulf %7, %s : f32
    %9 = arith.mulf %5, %5 : f32
    %10 = arith.subf %one, %9 : f32
    %11 = arith.mulf %8, %10 : f32
    %12 = arith.mulf %p, %half : f32
    %13 = arith.mulf %12, %11 : f32
    %14 = arith.addf %5, %one : f32
    %15 = arith.mulf %14, %half : f32
    %16 = arith.addf %13, %15 : f32
    %17 = arith.mulf %g, %16 : f32
    linalg.yield %17 : f32
  }
  memref.dealloc %dh : memref<4x16xf32>
  return %h, %dpre : memref<4x16xf32>, memref<4x16xf32>
}
