//===- Trainer.cpp - The buffers and steps of a "train" artifact ----------===//
//
// A trainer owns one tensor per input and output of a "train" artifact. Param
// inputs start from the initializers of the artifact's ONNX model, state
// inputs from their manifest "init". After each step the data pointers of
// every param and state output and of the input it updates are swapped, so
// the next step reads the new values without a copy. The ONNX model is kept
// (with the params' payloads dropped) to write the trained model back out.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

using namespace tsr;
using onnx::TensorProto;

struct tsr_trainer {
  const tsr_artifact *artifact = nullptr;
  std::vector<std::unique_ptr<tsr_tensor>> inputs, outputs;
  /// (output, input) pairs whose data pointers swap after a step.
  std::vector<std::pair<size_t, size_t>> swaps;
  /// The artifact's ONNX model, if it names one; param initializers hold no
  /// data here.
  std::unique_ptr<onnx::ModelProto> model;
  /// (input, initializer index) for every param.
  std::vector<std::pair<size_t, int>> params;
  /// The first initializer that keeps its data in an external file.
  std::string externalInitializer;
};

namespace {

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint16_t sign = (bits >> 16) & 0x8000;
  bits &= 0x7FFFFFFF;
  if (bits >= 0x7F800000)
    return sign | 0x7C00 | (bits > 0x7F800000 ? 0x200 : 0);
  if (bits >= 0x477FF000) // Rounds to 65520 or more: infinity.
    return sign | 0x7C00;
  if (bits < 0x38800000) { // A half subnormal: a multiple of 2^-24.
    float magnitude;
    std::memcpy(&magnitude, &bits, sizeof(magnitude));
    return sign |
           static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  uint32_t half = (((bits >> 23) - 112) << 10) | ((bits & 0x7FFFFF) >> 13);
  uint32_t rest = bits & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return sign | static_cast<uint16_t>(half);
}

uint16_t floatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7FFFFFFF) > 0x7F800000)
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

template <typename T> void fillWith(tsr_tensor &tensor, T value) {
  T *data = static_cast<T *>(tensor.data);
  for (int64_t i = 0; i < tensor.numElements; ++i)
    data[i] = value;
}

/// Fills a tensor with a value the manifest check found representable.
void fillConstant(tsr_tensor &tensor, double value) {
  switch (tensor.dtype) {
  case TSR_DTYPE_FLOAT16:
    return fillWith(tensor, floatToHalf(static_cast<float>(value)));
  case TSR_DTYPE_BFLOAT16:
    return fillWith(tensor, floatToBFloat16(static_cast<float>(value)));
  case TSR_DTYPE_FLOAT32:
    return fillWith(tensor, static_cast<float>(value));
  case TSR_DTYPE_FLOAT64:
    return fillWith(tensor, value);
  case TSR_DTYPE_INT8:
    return fillWith(tensor, static_cast<int8_t>(value));
  case TSR_DTYPE_INT16:
    return fillWith(tensor, static_cast<int16_t>(value));
  case TSR_DTYPE_INT32:
    return fillWith(tensor, static_cast<int32_t>(value));
  case TSR_DTYPE_INT64:
    return fillWith(tensor, static_cast<int64_t>(value));
  case TSR_DTYPE_UINT8:
  case TSR_DTYPE_BOOL:
    return fillWith(tensor, static_cast<uint8_t>(value));
  case TSR_DTYPE_UINT16:
    return fillWith(tensor, static_cast<uint16_t>(value));
  case TSR_DTYPE_UINT32:
    return fillWith(tensor, static_cast<uint32_t>(value));
  case TSR_DTYPE_UINT64:
    return fillWith(tensor, static_cast<uint64_t>(value));
  default:
    return;
  }
}

bool isExternal(const TensorProto &proto) {
  return proto.data_location() == TensorProto::EXTERNAL ||
         proto.external_data_size() > 0;
}

/// Drops an initializer's payload, keeping its name, dims and data_type.
void clearData(TensorProto &proto) {
  proto.clear_raw_data();
  proto.clear_float_data();
  proto.clear_int32_data();
  proto.clear_string_data();
  proto.clear_int64_data();
  proto.clear_double_data();
  proto.clear_uint64_data();
}

