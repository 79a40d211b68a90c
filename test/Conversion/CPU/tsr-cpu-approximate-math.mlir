// RUN: tessera-opt %s -split-input-file --tsr-cpu-approximate-math | FileCheck %s

// f32 exp, log, tanh and erf, on vectors and scalars, become arithmetic;
// f64 ops and sqrt (LLVM vectorizes it natively) stay.
// CHECK-LABEL: func.func @f32
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: math.sqrt %{{.*}} : vector<8xf32>
// CHECK: return
func.func @f32(%v: vector<8xf32>, %s: f32) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, f32, vector<8xf32>) {
  %e = math.exp %v : vector<8xf32>
  %l = math.log %v : vector<8xf32>
  %t = math.tanh %v : vector<8xf32>
  %r = math.erf %s : f32
  %q = math.sqrt %v : vector<8xf32>
  return %e, %l, %t, %r, %q : vector<8xf32>, vector<8xf32>, vector<8xf32>, f32, vector<8xf32>
}

// -----

// CHECK-LABEL: func.func @f64
// CHECK: math.exp %{{.*}} : vector<4xf64>
// CHECK: math.log %{{.*}} : f64
func.func @f64(%v: vector<4xf64>, %s: f64) -> (vector<4xf64>, f64) {
  %e = math.exp %v : vector<4xf64>
  %l = math.log %s : f64
  return %e, %l : vector<4xf64>, f64
}
