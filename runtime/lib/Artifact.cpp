//===- Artifact.cpp - Loading and invoking artifacts ----------------------===//
//
// An artifact is a directory with `manifest.json` (parsed by
// ArtifactManifest.cpp) and the shared object it names. Each program's entry
// has the signature `void entry(void **args)` where args holds the input
// buffers followed by the output buffers; invoking the artifact runs the
// schedule's calls on the step's buffers.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"
#include "tessera-runtime/Comm.h"
#include "tessera-runtime/Device.h"

#include <algorithm>
#include <dlfcn.h>
#include <sys/stat.h>

#include <memory>

using namespace tsr;

namespace {

tsr_status_t fillInfo(const TensorSpec &spec, tsr_tensor_info_t *out) {
  out->name = spec.name.c_str();
  out->dtype = spec.dtype;
  out->rank = spec.shape.size();
  out->shape = spec.shape.data();
  out->role = spec.role;
  out->updates = spec.updates;
  out->of = spec.of;
  out->init = spec.init;
  out->shards = spec.shards;
  out->global_rank = spec.globalShape.size();
  out->global_shape = spec.globalShape.data();
  return TSR_OK;
}

tsr_status_t checkTensor(const char *kind, size_t index, const TensorSpec &spec,
                         const tsr_tensor_t *tensor,
                         const std::string &target) {
  std::string what =
      std::string(kind) + " " + std::to_string(index) + " '" + spec.name + "'";
  if (!tensor)
    return fail(TSR_ERROR_INVALID_ARGUMENT, what + ": null tensor");
  if (tensor->dtype != spec.dtype)
    return fail(TSR_ERROR_MISMATCH, what + ": expected dtype " +
                                        tsr_dtype_name(spec.dtype) + ", got " +
                                        tsr_dtype_name(tensor->dtype));
  if (tensor->shape != spec.shape)
    return fail(TSR_ERROR_MISMATCH, what + ": expected shape " +
                                        formatShape(spec.shape) + ", got " +
                                        formatShape(tensor->shape));
  if (!satisfiesPlacement(tensor->placement, spec.placement))
    return fail(TSR_ERROR_MISMATCH,
                what + ": expected a tensor in " +
                    tsr_placement_name(spec.placement) + " memory (target " +
                    (target.empty() ? "cpu" : target) + "), got one in " +
                    tsr_placement_name(tensor->placement) + " memory");
  return TSR_OK;
}

/// The placement of input or output `index`, or an error.
tsr_status_t getPlacement(const tsr_artifact_t *artifact, const char *kind,
                          size_t index, tsr_placement_t *out) {
  if (!artifact || !out)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  bool input = std::string(kind) == "input";
  const std::vector<TensorSpec> &specs =
      input ? artifact->manifest.inputs : artifact->manifest.outputs;
  if (index >= specs.size())
    return fail(TSR_ERROR_INVALID_ARGUMENT, std::string(kind) + " index " +
                                                std::to_string(index) +
                                                " out of range");
  *out = specs[index].placement;
  return TSR_OK;
}

} // namespace

tsr_artifact::~tsr_artifact() {
  // The device copies of its constants are keyed by their addresses in
  // model.so, which the next library loaded there may reuse.
  Dl_info library;
  if (!entries.empty() &&
      dladdr(reinterpret_cast<void *>(entries.front()), &library))
    tsr::forgetDeviceConstants(library.dli_fbase);
  if (handle)
    dlclose(handle);
}