/// Copies the initializer named like param input `index` into its tensor.
tsr_status_t loadParam(tsr_trainer &trainer, size_t index) {
  const TensorSpec &spec = trainer.artifact->manifest.inputs[index];
  onnx::GraphProto *graph = trainer.model->mutable_graph();
  std::string what = describe("input", index, spec) + " (param)";
  for (int k = 0; k < graph->initializer_size(); ++k) {
    TensorProto &proto = *graph->mutable_initializer(k);
    if (proto.name() != spec.name)
      continue;
    if (isExternal(proto))
      return fail(TSR_ERROR_UNSUPPORTED,
                  "initializer '" + spec.name + "' for " + what +
                      " keeps its data in an external file, which is not "
                      "supported");
    tsr_tensor_t *raw = nullptr;
    if (tsr_status_t s = tensorFromProto(proto, &raw))
      return withContext(s, "initializer '" + spec.name + "'");
    std::unique_ptr<tsr_tensor> value(raw);
    if (value->dtype != spec.dtype || value->shape != spec.shape)
      return fail(TSR_ERROR_MISMATCH,
                  "initializer '" + spec.name + "' is " +
                      tsr_dtype_name(value->dtype) + formatShape(value->shape) +
                      " but " + what + " is " + tsr_dtype_name(spec.dtype) +
                      formatShape(spec.shape));
    std::memcpy(trainer.inputs[index]->data, value->data, value->byteSize);
    clearData(proto);
    trainer.params.emplace_back(index, k);
    return TSR_OK;
  }
  return fail(TSR_ERROR_MISMATCH,
              "no initializer is named '" + spec.name + "' (for " + what + ")");
}

tsr_status_t loadModel(tsr_trainer &trainer) {
  const std::string &path = trainer.artifact->onnxPath;
  std::string bytes;
  if (tsr_status_t s = readFile(path, bytes))
    return s;
  trainer.model = std::make_unique<onnx::ModelProto>();
  if (!trainer.model->ParseFromString(bytes))
    return fail(TSR_ERROR_PARSE,
                path + ": not a valid ONNX ModelProto (protobuf parse failed)");
  bytes.clear();
  for (const TensorProto &proto : trainer.model->graph().initializer()) {
    if (isExternal(proto)) {
      trainer.externalInitializer = proto.name();
      break;
    }
  }
  const std::vector<TensorSpec> &inputs = trainer.artifact->manifest.inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].role == TSR_ROLE_PARAM)
      if (tsr_status_t s = loadParam(trainer, i))
        return withContext(s, path);
  return TSR_OK;
}

tsr_status_t createTrainer(const tsr_artifact_t &artifact,
                           std::unique_ptr<tsr_trainer> &out) {
  const Manifest &manifest = artifact.manifest;
  if (manifest.mode != "train")
    return fail(TSR_ERROR_INVALID_ARGUMENT, artifact.dir + ": mode \"" +
                                                manifest.mode +
                                                "\" cannot be trained");
  auto trainer = std::make_unique<tsr_trainer>();
  trainer->artifact = &artifact;
  auto create = [](const char *kind, size_t index, const TensorSpec &spec,
                   std::vector<std::unique_ptr<tsr_tensor>> &list) {
    tsr_tensor_t *tensor = nullptr;
    if (tsr_status_t s = createTensor(spec.dtype, spec.shape, &tensor))
      return withContext(s, describe(kind, index, spec));
    tensor->name = spec.name;
    list.emplace_back(tensor);
    return TSR_OK;
  };
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    if (tsr_status_t s =
            create("input", i, manifest.inputs[i], trainer->inputs))
      return s;
    if (manifest.inputs[i].role == TSR_ROLE_STATE)
      fillConstant(*trainer->inputs.back(), manifest.inputs[i].init);
  }
  for (size_t i = 0; i < manifest.outputs.size(); ++i) {
    if (tsr_status_t s =
            create("output", i, manifest.outputs[i], trainer->outputs))
      return s;
    if (manifest.outputs[i].updates >= 0)
      trainer->swaps.emplace_back(i, manifest.outputs[i].updates);
  }
  if (!artifact.onnxPath.empty())
    if (tsr_status_t s = loadModel(*trainer))
      return s;
  out = std::move(trainer);
  return TSR_OK;
}

