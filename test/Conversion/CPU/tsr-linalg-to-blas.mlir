// RUN: tessera-opt %s -split-input-file -tsr-linalg-to-blas | FileCheck %s
// RUN: tessera-opt %s -split-input-file -tsr-linalg-to-blas=library=openblas | FileCheck %s --check-prefix=BLAS
// RUN: not tessera-opt %s -split-input-file -tsr-linalg-to-blas=library=mkl 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: tsr-linalg-to-blas: unknown library 'mkl' (expected onednn or openblas)

// f32: the runtime's oneDNN sgemm by default (i64 sizes and leading
// dimensions, beta = 1), OpenBLAS's cblas_sgemm with library=openblas (row
// major, no transposes: i32 enumerators and sizes, alpha = beta = 1).
// CHECK-LABEL: func @matmul
// CHECK-SAME: (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x16xf32>, %[[C:.*]]: memref<4x16xf32>)
// BLAS-LABEL: func @matmul
func.func @matmul(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  // CHECK-DAG: %[[M:.*]] = arith.constant 4 : i64
  // CHECK-DAG: %[[N:.*]] = arith.constant 16 : i64
  // CHECK-DAG: %[[K:.*]] = arith.constant 8 : i64
  // CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
  // CHECK-DAG: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
  // CHECK-DAG: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
  // CHECK-DAG: %[[PC:.*]] = memref.extract_aligned_pointer_as_index %[[C]]
  // CHECK: call @tsr_gemm_f32(%[[M]], %[[N]], %[[K]], %{{.*}}, %[[K]], %{{.*}}, %[[N]], %{{.*}}, %[[N]], %[[ONE]])
  // CHECK-NOT: linalg.matmul
  // BLAS-DAG: %[[M:.*]] = arith.constant 4 : i32
  // BLAS-DAG: %[[N:.*]] = arith.constant 16 : i32
  // BLAS-DAG: %[[K:.*]] = arith.constant 8 : i32
  // BLAS-DAG: %[[ROW:.*]] = arith.constant 101 : i32
  // BLAS-DAG: %[[NOTRANS:.*]] = arith.constant 111 : i32
  // BLAS: call @cblas_sgemm(%[[ROW]], %[[NOTRANS]], %[[NOTRANS]], %[[M]], %[[N]], %[[K]], %{{.*}}, %{{.*}}, %[[K]], %{{.*}}, %[[N]], %{{.*}}, %{{.*}}, %[[N]])
  // BLAS-NOT: tsr_gemm_f32
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// CHECK-LABEL: func @batch_matmul
func.func @batch_matmul(%a: memref<3x4x8xf32>, %b: memref<3x8x16xf32>, %c: memref<3x4x16xf32>) {
  // CHECK: scf.for
  // CHECK: arith.muli %{{.*}}, %{{.*}} : i64
  // CHECK: call @tsr_gemm_f32
  // CHECK-NOT: linalg.batch_matmul
  // BLAS-LABEL: func @batch_matmul
  // BLAS: call @cblas_sgemm
  linalg.batch_matmul ins(%a, %b : memref<3x4x8xf32>, memref<3x8x16xf32>) outs(%c : memref<3x4x16xf32>)
  return
}

// -----

// Integer matmuls and strided views keep their loops.
// CHECK-LABEL: func @not_blas
func.func @not_blas(%a: memref<4x8xi32>, %b: memref<8x16xi32>, %c: memref<4x16xi32>,
                    %s: memref<4x8xf32, strided<[16, 1]>>, %d: memref<8x16xf32>, %e: memref<4x16xf32>) {
  // CHECK-NOT: tsr_gemm_f32
  // CHECK: linalg.matmul
  // CHECK: linalg.matmul
  linalg.matmul ins(%a, %b : memref<4x8xi32>, memref<8x16xi32>) outs(%c : memref<4x16xi32>)
  linalg.matmul ins(%s, %d : memref<4x8xf32, strided<[16, 1]>>, memref<8x16xf32>) outs(%e : memref<4x16xf32>)
  return
}

// -----

// bf16 operands with an f32 accumulator go to the runtime's oneDNN GEMM
// (i64 sizes and leading dimensions, beta = 1); a batch steps 2-byte
// operands and the 4-byte output.
// CHECK-LABEL: func @bf16
func.func @bf16(%a: memref<2x4x8xbf16>, %b: memref<2x8x16xbf16>, %c: memref<2x4x16xf32>,
                %x: memref<4x8xbf16>, %y: memref<8x16xbf16>, %z: memref<4x16xbf16>) {
  // CHECK-DAG: %[[M:.*]] = arith.constant 4 : i64
  // CHECK-DAG: %[[N:.*]] = arith.constant 16 : i64
  // CHECK-DAG: %[[K:.*]] = arith.constant 8 : i64
  // CHECK-DAG: %[[ASTEP:.*]] = arith.constant 64 : i64
  // CHECK-DAG: %[[CSTEP:.*]] = arith.constant 256 : i64
  // CHECK: scf.for
  // CHECK: arith.muli %{{.*}}, %[[ASTEP]] : i64
  // CHECK: arith.muli %{{.*}}, %[[CSTEP]] : i64
  // CHECK: call @tsr_gemm_bf16(%[[M]], %[[N]], %[[K]], %{{.*}}, %[[K]], %{{.*}}, %[[N]], %{{.*}}, %[[N]], %{{.*}})
  // CHECK-NOT: linalg.batch_matmul
  linalg.batch_matmul ins(%a, %b : memref<2x4x8xbf16>, memref<2x8x16xbf16>) outs(%c : memref<2x4x16xf32>)
  // A bf16 accumulator keeps its loops.
  // CHECK: linalg.matmul
  linalg.matmul ins(%x, %y : memref<4x8xbf16>, memref<8x16xbf16>) outs(%z : memref<4x16xbf16>)
  return
}

// -----

// f16 operands with an f32 accumulator: the runtime's widening GEMM.
// CHECK-LABEL: func @f16
func.func @f16(%a: memref<4x8xf16>, %b: memref<8x16xf16>, %c: memref<4x16xf32>) {
  // CHECK: call @tsr_gemm_f16(
  // CHECK-NOT: linalg.matmul
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x16xf16>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// A zero fill of a fresh output before the GEMM: beta = 0 and the fill
// goes. A read of the output in between keeps both (beta = 1), and so does
// an output that is an argument (which may share its buffer with another).
// CHECK-LABEL: func @zero_fill_becomes_beta_zero
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: call @tsr_gemm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]])
// BLAS-LABEL: func @zero_fill_becomes_beta_zero
// BLAS-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// BLAS-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// BLAS-NOT: linalg.fill
// BLAS: call @cblas_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]], %{{.*}}, %{{.*}})
func.func @zero_fill_becomes_beta_zero(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %d: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.copy ins(%d : memref<4x16xf32>) outs(%d : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  memref.copy %c, %d : memref<4x16xf32> to memref<4x16xf32>
  return
}

// -----

// CHECK-LABEL: func @read_between_keeps_the_fill
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: call @tsr_gemm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]])
func.func @read_between_keeps_the_fill(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %d: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  memref.copy %c, %d : memref<4x16xf32> to memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// A fill with another value stays, and so does beta = 1.
// CHECK-LABEL: func @nonzero_fill_stays
// CHECK: linalg.fill
// CHECK: call @tsr_gemm_f32
func.func @nonzero_fill_stays(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  %two = arith.constant 2.0 : f32
  linalg.fill ins(%two : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}

// -----

// CHECK-LABEL: func @argument_output_keeps_the_fill
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.fill
// CHECK: call @tsr_gemm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]])
func.func @argument_output_keeps_the_fill(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  return
}
