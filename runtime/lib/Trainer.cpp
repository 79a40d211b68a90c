//===- Trainer.cpp - The buffers and steps of a "train" artifact ----------===//
//
// A trainer owns one tensor per input and output of a "train" artifact. Param
// inputs start from the initializers of the artifact's ONNX model, state
// inputs from their manifest "init". An output that the program writes in
// place ("in_place") is a view of the input it updates; after each step the
// data pointers of every other param and state output and of the input it
// updates are swapped, so the next step reads the new values without a
// copy. The ONNX model is kept (with the params' payloads dropped) to write
// the trained model back out.
//
// tsr_trainer_run is the training loop that drivers share (tessera-run
// --train, the Python binding): steps, progress callbacks, periodic and
// final saves of the ONNX model and of checkpoints.
//
// On a mesh every rank runs a trainer. A param or state that the manifest
// splits ("sharding", tensor parallelism) holds this rank's block of the
// whole tensor; under ZeRO it holds the rank's flat dp shard of its block
// (or of the whole tensor when nothing splits it). Params start as that
// part of their initializer. Saving the ONNX model or a checkpoint is
// collective over the whole mesh: blocks and shards are gathered, world
// rank 0 writes the model, and checkpoints hold the layout of a run without
// tensor parallelism (whole tensors, or flat over dp), written by the ranks
// with coordinate 0 on every axis but dp (rank 0 commits), so that a run on
// any mesh resumes them. A pipeline's stages hold different tensors: each
// stage writes its own checkpoint (DIR.stageK, stage 0's DIR itself,
// committed last), which a run with the same number of stages resumes.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "DurableFile.h"
#include "Float16.h"
#include "Json.h"
#include "ParameterServer.h"
#include "RuntimeInternal.h"
#include "tessera-runtime/Checkpoint.h"
#include "tessera-runtime/Comm.h"
#include "tessera-runtime/Device.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <malloc.h>
#include <map>
#include <memory>
#include <sys/resource.h>
#include <utility>

using namespace tsr;
using onnx::TensorProto;

struct tsr_trainer {
  const tsr_artifact *artifact = nullptr;
  std::vector<std::unique_ptr<tsr_tensor>> inputs, outputs;
  /// For an artifact whose buffers live in device memory, their device
  /// copies (empty otherwise). The inputs a step updates (params and
  /// optimizer state: `resident`) stay on the device between steps, their
  /// updates swapped in there; each step copies the other inputs (the
  /// batch, seeds, constants) there and the outputs that update nothing
  /// (loss, metrics) back. The host copies of resident inputs are refreshed
  /// when something reads them (syncHost: checkpoints, the ONNX export,
  /// tsr_trainer_input, the end of a run), and a host write to them (a
  /// checkpoint loaded) makes the next step copy them to the device again.
  /// The host tensors of what crosses at every step are pinned.
  std::vector<std::unique_ptr<tsr_tensor>> deviceInputs, deviceOutputs;
  /// Per input, and per output (one that updates a resident input).
  std::vector<bool> resident, residentOutputs;
  /// Whether the device copies of resident inputs are current (after a
  /// step), and the host copies (before the first step, after syncHost).
  bool deviceCurrent = false;
  mutable bool hostCurrent = true;
  /// (output, input) pairs whose data pointers swap after a step.
  std::vector<std::pair<size_t, size_t>> swaps;
  /// The artifact's ONNX model, if it names one; param initializers hold no
  /// data here.
  std::unique_ptr<onnx::ModelProto> model;
  /// (input, initializer index) for every param.
  std::vector<std::pair<size_t, int>> params;
  /// The first initializer that keeps its data in an external file.
  std::string externalInitializer;
  /// The position on the dp axis (the group mask of that mesh axis, -1 if
  /// none).
  int64_t dpGroup = -1, dpRank = 0, dpSize = 1;
  /// The group of the whole mesh (-1 without a mesh), and whether this rank
  /// saves its copy of the state: coordinate 0 on every axis but dp.
  int64_t meshGroup = -1;
  bool saves = true;
  /// For a pipeline: the stage this rank runs and how many there are, and
  /// whether this rank writes its stage's checkpoint (coordinate 0 on every
  /// axis but dp and pp).
  int64_t stage = 0, stages = 1;
  bool savesStage = true;
  /// Dynamic loss scaling: the output and input of the "loss_scale" state
  /// (-1 without), its value after the last step and whether that step was
  /// skipped (the scale went down).
  int64_t lossScaleOutput = -1, lossScaleInput = -1;
  double lossScale = 0;
  bool skipped = false;
  /// The run's data order and seed (tsr_trainer_set_order), which
  /// checkpoints record.
  bool shuffle = false;
  uint64_t seed = 0;
  /// Whether a checkpoint written under other hyperparameters may be
  /// resumed (tsr_trainer_allow_changed_hparams).
  bool allowChangedHparams = false;
  /// With parameter servers: this worker's or server's side of the
  /// exchange.
  std::unique_ptr<ParameterServerLink> parameterServer;
  /// The outputs of the evaluation program, made on its first call.
  std::vector<std::unique_ptr<tsr_tensor>> evalOutputs;
};

namespace {

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
    return fillWith(tensor, floatToBfloat16(static_cast<float>(value)));
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
/// The storage goes too: clearing keeps a string's or repeated field's
/// capacity, which for GPT-2's 650 MB of weights stayed resident all run.
void clearData(TensorProto &proto) {
  std::string().swap(*proto.mutable_raw_data());
  proto.clear_raw_data();
  google::protobuf::RepeatedField<float>().Swap(proto.mutable_float_data());
  google::protobuf::RepeatedField<int32_t>().Swap(proto.mutable_int32_data());
  google::protobuf::RepeatedPtrField<std::string>().Swap(
      proto.mutable_string_data());
  google::protobuf::RepeatedField<int64_t>().Swap(proto.mutable_int64_data());
  google::protobuf::RepeatedField<double>().Swap(proto.mutable_double_data());
  google::protobuf::RepeatedField<uint64_t>().Swap(proto.mutable_uint64_data());
}

//===----------------------------------------------------------------------===//
// Layouts: whole tensors, tensor-parallel blocks and ZeRO shards
//===----------------------------------------------------------------------===//

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The group mask of the mesh axes that split `spec` (0 if none).
int64_t splitGroup(const Manifest &manifest, const TensorSpec &spec) {
  int64_t mask = 0;
  for (const std::vector<std::string> &axes : spec.sharding)
    for (const std::string &axis : axes)
      mask |= int64_t(1) << findMeshAxis(manifest, axis);
  return mask;
}

/// The block index along every dimension of `spec`'s global shape of the
/// rank with coordinate `coords[i]` on mesh axis i.
std::vector<int64_t> blockIndex(const Manifest &manifest,
                                const TensorSpec &spec,
                                const std::vector<int64_t> &coords) {
  std::vector<int64_t> index(spec.globalShape.size(), 0);
  for (size_t d = 0; d < spec.sharding.size(); ++d)
    for (const std::string &axis : spec.sharding[d]) {
      auto i = static_cast<size_t>(findMeshAxis(manifest, axis));
      index[d] = index[d] * manifest.mesh[i].second + coords[i];
    }
  return index;
}

/// Copies block `index` of a row-major tensor of `global` (blocks of
/// `block`, rank >= 1) between the whole tensor and a buffer of the block:
/// out of `from` (the whole tensor) into `to` (the block), or, with
/// `intoWhole`, from the block into the whole tensor.
void copyBlock(const std::vector<int64_t> &global,
               const std::vector<int64_t> &block,
               const std::vector<int64_t> &index, size_t elementSize,
               const char *from, char *to, bool intoWhole) {
  if (product(block) == 0)
    return;
  size_t rank = global.size();
  // Rows of the block along its last dimension are contiguous in both.
  size_t row = static_cast<size_t>(block[rank - 1]) * elementSize;
  std::vector<int64_t> stride(rank, 1), at(rank, 0);
  for (size_t d = rank - 1; d > 0; --d)
    stride[d - 1] = stride[d] * global[d];
  int64_t rows = product(block) / block[rank - 1];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += (index[d] * block[d] + at[d]) * stride[d];
    size_t inWhole = static_cast<size_t>(offset) * elementSize;
    size_t inBlock = static_cast<size_t>(r) * row;
    std::memcpy(to + (intoWhole ? inWhole : inBlock),
                from + (intoWhole ? inBlock : inWhole), row);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++at[d] < block[d])
        break;
      at[d] = 0;
    }
  }
}

/// This rank's coordinate on every mesh axis.
std::vector<int64_t> meshCoordinates(const Manifest &manifest) {
  std::vector<int64_t> coords;
  for (size_t i = 0; i < manifest.mesh.size(); ++i)
    coords.push_back(tsrt_axis_rank(int64_t(1) << i));
  return coords;
}

