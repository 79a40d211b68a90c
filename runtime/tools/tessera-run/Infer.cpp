//===- Infer.cpp - Running "infer" artifacts ------------------------------===//
//
// Reads input_<i>.pb (or input_<i>.npy) for each manifest input, invokes
// the entry (--repeat times more to time it) and writes output_<i>.pb for
// each output, or prints them (--print).
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "TesseraRun.h"

#include <algorithm>
#include <chrono>
#include <vector>

using namespace tessera_run;

namespace {

constexpr int64_t kPrintedValues = 8;

struct TensorDeleter {
  void operator()(tsr_tensor_t *tensor) const { tsr_tensor_destroy(tensor); }
};
using TensorPtr = std::unique_ptr<tsr_tensor_t, TensorDeleter>;

std::string describe(const char *kind, size_t index, const char *name) {
  return std::string(kind) + " " + std::to_string(index) + " '" + name + "'";
}

std::string formatValue(tsr_dtype_t dtype, const void *data, int64_t i) {
  char text[64];
  switch (dtype) {
  case TSR_DTYPE_FLOAT16:
    std::snprintf(text, sizeof(text), "%g",
                  tsr::halfToFloat(static_cast<const uint16_t *>(data)[i]));
    break;
  case TSR_DTYPE_BFLOAT16:
    std::snprintf(text, sizeof(text), "%g",
                  tsr::bfloat16ToFloat(static_cast<const uint16_t *>(data)[i]));
    break;
  case TSR_DTYPE_FLOAT32:
    std::snprintf(text, sizeof(text), "%g",
                  static_cast<const float *>(data)[i]);
    break;
  case TSR_DTYPE_FLOAT64:
    std::snprintf(text, sizeof(text), "%g",
                  static_cast<const double *>(data)[i]);
    break;
  case TSR_DTYPE_INT8:
    return std::to_string(static_cast<const int8_t *>(data)[i]);
  case TSR_DTYPE_INT16:
    return std::to_string(static_cast<const int16_t *>(data)[i]);
  case TSR_DTYPE_INT32:
    return std::to_string(static_cast<const int32_t *>(data)[i]);
  case TSR_DTYPE_INT64:
    return std::to_string(static_cast<const int64_t *>(data)[i]);
  case TSR_DTYPE_UINT8:
    return std::to_string(static_cast<const uint8_t *>(data)[i]);
  case TSR_DTYPE_UINT16:
    return std::to_string(static_cast<const uint16_t *>(data)[i]);
  case TSR_DTYPE_UINT32:
    return std::to_string(static_cast<const uint32_t *>(data)[i]);
  case TSR_DTYPE_UINT64:
    return std::to_string(static_cast<const uint64_t *>(data)[i]);
  case TSR_DTYPE_BOOL:
    return static_cast<const uint8_t *>(data)[i] ? "true" : "false";
  default:
    return "?";
  }
  return text;
}

void printTensor(size_t index, tsr_tensor_t *tensor) {
  tsr_dtype_t dtype = tsr_tensor_dtype(tensor);
  std::string line = describe("output", index, tsr_tensor_name(tensor)) + ": " +
                     tsr_dtype_name(dtype) + "[";
  const int64_t *shape = tsr_tensor_shape(tensor);
  for (size_t d = 0; d < tsr_tensor_rank(tensor); ++d)
    line += (d ? ", " : "") + std::to_string(shape[d]);
  line += "] = [";
  int64_t count = tsr_tensor_num_elements(tensor);
  for (int64_t i = 0; i < count && i < kPrintedValues; ++i)
    line += (i ? ", " : "") + formatValue(dtype, tsr_tensor_data(tensor), i);
  if (count > kPrintedValues)
    line += ", ... (" + std::to_string(count) + " values)";
  std::printf("%s]\n", line.c_str());
}

} // namespace

int tessera_run::runInfer(const Options &options, tsr_artifact_t *artifact) {
  size_t numInputs = tsr_artifact_num_inputs(artifact);
  size_t numOutputs = tsr_artifact_num_outputs(artifact);
  if (numInputs && options.inputsDir.empty())
    return error("missing --inputs-dir (the artifact takes " +
                 std::to_string(numInputs) + " inputs)");

  std::vector<TensorPtr> inputs, outputs;
  for (size_t i = 0; i < numInputs; ++i) {
    tsr_tensor_info_t info;
    tsr_artifact_input_info(artifact, i, &info);
    std::string base = options.inputsDir + "/input_" + std::to_string(i);
    std::string path = base + ".pb";
    tsr_tensor_t *tensor = nullptr;
    tsr_status_t status;
    if (isFile(path)) {
      status = tsr_tensor_read_pb(path.c_str(), &tensor);
    } else if (isFile(base + ".npy")) {
      path = base + ".npy";
      status = tsr_tensor_read_npy(path.c_str(), &tensor);
    } else {
      return error(describe("input", i, info.name) + ": neither " + path +
                   " nor " + base + ".npy exists");
    }
    if (status != TSR_OK)
      return error(describe("input", i, info.name) + ": " + tsr_last_error());
    inputs.emplace_back(tensor);
    if (tsr_artifact_check_input(artifact, i, tensor) != TSR_OK)
      return error(path + ": " + tsr_last_error());
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    tsr_tensor_t *tensor = nullptr;
    if (tsr_artifact_create_output(artifact, i, &tensor) != TSR_OK)
      return error(tsr_last_error());
    outputs.emplace_back(tensor);
  }
  if (!options.outputsDir.empty()) {
    std::string problem = makeDirectories(options.outputsDir);
    if (!problem.empty())
      return error(problem);
  }

  std::vector<const tsr_tensor_t *> inputPtrs;
  std::vector<tsr_tensor_t *> outputPtrs;
  for (TensorPtr &tensor : inputs)
    inputPtrs.push_back(tensor.get());
  for (TensorPtr &tensor : outputs)
    outputPtrs.push_back(tensor.get());
  auto invoke = [&] {
    return tsr_artifact_invoke(artifact, inputPtrs.data(), inputPtrs.size(),
                               outputPtrs.data(), outputPtrs.size());
  };
  if (invoke() != TSR_OK)
    return error(tsr_last_error());
  if (options.repeat > 0) {
    using Clock = std::chrono::steady_clock;
    double total = 0, best = 0;
    for (long r = 0; r < options.repeat; ++r) {
      auto start = Clock::now();
      if (invoke() != TSR_OK)
        return error(tsr_last_error());
      double ms =
          std::chrono::duration<double, std::milli>(Clock::now() - start)
              .count();
      total += ms;
      best = r == 0 ? ms : std::min(best, ms);
    }
    std::printf("time per invocation: mean %.4f ms, min %.4f ms over %ld "
                "runs\n",
                total / options.repeat, best, options.repeat);
  }

  for (size_t i = 0; i < numOutputs; ++i) {
    if (options.print)
      printTensor(i, outputs[i].get());
    if (options.outputsDir.empty())
      continue;
    std::string path =
        options.outputsDir + "/output_" + std::to_string(i) + ".pb";
    if (tsr_tensor_write_pb(outputs[i].get(), path.c_str()) != TSR_OK)
      return error(tsr_last_error());
  }
  return 0;
}
