// RUN: tessera-translate --tsr-legalize-onnx -split-input-file -verify-diagnostics %s

// Ops without a handler, attribute values a handler does not support, and
// inputs that must be constant but are not, each fail with one diagnostic
// that starts with "unsupported ONNX op".

func.func @no_handler(%x: tensor<4xf32>) -> tensor<*xi64> {
  // expected-error @+1 {{unsupported ONNX op 'NonZero' (domain '', opset 13, since_version 13) at node 'nz'}}
  %y = onnx.node "NonZero"(%x) {attrs = {}, domain = "", name = "nz", opset = 13 : i64, since_version = 13 : i64} : (tensor<4xf32>) -> tensor<*xi64>
  return %y : tensor<*xi64>
}

// -----

func.func @unknown_since_version(%x: tensor<4xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{unsupported ONNX op 'Add' (domain '', opset 6, since_version 6) at node 'add'}}
  %y = onnx.node "Add"(%x, %x) {attrs = {}, domain = "", name = "add", opset = 6 : i64, since_version = 6 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @other_domain(%x: tensor<4xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{unsupported ONNX op 'Relu' (domain 'com.example', opset 1, since_version 1) at node 'r': only the default domain and 'com.microsoft' MoE are supported}}
  %y = onnx.node "Relu"(%x) {attrs = {}, domain = "com.example", name = "r", opset = 1 : i64, since_version = 1 : i64} : (tensor<4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @pad_wrap(%x: tensor<4xf32>) -> tensor<*xf32> {
  %pads = tsr.constant dense<[1, 1]> : tensor<2xi64>
  // expected-error @+1 {{unsupported ONNX op 'Pad' (domain '', opset 19, since_version 19) at node 'pad': mode = 'wrap'}}
  %y = onnx.node "Pad"(%x, %pads) {attrs = {mode = "wrap"}, domain = "", name = "pad", opset = 19 : i64, since_version = 19 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @slice_dynamic_starts(%x: tensor<4xf32>, %starts: tensor<1xi64>) -> tensor<*xf32> {
  %ends = tsr.constant dense<[3]> : tensor<1xi64>
  // expected-error @+1 {{unsupported ONNX op 'Slice' (domain '', opset 13, since_version 13) at node 'slice': input 1 ('starts') must be a constant (it does not fold to one)}}
  %y = onnx.node "Slice"(%x, %starts, %ends) {attrs = {}, domain = "", name = "slice", opset = 13 : i64, since_version = 13 : i64} : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @maxpool_indices(%x: tensor<1x1x4x4xf32>) -> tensor<*xi64> {
  // expected-error @+1 {{unsupported ONNX op 'MaxPool' (domain '', opset 13, since_version 12) at node 'mp': the Indices output is not supported}}
  %y, %i = onnx.node "MaxPool"(%x) {attrs = {kernel_shape = [2, 2]}, domain = "", name = "mp", opset = 13 : i64, since_version = 12 : i64} : (tensor<1x1x4x4xf32>) -> (tensor<*xf32>, tensor<*xi64>)
  return %i : tensor<*xi64>
}

// -----

func.func @batchnorm_statistics_outputs(%x: tensor<2x3xf32>, %s: tensor<3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{unsupported ONNX op 'BatchNormalization' (domain '', opset 15, since_version 15) at node 'bn': running statistics outputs need training_mode = 1}}
  %y, %m, %v = onnx.node "BatchNormalization"(%x, %s, %s, %s, %s) {attrs = {}, domain = "", name = "bn", opset = 15 : i64, since_version = 15 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return %m : tensor<*xf32>
}

// -----

func.func @einsum_ellipsis(%x: tensor<2x3x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{unsupported ONNX op 'Einsum' (domain '', opset 13, since_version 12) at node 'e': ellipsis in equation '...ii->...i'}}
  %y = onnx.node "Einsum"(%x) {attrs = {equation = "...ii->...i"}, domain = "", name = "e", opset = 13 : i64, since_version = 12 : i64} : (tensor<2x3x3xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @shape_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{operand shapes do not broadcast}}
  %y = onnx.node "Add"(%a, %b) {attrs = {}, domain = "", name = "add", opset = 14 : i64, since_version = 14 : i64} : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}