/// Fills `out` (the local buffer of `spec`) from the whole tensor: this
/// rank's block, then its dp shard of the block (zero-padded).
void localFromWhole(const tsr_trainer &trainer, const TensorSpec &spec,
                    const char *whole, char *out) {
  const Manifest &manifest = trainer.artifact->manifest;
  size_t elementSize = tsr_dtype_size(spec.dtype);
  std::string blockBytes;
  const char *block = whole;
  if (!spec.sharding.empty()) {
    blockBytes.resize(static_cast<size_t>(product(spec.blockShape)) *
                      elementSize);
    copyBlock(spec.globalShape, spec.blockShape,
              blockIndex(manifest, spec, meshCoordinates(manifest)),
              elementSize, whole, blockBytes.data(), /*intoWhole=*/false);
    block = blockBytes.data();
  }
  int64_t numel = product(spec.blockShape);
  int64_t local = product(spec.shape);
  int64_t begin = spec.shards > 1 ? std::min(numel, trainer.dpRank * local) : 0;
  int64_t end = std::min(numel, begin + local);
  std::memset(out, 0, static_cast<size_t>(local) * elementSize);
  std::memcpy(out, block + begin * elementSize,
              static_cast<size_t>(end - begin) * elementSize);
}

/// The whole tensor of input `index`, gathered from the dp shards of its
/// block and the blocks of the ranks along its split axes (collective over
/// those axes: every rank calls it, in the same order).
std::string wholeValue(const tsr_trainer &trainer, size_t index) {
  const Manifest &manifest = trainer.artifact->manifest;
  const TensorSpec &spec = manifest.inputs[index];
  const tsr_tensor &tensor = *trainer.inputs[index];
  size_t elementSize = tsr_dtype_size(spec.dtype);
  size_t blockBytes =
      static_cast<size_t>(product(spec.blockShape)) * elementSize;
  std::string block;
  if (spec.shards > 1) {
    block.resize(tensor.byteSize * static_cast<size_t>(trainer.dpSize));
    tsrt_all_gather(-1, trainer.dpGroup, tensor.data, block.data(),
                    tensor.numElements, tensor.dtype, nullptr);
    block.resize(blockBytes);
  } else {
    block.assign(static_cast<const char *>(tensor.data), tensor.byteSize);
  }
  if (spec.sharding.empty())
    return block;
  // The group's ranks in its order: row-major over its axes in mesh order.
  int64_t group = splitGroup(manifest, spec);
  int64_t size = tsrt_axis_size(group);
  std::string blocks(blockBytes * static_cast<size_t>(size), '\0');
  tsrt_all_gather(-1, group, block.data(), blocks.data(),
                  product(spec.blockShape), spec.dtype, nullptr);
  std::string whole(
      static_cast<size_t>(product(spec.globalShape)) * elementSize, '\0');
  std::vector<int64_t> coords(manifest.mesh.size(), 0);
  for (int64_t g = 0; g < size; ++g) {
    int64_t rest = g;
    for (size_t i = manifest.mesh.size(); i-- > 0;)
      if (group & (int64_t(1) << i)) {
        coords[i] = rest % manifest.mesh[i].second;
        rest /= manifest.mesh[i].second;
      }
    copyBlock(spec.globalShape, spec.blockShape,
              blockIndex(manifest, spec, coords), elementSize,
              blocks.data() + static_cast<size_t>(g) * blockBytes, whole.data(),
              /*intoWhole=*/true);
  }
  return whole;
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
    if (value->dtype != spec.dtype || value->shape != spec.globalShape)
      return fail(TSR_ERROR_MISMATCH,
                  "initializer '" + spec.name + "' is " +
                      tsr_dtype_name(value->dtype) + formatShape(value->shape) +
                      " but " + what + " is " + tsr_dtype_name(spec.dtype) +
                      formatShape(spec.globalShape));
    // This rank's block of a split param; of a ZeRO-3 param its elements
    // [r*c, (r+1)*c), the padding past the end zero.
    localFromWhole(trainer, spec, static_cast<const char *>(value->data),
                   static_cast<char *>(trainer.inputs[index]->data));
    clearData(proto);
    trainer.params.emplace_back(index, k);
    return TSR_OK;
  }
  return fail(TSR_ERROR_MISMATCH,
              "no initializer is named '" + spec.name + "' (for " + what + ")");
}

tsr_status_t loadModel(tsr_trainer &trainer) {
  const std::string &path = trainer.artifact->onnxPath;
  // Parsed from the file as it is read: the model's bytes are never held
  // beside the parsed model (650 MB of a GPT-2-shaped model's weights).
  int fd = -1;
  if (tsr_status_t s = openRegularFile(path, fd))
    return s;
  google::protobuf::io::FileInputStream stream(fd);
  stream.SetCloseOnDelete(true);
  trainer.model = std::make_unique<onnx::ModelProto>();
  bool parsed = trainer.model->ParseFromZeroCopyStream(&stream);
  if (stream.GetErrno() != 0)
    return fail(TSR_ERROR_IO,
                path + ": read error: " + std::strerror(stream.GetErrno()));
  if (!parsed)
    return fail(TSR_ERROR_PARSE,
                path + ": not a valid ONNX ModelProto (protobuf parse failed)");
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
#ifdef __GLIBC__
  // The payloads were parsed into heap blocks below glibc's (raised) mmap
  // threshold: hand their pages back rather than hold them all run (350 MB
  // of a GPT-2-shaped model's 650 MB).
  malloc_trim(0);
#endif
  return TSR_OK;
}