namespace {

tsr_status_t loadArtifact(const std::string &dir,
                          std::unique_ptr<tsr_artifact> &artifact) {
  struct stat info;
  bool exists = ::stat(dir.c_str(), &info) == 0;
  // An ONNX model where the compiled artifact belongs: say how to get one.
  if (exists && S_ISREG(info.st_mode) && dir.size() > 5 &&
      dir.compare(dir.size() - 5, 5, ".onnx") == 0)
    return fail(TSR_ERROR_IO,
                "'" + dir +
                    "' is an ONNX model, not an artifact directory: compile "
                    "it first (tessera-compile " +
                    dir +
                    " -o ART, with --mode=train and a loss to train it) and "
                    "pass ART");
  if (!exists || !S_ISDIR(info.st_mode))
    return fail(TSR_ERROR_IO,
                "artifact directory '" + dir + "' does not exist");
  artifact->dir = dir;
  std::string manifestPath = dir + "/manifest.json";
  std::string text;
  if (tsr_status_t s = readFile(manifestPath, text))
    return s;
  if (tsr_status_t s = parseManifest(text, artifact->manifest))
    return withContext(s, manifestPath);
  const std::string &onnx = artifact->manifest.onnx;
  if (!onnx.empty())
    artifact->onnxPath = onnx[0] == '/' ? onnx : dir + "/" + onnx;
  const std::string &library = artifact->manifest.library;
  std::string libraryPath = library[0] == '/' ? library : dir + "/" + library;
  // A CUDA artifact's host code calls the launch ABI (Kernels.cpp), which
  // resolves against this library: make its symbols global, also where
  // its own loader opened it with RTLD_LOCAL (ctypes' default, plugins).
  Dl_info self;
  if (dladdr(reinterpret_cast<void *>(&tsr_artifact_load), &self) &&
      self.dli_fname)
    dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  dlerror();
  artifact->handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!artifact->handle) {
    const char *reason = dlerror();
    return fail(TSR_ERROR_LOAD, libraryPath + ": cannot load library: " +
                                    (reason ? reason : "unknown error"));
  }
  for (const ProgramSpec &program : artifact->manifest.programs) {
    dlerror();
    void *symbol = dlsym(artifact->handle, program.entry.c_str());
    if (!symbol)
      return fail(TSR_ERROR_LOAD, libraryPath + ": entry symbol '" +
                                      program.entry + "' of program '" +
                                      program.name + "' not found");
    artifact->entries.push_back(reinterpret_cast<void (*)(void **)>(symbol));
  }
  artifact->arenaPlans.resize(artifact->entries.size());
  return TSR_OK;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

tsr_status_t tsr_artifact_load(const char *dir, tsr_artifact_t **out_artifact) {
  return guard([&] {
    if (!dir || !out_artifact)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    auto artifact = std::make_unique<tsr_artifact>();
    if (tsr_status_t s = loadArtifact(dir, artifact))
      return s;
    *out_artifact = artifact.release();
    return TSR_OK;
  });
}

void tsr_artifact_destroy(tsr_artifact_t *artifact) { delete artifact; }

const char *tsr_artifact_mode(const tsr_artifact_t *artifact) {
  return artifact->manifest.mode.c_str();
}

const char *tsr_artifact_target(const tsr_artifact_t *artifact) {
  return artifact->manifest.target.c_str();
}

const char *tsr_artifact_onnx(const tsr_artifact_t *artifact) {
  return artifact->onnxPath.c_str();
}

tsr_status_t tsr_artifact_train_info(const tsr_artifact_t *artifact,
                                     tsr_train_info_t *out_info) {
  if (!artifact || !out_info)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  const Manifest &manifest = artifact->manifest;
  if (manifest.mode != "train")
    return fail(TSR_ERROR_INVALID_ARGUMENT, artifact->dir + ": mode \"" +
                                                manifest.mode +
                                                "\" has no train information");
  const TrainSpec &train = manifest.train;
  out_info->batch_size = train.batchSize;
  out_info->global_batch_size = train.globalBatchSize;
  out_info->micro_batches = train.microBatches;
  out_info->num_classes = train.numClasses;
  out_info->has_ignore_index = train.hasIgnoreIndex;
  out_info->ignore_index = train.ignoreIndex;
  out_info->token_input = train.tokenInput;
  out_info->token_label = train.tokenLabel;
  out_info->loss_output = train.lossOutput;
  return TSR_OK;
}

size_t tsr_artifact_num_inputs(const tsr_artifact_t *artifact) {
  return artifact->manifest.inputs.size();
}

size_t tsr_artifact_num_outputs(const tsr_artifact_t *artifact) {
  return artifact->manifest.outputs.size();
}

tsr_status_t tsr_artifact_input_info(const tsr_artifact_t *artifact,
                                     size_t index,
                                     tsr_tensor_info_t *out_info) {
  if (!artifact || !out_info)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  if (index >= artifact->manifest.inputs.size())
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "input index " + std::to_string(index) + " out of range");
  return fillInfo(artifact->manifest.inputs[index], out_info);
}

tsr_status_t tsr_artifact_output_info(const tsr_artifact_t *artifact,
                                      size_t index,
                                      tsr_tensor_info_t *out_info) {
  if (!artifact || !out_info)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  if (index >= artifact->manifest.outputs.size())
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "output index " + std::to_string(index) + " out of range");
  return fillInfo(artifact->manifest.outputs[index], out_info);
}

int tsr_artifact_input_on_host(const tsr_artifact_t *artifact, size_t index) {
  return artifact && index < artifact->manifest.inputs.size() &&
         artifact->manifest.inputs[index].onHost;
}

tsr_status_t tsr_artifact_input_placement(const tsr_artifact_t *artifact,
                                          size_t index,
                                          tsr_placement_t *out_placement) {
  return getPlacement(artifact, "input", index, out_placement);
}

