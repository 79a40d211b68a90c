// RUN: tessera-opt %s --tsr-pipeline-plan | FileCheck %s
// RUN: tessera-opt %s "--tsr-pipeline-plan=split=fc3" | FileCheck %s --check-prefix=PINNED
// RUN: tessera-opt %s "--tsr-pipeline-plan=stages=3 split=fc2,fc3" | FileCheck %s --check-prefix=THREE
// RUN: tessera-opt %s "--tsr-pipeline-plan=virtual-stages=2 split=act1,fc2,fc3" | FileCheck %s --check-prefix=CHUNKS

// The cost model cuts the three layers into two stages of about equal time
// (the first matmul, its activation and the second matmul; then the rest).
// One 4x8 f32 activation (128 bytes) crosses the cut. Every op gets its
// stage; the function records the plan.
// CHECK: func.func @main(
// CHECK-SAME: tsr.pipeline = {axis = "pp", cut_bytes = [128], seconds = [{{.*}}, {{.*}}], stages = 2 : i64, virtual_stages = 1 : i64}
// CHECK-NEXT: tsr.matmul %arg0, %arg1 {tsr.stage = 0 : i64}
// CHECK-NEXT: tsr.relu %{{.*}} {tsr.stage = 0 : i64}
// CHECK-NEXT: tsr.matmul %{{.*}}, %arg2 {tsr.stage = 0 : i64}
// CHECK-NEXT: tsr.relu %{{.*}} {tsr.stage = 1 : i64}
// CHECK-NEXT: tsr.matmul %{{.*}}, %arg3 {tsr.stage = 1 : i64}
// CHECK-NEXT: tsr.reduce_sum %{{.*}} {axes = array<i64: 0, 1>, keepdims = false, tsr.stage = 1 : i64}

// Pinned: stage 1 starts at the first op of the ONNX node fc3.
// PINNED: tsr.matmul %{{.*}}, %arg2 {tsr.stage = 0 : i64}
// PINNED-NEXT: tsr.relu %{{.*}} {tsr.stage = 0 : i64}
// PINNED-NEXT: tsr.matmul %{{.*}}, %arg3 {tsr.stage = 1 : i64}

// THREE: cut_bytes = [128, 128]
// THREE-SAME: stages = 3 : i64
// THREE: tsr.relu %{{.*}} {tsr.stage = 0 : i64}
// THREE-NEXT: tsr.matmul %{{.*}}, %arg2 {tsr.stage = 1 : i64}
// THREE-NEXT: tsr.relu %{{.*}} {tsr.stage = 1 : i64}
// THREE-NEXT: tsr.matmul %{{.*}}, %arg3 {tsr.stage = 2 : i64}

// Two chunks per rank: four chunks (tsr.stage is the chunk), which
// tsr-pipeline's schedule places on the two ranks.
// CHUNKS: cut_bytes = [128, 128, 128]
// CHUNKS-SAME: stages = 2 : i64, virtual_stages = 2 : i64
// CHUNKS: tsr.matmul %arg0, %arg1 {tsr.stage = 0 : i64}
// CHUNKS-NEXT: tsr.relu %{{.*}} {tsr.stage = 1 : i64}
// CHUNKS-NEXT: tsr.matmul %{{.*}}, %arg2 {tsr.stage = 2 : i64}
// CHUNKS-NEXT: tsr.relu %{{.*}} {tsr.stage = 2 : i64}
// CHUNKS-NEXT: tsr.matmul %{{.*}}, %arg3 {tsr.stage = 3 : i64}
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                %w1: tensor<8x8xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                %w2: tensor<8x8xf32> {tsr.name = "w2", tsr.role = #tsr.role<param>},
                %w3: tensor<8x8xf32> {tsr.name = "w3", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
  %h = tsr.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("fc1")
  %a = tsr.relu %h : tensor<4x8xf32> loc("act1")
  %g = tsr.matmul %a, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("fc2")
  %b = tsr.relu %g : tensor<4x8xf32> loc("act2")
  %y = tsr.matmul %b, %w3 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("fc3")
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
}