/// "dp=2,tp=2".
std::string meshText(const Manifest &manifest) {
  std::string text;
  for (const auto &[name, size] : manifest.mesh)
    text += (text.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return text;
}

/// Checks that the communicators bound to the artifact's mesh (Comm.h) have
/// the sizes it was compiled for, and finds this rank's place: its dp
/// coordinate and whether it saves.
tsr_status_t joinMesh(tsr_trainer &trainer) {
  const Manifest &manifest = trainer.artifact->manifest;
  // A parameter server is on no mesh axis and saves nothing itself.
  if (manifest.parameterServer.server >= 0) {
    trainer.saves = false;
    return TSR_OK;
  }
  if (tsr_status_t s =
          getDataParallelPosition(manifest, trainer.dpRank, trainer.dpSize))
    return s;
  int64_t dp = findMeshAxis(manifest, "dp");
  if (dp >= 0)
    trainer.dpGroup = int64_t(1) << dp;
  if (manifest.mesh.empty())
    return TSR_OK;
  int64_t ranks = 1;
  auto wrongSize = [&](const std::string &what, int64_t bound) {
    return fail(TSR_ERROR_MISMATCH, "the artifact was compiled for the mesh " +
                                        meshText(manifest) + " but " + what +
                                        " has " + std::to_string(bound) +
                                        " rank" + (bound == 1 ? "" : "s") +
                                        " here (create its communicators with "
                                        "tsr_mesh_create_for_artifact)");
  };
  int64_t pp =
      manifest.otherCalls.empty() ? -1 : manifest.otherCalls.front().axis;
  for (size_t i = 0; i < manifest.mesh.size(); ++i) {
    const auto &[name, size] = manifest.mesh[i];
    int64_t group = int64_t(1) << i;
    ranks *= size;
    if (tsrt_axis_size(group) != size)
      return wrongSize("its axis " + name, tsrt_axis_size(group));
    auto axis = static_cast<int64_t>(i);
    if (axis == pp) {
      trainer.stage = tsrt_axis_rank(group);
      trainer.stages = size;
    }
    if (axis != dp && tsrt_axis_rank(group) != 0) {
      trainer.saves = false;
      if (axis != pp)
        trainer.savesStage = false;
    }
  }
  trainer.meshGroup = (int64_t(1) << manifest.mesh.size()) - 1;
  int64_t bound =
      boundGroup(trainer.meshGroup) ? tsrt_axis_size(trainer.meshGroup) : 1;
  if (bound != ranks)
    return wrongSize("the group of the whole mesh (mask " +
                         std::to_string(trainer.meshGroup) + ")",
                     bound);
  return TSR_OK;
}

/// Whether step output `output` can be passed in the buffer of the input it
/// updates: the program writes it in place ("in_place") and no later call
/// of the step reads that input (which would see the new value).
bool sharesInputBuffer(const Manifest &manifest, size_t output) {
  const TensorSpec &spec = manifest.outputs[output];
  if (!spec.inPlace || spec.updates < 0)
    return false;
  bool after = false;
  for (const CallSpec &call : manifest.schedule) {
    if (after)
      for (const Binding &binding : call.inputs)
        if (!binding.fromOutput &&
            binding.index == static_cast<size_t>(spec.updates))
          return false;
    size_t count = manifest.programs[call.program].outputs.size();
    after |= output >= call.firstOutput && output < call.firstOutput + count;
  }
  return true;
}

tsr_status_t createTrainer(const tsr_artifact_t &artifact,
                           std::unique_ptr<tsr_trainer> &out) {
  const Manifest &manifest = artifact.manifest;
  if (manifest.mode != "train")
    return fail(TSR_ERROR_INVALID_ARGUMENT, artifact.dir + ": mode \"" +
                                                manifest.mode +
                                                "\" cannot be trained");
  // Every buffer in host memory, or every one in device memory.
  tsr_placement_t placement = manifest.inputs.empty()
                                  ? TSR_PLACEMENT_HOST
                                  : manifest.inputs.front().placement;
  auto placed = [&](const char *kind, const std::vector<TensorSpec> &specs) {
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].placement != placement ||
          placement == TSR_PLACEMENT_PINNED_HOST)
        return fail(TSR_ERROR_UNSUPPORTED,
                    artifact.dir + ": " + describe(kind, i, specs[i]) +
                        " lives in " + tsr_placement_name(specs[i].placement) +
                        " memory, but the trainer needs every buffer in host "
                        "memory or every one in device memory");
    return TSR_OK;
  };
  if (tsr_status_t s = placed("input", manifest.inputs))
    return s;
  if (tsr_status_t s = placed("output", manifest.outputs))
    return s;
  auto trainer = std::make_unique<tsr_trainer>();
  trainer->artifact = &artifact;
  if (tsr_status_t s = joinMesh(*trainer))
    return withContext(s, artifact.dir);
  if (tsr_status_t s = describeCollectives(manifest))
    return s;
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
    // What a host program reads (parameters, optimizer state) lives in
    // host memory.
    if (manifest.inputs[i].onHost)
      moveToHostPool(*trainer->inputs.back());
  }
  for (size_t i = 0; i < manifest.outputs.size(); ++i) {
    int64_t updates = manifest.outputs[i].updates;
    if (updates >= 0 && placement == TSR_PLACEMENT_HOST &&
        sharesInputBuffer(manifest, i)) {
      // The program writes it over the input: a view of that buffer.
      const tsr_tensor &input = *trainer->inputs[updates];
      auto view = std::make_unique<tsr_tensor>();
      view->dtype = input.dtype;
      view->shape = input.shape;
      view->name = manifest.outputs[i].name;
      view->numElements = input.numElements;
      view->byteSize = input.byteSize;
      view->data = input.data;
      view->ownsData = false;
      trainer->outputs.push_back(std::move(view));
    } else {
      if (tsr_status_t s =
              create("output", i, manifest.outputs[i], trainer->outputs))
        return s;
      if (manifest.outputs[i].onHost)
        moveToHostPool(*trainer->outputs.back());
      if (updates >= 0)
        trainer->swaps.emplace_back(i, updates);
    }
    if (manifest.outputs[i].updates >= 0 &&
        manifest.outputs[i].role == TSR_ROLE_STATE &&
        manifest.outputs[i].name == "loss_scale" &&
        manifest.outputs[i].dtype == TSR_DTYPE_FLOAT32 &&
        manifest.outputs[i].shape.empty()) {
      trainer->lossScaleOutput = static_cast<int64_t>(i);
      trainer->lossScaleInput = manifest.outputs[i].updates;
    }
  }
  if (placement == TSR_PLACEMENT_DEVICE) {
    auto mirror = [](const char *kind,
                     const std::vector<std::unique_ptr<tsr_tensor>> &host,
                     std::vector<std::unique_ptr<tsr_tensor>> &device) {
      for (size_t i = 0; i < host.size(); ++i) {
        tsr_tensor_t *tensor = nullptr;
        if (tsr_status_t s = createTensor(host[i]->dtype, host[i]->shape,
                                          &tensor, TSR_PLACEMENT_DEVICE))
          return withContext(s, std::string(kind) + " " + std::to_string(i) +
                                    " '" + host[i]->name + "'");
        tensor->name = host[i]->name;
        device.emplace_back(tensor);
      }
      return TSR_OK;
    };
    if (tsr_status_t s =
            mirror("input", trainer->inputs, trainer->deviceInputs))
      return s;
    if (tsr_status_t s =
            mirror("output", trainer->outputs, trainer->deviceOutputs))
      return s;
    // The loss scale's pair stays staged (the host reads it every step), as
    // does everything a parameter server exchanges through host memory.
    trainer->resident.assign(manifest.inputs.size(), false);
    if (manifest.parameterServer.servers == 0)
      for (const auto &[output, input] : trainer->swaps)
        trainer->resident[input] =
            static_cast<int64_t>(input) != trainer->lossScaleInput;
    // What crosses at every step (the batch, seeds, loss, metrics) is
    // staged in pinned host memory, which the device reads and writes
    // directly.
    trainer->residentOutputs.assign(manifest.outputs.size(), false);
    for (const auto &[output, input] : trainer->swaps)
      trainer->residentOutputs[output] = trainer->resident[input];
    auto pin = [](std::unique_ptr<tsr_tensor> &tensor) {
      tsr_tensor_t *pinned = nullptr;
      if (tsr_status_t s = createTensor(tensor->dtype, tensor->shape, &pinned,
                                        TSR_PLACEMENT_PINNED_HOST))
        return withContext(s, "the pinned staging of '" + tensor->name + "'");
      std::memcpy(pinned->data, tensor->data, tensor->byteSize);
      pinned->name = tensor->name;
      tensor.reset(pinned);
      return TSR_OK;
    };
    for (size_t i = 0; i < trainer->inputs.size(); ++i)
      if (!trainer->resident[i])
        if (tsr_status_t s = pin(trainer->inputs[i]))
          return s;
    for (size_t i = 0; i < trainer->outputs.size(); ++i)
      if (!trainer->residentOutputs[i])
        if (tsr_status_t s = pin(trainer->outputs[i]))
          return s;
  }
  if (!artifact.onnxPath.empty())
    if (tsr_status_t s = loadModel(*trainer))
      return s;
  if (manifest.parameterServer.servers > 0)
    if (tsr_status_t s = ParameterServerLink::create(manifest, trainer->inputs,
                                                     trainer->outputs,
                                                     trainer->parameterServer))
      return withContext(s, artifact.dir);
  out = std::move(trainer);
  return TSR_OK;
}

/// Where a seed starts the rng input's stream: seed * 2^40 (modulo 2^64),
/// far beyond step * N + rank of any run.
int64_t rngOffset(uint64_t seed) { return static_cast<int64_t>(seed << 40); }

tsr_status_t invokeStep(tsr_trainer &trainer, int64_t step, float &outLoss);

/// Makes the host copies of a device artifact's resident inputs current.
tsr_status_t syncHost(const tsr_trainer &trainer) {
  if (trainer.hostCurrent)
    return TSR_OK;
  for (size_t i = 0; i < trainer.inputs.size(); ++i)
    if (trainer.resident[i])
      if (tsr_status_t s = tsr_tensor_copy(
              trainer.inputs[i].get(), trainer.deviceInputs[i].get(), nullptr))
        return s;
  trainer.hostCurrent = true;
  return TSR_OK;
}

/// Runs 0-based step `step`; `last` marks the last step of a run, after
/// which the ranks' parameters must agree (the `sync` input).
tsr_status_t runStep(tsr_trainer &trainer, const tsr_dataset_t &dataset,
                     int64_t step, float &outLoss, bool last) {
  std::vector<tsr_tensor_t *> inputs;
  for (auto &tensor : trainer.inputs)
    inputs.push_back(tensor.get());
  if (tsr_status_t s =
          tsr_dataset_fill_batch(&dataset, step, inputs.data(), inputs.size()))
    return s;
  const auto &specs = trainer.artifact->manifest.inputs;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].role == TSR_ROLE_RNG) // Each rank draws its own masks.
      *static_cast<int64_t *>(trainer.inputs[i]->data) =
          rngOffset(trainer.seed) + step * trainer.dpSize + trainer.dpRank;
    else if (specs[i].role == TSR_ROLE_SYNC)
      *static_cast<int64_t *>(trainer.inputs[i]->data) = last ? 1 : 0;
  return invokeStep(trainer, step, outLoss);
}