tsr_status_t tsr_artifact_output_placement(const tsr_artifact_t *artifact,
                                           size_t index,
                                           tsr_placement_t *out_placement) {
  return getPlacement(artifact, "output", index, out_placement);
}

tsr_status_t tsr_artifact_check_input(const tsr_artifact_t *artifact,
                                      size_t index,
                                      const tsr_tensor_t *tensor) {
  return guard([&] {
    if (!artifact)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    if (index >= artifact->manifest.inputs.size())
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "input index " + std::to_string(index) + " out of range");
    return checkTensor("input", index, artifact->manifest.inputs[index], tensor,
                       artifact->manifest.target);
  });
}

tsr_status_t tsr_artifact_create_output(const tsr_artifact_t *artifact,
                                        size_t index,
                                        tsr_tensor_t **out_tensor) {
  return guard([&] {
    if (!artifact || !out_tensor)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    if (index >= artifact->manifest.outputs.size())
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "output index " + std::to_string(index) + " out of range");
    const TensorSpec &spec = artifact->manifest.outputs[index];
    tsr_tensor_t *tensor = nullptr;
    if (tsr_status_t s =
            createTensor(spec.dtype, spec.shape, &tensor, spec.placement))
      return withContext(s, "output " + std::to_string(index) + " '" +
                                spec.name + "'");
    tensor->name = spec.name;
    *out_tensor = tensor;
    return TSR_OK;
  });
}

tsr_status_t tsr_artifact_invoke(const tsr_artifact_t *artifact,
                                 const tsr_tensor_t *const *inputs,
                                 size_t num_inputs,
                                 tsr_tensor_t *const *outputs,
                                 size_t num_outputs) {
  return guard([&] {
    if (!artifact || (num_inputs && !inputs) || (num_outputs && !outputs))
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    const Manifest &manifest = artifact->manifest;
    if (num_inputs != manifest.inputs.size() ||
        num_outputs != manifest.outputs.size())
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "artifact takes " + std::to_string(manifest.inputs.size()) +
                      " inputs and " + std::to_string(manifest.outputs.size()) +
                      " outputs, got " + std::to_string(num_inputs) + " and " +
                      std::to_string(num_outputs));
    for (size_t i = 0; i < num_inputs; ++i)
      if (tsr_status_t s = checkTensor("input", i, manifest.inputs[i],
                                       inputs[i], manifest.target))
        return s;
    for (size_t i = 0; i < num_outputs; ++i)
      if (tsr_status_t s = checkTensor("output", i, manifest.outputs[i],
                                       outputs[i], manifest.target))
        return s;
    // A program writes an output that is not "in_place" from its start
    // (tsr-results-to-out-params), while it still reads its inputs: such an
    // output must have a buffer of its own.
    std::vector<const void *> held;
    for (size_t i = 0; i < num_inputs; ++i)
      if (inputs[i]->data)
        held.push_back(inputs[i]->data);
    std::sort(held.begin(), held.end());
    for (size_t i = 0; i < num_outputs; ++i)
      if (!manifest.outputs[i].inPlace && outputs[i]->data &&
          std::binary_search(held.begin(), held.end(), outputs[i]->data))
        return fail(TSR_ERROR_INVALID_ARGUMENT,
                    "output " + std::to_string(i) + " '" +
                        manifest.outputs[i].name +
                        "' shares its buffer with an input; only an "
                        "\"in_place\" output may");
    // The schedule's calls in order, each on the buffers its inputs bind
    // to and on its own outputs.
    std::vector<void *> args;
    std::vector<LinkCopy> copies;
    for (const CallSpec &call : manifest.schedule) {
      const ProgramSpec &program = manifest.programs[call.program];
      args.clear();
      copies.clear();
      for (const Binding &binding : call.inputs) {
        const tsr_tensor_t *source =
            binding.fromOutput ? outputs[binding.index] : inputs[binding.index];
        const TensorSpec &spec = binding.fromOutput
                                     ? manifest.outputs[binding.index]
                                     : manifest.inputs[binding.index];
        if (spec.onHost == program.onHost) {
          args.push_back(source->data);
          continue;
        }
        // It lives on the other side of the host link: the program reads
        // a copy on its own side.
        std::unique_ptr<tsr_tensor> &mirror =
            artifact->mirrors[{binding.fromOutput, binding.index}];
        if (!mirror) {
          tsr_tensor_t *made = nullptr;
          if (tsr_status_t s = createTensor(spec.dtype, spec.shape, &made))
            return withContext(s, "the copy of '" + spec.name +
                                      "' that program '" + program.name +
                                      "' reads");
          mirror.reset(made);
          if (program.onHost)
            moveToHostPool(*mirror);
        }
        copies.push_back(
            {source->data, mirror->data, source->byteSize, program.onHost});
        args.push_back(mirror->data);
      }
      if (!copies.empty())
        copyOverHostLink(copies);
      for (size_t k = 0; k < program.outputs.size(); ++k) {
        tsr_tensor_t *out = outputs[call.firstOutput + k];
        const TensorSpec &spec = program.outputs[k];
        // The program writes an in-place output over the input it updates
        // (a step input): unless the caller passed one buffer as both, the
        // output starts as a copy of the input, which stays as it was.
        if (spec.inPlace && args[spec.updates] != out->data) {
          const Binding &from = call.inputs[spec.updates];
          const tsr_tensor_t *in =
              from.fromOutput ? outputs[from.index] : inputs[from.index];
          if (tsr_status_t s = tsr_tensor_copy(out, in, nullptr))
            return s;
          args[spec.updates] = out->data;
        }
        args.push_back(out->data);
      }
      // Keep args.data() non-null even for a program without tensors.
      args.push_back(nullptr);
      ProfileSpan span(call.program);
      if (program.onHost) {
        // Its blocks are host memory: outside the arena (the device's).
        HostProgramScope host;
        artifact->entries[call.program](args.data());
      } else {
        ArenaCall memory(artifact->arenaPlans[call.program]);
        artifact->entries[call.program](args.data());
      }
      std::string kernels = takeKernelError();
      if (!kernels.empty())
        return fail(TSR_ERROR_UNSUPPORTED,
                    "program '" + manifest.programs[call.program].name +
                        "': " + kernels);
    }
    return TSR_OK;
  });
}

