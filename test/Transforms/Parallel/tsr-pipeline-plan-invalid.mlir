// RUN: not tessera-opt %s "--tsr-pipeline-plan=split=fc9" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tessera-opt %s "--tsr-pipeline-plan=stages=3 split=fc3,fc2" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not tessera-opt %s "--tsr-pipeline-plan=stages=3 split=fc2" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not tessera-opt %s "--tsr-pipeline-plan=stages=5" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not tessera-opt %s "--tsr-pipeline-plan=axis=tp" 2>&1 | FileCheck %s --check-prefix=AXIS

// UNKNOWN: error: pipeline split: no op comes from an ONNX node named 'fc9'
// ORDER: error: pipeline split: node 'fc2' does not come after the start of the previous stage (name the nodes in program order)
// COUNT: error: pipeline split names 1 node(s), but 3 stages need 2
// MANY: error: cannot cut 4 ops into 5 pipeline stages
// AXIS: error: {{.*}}'tp'
module attributes {tsr.mesh = #tsr.mesh<["pp"=2]>} {
func.func @main(%x: tensor<4x8xf32> {tsr.name = "x"},
                %w1: tensor<8x8xf32> {tsr.name = "w1", tsr.role = #tsr.role<param>},
                %w2: tensor<8x8xf32> {tsr.name = "w2", tsr.role = #tsr.role<param>},
                %w3: tensor<8x8xf32> {tsr.name = "w3", tsr.role = #tsr.role<param>})
    -> (tensor<f32> {tsr.name = "loss", tsr.role = #tsr.role<loss>}) {
  %h = tsr.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("fc1")
  %g = tsr.matmul %h, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("fc2")
  %y = tsr.matmul %g, %w3 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("fc3")
  %l = tsr.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
}