/// Runs the step's programs on the inputs as they are (runStep has filled
/// the batch), reads the loss and swaps the updated inputs in.
tsr_status_t invokeStep(tsr_trainer &trainer, int64_t step, float &outLoss) {
  std::vector<tsr_tensor_t *> inputs;
  for (auto &tensor : trainer.inputs)
    inputs.push_back(tensor.get());
  // Collectives that fail or time out name the step as logs count it.
  tsr_comm_set_step(step + 1);
  std::vector<tsr_tensor_t *> outputs;
  for (auto &tensor : trainer.outputs)
    outputs.push_back(tensor.get());
  bool device = !trainer.deviceInputs.empty();
  void *transfer = nullptr;
  if (device) {
    // The copies in run on the transfer stream, and the program's work on
    // the compute stream waits for them (an event), not the host.
    transfer = transferStream();
    void *compute = transfer ? computeStream() : nullptr;
    if (!compute)
      return withContext(TSR_ERROR_UNSUPPORTED, "the step's streams");
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!(trainer.resident[i] && trainer.deviceCurrent))
        if (tsr_status_t s = tsr_tensor_copy(trainer.deviceInputs[i].get(),
                                             inputs[i], transfer))
          return s;
      inputs[i] = trainer.deviceInputs[i].get();
    }
    if (tsr_status_t s = orderStreams(compute, transfer))
      return withContext(s, "ordering the step after its inputs' copies");
    for (size_t i = 0; i < outputs.size(); ++i)
      outputs[i] = trainer.deviceOutputs[i].get();
  }
  // The loss scale's output may be its input's buffer.
  float scaleBefore = trainer.lossScaleOutput >= 0
                          ? *static_cast<const float *>(
                                trainer.inputs[trainer.lossScaleInput]->data)
                          : 0;
  if (tsr_status_t s =
          tsr_artifact_invoke(trainer.artifact, inputs.data(), inputs.size(),
                              outputs.data(), outputs.size()))
    return s;
  if (device) {
    // The program synchronized its stream before it returned; the outputs
    // come back on the transfer stream, which the host then waits for.
    for (size_t i = 0; i < outputs.size(); ++i)
      // Outputs that update a resident input stay on the device.
      if (!trainer.residentOutputs[i])
        if (tsr_status_t s =
                tsr_tensor_copy(trainer.outputs[i].get(), outputs[i], transfer))
          return s;
    if (tsr_status_t s = tsr_stream_synchronize(transfer))
      return s;
    trainer.deviceCurrent = true;
  }
  size_t loss = trainer.artifact->manifest.train.lossOutput;
  const tsr_tensor &lossTensor = *trainer.outputs[loss];
  outLoss =
      lossTensor.dtype == TSR_DTYPE_FLOAT64
          ? static_cast<float>(*static_cast<const double *>(lossTensor.data))
          : *static_cast<const float *>(lossTensor.data);
  if (trainer.lossScaleOutput >= 0) {
    float before = scaleBefore;
    float after = *static_cast<const float *>(
        trainer.outputs[trainer.lossScaleOutput]->data);
    trainer.lossScale = after;
    trainer.skipped = after < before;
  }
  for (const auto &[output, input] : trainer.swaps) {
    if (device && trainer.resident[input]) {
      std::swap(trainer.deviceOutputs[output]->data,
                trainer.deviceInputs[input]->data);
      trainer.hostCurrent = false;
      continue;
    }
    std::swap(trainer.outputs[output]->data, trainer.inputs[input]->data);
  }
  return TSR_OK;
}

/// tsr_trainer_evaluate: the evaluation program on batches of `dataset`.
tsr_status_t evaluate(tsr_trainer &trainer, const tsr_dataset_t &dataset,
                      int64_t batches, tsr_eval_record_t &out) {
  const tsr_artifact &artifact = *trainer.artifact;
  const TrainSpec &train = artifact.manifest.train;
  if (train.evalProgram < 0)
    return fail(TSR_ERROR_UNSUPPORTED,
                artifact.dir + " has no evaluation program (compile it with "
                               "tessera-compile --eval)");
  if (!trainer.deviceInputs.empty())
    return fail(TSR_ERROR_UNSUPPORTED,
                artifact.dir + ": evaluation runs host-memory artifacts "
                               "(--target=cpu) only so far");
  const ProgramSpec &program = artifact.manifest.programs[train.evalProgram];
  if (trainer.evalOutputs.empty())
    for (const TensorSpec &spec : program.outputs) {
      tsr_tensor_t *tensor = nullptr;
      if (tsr_status_t s = createTensor(spec.dtype, spec.shape, &tensor))
        return s;
      trainer.evalOutputs.emplace_back(tensor);
    }
  int64_t samples = tsr_dataset_num_samples(&dataset);
  if (batches <= 0)
    batches = (samples + train.globalBatchSize - 1) / train.globalBatchSize;
  std::vector<tsr_tensor_t *> inputs;
  for (auto &tensor : trainer.inputs)
    inputs.push_back(tensor.get());
  ProfilePause notProfiled;
  auto start = std::chrono::steady_clock::now();
  double sum = 0;
  std::vector<void *> args;
  for (int64_t k = 0; k < batches; ++k) {
    if (tsr_status_t s =
            tsr_dataset_fill_batch(&dataset, k, inputs.data(), inputs.size()))
      return s;
    args.clear();
    for (size_t input : train.evalInputs)
      args.push_back(trainer.inputs[input]->data);
    for (auto &output : trainer.evalOutputs)
      args.push_back(output->data);
    args.push_back(nullptr);
    artifact.entries[train.evalProgram](args.data());
    std::string kernels = takeKernelError();
    if (!kernels.empty())
      return fail(TSR_ERROR_UNSUPPORTED,
                  "program '" + program.name + "': " + kernels);
    const tsr_tensor &loss = *trainer.evalOutputs[train.evalLoss];
    sum += loss.dtype == TSR_DTYPE_FLOAT64
               ? *static_cast<const double *>(loss.data)
               : *static_cast<const float *>(loss.data);
  }
  double mean = sum / static_cast<double>(batches);
  // Every dp rank took its part of each batch.
  if (trainer.dpGroup >= 0 && boundGroup(trainer.dpGroup))
    tsrt_all_reduce(-1, trainer.dpGroup, &mean, &mean, 1, TSR_DTYPE_FLOAT64,
                    TSR_REDUCE_MEAN, nullptr);
  out = tsr_eval_record_t{
      0, mean, batches, std::min(samples, batches * train.globalBatchSize),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count()};
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

/// The index of the initializer named `name`, or -1.
int findInitializer(const onnx::GraphProto &graph, const std::string &name) {
  for (int k = 0; k < graph.initializer_size(); ++k)
    if (graph.initializer(k).name() == name)
      return k;
  return -1;
}

/// Brings the parameters of a pipeline's other stages to rank 0: the first
/// rank of each stage (coordinate 0 on every other axis) sends their whole
/// values, in its program's input order, over the pipeline axis. Returns
/// the initializers it filled.
std::vector<int> collectStages(const tsr_trainer &trainer,
                               onnx::GraphProto &graph) {
  const Manifest &manifest = trainer.artifact->manifest;
  std::vector<int> filled;
  if (manifest.otherCalls.empty())
    return filled;
  int64_t axis = manifest.otherCalls.front().axis;
  int64_t group = int64_t(1) << axis;
  for (size_t i = 0; i < manifest.mesh.size(); ++i)
    if (static_cast<int64_t>(i) != axis && tsrt_axis_rank(int64_t(1) << i))
      return filled;
  if (tsrt_axis_rank(group) != 0) {
    for (const auto &[input, k] : trainer.params) {
      const std::string &data = graph.initializer(k).raw_data();
      tsrt_permute(-1, group, data.data(), nullptr,
                   static_cast<int64_t>(data.size()), TSR_DTYPE_UINT8, 0, 0, -1,
                   nullptr);
    }
    return filled;
  }
  for (const Manifest::OtherCall &call : manifest.otherCalls) {
    if (call.axis != axis)
      continue;
    for (const TensorSpec &spec : manifest.programs[call.program].inputs) {
      if (spec.role != TSR_ROLE_PARAM)
        continue;
      std::string data(static_cast<size_t>(product(spec.globalShape)) *
                           tsr_dtype_size(spec.dtype),
                       '\0');
      tsrt_permute(-1, group, nullptr, data.data(), 0, TSR_DTYPE_UINT8,
                   static_cast<int64_t>(data.size()), -1, call.coordinate,
                   nullptr);
      int k = findInitializer(graph, spec.name);
      if (k < 0)
        continue;
      graph.mutable_initializer(k)->set_raw_data(std::move(data));
      filled.push_back(k);
    }
  }
  return filled;
}

tsr_status_t save(const tsr_trainer &trainer, const std::string &path) {
  if (tsr_status_t s = checkSave(trainer))
    return s;
  if (tsr_status_t s = syncHost(trainer))
    return s;
  // Lend the params' current values to the model for serializing only;
  // every rank gathers ZeRO-3 shards and tensor-parallel blocks, the
  // pipeline's stages send theirs to rank 0, rank 0 writes.
  onnx::GraphProto *graph = trainer.model->mutable_graph();
  std::vector<int> lent;
  for (const auto &[input, k] : trainer.params) {
    graph->mutable_initializer(k)->set_raw_data(wholeValue(trainer, input));
    lent.push_back(k);
  }
  for (int k : collectStages(trainer, *graph))
    lent.push_back(k);
  if (!trainer.saves || trainer.dpRank != 0) {
    for (int k : lent)
      clearData(*graph->mutable_initializer(k));
    return TSR_OK;
  }
  std::string bytes;
  bool serialized = trainer.model->SerializeToString(&bytes);
  for (int k : lent)
    clearData(*graph->mutable_initializer(k));
  if (!serialized)
    return fail(TSR_ERROR_IO, path + ": cannot serialize the ONNX model");
  std::string error;
  if (!writeFileDurably(path, bytes, error))
    return fail(TSR_ERROR_IO, error);
  return TSR_OK;
}

/// Whether `ok` holds on every rank of the mesh (a barrier, too).
bool allRanks(const tsr_trainer &trainer, bool ok) {
  if (trainer.meshGroup < 0)
    return ok;
  int64_t mine = ok ? 1 : 0, all = 0;
  tsrt_all_reduce(-1, trainer.meshGroup, &mine, &all, 1, TSR_DTYPE_INT64,
                  TSR_REDUCE_MIN, nullptr);
  return all == 1;
}

/// The inputs a checkpoint holds: params and optimizer state.
std::vector<size_t> stateInputs(const tsr_trainer &trainer) {
  std::vector<size_t> indices;
  const auto &specs = trainer.artifact->manifest.inputs;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].role == TSR_ROLE_PARAM || specs[i].role == TSR_ROLE_STATE)
      indices.push_back(i);
  return indices;
}