int64_t tsr::findMeshAxis(const Manifest &manifest, const std::string &name) {
  for (size_t i = 0; i < manifest.mesh.size(); ++i)
    if (manifest.mesh[i].first == name)
      return static_cast<int64_t>(i);
  return -1;
}

tsr_status_t tsr::getDataParallelPosition(const Manifest &manifest,
                                          int64_t &outRank, int64_t &outSize) {
  int64_t axis = findMeshAxis(manifest, "dp");
  if (axis < 0) {
    outRank = 0;
    outSize = 1;
    return TSR_OK;
  }
  int64_t compiled = manifest.mesh[axis].second;
  int64_t group = int64_t(1) << axis;
  int64_t bound = tsrt_axis_size(group);
  if (bound != compiled)
    return fail(TSR_ERROR_MISMATCH,
                "the artifact was compiled for dp=" + std::to_string(compiled) +
                    " but runs on " + std::to_string(bound) + " rank" +
                    (bound == 1 ? "" : "s") +
                    " (launch it with "
                    "mpirun -np " +
                    std::to_string(compiled) + ")");
  outRank = tsrt_axis_rank(group);
  outSize = compiled;
  return TSR_OK;
}

size_t tsr_artifact_num_mesh_axes(const tsr_artifact_t *artifact) {
  return artifact ? artifact->manifest.mesh.size() : 0;
}

tsr_status_t tsr_artifact_mesh_axis(const tsr_artifact_t *artifact,
                                    size_t index, const char **out_name,
                                    int64_t *out_size) {
  if (!artifact || !out_name || !out_size)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  if (index >= artifact->manifest.mesh.size())
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "mesh axis " + std::to_string(index) + " out of range");
  *out_name = artifact->manifest.mesh[index].first.c_str();
  *out_size = artifact->manifest.mesh[index].second;
  return TSR_OK;
}

int64_t tsr_artifact_zero_stage(const tsr_artifact_t *artifact) {
  return artifact ? artifact->manifest.zero : 0;
}

size_t tsr_artifact_num_collectives(const tsr_artifact_t *artifact) {
  return artifact ? artifact->manifest.collectives.size() : 0;
}

const char *tsr_artifact_collective_description(const tsr_artifact_t *artifact,
                                                size_t index) {
  if (!artifact || index >= artifact->manifest.collectives.size())
    return "";
  return artifact->manifest.collectives[index].description.c_str();
}

size_t tsr_artifact_num_programs(const tsr_artifact_t *artifact) {
  return artifact ? artifact->manifest.programs.size() : 0;
}

const char *tsr_artifact_program_name(const tsr_artifact_t *artifact,
                                      size_t index) {
  if (!artifact || index >= artifact->manifest.programs.size())
    return "";
  return artifact->manifest.programs[index].name.c_str();
}

size_t tsr_artifact_num_calls(const tsr_artifact_t *artifact) {
  return artifact ? artifact->manifest.schedule.size() : 0;
}