tsr_status_t runStep(tsr_trainer &trainer, const tsr_dataset_t &dataset,
                     int64_t step, float &outLoss) {
  std::vector<tsr_tensor_t *> inputs;
  for (auto &tensor : trainer.inputs)
    inputs.push_back(tensor.get());
  if (tsr_status_t s =
          tsr_dataset_fill_batch(&dataset, step, inputs.data(), inputs.size()))
    return s;
  const auto &specs = trainer.artifact->manifest.inputs;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].role == TSR_ROLE_RNG)
      *static_cast<int64_t *>(trainer.inputs[i]->data) = step;
  std::vector<tsr_tensor_t *> outputs;
  for (auto &tensor : trainer.outputs)
    outputs.push_back(tensor.get());
  if (tsr_status_t s =
          tsr_artifact_invoke(trainer.artifact, inputs.data(), inputs.size(),
                              outputs.data(), outputs.size()))
    return s;
  size_t loss = trainer.artifact->manifest.train.lossOutput;
  const tsr_tensor &lossTensor = *trainer.outputs[loss];
  outLoss =
      lossTensor.dtype == TSR_DTYPE_FLOAT64
          ? static_cast<float>(*static_cast<const double *>(lossTensor.data))
          : *static_cast<const float *>(lossTensor.data);
  for (const auto &[output, input] : trainer.swaps)
    std::swap(trainer.outputs[output]->data, trainer.inputs[input]->data);
  return TSR_OK;
}

tsr_status_t checkSave(const tsr_trainer &trainer) {
  if (!trainer.model)
    return fail(TSR_ERROR_UNSUPPORTED,
                trainer.artifact->dir +
                    "/manifest.json names no \"onnx\" model to save");
  if (!trainer.externalInitializer.empty())
    return fail(TSR_ERROR_UNSUPPORTED,
                trainer.artifact->onnxPath + ": initializer '" +
                    trainer.externalInitializer +
                    "' keeps its data in an external file; saving such "
                    "models is not supported");
  return TSR_OK;
}

tsr_status_t save(const tsr_trainer &trainer, const std::string &path) {
  if (tsr_status_t s = checkSave(trainer))
    return s;
  // Lend the params' current values to the model for serializing only.
  onnx::GraphProto *graph = trainer.model->mutable_graph();
  for (const auto &[input, k] : trainer.params) {
    const tsr_tensor &tensor = *trainer.inputs[input];
    graph->mutable_initializer(k)->set_raw_data(tensor.data, tensor.byteSize);
  }
  std::string bytes;
  bool serialized = trainer.model->SerializeToString(&bytes);
  for (const auto &[input, k] : trainer.params)
    graph->mutable_initializer(k)->clear_raw_data();
  if (!serialized)
    return fail(TSR_ERROR_IO, path + ": cannot serialize the ONNX model");
  std::string temporary = path + ".tmp";
  if (tsr_status_t s = writeFile(temporary, bytes))
    return s;
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    return fail(TSR_ERROR_IO,
                path + ": cannot rename " + temporary + " to it: " + reason);
  }
  return TSR_OK;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

tsr_status_t tsr_trainer_create(const tsr_artifact_t *artifact,
                                tsr_trainer_t **out_trainer) {
  return guard([&] {
    if (!artifact || !out_trainer)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    std::unique_ptr<tsr_trainer> trainer;
    if (tsr_status_t s = createTrainer(*artifact, trainer))
      return s;
    *out_trainer = trainer.release();
    return TSR_OK;
  });
}

void tsr_trainer_destroy(tsr_trainer_t *trainer) { delete trainer; }

tsr_tensor_t *tsr_trainer_input(tsr_trainer_t *trainer, size_t index) {
  return index < trainer->inputs.size() ? trainer->inputs[index].get()
                                        : nullptr;
}

tsr_tensor_t *tsr_trainer_output(tsr_trainer_t *trainer, size_t index) {
  return index < trainer->outputs.size() ? trainer->outputs[index].get()
                                         : nullptr;
}

tsr_status_t tsr_trainer_step(tsr_trainer_t *trainer,
                              const tsr_dataset_t *dataset, int64_t step,
                              float *out_loss) {
  return guard([&] {
    if (!trainer || !dataset || !out_loss)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return runStep(*trainer, *dataset, step, *out_loss);
  });
}

tsr_status_t tsr_trainer_check_save_onnx(const tsr_trainer_t *trainer) {
  return guard([&] {
    if (!trainer)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return checkSave(*trainer);
  });
}

tsr_status_t tsr_trainer_save_onnx(const tsr_trainer_t *trainer,
                                   const char *path) {
  return guard([&] {
    if (!trainer || !path)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return save(*trainer, path);
  });
}