/// A param or state tensor as a checkpoint records it.
struct StateTensor {
  std::string name;
  tsr_dtype_t dtype;
  std::vector<int64_t> shape;
};

/// The params and state of the trainer's artifact, in checkpoint order.
std::vector<StateTensor> stateTensors(const tsr_trainer &trainer) {
  std::vector<StateTensor> tensors;
  const auto &specs = trainer.artifact->manifest.inputs;
  for (size_t i : stateInputs(trainer))
    tensors.push_back({specs[i].name, specs[i].dtype, specs[i].globalShape});
  return tensors;
}

/// The tensors a checkpoint holds, in the order rank 0 wrote them.
std::vector<StateTensor> savedTensors(const tsr_checkpoint_t &checkpoint) {
  std::vector<StateTensor> tensors;
  for (size_t t = 0; t < tsr_checkpoint_num_tensors(&checkpoint); ++t) {
    tsr_checkpoint_tensor_t info;
    if (tsr_checkpoint_tensor_info(&checkpoint, t, &info) == TSR_OK)
      tensors.push_back(
          {info.name, info.dtype, {info.shape, info.shape + info.rank}});
  }
  return tensors;
}

constexpr uint64_t kFnvPrime = 1099511628211ull;

/// FNV-1a over the ONNX model (the offset basis mixed with its bytes).
tsr_status_t hashModel(const tsr_trainer &trainer, uint64_t &hash) {
  hash = 1469598103934665603ull;
  if (trainer.artifact->onnxPath.empty())
    return TSR_OK;
  std::string model;
  if (tsr_status_t s = readFile(trainer.artifact->onnxPath, model))
    return s;
  for (unsigned char byte : model)
    hash = (hash ^ byte) * kFnvPrime;
  return TSR_OK;
}

/// FNV-1a over the ONNX model (`modelHash`, from hashModel) and the name,
/// dtype and global shape of every param and state: what a checkpoint must
/// agree with to be resumed, for any dp size and ZeRO stage.
std::string fingerprint(uint64_t modelHash,
                        const std::vector<StateTensor> &tensors) {
  uint64_t hash = modelHash;
  auto mix = [&](const void *data, size_t size) {
    const auto *bytes = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < size; ++i)
      hash = (hash ^ bytes[i]) * kFnvPrime;
  };
  for (const StateTensor &tensor : tensors) {
    mix(tensor.name.c_str(), tensor.name.size() + 1);
    mix(&tensor.dtype, sizeof(tensor.dtype));
    mix(tensor.shape.data(), tensor.shape.size() * sizeof(int64_t));
  }
  char text[32];
  std::snprintf(text, sizeof(text), "fnv1a64:%016llx",
                static_cast<unsigned long long>(hash));
  return text;
}

tsr_status_t fingerprint(const tsr_trainer &trainer, std::string &out) {
  uint64_t model;
  if (tsr_status_t s = hashModel(trainer, model))
    return s;
  out = fingerprint(model, stateTensors(trainer));
  return TSR_OK;
}

tsr_status_t checkCheckpoints(const tsr_trainer &trainer) {
  if (trainer.parameterServer)
    return fail(TSR_ERROR_UNSUPPORTED,
                trainer.artifact->dir +
                    ": checkpoints of a parameter-server artifact are not "
                    "supported yet; --save-onnx saves the trained model");
  return TSR_OK;
}

/// Where a pipeline stage's checkpoint lives: stage 0's is DIR itself,
/// committed last, so that DIR is complete only once every stage's
/// DIR.stageK is; other programs, DIR.
std::string stageCheckpoint(const std::string &dir, int64_t stage) {
  return stage == 0 ? dir : dir + ".stage" + std::to_string(stage);
}

tsr_status_t saveCheckpoint(const tsr_trainer &trainer, const std::string &dir,
                            int64_t step) {
  if (tsr_status_t s = syncHost(trainer))
    return s;
  if (tsr_status_t s = checkCheckpoints(trainer))
    return s;
  const Manifest &manifest = trainer.artifact->manifest;
  std::string print, mesh = meshText(manifest);
  tsr_status_t status = fingerprint(trainer, print);
  tsr_checkpoint_meta_t meta{};
  meta.step = step;
  meta.rng = step;
  meta.data_position = step * manifest.train.globalBatchSize;
  meta.fingerprint = print.c_str();
  meta.world_size = trainer.dpSize;
  meta.mesh = mesh.c_str();
  meta.zero_stage = static_cast<int>(manifest.zero);
  meta.shuffle = trainer.shuffle ? 1 : 0;
  meta.seed = trainer.seed;
  Json hparams = Json::object();
  for (const auto &[name, value] : manifest.train.hparams)
    hparams[name] = value;
  std::string hparamsText = hparams.dump();
  meta.hparams = hparamsText.c_str();
  // A checkpoint holds the layout of a run without tensor parallelism
  // (replicated, or flat over dp), so that any mesh can resume it: the
  // blocks of a split tensor are gathered, and a saving rank keeps its dp
  // shard of the whole tensor.
  std::vector<tsr_checkpoint_tensor_t> tensors;
  std::vector<const void *> data;
  std::vector<std::string> gathered;
  gathered.reserve(manifest.inputs.size());
  for (size_t i : stateInputs(trainer)) {
    const TensorSpec &spec = manifest.inputs[i];
    tensors.push_back({spec.name.c_str(), spec.dtype, spec.globalShape.size(),
                       spec.globalShape.data(), spec.shards});
    if (spec.sharding.empty()) {
      data.push_back(trainer.inputs[i]->data);
      continue;
    }
    std::string whole = wholeValue(trainer, i);
    if (spec.shards > 1) {
      size_t elementSize = tsr_dtype_size(spec.dtype);
      int64_t numel = product(spec.globalShape);
      int64_t local = tsr_checkpoint_local_elements(numel, spec.shards);
      int64_t begin = std::min(numel, trainer.dpRank * local);
      int64_t end = std::min(numel, begin + local);
      std::string shard(static_cast<size_t>(local) * elementSize, '\0');
      std::memcpy(shard.data(), whole.data() + begin * elementSize,
                  static_cast<size_t>(end - begin) * elementSize);
      whole = std::move(shard);
    }
    gathered.push_back(std::move(whole));
    data.push_back(gathered.back().data());
  }
  // A pipeline's stages each write their own checkpoint (their programs
  // hold other tensors): stage K's into DIR.stageK, stage 0's into DIR,
  // committed after every other stage's.
  std::string mine = stageCheckpoint(dir, trainer.stage);
  if (status == TSR_OK && trainer.savesStage)
    status = tsr_checkpoint_write_shard(mine.c_str(), trainer.dpRank,
                                        trainer.dpSize, &meta, tensors.size(),
                                        tensors.data(), data.data());
  if (!allRanks(trainer, status == TSR_OK))
    return status != TSR_OK
               ? status
               : fail(TSR_ERROR_IO, dir + ": another rank could not write its "
                                          "shard; the checkpoint was not "
                                          "committed");
  for (bool last : {false, true}) {
    if (trainer.savesStage && trainer.dpRank == 0 &&
        (trainer.stage == 0) == last)
      status = tsr_checkpoint_commit(mine.c_str(), trainer.dpSize, &meta);
    if (!allRanks(trainer, status == TSR_OK))
      return status != TSR_OK
                 ? status
                 : fail(TSR_ERROR_IO, dir + ": another rank could not "
                                            "commit its part of the "
                                            "checkpoint");
  }
  return TSR_OK;
}

struct CheckpointCloser {
  void operator()(tsr_checkpoint_t *c) const { tsr_checkpoint_close(c); }
};

