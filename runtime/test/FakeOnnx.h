//===- FakeOnnx.h - The fake train artifacts' ONNX models -------*- C++ -*-===//
//-*-===//
//
// A "train" artifact's params start from the initializers of its ONNX model.
// These builders make small valid models (each initializer passed through an
// Identity node to a graph output) for the fake artifacts and the tests.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_TEST_FAKEONNX_H
#define TESSERA_RUNTIME_TEST_FAKEONNX_H

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace tsr::test {

struct FakeInitializer {
  std::string name;
  onnx::TensorProto::DataType type;
  std::vector<int64_t> dims;
  /// Stored in float_data (FLOAT) or int64_data (INT64), not raw_data, so
  /// that saving must clear the typed fields.
  std::vector<double> values;
};

inline onnx::ModelProto fakeModel(const std::vector<FakeInitializer> &inits) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("tessera-runtime-tests");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("fake");
  for (const FakeInitializer &init : inits) {
    onnx::TensorProto *tensor = graph->add_initializer();
    tensor->set_name(init.name);
    tensor->set_data_type(init.type);
    for (int64_t dim : init.dims)
      tensor->add_dims(dim);
    for (double value : init.values) {
      if (init.type == onnx::TensorProto::INT64)
        tensor->add_int64_data(static_cast<int64_t>(value));
      else
        tensor->add_float_data(static_cast<float>(value));
    }
    onnx::NodeProto *node = graph->add_node();
    node->set_op_type("Identity");
    node->add_input(init.name);
    node->add_output(init.name + "_out");
    onnx::ValueInfoProto *output = graph->add_output();
    output->set_name(init.name + "_out");
    onnx::TypeProto::Tensor *type =
        output->mutable_type()->mutable_tensor_type();
    type->set_elem_type(init.type);
    onnx::TensorShapeProto *shape = type->mutable_shape();
    for (int64_t dim : init.dims)
      shape->add_dim()->set_dim_value(dim);
  }
  return model;
}

/// The initial params of train-linear-artifact: w = [0.5, -1], b = 0.25.
inline onnx::ModelProto linearModel() {
  return fakeModel({{"w", onnx::TensorProto::FLOAT, {2}, {0.5, -1.0}},
                    {"b", onnx::TensorProto::FLOAT, {}, {0.25}}});
}

/// The initial param of train-token-artifact: bias = 1.5.
inline onnx::ModelProto tokenModel() {
  return fakeModel({{"bias", onnx::TensorProto::FLOAT, {}, {1.5}}});
}

} // namespace tsr::test

#endif // TESSERA_RUNTIME_TEST_FAKEONNX_H
