//===- Infer.cpp - Running "infer" artifacts ------------------------------===//
//
// Reads input_<i>.pb (or input_<i>.npy) for each manifest input, invokes
// the entry (--repeat times more to time it) and writes output_<i>.pb for
// each output, or prints them (--print). Inputs that the artifact wants in
// device or pinned memory are copied there, and device outputs back. On a
// mesh every rank reads the same inputs and runs the program; rank 0 writes
// and prints.
//
//===----------------------------------------------------------------------===//

#include "Float16.h"
#include "TesseraRun.h"
#include "tessera-runtime/Device.h"

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

/// Replaces `tensor` by a copy in `placement` unless it can stand for one
/// there already. Returns an error message, or "".
std::string place(TensorPtr &tensor, tsr_placement_t placement) {
  if (placement == TSR_PLACEMENT_HOST ||
      tsr_tensor_placement(tensor.get()) == placement)
    return "";
  tsr_tensor_t *copy = nullptr;
  if (tsr_tensor_create_placed(placement, tsr_tensor_dtype(tensor.get()),
                               tsr_tensor_rank(tensor.get()),
                               tsr_tensor_shape(tensor.get()), &copy) != TSR_OK)
    return tsr_last_error();
  TensorPtr placed(copy);
  if (tsr_tensor_copy(placed.get(), tensor.get(), nullptr) != TSR_OK ||
      tsr_tensor_set_name(placed.get(), tsr_tensor_name(tensor.get())) !=
          TSR_OK)
    return tsr_last_error();
  tensor = std::move(placed);
  return "";
}

} // namespace

int tessera_run::runInfer(const Options &options, tsr_artifact_t *artifact,
                          Process &process) {
  size_t numInputs = tsr_artifact_num_inputs(artifact);
  size_t numOutputs = tsr_artifact_num_outputs(artifact);
  if (numInputs && options.inputsDir.empty())
    return process.fail("missing --inputs-dir (the artifact takes " +
                        std::to_string(numInputs) + " inputs)");

  // Every rank reads its inputs; they agree before the first collective.
  std::vector<TensorPtr> inputs, outputs;
  auto setUp = [&]() -> std::string {
    for (size_t i = 0; i < numInputs; ++i) {
      tsr_tensor_info_t info;
      tsr_placement_t placement;
      tsr_artifact_input_info(artifact, i, &info);
      tsr_artifact_input_placement(artifact, i, &placement);
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
        return describe("input", i, info.name) + ": neither " + path + " nor " +
               base + ".npy exists";
      }
      if (status != TSR_OK)
        return describe("input", i, info.name) + ": " + tsr_last_error();
      inputs.emplace_back(tensor);
      std::string problem = place(inputs.back(), placement);
      if (!problem.empty())
        return describe("input", i, info.name) + ": " + problem;
      if (tsr_artifact_check_input(artifact, i, inputs.back().get()) != TSR_OK)
        return path + ": " + tsr_last_error();
    }
    for (size_t i = 0; i < numOutputs; ++i) {
      tsr_tensor_t *tensor = nullptr;
      if (tsr_artifact_create_output(artifact, i, &tensor) != TSR_OK)
        return tsr_last_error();
      outputs.emplace_back(tensor);
    }
    if (!options.outputsDir.empty() && process.rank == 0)
      return makeDirectories(options.outputsDir);
    return "";
  };
  if (int status = agreeOn(process, setUp()))
    return status;

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
  // --profile without --repeat profiles the one invocation; with --repeat N
  // the N after the first.
  using Clock = std::chrono::steady_clock;
  if (options.repeat == 0)
    startProfile(options);
  auto firstStart = Clock::now();
  if (invoke() != TSR_OK)
    return process.fail(tsr_last_error());
  double profiled =
      std::chrono::duration<double>(Clock::now() - firstStart).count();
  std::string what = "the invocation";
  if (options.repeat > 0) {
    startProfile(options);
    double total = 0, best = 0;
    for (long r = 0; r < options.repeat; ++r) {
      auto start = Clock::now();
      if (invoke() != TSR_OK)
        return process.fail(tsr_last_error());
      double ms =
          std::chrono::duration<double, std::milli>(Clock::now() - start)
              .count();
      total += ms;
      best = r == 0 ? ms : std::min(best, ms);
    }
    process.print("time per invocation: mean %.4f ms, min %.4f ms over %ld "
                  "runs\n",
                  total / options.repeat, best, options.repeat);
    profiled = total / 1e3;
    what = "invocations 2-" + std::to_string(options.repeat + 1);
  }
  if (int status =
          reportProfile(options, artifact, process, what, "invocation",
                        options.repeat > 0 ? options.repeat : 1, profiled))
    return status;
  if (process.rank != 0)
    return 0;

  for (size_t i = 0; i < numOutputs; ++i) {
    // Device outputs are read back into host memory.
    TensorPtr &output = outputs[i];
    if (tsr_tensor_placement(output.get()) == TSR_PLACEMENT_DEVICE) {
      tsr_tensor_t *host = nullptr;
      if (tsr_tensor_create(tsr_tensor_dtype(output.get()),
                            tsr_tensor_rank(output.get()),
                            tsr_tensor_shape(output.get()), &host) != TSR_OK)
        return process.fail(tsr_last_error());
      TensorPtr copy(host);
      if (tsr_tensor_copy(copy.get(), output.get(), nullptr) != TSR_OK ||
          tsr_tensor_set_name(copy.get(), tsr_tensor_name(output.get())) !=
              TSR_OK)
        return process.fail(tsr_last_error());
      output = std::move(copy);
    }
    if (options.print)
      printTensor(i, output.get());
    if (options.outputsDir.empty())
      continue;
    std::string path =
        options.outputsDir + "/output_" + std::to_string(i) + ".pb";
    if (tsr_tensor_write_pb(output.get(), path.c_str()) != TSR_OK)
      return process.fail(tsr_last_error());
  }
  return 0;
}