/// The hyperparameters that differ between the checkpoint's run (`meta`)
/// and the trainer's artifact, "lr 0.1 -> 0.01, ..." (checkpoint -> artifact),
/// or "" (also when the checkpoint records none).
std::string hparamDifferences(const tsr_trainer &trainer,
                              const tsr_checkpoint_meta_t &meta) {
  if (!meta.hparams || !*meta.hparams)
    return "";
  Json saved = Json::parse(meta.hparams, nullptr, false);
  if (!saved.is_object() || saved.empty())
    return "";
  std::map<std::string, std::string> now(
      trainer.artifact->manifest.train.hparams.begin(),
      trainer.artifact->manifest.train.hparams.end());
  std::map<std::string, std::string> then;
  for (const auto &[name, value] : saved.items())
    if (value.is_string())
      then[name] = value.get<std::string>();
  std::string differences;
  auto note = [&](const std::string &name, const std::string &was,
                  const std::string &is) {
    differences +=
        (differences.empty() ? "" : ", ") + name + " " + was + " -> " + is;
  };
  for (const auto &[name, value] : then) {
    auto it = now.find(name);
    if (it == now.end())
      note(name, value, "(none)");
    else if (it->second != value)
      note(name, value, it->second);
  }
  for (const auto &[name, value] : now)
    if (!then.count(name))
      note(name, "(none)", value);
  return differences;
}

/// Whether the checkpoint's hyperparameters are the artifact's: a resume
/// under others (another learning rate, schedule, ...) is refused, naming
/// each difference, unless allowed. A checkpoint that recorded none is not
/// checked.
tsr_status_t checkHparams(const tsr_trainer &trainer, const std::string &dir,
                          const tsr_checkpoint_meta_t &meta) {
  if (trainer.allowChangedHparams)
    return TSR_OK;
  std::string differences = hparamDifferences(trainer, meta);
  if (differences.empty())
    return TSR_OK;
  return fail(TSR_ERROR_MISMATCH,
              dir + ": written under other hyperparameters than " +
                  trainer.artifact->dir +
                  "'s (checkpoint -> artifact): " + differences +
                  "; resume with an artifact compiled as the checkpoint's "
                  "run was, or allow the change (tessera-run "
                  "--allow-changed-hparams)");
}

/// What differs between a checkpoint whose fingerprint does not match and
/// the trainer: tensors only one of them has or of another type, the
/// hyperparameters, or else the ONNX model itself.
std::string describeMismatch(const tsr_trainer &trainer,
                             const tsr_checkpoint_t &checkpoint) {
  const Manifest &manifest = trainer.artifact->manifest;
  auto typeText = [](tsr_dtype_t dtype, const int64_t *shape, size_t rank) {
    std::string text = std::string(tsr_dtype_name(dtype)) + "[";
    for (size_t d = 0; d < rank; ++d)
      text += (d ? ", " : "") + std::to_string(shape[d]);
    return text + "]";
  };
  std::map<std::string, std::string> saved, now;
  for (size_t t = 0; t < tsr_checkpoint_num_tensors(&checkpoint); ++t) {
    tsr_checkpoint_tensor_t info;
    if (tsr_checkpoint_tensor_info(&checkpoint, t, &info) == TSR_OK)
      saved[info.name] = typeText(info.dtype, info.shape, info.rank);
  }
  for (size_t i : stateInputs(trainer)) {
    const TensorSpec &spec = manifest.inputs[i];
    now[spec.name] =
        typeText(spec.dtype, spec.globalShape.data(), spec.globalShape.size());
  }
  std::vector<std::string> parts;
  auto list = [&](const char *what, const std::vector<std::string> &names) {
    if (names.empty())
      return;
    std::string text = std::to_string(names.size()) + " " + what + ": ";
    for (size_t k = 0; k < names.size() && k < 4; ++k)
      text += (k ? ", " : "") + names[k];
    if (names.size() > 4)
      text += ", ...";
    parts.push_back(text);
  };
  std::vector<std::string> onlySaved, onlyNow, changed;
  for (const auto &[name, type] : saved) {
    auto it = now.find(name);
    if (it == now.end())
      onlySaved.push_back(name);
    else if (it->second != type)
      changed.push_back(name + " " + type + " -> " + it->second);
  }
  for (const auto &[name, type] : now)
    if (!saved.count(name))
      onlyNow.push_back(name);
  list("tensors only in the checkpoint", onlySaved);
  list("tensors only in the artifact", onlyNow);
  list("tensors of another type (checkpoint -> artifact)", changed);
  tsr_checkpoint_meta_t meta;
  if (tsr_checkpoint_meta(&checkpoint, &meta) == TSR_OK) {
    std::string hparams = hparamDifferences(trainer, meta);
    if (!hparams.empty())
      parts.push_back("hyperparameters (checkpoint -> artifact): " + hparams);
  }
  if (parts.empty())
    return "the same tensors and hyperparameters, so the ONNX model itself "
           "differs (other initial values, nodes or attributes)";
  std::string text;
  for (const std::string &part : parts)
    text += (text.empty() ? "" : "; ") + part;
  return text;
}

using CheckpointPtr = std::unique_ptr<tsr_checkpoint_t, CheckpointCloser>;

/// Checks that the run that wrote `meta` can go on as this one: the same
/// data order and seed, hyperparameters and global batch.
tsr_status_t checkRun(const tsr_trainer &trainer, const std::string &dir,
                      const tsr_checkpoint_meta_t &meta) {
  if ((meta.shuffle != 0) != trainer.shuffle || meta.seed != trainer.seed) {
    auto order = [](bool shuffle, uint64_t seed) {
      return std::string(shuffle ? "shuffled data" : "data in order") +
             " and seed " + std::to_string(seed);
    };
    return fail(
        TSR_ERROR_MISMATCH,
        dir + ": written by a run with " + order(meta.shuffle != 0, meta.seed) +
            ", but this run has " + order(trainer.shuffle, trainer.seed) +
            "; resume with the same data order and seed, or the "
            "resumed steps would see other batches and dropout "
            "masks");
  }
  if (tsr_status_t s = checkHparams(trainer, dir, meta))
    return s;
  int64_t global = trainer.artifact->manifest.train.globalBatchSize;
  if (meta.data_position != meta.step * global)
    return fail(
        TSR_ERROR_MISMATCH,
        dir + ": written after " + std::to_string(meta.step) +
            " steps at data position " + std::to_string(meta.data_position) +
            ", which is not a multiple of this artifact's global "
            "batch size " +
            std::to_string(global) + " (resume with the same global batch)");
  return TSR_OK;
}

/// Reads manifest input `i` (a param or state) of this rank from
/// `checkpoint`, whatever dp size and ZeRO stage wrote it: a split tensor is
/// read whole, then cut into this rank's block.
tsr_status_t readInput(const tsr_trainer &trainer,
                       const tsr_checkpoint_t &checkpoint, size_t i,
                       std::string &value) {
  const TensorSpec &spec = trainer.artifact->manifest.inputs[i];
  value.assign(trainer.inputs[i]->byteSize, '\0');
  bool split = !spec.sharding.empty();
  std::string whole(split ? static_cast<size_t>(product(spec.globalShape)) *
                                tsr_dtype_size(spec.dtype)
                          : 0,
                    '\0');
  if (tsr_status_t s = tsr_checkpoint_read_tensor(
          &checkpoint, spec.name.c_str(), spec.dtype, spec.globalShape.size(),
          spec.globalShape.data(), split ? 1 : spec.shards,
          split ? 0 : trainer.dpRank, split ? whole.data() : value.data(),
          split ? whole.size() : value.size()))
    return s;
  if (split)
    localFromWhole(trainer, spec, whole.data(), value.data());
  return TSR_OK;
}

/// Reads every param and state of this rank from `dir` into fresh buffers;
/// the trainer is only changed once every rank has read everything.
tsr_status_t readCheckpoint(const tsr_trainer &trainer, const std::string &dir,
                            std::vector<std::string> &values, int64_t &step) {
  tsr_checkpoint_t *raw = nullptr;
  if (tsr_status_t s = tsr_checkpoint_open(dir.c_str(), &raw))
    return s;
  CheckpointPtr checkpoint(raw);
  std::string print;
  if (tsr_status_t s = fingerprint(trainer, print))
    return s;
  if (tsr_status_t s =
          tsr_checkpoint_check_fingerprint(checkpoint.get(), print.c_str()))
    return fail(s, dir + " was written for another model or optimizer than " +
                       trainer.artifact->dir +
                       "'s: " + describeMismatch(trainer, *checkpoint) +
                       "; resume it with the artifact it was written by (" +
                       tsr_last_error() + ")");
  tsr_checkpoint_meta_t meta;
  if (tsr_status_t s = tsr_checkpoint_meta(checkpoint.get(), &meta))
    return s;
  if (tsr_status_t s = checkRun(trainer, dir, meta))
    return s;
  std::vector<size_t> inputs = stateInputs(trainer);
  if (tsr_checkpoint_num_tensors(checkpoint.get()) != inputs.size())
    return fail(
        TSR_ERROR_MISMATCH,
        dir + ": holds " +
            std::to_string(tsr_checkpoint_num_tensors(checkpoint.get())) +
            " tensors but the artifact has " + std::to_string(inputs.size()) +
            " params and states");
  for (size_t i : inputs) {
    values.emplace_back();
    if (tsr_status_t s = readInput(trainer, *checkpoint, i, values.back()))
      return s;
  }
  step = meta.step;
  return TSR_OK;
}

