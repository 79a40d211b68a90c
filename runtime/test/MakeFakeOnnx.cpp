//===- MakeFakeOnnx.cpp - Write a fake train artifact's model.onnx --------===//
//
// Usage: make-fake-onnx linear|token OUT.onnx
//
//===----------------------------------------------------------------------===//

#include "FakeOnnx.h"

#include <cstdio>
#include <cstring>
#include <fstream>

int main(int argc, char **argv) {
  if (argc != 3 ||
      (std::strcmp(argv[1], "linear") && std::strcmp(argv[1], "token"))) {
    std::fprintf(stderr, "usage: make-fake-onnx linear|token OUT.onnx\n");
    return 1;
  }
  onnx::ModelProto model = std::strcmp(argv[1], "linear") == 0
                               ? tsr::test::linearModel()
                               : tsr::test::tokenModel();
  std::ofstream out(argv[2], std::ios::binary);
  if (!model.SerializeToOstream(&out)) {
    std::fprintf(stderr, "make-fake-onnx: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