/// Whether a tensor is PipeDream's state carried between steps (stashed
/// weights, micro-batches in flight), which belongs to one stage count.
bool isPipeDreamState(const std::string &name) {
  return name.rfind("pipedream.", 0) == 0;
}

/// Reads this rank's params and state from the checkpoint `dir` of a
/// pipeline of `written` stages (1: no pipeline) when this artifact's
/// pipeline has another number of stages: each tensor from the stage
/// checkpoint that holds it (DIR.stageK), by name; a parameter that several
/// stages hold (tied weights, summed between the stages, so equal) from the
/// first. Every stage checkpoint must be of this model (its fingerprint,
/// recomputed from the tensors it lists, with this ONNX model), after the
/// same step of the same run.
tsr_status_t readResharded(const tsr_trainer &trainer, const std::string &dir,
                           int64_t written, std::vector<std::string> &values,
                           int64_t &step) {
  std::string by =
      written == 1 ? "without a pipeline"
                   : "by a pipeline of " + std::to_string(written) + " stages";
  for (const StateTensor &tensor : stateTensors(trainer))
    if (isPipeDreamState(tensor.name))
      return fail(TSR_ERROR_UNSUPPORTED,
                  dir + ": written " + by + ", but " + trainer.artifact->dir +
                      " runs PipeDream on " + std::to_string(trainer.stages) +
                      " stages, whose micro-batches in flight and stashed "
                      "weights belong to one stage count (resume with the "
                      "mesh it was written on)");
  uint64_t model;
  if (tsr_status_t s = hashModel(trainer, model))
    return s;
  std::vector<CheckpointPtr> stages;
  std::map<std::string, size_t> holder;
  for (int64_t k = 0; k < written; ++k) {
    std::string path = stageCheckpoint(dir, k);
    tsr_checkpoint_t *raw = nullptr;
    if (tsr_status_t s = tsr_checkpoint_open(path.c_str(), &raw))
      return s;
    stages.emplace_back(raw);
    tsr_checkpoint_meta_t meta;
    if (tsr_status_t s = tsr_checkpoint_meta(raw, &meta))
      return s;
    std::vector<StateTensor> tensors = savedTensors(*raw);
    if (meta.fingerprint != fingerprint(model, tensors))
      return fail(TSR_ERROR_MISMATCH,
                  path + " was written for another model or optimizer than " +
                      trainer.artifact->dir + "'s (its fingerprint " +
                      meta.fingerprint +
                      " is not this model's with the tensors it holds)");
    if (k == 0) {
      if (tsr_status_t s = checkRun(trainer, path, meta))
        return s;
      // Its run's mesh says how many stages wrote it ("dp=2,pp=4").
      std::string mesh = meta.mesh ? meta.mesh : "";
      size_t at = mesh.find("pp=");
      int64_t pp = at == std::string::npos ? 1 : std::atoll(&mesh[at + 3]);
      if (pp != written)
        return fail(
            TSR_ERROR_MISMATCH,
            dir + ": written on the mesh '" + mesh + "' (" +
                std::to_string(pp) + " pipeline stages), but " +
                (pp > written
                     ? "the checkpoint of stage " + std::to_string(written) +
                           " (" + stageCheckpoint(dir, written) + ") is missing"
                     : stageCheckpoint(dir, pp) +
                           " is there too (left by another run: "
                           "remove it)"));
      step = meta.step;
    } else if (meta.step != step) {
      return fail(TSR_ERROR_MISMATCH,
                  path + ": written after step " + std::to_string(meta.step) +
                      ", but stage 0's " + dir + " after step " +
                      std::to_string(step));
    }
    for (const StateTensor &tensor : tensors) {
      if (isPipeDreamState(tensor.name))
        return fail(TSR_ERROR_UNSUPPORTED,
                    path + ": holds PipeDream's state (" + tensor.name +
                        "), which resumes only on the mesh it was written "
                        "on, not on " +
                        std::to_string(trainer.stages) + " stages");
      holder.emplace(tensor.name, static_cast<size_t>(k));
    }
  }
  for (size_t i : stateInputs(trainer)) {
    const std::string &name = trainer.artifact->manifest.inputs[i].name;
    auto it = holder.find(name);
    if (it == holder.end())
      return fail(TSR_ERROR_MISMATCH,
                  dir + ": none of the stage checkpoints written " + by +
                      " holds " + name + ", which " + trainer.artifact->dir +
                      " trains");
    values.emplace_back();
    if (tsr_status_t s =
            readInput(trainer, *stages[it->second], i, values.back()))
      return s;
  }
  return TSR_OK;
}

tsr_status_t loadCheckpoint(tsr_trainer &trainer, const std::string &dir,
                            int64_t &outStep) {
  if (tsr_status_t s = checkCheckpoints(trainer))
    return s;
  // The number of stages that wrote it: DIR, then DIR.stage1, DIR.stage2,
  // ... as far as they exist.
  int64_t written = 1;
  std::error_code ec;
  while (std::filesystem::exists(stageCheckpoint(dir, written), ec))
    ++written;
  std::vector<std::string> values;
  int64_t step = 0;
  tsr_status_t status =
      written == trainer.stages
          ? readCheckpoint(trainer, stageCheckpoint(dir, trainer.stage), values,
                           step)
          : readResharded(trainer, dir, written, values, step);
  if (!allRanks(trainer, status == TSR_OK))
    return status != TSR_OK
               ? status
               : fail(TSR_ERROR_IO,
                      dir + ": another rank could not read the checkpoint");
  // The host copies become the state: the next step copies them to the
  // device.
  if (tsr_status_t s = syncHost(trainer))
    return s;
  std::vector<size_t> inputs = stateInputs(trainer);
  for (size_t k = 0; k < inputs.size(); ++k)
    std::memcpy(trainer.inputs[inputs[k]]->data, values[k].data(),
                values[k].size());
  trainer.deviceCurrent = false;
  outStep = step;
  return TSR_OK;
}

/// The directory of the checkpoint after `step` steps: DIR/step-00000010.
std::string checkpointName(const std::string &dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "/step-%08lld",
                static_cast<long long>(step));
  return dir + name;
}

/// The file save_every writes after step `step`: PATH without its .onnx
/// suffix, then ".step<step>.onnx".
std::string periodicOnnxName(const std::string &path, int64_t step) {
  size_t size = path.size();
  bool onnx = size >= 5 && path.compare(size - 5, 5, ".onnx") == 0;
  return (onnx ? path.substr(0, size - 5) : path) + ".step" +
         std::to_string(step) + ".onnx";
}

tsr_status_t checkRunOptions(const tsr_train_options_t &options) {
  auto invalid = [](const std::string &message) {
    return fail(TSR_ERROR_INVALID_ARGUMENT, "training options: " + message);
  };
  if (options.first_step < 0 || options.first_step > options.steps)
    return invalid("first_step " + std::to_string(options.first_step) +
                   " is not in [0, steps " + std::to_string(options.steps) +
                   "]");
  if (options.save_every < 0 || options.checkpoint_every < 0)
    return invalid("save_every and checkpoint_every must not be negative");
  if (options.save_every > 0 && !options.save_onnx)
    return invalid("save_every needs save_onnx");
  if (options.checkpoint_every > 0 && !options.checkpoint_dir)
    return invalid("checkpoint_every needs checkpoint_dir");
  if (options.eval_every < 0 || options.eval_batches < 0)
    return invalid("eval_every and eval_batches must not be negative");
  if ((options.eval_every > 0 || options.eval_batches > 0) &&
      !options.eval_dataset)
    return invalid("eval_every and eval_batches need eval_dataset");
  return TSR_OK;
}

tsr_status_t runLoop(tsr_trainer &trainer, const tsr_dataset_t &dataset,
                     const tsr_train_options_t &options) {
  if (tsr_status_t s = checkRunOptions(options))
    return s;
  const Manifest &manifest = trainer.artifact->manifest;
  if (options.eval_dataset && manifest.train.evalProgram < 0)
    return fail(TSR_ERROR_UNSUPPORTED,
                trainer.artifact->dir +
                    " has no evaluation program (compile it with "
                    "tessera-compile --eval)");
  // With local SGD the ranks' parameters agree after every H-th step and
  // the last: only those can be saved.
  int64_t period = manifest.train.localSteps;
  for (auto [every, what] :
       {std::pair{options.checkpoint_every, "checkpoint_every"},
        std::pair{options.save_every, "save_every"}})
    if (period > 1 && every > 0 && every % period != 0)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "training options: " + std::string(what) + " " +
                      std::to_string(every) +
                      " is not a multiple of the artifact's local SGD "
                      "period " +
                      std::to_string(period) +
                      ": the ranks' parameters agree only every " +
                      std::to_string(period) + " steps and at the end");
  if (trainer.parameterServer) {
    if (manifest.parameterServer.server >= 0)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "this process is parameter server " +
                      std::to_string(manifest.parameterServer.server) +
                      ", which serves (tsr_trainer_serve) rather than trains");
    if (options.checkpoint_dir)
      if (tsr_status_t s = checkCheckpoints(trainer))
        return s;
    if (options.save_every > 0)
      return fail(TSR_ERROR_UNSUPPORTED,
                  "training options: save_every with parameter servers is "
                  "not supported yet (the servers hold the parameters); the "
                  "model is saved after the last step");
    if (options.first_step != 0)
      return fail(TSR_ERROR_UNSUPPORTED,
                  "training options: parameter servers start at step 0");
    if (tsr_status_t s = trainer.parameterServer->start(options.steps))
      return s;
  }
  // Token artifacts count tokens, B * T per step.
  int64_t tokenInput = manifest.train.tokenInput;
  int64_t window = tokenInput >= 0 ? manifest.inputs[tokenInput].shape[1] : 1;
  double perStep = static_cast<double>(manifest.train.globalBatchSize * window);
  auto wrote = [&](tsr_train_write_t what, const std::string &path) {
    if (options.on_write)
      options.on_write(options.user, what, path.c_str());
  };
  auto checkpoint = [&](int64_t step) {
    std::string dir = checkpointName(options.checkpoint_dir, step);
    if (tsr_status_t s = saveCheckpoint(trainer, dir, step))
      return s;
    wrote(TSR_TRAIN_WROTE_CHECKPOINT, dir);
    return TSR_OK;
  };
  auto saveOnnx = [&](const std::string &path) {
    if (tsr_status_t s = save(trainer, path))
      return s;
    wrote(TSR_TRAIN_WROTE_ONNX, path);
    return TSR_OK;
  };
  using Clock = std::chrono::steady_clock;
  auto minorFaults = [] {
    struct rusage usage;
    return getrusage(RUSAGE_SELF, &usage) == 0 ? int64_t(usage.ru_minflt) : 0;
  };
  for (int64_t step = options.first_step + 1; step <= options.steps; ++step) {
    std::string where = "step " + std::to_string(step);
    float loss = 0;
    int64_t faults = minorFaults();
    auto start = Clock::now();
    if (tsr_status_t s =
            runStep(trainer, dataset, step - 1, loss, step == options.steps))
      return withContext(s, where);
    if (trainer.parameterServer)
      if (tsr_status_t s = trainer.parameterServer->exchange(step - 1, loss))
        return withContext(s, where);
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    faults = minorFaults() - faults;
    if (options.on_step) {
      tsr_step_record_t record{step,
                               options.steps,
                               loss,
                               seconds,
                               seconds > 0 ? perStep / seconds : 0,
                               tokenInput >= 0 ? "tokens" : "samples",
                               trainer.lossScale,
                               trainer.skipped ? 1 : 0,
                               faults};
      options.on_step(options.user, &record);
    }
    // The loss is the mean over all ranks: they stop together.
    if (!std::isfinite(loss))
      return fail(TSR_ERROR_NOT_FINITE,
                  where + ": the loss is " +
                      (std::isnan(loss) ? "nan" : "infinite") +
                      "; training stopped");
    if (options.eval_dataset &&
        ((options.eval_every > 0 && step % options.eval_every == 0) ||
         step == options.steps)) {
      tsr_eval_record_t record;
      if (tsr_status_t s = evaluate(trainer, *options.eval_dataset,
                                    options.eval_batches, record))
        return withContext(s, "evaluation after " + where);
      record.step = step;
      if (options.on_eval)
        options.on_eval(options.user, &record);
    }
    if (options.save_every > 0 && step % options.save_every == 0)
      if (tsr_status_t s = saveOnnx(periodicOnnxName(options.save_onnx, step)))
        return s;
    if (options.checkpoint_every > 0 && step % options.checkpoint_every == 0)
      if (tsr_status_t s = checkpoint(step))
        return s;
  }
  if (trainer.parameterServer)
    if (tsr_status_t s = trainer.parameterServer->finish())
      return s;
  if (options.checkpoint_dir && (options.checkpoint_every == 0 ||
                                 options.steps % options.checkpoint_every != 0))
    if (tsr_status_t s = checkpoint(options.steps))
      return s;
  if (options.save_onnx)
    return saveOnnx(options.save_onnx);
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
  if (index >= trainer->inputs.size())
    return nullptr;
  // A device artifact's params and state: their current values (a failed
  // copy is the last error; the tensor keeps what it had).
  syncHost(*trainer);
  return trainer->inputs[index].get();
}

tsr_tensor_t *tsr_trainer_output(tsr_trainer_t *trainer, size_t index) {
  return index < trainer->outputs.size() ? trainer->outputs[index].get()
                                         : nullptr;
}

void tsr_trainer_allow_changed_hparams(tsr_trainer_t *trainer, int allow) {
  trainer->allowChangedHparams = allow != 0;
}

void tsr_trainer_set_order(tsr_trainer_t *trainer, int shuffle, uint64_t seed) {
  trainer->shuffle = shuffle != 0;
  trainer->seed = seed;
}

tsr_status_t tsr_trainer_step(tsr_trainer_t *trainer,
                              const tsr_dataset_t *dataset, int64_t step,
                              float *out_loss) {
  return guard([&] {
    if (!trainer || !dataset || !out_loss)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return runStep(*trainer, *dataset, step, *out_loss, /*last=*/false);
  });
}

tsr_status_t tsr_trainer_check_save_onnx(const tsr_trainer_t *trainer) {
  return guard([&] {
    if (!trainer)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return checkSave(*trainer);
  });
}

tsr_status_t tsr_trainer_check_checkpoints(const tsr_trainer_t *trainer) {
  return guard([&] {
    if (!trainer)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return checkCheckpoints(*trainer);
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

tsr_status_t tsr_trainer_save_checkpoint(const tsr_trainer_t *trainer,
                                         const char *dir, int64_t step) {
  return guard([&] {
    if (!trainer || !dir)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return saveCheckpoint(*trainer, dir, step);
  });
}

tsr_status_t tsr_trainer_load_checkpoint(tsr_trainer_t *trainer,
                                         const char *dir, int64_t *out_step) {
  return guard([&] {
    if (!trainer || !dir || !out_step)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return loadCheckpoint(*trainer, dir, *out_step);
  });
}

tsr_status_t tsr_trainer_run(tsr_trainer_t *trainer,
                             const tsr_dataset_t *dataset,
                             const tsr_train_options_t *options) {
  return guard([&] {
    if (!trainer || !dataset || !options)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    // The host copies of a device artifact's state are current after a
    // run, whatever stopped it.
    tsr_status_t status = runLoop(*trainer, *dataset, *options);
    tsr_status_t synced = syncHost(*trainer);
    return status != TSR_OK ? status : synced;
  });
}

tsr_status_t tsr_trainer_evaluate(tsr_trainer_t *trainer,
                                  const tsr_dataset_t *dataset, int64_t batches,
                                  tsr_eval_record_t *out_record) {
  return guard([&] {
    if (!trainer || !dataset || !out_record)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    return evaluate(*trainer, *dataset, batches, *out_record);
  });
}

int64_t tsr_trainer_parameter_server(const tsr_trainer_t *trainer) {
  return trainer ? trainer->artifact->manifest.parameterServer.server : -1;
}

tsr_status_t tsr_trainer_serve(tsr_trainer_t *trainer,
                               tsr_server_stats_t *out_stats) {
  return guard([&] {
    if (!trainer || !out_stats)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    const ParameterServerSpec &spec =
        trainer->artifact->manifest.parameterServer;
    if (spec.server < 0)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  trainer->artifact->dir +
                      ": this process is not a parameter server");
    ParameterServerStats stats;
    tsr_status_t status = trainer->parameterServer->serve(
        [&](int64_t update) {
          float loss = 0;
          return invokeStep(*trainer, update, loss);
        },
        stats);
    *out_stats = tsr_server_stats_t{spec.server,  spec.workers,  spec.staleness,
                                    stats.steps,  stats.updates, stats.waits,
                                    stats.maxLead};
    return status;
  });
}

tsr_status_t tsr_trainer_state_bytes(const tsr_trainer_t *trainer,
                                     size_t *out_params, size_t *out_state) {
  if (!trainer || !out_params || !out_state)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  *out_params = *out_state = 0;
  const auto &specs = trainer->artifact->manifest.inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].role == TSR_ROLE_PARAM)
      *out_params += trainer->inputs[i]->byteSize;
    if (specs[i].role == TSR_ROLE_STATE)
      *out_state += trainer->inputs[i]->byteSize;
  }
  return TSR_OK;
}
