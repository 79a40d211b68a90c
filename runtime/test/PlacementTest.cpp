//===- PlacementTest.cpp - Where tensors live, and where artifacts want them
//===//
//
// Runs against FakeCudart.c, loaded before the runtime first uses CUDA: one
// "device" whose memory is host memory, so that device and pinned tensors
// can be made, copied and handed to artifacts on any machine, and the
// tests can read what a fake model wrote to "device" memory.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Comm.h"
#include "tessera-runtime/Device.h"

#include "Fixtures.h"

#include <dlfcn.h>

using namespace tsr::test;

namespace tsr {
// RuntimeInternal.h
void *transferStream();
void forgetDeviceConstants(const void *base);
size_t residentDeviceConstants();
std::string takeKernelError();
} // namespace tsr

extern "C" void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
extern "C" void *mgpuStreamCreate();

namespace {

/// The fake CUDA runtime, loaded before any test runs.
void *fakeCudart() {
  static void *handle = dlopen(TSR_TEST_FAKE_CUDART, RTLD_NOW | RTLD_LOCAL);
  return handle;
}
const bool kFakeLoaded = fakeCudart() != nullptr;

/// The fake's count of live device or pinned buffers.
int64_t liveBuffers(const char *counter) {
  auto count = reinterpret_cast<int64_t (*)()>(dlsym(fakeCudart(), counter));
  return count ? count() : -1;
}

/// The copies the fake saw queued on `stream`.
int64_t copiesOn(void *stream) {
  auto count = reinterpret_cast<int64_t (*)(void *)>(
      dlsym(fakeCudart(), "fakeCudaCopiesOn"));
  return count && stream ? count(stream) : -1;
}

TensorPtr makePlaced(tsr_placement_t placement, tsr_dtype_t dtype,
                     std::vector<int64_t> shape) {
  tsr_tensor_t *tensor = nullptr;
  EXPECT_EQ(tsr_tensor_create_placed(placement, dtype, shape.size(),
                                     shape.data(), &tensor),
            TSR_OK)
      << tsr_last_error();
  return TensorPtr(tensor);
}

/// A copy of `tensor` in `placement`.
TensorPtr copyTo(tsr_placement_t placement, tsr_tensor_t *tensor) {
  TensorPtr copy =
      makePlaced(placement, tsr_tensor_dtype(tensor), shapeOf(tensor));
  EXPECT_EQ(tsr_tensor_copy(copy.get(), tensor, nullptr), TSR_OK)
      << tsr_last_error();
  return copy;
}

void expectLastError(const std::string &needle) {
  std::string error = tsr_last_error();
  EXPECT_NE(error.find(needle), std::string::npos)
      << "missing '" << needle << "' in: " << error;
}

/// The fake artifact (FakeModel.c: y = x * k, positive = x > 0, total =
/// sum(x)) for another target, every buffer in `placement`.
std::string fakeManifestFor(const std::string &target,
                            const std::string &placement,
                            const std::string &extra = "") {
  std::string manifest = readBytes(TSR_TEST_FAKE_ARTIFACT "/manifest.json");
  manifest = replaced(manifest, R"("target": "cpu")",
                      R"("target": ")" + target + "\"" + extra);
  for (size_t at = manifest.find(R"("dtype":)"); at != std::string::npos;
       at = manifest.find(R"("dtype":)", at + 40))
    manifest.insert(at, R"("placement": ")" + placement + "\", ");
  return manifest;
}

struct FakeInputs {
  TensorPtr x, k;
};

FakeInputs fakeInputs() {
  return {makeTensor<float>(TSR_DTYPE_FLOAT32, {2, 3},
                            {1.0f, -2.0f, 3.5f, 0.0f, 4.0f, -0.5f}),
          makeTensor<int64_t>(TSR_DTYPE_INT64, {}, {3})};
}

/// Whether this machine has an NVIDIA driver: there a tool process without
/// the fake finds a real device, and would hand the fake models' host code
/// device pointers.
bool hasNvidiaDriver() { return std::filesystem::exists("/dev/nvidiactl"); }

} // namespace

TEST(Placement, FakeDeviceIsLoaded) {
  ASSERT_TRUE(kFakeLoaded) << dlerror();
  EXPECT_EQ(tsr_device_count(), 1);
}

TEST(Placement, Names) {
  EXPECT_STREQ(tsr_placement_name(TSR_PLACEMENT_HOST), "host");
  EXPECT_STREQ(tsr_placement_name(TSR_PLACEMENT_DEVICE), "device");
  EXPECT_STREQ(tsr_placement_name(TSR_PLACEMENT_PINNED_HOST), "pinned-host");
  EXPECT_STREQ(tsr_placement_name(static_cast<tsr_placement_t>(7)), "invalid");
}

TEST(Placement, TensorsKnowWhereTheyLive) {
  TensorPtr host = makeTensor<float>(TSR_DTYPE_FLOAT32, {2}, {1, 2});
  EXPECT_EQ(tsr_tensor_placement(host.get()), TSR_PLACEMENT_HOST);
  int64_t device0 = liveBuffers("fakeCudaLiveDevice");
  int64_t pinned0 = liveBuffers("fakeCudaLivePinned");
  {
    TensorPtr device =
        makePlaced(TSR_PLACEMENT_DEVICE, TSR_DTYPE_FLOAT32, {3, 5});
    TensorPtr pinned =
        makePlaced(TSR_PLACEMENT_PINNED_HOST, TSR_DTYPE_INT64, {4});
    TensorPtr plain = makePlaced(TSR_PLACEMENT_HOST, TSR_DTYPE_INT8, {});
    TensorPtr empty =
        makePlaced(TSR_PLACEMENT_DEVICE, TSR_DTYPE_FLOAT64, {0, 3});
    ASSERT_TRUE(device && pinned && plain && empty);
    EXPECT_EQ(tsr_tensor_placement(device.get()), TSR_PLACEMENT_DEVICE);
    EXPECT_EQ(tsr_tensor_placement(pinned.get()), TSR_PLACEMENT_PINNED_HOST);
    EXPECT_EQ(tsr_tensor_placement(plain.get()), TSR_PLACEMENT_HOST);
    EXPECT_EQ(tsr_tensor_byte_size(device.get()), 60u);
    EXPECT_NE(tsr_tensor_data(empty.get()), nullptr);
    EXPECT_EQ(liveBuffers("fakeCudaLiveDevice"), device0 + 2);
    EXPECT_EQ(liveBuffers("fakeCudaLivePinned"), pinned0 + 1);
    // Zero-filled wherever they live (the fake's fresh memory is not).
    EXPECT_EQ(elements<float>(copyTo(TSR_PLACEMENT_HOST, device.get()).get()),
              std::vector<float>(15, 0.0f));
    EXPECT_EQ(elements<int64_t>(pinned.get()), std::vector<int64_t>(4, 0));
  }
  // Destroying a tensor frees its buffer where it came from.
  EXPECT_EQ(liveBuffers("fakeCudaLiveDevice"), device0);
  EXPECT_EQ(liveBuffers("fakeCudaLivePinned"), pinned0);

  tsr_tensor_t *tensor = nullptr;
  int64_t shape[] = {2};
  EXPECT_EQ(tsr_tensor_create_placed(static_cast<tsr_placement_t>(9),
                                     TSR_DTYPE_FLOAT32, 1, shape, &tensor),
            TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("tsr_tensor_create_placed: invalid placement 9");
  EXPECT_EQ(tensor, nullptr);
}

TEST(Placement, CopiesBetweenPlacements) {
  TensorPtr host = makeTensor<int32_t>(TSR_DTYPE_INT32, {2, 2}, {1, -2, 3, 4});
  TensorPtr device = copyTo(TSR_PLACEMENT_DEVICE, host.get());
  TensorPtr pinned = copyTo(TSR_PLACEMENT_PINNED_HOST, device.get());
  TensorPtr back = copyTo(TSR_PLACEMENT_HOST, pinned.get());
  EXPECT_EQ(elements<int32_t>(pinned.get()),
            (std::vector<int32_t>{1, -2, 3, 4}));
  EXPECT_EQ(elements<int32_t>(back.get()), (std::vector<int32_t>{1, -2, 3, 4}));

  TensorPtr other = makePlaced(TSR_PLACEMENT_DEVICE, TSR_DTYPE_INT32, {4});
  EXPECT_EQ(tsr_tensor_copy(other.get(), host.get(), nullptr),
            TSR_ERROR_MISMATCH);
  expectLastError("tsr_tensor_copy: cannot copy a int32[2, 2] tensor into a "
                  "int32[4] one");
  EXPECT_EQ(tsr_tensor_copy(nullptr, host.get(), nullptr),
            TSR_ERROR_INVALID_ARGUMENT);
}

TEST(Placement, HostReadersRefuseDeviceTensors) {
  std::string dir = scratchDir();
  TensorPtr host = makeTensor<float>(TSR_DTYPE_FLOAT32, {2}, {1, 2});
  TensorPtr device = copyTo(TSR_PLACEMENT_DEVICE, host.get());
  EXPECT_EQ(tsr_tensor_write_npy(device.get(), (dir + "/d.npy").c_str()),
            TSR_ERROR_MISMATCH);
  expectLastError(dir + "/d.npy: the tensor lives in device memory; copy it "
                        "into a host tensor first (tsr_tensor_copy)");
  EXPECT_EQ(tsr_tensor_write_pb(device.get(), (dir + "/d.pb").c_str()),
            TSR_ERROR_MISMATCH);
  EXPECT_FALSE(std::filesystem::exists(dir + "/d.npy"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/d.pb"));
  // Pinned host memory is host memory.
  TensorPtr pinned = copyTo(TSR_PLACEMENT_PINNED_HOST, host.get());
  ASSERT_EQ(tsr_tensor_write_npy(pinned.get(), (dir + "/p.npy").c_str()),
            TSR_OK)
      << tsr_last_error();
  tsr_tensor_t *read = nullptr;
  ASSERT_EQ(tsr_tensor_read_npy((dir + "/p.npy").c_str(), &read), TSR_OK);
  TensorPtr owned(read);
  EXPECT_EQ(elements<float>(read), (std::vector<float>{1, 2}));
}

TEST(Placement, CpuArtifactsTakeHostTensors) {
  ArtifactPtr artifact = loadArtifact(TSR_TEST_FAKE_ARTIFACT);
  ASSERT_TRUE(artifact);
  tsr_placement_t placement = TSR_PLACEMENT_DEVICE;
  ASSERT_EQ(tsr_artifact_input_placement(artifact.get(), 1, &placement),
            TSR_OK);
  EXPECT_EQ(placement, TSR_PLACEMENT_HOST);
  placement = TSR_PLACEMENT_DEVICE;
  ASSERT_EQ(tsr_artifact_output_placement(artifact.get(), 2, &placement),
            TSR_OK);
  EXPECT_EQ(placement, TSR_PLACEMENT_HOST);
  EXPECT_EQ(tsr_artifact_input_placement(artifact.get(), 2, &placement),
            TSR_ERROR_INVALID_ARGUMENT);
  expectLastError("input index 2 out of range");
  EXPECT_EQ(tsr_artifact_output_placement(artifact.get(), 3, &placement),
            TSR_ERROR_INVALID_ARGUMENT);

  FakeInputs in = fakeInputs();
  std::vector<TensorPtr> outputs;
  std::vector<tsr_tensor_t *> outs;
  for (size_t i = 0; i < 3; ++i) {
    tsr_tensor_t *output = nullptr;
    ASSERT_EQ(tsr_artifact_create_output(artifact.get(), i, &output), TSR_OK);
    EXPECT_EQ(tsr_tensor_placement(output), TSR_PLACEMENT_HOST);
    outputs.emplace_back(output);
    outs.push_back(output);
  }
  // A device tensor is refused, naming the input and both placements.
  TensorPtr deviceX = copyTo(TSR_PLACEMENT_DEVICE, in.x.get());
  EXPECT_EQ(tsr_artifact_check_input(artifact.get(), 0, deviceX.get()),
            TSR_ERROR_MISMATCH);
  expectLastError("input 0 'x': expected a tensor in host memory (target "
                  "cpu), got one in device memory");
  const tsr_tensor_t *wrong[] = {deviceX.get(), in.k.get()};
  EXPECT_EQ(tsr_artifact_invoke(artifact.get(), wrong, 2, outs.data(), 3),
            TSR_ERROR_MISMATCH);
  expectLastError("input 0 'x': expected a tensor in host memory (target "
                  "cpu), got one in device memory");
  TensorPtr deviceY = copyTo(TSR_PLACEMENT_DEVICE, outs[0]);
  tsr_tensor_t *wrongOuts[] = {deviceY.get(), outs[1], outs[2]};
  const tsr_tensor_t *right[] = {in.x.get(), in.k.get()};
  EXPECT_EQ(tsr_artifact_invoke(artifact.get(), right, 2, wrongOuts, 3),
            TSR_ERROR_MISMATCH);
  expectLastError("output 0 'y': expected a tensor in host memory (target "
                  "cpu), got one in device memory");
  EXPECT_EQ(elements<float>(outs[0]), std::vector<float>(6, 0.0f));

  // Pinned host tensors stand for host ones.
  TensorPtr pinnedX = copyTo(TSR_PLACEMENT_PINNED_HOST, in.x.get());
  const tsr_tensor_t *pinned[] = {pinnedX.get(), in.k.get()};
  ASSERT_EQ(tsr_artifact_invoke(artifact.get(), pinned, 2, outs.data(), 3),
            TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(elements<float>(outs[0]),
            (std::vector<float>{3, -6, 10.5f, 0, 12, -1.5f}));
}

TEST(Placement, DeviceArtifactsTakeDeviceTensors) {
  std::string dir = scratchDir();
  std::string art =
      artifactWithManifest(dir, fakeManifestFor("cuda", "device"));
  ArtifactPtr artifact = loadArtifact(art);
  ASSERT_TRUE(artifact);
  EXPECT_STREQ(tsr_artifact_target(artifact.get()), "cuda");
  tsr_placement_t placement = TSR_PLACEMENT_HOST;
  ASSERT_EQ(tsr_artifact_input_placement(artifact.get(), 0, &placement),
            TSR_OK);
  EXPECT_EQ(placement, TSR_PLACEMENT_DEVICE);

  FakeInputs in = fakeInputs();
  std::vector<TensorPtr> outputs;
  std::vector<tsr_tensor_t *> outs;
  for (size_t i = 0; i < 3; ++i) {
    tsr_tensor_t *output = nullptr;
    ASSERT_EQ(tsr_artifact_create_output(artifact.get(), i, &output), TSR_OK)
        << tsr_last_error();
    EXPECT_EQ(tsr_tensor_placement(output), TSR_PLACEMENT_DEVICE);
    outputs.emplace_back(output);
    outs.push_back(output);
  }
  const tsr_tensor_t *host[] = {in.x.get(), in.k.get()};
  EXPECT_EQ(tsr_artifact_invoke(artifact.get(), host, 2, outs.data(), 3),
            TSR_ERROR_MISMATCH);
  expectLastError("input 0 'x': expected a tensor in device memory (target "
                  "cuda), got one in host memory");
  // Pinned host memory does not stand for device memory either.
  TensorPtr pinnedX = copyTo(TSR_PLACEMENT_PINNED_HOST, in.x.get());
  EXPECT_EQ(tsr_artifact_check_input(artifact.get(), 0, pinnedX.get()),
            TSR_ERROR_MISMATCH);
  expectLastError("expected a tensor in device memory (target cuda), got one "
                  "in pinned-host memory");

  TensorPtr x = copyTo(TSR_PLACEMENT_DEVICE, in.x.get());
  TensorPtr k = copyTo(TSR_PLACEMENT_DEVICE, in.k.get());
  const tsr_tensor_t *device[] = {x.get(), k.get()};
  ASSERT_EQ(tsr_artifact_invoke(artifact.get(), device, 2, outs.data(), 3),
            TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(elements<float>(copyTo(TSR_PLACEMENT_HOST, outs[0]).get()),
            (std::vector<float>{3, -6, 10.5f, 0, 12, -1.5f}));
  EXPECT_EQ(elements<double>(copyTo(TSR_PLACEMENT_HOST, outs[2]).get()),
            (std::vector<double>{6.0}));
}

TEST(Placement, ManifestErrors) {
  std::string dir = scratchDir();
  auto expectLoadError = [&](const std::string &manifest,
                             const std::string &needle) {
    std::string art = artifactWithManifest(dir, manifest);
    tsr_artifact_t *artifact = nullptr;
    EXPECT_EQ(tsr_artifact_load(art.c_str(), &artifact), TSR_ERROR_PARSE)
        << needle;
    EXPECT_EQ(artifact, nullptr);
    expectLastError(art + "/manifest.json: " + needle);
  };
  std::string cpu = readBytes(TSR_TEST_FAKE_ARTIFACT "/manifest.json");
  expectLoadError(replaced(cpu, R"("target": "cpu")", R"("target": "rocm")"),
                  "programs[0].inputs[0] 'x': target \"rocm\" is not one this "
                  "runtime knows, so the entry must say where its buffer "
                  "lives (\"placement\": \"host\", \"device\" or "
                  "\"pinned-host\")");
  expectLoadError(replaced(cpu, R"({"name": "k", )",
                           R"({"name": "k", "placement": "device", )"),
                  "programs[0].inputs[1].placement: target \"cpu\" has no "
                  "device memory (its buffers live in host memory)");
  expectLoadError(fakeManifestFor("cuda", "gpu"),
                  "programs[0].inputs[0].placement: unknown placement \"gpu\" "
                  "(expected host, device or pinned-host)");
  expectLoadError(replaced(fakeManifestFor("cuda", "device"),
                           R"("placement": "device", "dtype": "int64")",
                           R"("placement": 3, "dtype": "int64")"),
                  "programs[0].inputs[1].placement must be a string");
  // A manifest without a target is a cpu one.
  std::string none = replaced(cpu, R"("target": "cpu",)", "");
  ArtifactPtr artifact = loadArtifact(artifactWithManifest(dir, none));
  ASSERT_TRUE(artifact);
  tsr_placement_t placement = TSR_PLACEMENT_DEVICE;
  ASSERT_EQ(tsr_artifact_input_placement(artifact.get(), 0, &placement),
            TSR_OK);
  EXPECT_EQ(placement, TSR_PLACEMENT_HOST);

  // Values keep their placement from program to program and step to step.
  // (A target this runtime does not know, so that every placement is
  // allowed.)
  std::string linear = readBytes(TSR_TEST_LINEAR_ARTIFACT "/manifest.json");
  std::string devices =
      replaced(linear, R"("target": "cpu")", R"("target": "rocm")");
  for (size_t at = devices.find(R"("dtype":)"); at != std::string::npos;
       at = devices.find(R"("dtype":)", at + 40))
    devices.insert(at, R"("placement": "device", )");
  expectLoadError(
      replaced(
          devices,
          R"({"name": "b", "placement": "device", "dtype": "float32", "shape": [], "role": "param", "updates")",
          R"({"name": "b", "placement": "pinned-host", "dtype": "float32", "shape": [], "role": "param", "updates")"),
      "programs[0].outputs[2] 'b' lives in pinned-host memory but "
      "input 1 'b' that it updates lives in device memory");
}

/// The linear artifact's manifest with every buffer in device memory, for
/// `target`.
std::string deviceLinearManifest(const std::string &target) {
  std::string devices =
      replaced(readBytes(TSR_TEST_LINEAR_ARTIFACT "/manifest.json"),
               R"("target": "cpu")", "\"target\": \"" + target + "\"");
  for (size_t at = devices.find(R"("dtype":)"); at != std::string::npos;
       at = devices.find(R"("dtype":)", at + 40))
    devices.insert(at, R"("placement": "device", )");
  return devices;
}

// The trainer stages a device artifact's buffers: before a step it copies
// the batch and the other inputs no step updates to the device, after it
// the loss and the metrics back; the params and the optimizer state stay
// on the device, their updates swapped in there. With the fake CUDA runtime
// "device" memory is host memory, so the CPU code of the linear artifact
// runs on it: the losses must be those of the host artifact, bit for bit,
// and so must the params, read after the steps. What crosses at every step
// is staged in pinned host memory.
TEST(Placement, TrainerStagesDeviceBuffers) {
  std::string dir = scratchDir();
  std::string data = dir + "/data.npz";
  std::vector<float> x(16), y(8);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.25f * static_cast<float>(i) - 1.0f;
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = 0.5f * static_cast<float>(i);
  writeBytes(data, zipBytes({{"x.npy", npyBytes("<f4", {8, 2}, x)},
                             {"y.npy", npyBytes("<f4", {8}, y)}},
                            false));
  // The losses of 4 steps, the copies each step made, then the params w
  // and b (inputs 0 and 1) and the copies reading them made.
  struct Run {
    std::vector<float> losses, w, b;
    /// All copies, those on the transfer stream, the streams' waits.
    std::vector<int64_t> copies, transfers, waits;
    int64_t readCopies = 0;
    /// Of the host tensors of the 6 inputs and 5 outputs.
    std::vector<tsr_placement_t> placements;
  };
  auto train = [&](tsr_artifact_t *artifact) {
    Run run;
    tsr_trainer_t *trainer = nullptr;
    EXPECT_EQ(tsr_trainer_create(artifact, &trainer), TSR_OK)
        << tsr_last_error();
    tsr_dataset_t *dataset = nullptr;
    EXPECT_EQ(tsr_dataset_open_npz(artifact, data.c_str(), &dataset), TSR_OK)
        << tsr_last_error();
    for (int64_t step = 0; trainer && dataset && step < 4; ++step) {
      float loss = 0;
      int64_t before = liveBuffers("fakeCudaCopies");
      int64_t transfersBefore = copiesOn(tsr::transferStream());
      int64_t waitsBefore = liveBuffers("fakeCudaStreamWaits");
      EXPECT_EQ(tsr_trainer_step(trainer, dataset, step, &loss), TSR_OK)
          << tsr_last_error();
      run.losses.push_back(loss);
      run.copies.push_back(liveBuffers("fakeCudaCopies") - before);
      run.transfers.push_back(copiesOn(tsr::transferStream()) -
                              transfersBefore);
      run.waits.push_back(liveBuffers("fakeCudaStreamWaits") - waitsBefore);
    }
    if (trainer) {
      int64_t before = liveBuffers("fakeCudaCopies");
      run.w = elements<float>(tsr_trainer_input(trainer, 0));
      run.b = elements<float>(tsr_trainer_input(trainer, 1));
      run.readCopies = liveBuffers("fakeCudaCopies") - before;
      for (size_t i = 0; i < 6; ++i)
        run.placements.push_back(
            tsr_tensor_placement(tsr_trainer_input(trainer, i)));
      for (size_t i = 0; i < 5; ++i)
        run.placements.push_back(
            tsr_tensor_placement(tsr_trainer_output(trainer, i)));
    }
    tsr_dataset_destroy(dataset);
    tsr_trainer_destroy(trainer);
    return run;
  };
  int64_t device0 = liveBuffers("fakeCudaLiveDevice");
  int64_t pinned0 = liveBuffers("fakeCudaLivePinned");
  ArtifactPtr host = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  ArtifactPtr device = loadArtifact(artifactWithManifest(
      dir, deviceLinearManifest("cuda"), TSR_TEST_LINEAR_ARTIFACT));
  ASSERT_TRUE(host && device);
  Run expected = train(host.get());
  ASSERT_EQ(expected.losses.size(), 4u);
  EXPECT_EQ(expected.copies, std::vector<int64_t>(4, 0));
  Run got = train(device.get());
  EXPECT_EQ(got.losses, expected.losses);
  EXPECT_EQ(got.w, expected.w);
  EXPECT_EQ(got.b, expected.b);
  // The first step copies all 6 inputs in; later ones the 3 no step
  // updates (lr, x, y; not w, b, step); every step the loss and the
  // prediction out. Reading the params copies w, b and step back once.
  EXPECT_EQ(got.copies, (std::vector<int64_t>{8, 5, 5, 5}));
  // All on the transfer stream, the compute stream waiting for those in
  // (one event) rather than the host.
  EXPECT_EQ(got.transfers, got.copies);
  EXPECT_EQ(got.waits, std::vector<int64_t>(4, 1));
  EXPECT_EQ(expected.waits, std::vector<int64_t>(4, 0));
  EXPECT_EQ(got.readCopies, 3);
  // What crosses at every step is staged in pinned memory (lr, x, y; loss,
  // prediction), the resident state's host copies in pageable memory.
  constexpr tsr_placement_t kHost = TSR_PLACEMENT_HOST,
                            kPinned = TSR_PLACEMENT_PINNED_HOST;
  EXPECT_EQ(got.placements, (std::vector<tsr_placement_t>{
                                kHost, kHost, kPinned, kHost, kPinned, kPinned,
                                kPinned, kHost, kHost, kHost, kPinned}));
  EXPECT_EQ(expected.placements, std::vector<tsr_placement_t>(11, kHost));
  EXPECT_EQ(liveBuffers("fakeCudaLiveDevice"), device0);
  EXPECT_EQ(liveBuffers("fakeCudaLivePinned"), pinned0);
}

// A device trainer's checkpoint holds the state its steps left on the
// device, and a loaded checkpoint reaches the device at the next step: 2
// steps, a checkpoint, 2 more steps, the checkpoint loaded again and the 2
// steps again give the host trainer's 4 losses, and the first step after
// the load copies every input in again.
TEST(Placement, DeviceTrainerCheckpointsItsDeviceState) {
  std::string dir = scratchDir();
  std::string data = dir + "/data.npz";
  std::vector<float> x(16), y(8);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.5f - 0.125f * static_cast<float>(i);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<float>(i) - 2.0f;
  writeBytes(data, zipBytes({{"x.npy", npyBytes("<f4", {8, 2}, x)},
                             {"y.npy", npyBytes("<f4", {8}, y)}},
                            false));
  ArtifactPtr host = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  ArtifactPtr device = loadArtifact(artifactWithManifest(
      dir, deviceLinearManifest("cuda"), TSR_TEST_LINEAR_ARTIFACT));
  ASSERT_TRUE(host && device);
  tsr_dataset_t *raw = nullptr;
  ASSERT_EQ(tsr_dataset_open_npz(host.get(), data.c_str(), &raw), TSR_OK)
      << tsr_last_error();
  std::unique_ptr<tsr_dataset_t, void (*)(tsr_dataset_t *)> dataset(
      raw, tsr_dataset_destroy);
  auto steps = [&](tsr_trainer_t *trainer, int64_t from, int64_t to) {
    std::vector<float> losses;
    for (int64_t step = from; step < to; ++step) {
      float loss = 0;
      EXPECT_EQ(tsr_trainer_step(trainer, dataset.get(), step, &loss), TSR_OK)
          << tsr_last_error();
      losses.push_back(loss);
    }
    return losses;
  };
  auto create = [](tsr_artifact_t *artifact) {
    tsr_trainer_t *trainer = nullptr;
    EXPECT_EQ(tsr_trainer_create(artifact, &trainer), TSR_OK)
        << tsr_last_error();
    return std::unique_ptr<tsr_trainer_t, void (*)(tsr_trainer_t *)>(
        trainer, tsr_trainer_destroy);
  };
  auto reference = create(host.get());
  ASSERT_TRUE(reference);
  std::vector<float> expected = steps(reference.get(), 0, 4);
  auto first = create(device.get());
  ASSERT_TRUE(first);
  std::vector<float> got = steps(first.get(), 0, 2);
  std::string saved = dir + "/ckpt";
  ASSERT_EQ(tsr_trainer_save_checkpoint(first.get(), saved.c_str(), 2), TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(steps(first.get(), 2, 4),
            std::vector<float>(expected.begin() + 2, expected.end()));
  int64_t done = 0;
  ASSERT_EQ(tsr_trainer_load_checkpoint(first.get(), saved.c_str(), &done),
            TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(done, 2);
  int64_t before = liveBuffers("fakeCudaCopies");
  std::vector<float> more = steps(first.get(), 2, 3);
  EXPECT_EQ(liveBuffers("fakeCudaCopies") - before, 8);
  std::vector<float> last = steps(first.get(), 3, 4);
  got.insert(got.end(), more.begin(), more.end());
  got.insert(got.end(), last.begin(), last.end());
  EXPECT_EQ(got, expected);
}

// The device memory of compiled CUDA programs (the launch ABI's
// mgpuMemAlloc/mgpuMemFree): counted in tsr_memory_stats like host code's,
// and a freed block reused for the next request of its size without another
// cudaMalloc.
extern "C" void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared);
extern "C" void mgpuMemFree(void *ptr, void *stream);

TEST(Placement, CompiledCodeDevicePool) {
  tsr_memory_reset_peak();
  size_t current0 = 0, peak = 0, current = 0;
  tsr_memory_stats(&current0, nullptr);
  int64_t device0 = liveBuffers("fakeCudaLiveDevice");
  void *a = mgpuMemAlloc(1000, nullptr, false);
  void *b = mgpuMemAlloc(24, nullptr, false);
  ASSERT_TRUE(a && b) << tsr_last_error();
  EXPECT_EQ(liveBuffers("fakeCudaLiveDevice"), device0 + 2);
  tsr_memory_stats(&current, &peak);
  EXPECT_EQ(current, current0 + 1024);
  mgpuMemFree(a, nullptr);
  tsr_memory_stats(&current, nullptr);
  EXPECT_EQ(current, current0 + 24);
  EXPECT_EQ(mgpuMemAlloc(1000, nullptr, false), a);
  EXPECT_EQ(liveBuffers("fakeCudaLiveDevice"), device0 + 2);
  mgpuMemFree(a, nullptr);
  mgpuMemFree(b, nullptr);
  tsr_memory_stats(&current, &peak);
  EXPECT_EQ(current, current0);
  EXPECT_EQ(peak, current0 + 1024);
}

/// A constant of compiled code, in a loaded object's read-only data as
/// model.so's are (here the test's own).
const float kConstant[64] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};

/// tsr-gpu-launch copies each constant into a device buffer of the call
/// (mgpuMemcpy from model.so's data): the first copy uploads it once, with
/// the host waiting, and every copy is then device to device on the stream,
/// the host never waiting again; a source that is no loaded object's
/// (device memory) is copied as it is; unloading the library forgets its
/// constants.
TEST(Placement, UploadsEachConstantOnce) {
  auto hostWaits =
      reinterpret_cast<int64_t (*)()>(dlsym(fakeCudart(), "fakeCudaHostWaits"));
  ASSERT_NE(hostWaits, nullptr);
  void *stream = mgpuStreamCreate();
  const size_t bytes = sizeof(kConstant);
  size_t resident = tsr::residentDeviceConstants();
  auto *a = static_cast<float *>(mgpuMemAlloc(bytes, stream, false));
  auto *b = static_cast<float *>(mgpuMemAlloc(bytes, stream, false));
  ASSERT_TRUE(a && b) << tsr_last_error();
  int64_t waits = hostWaits();
  mgpuMemcpy(a, const_cast<float *>(kConstant), bytes, stream);
  ASSERT_EQ(tsr::takeKernelError(), "");
  EXPECT_EQ(hostWaits(), waits + 1) << "the upload";
  EXPECT_EQ(tsr::residentDeviceConstants(), resident + 1);
  waits = hostWaits();
  for (int call = 0; call < 3; ++call)
    mgpuMemcpy(b, const_cast<float *>(kConstant), bytes, stream);
  EXPECT_EQ(hostWaits(), waits) << "later copies queue on the stream";
  EXPECT_EQ(tsr::residentDeviceConstants(), resident + 1);
  ASSERT_EQ(tsr_stream_synchronize(stream), TSR_OK);
  EXPECT_EQ(std::vector<float>(a, a + 64),
            std::vector<float>(kConstant, kConstant + 64));
  EXPECT_EQ(std::vector<float>(b, b + 64),
            std::vector<float>(kConstant, kConstant + 64));
  // Device memory to device memory: no upload.
  mgpuMemcpy(a, b, bytes, stream);
  EXPECT_EQ(tsr::residentDeviceConstants(), resident + 1);
  Dl_info self;
  ASSERT_TRUE(dladdr(kConstant, &self));
  tsr::forgetDeviceConstants(self.dli_fbase);
  EXPECT_EQ(tsr::residentDeviceConstants(), resident);
  mgpuMemFree(a, stream);
  mgpuMemFree(b, stream);
}

TEST(Placement, TrainerRefusesMixedBuffers) {
  std::string dir = scratchDir();
  // w in host memory, in and out; b and the rest in device memory.
  std::string mixed = deviceLinearManifest("rocm");
  for (int i = 0; i < 2; ++i)
    mixed = replaced(mixed, R"({"name": "w", "placement": "device", )",
                     R"({"name": "w", "placement": "host", )");
  ArtifactPtr artifact =
      loadArtifact(artifactWithManifest(dir, mixed, TSR_TEST_LINEAR_ARTIFACT));
  ASSERT_TRUE(artifact);
  tsr_trainer_t *trainer = nullptr;
  EXPECT_EQ(tsr_trainer_create(artifact.get(), &trainer),
            TSR_ERROR_UNSUPPORTED);
  EXPECT_EQ(trainer, nullptr);
  expectLastError("/art: input 1 'b' lives in device memory, but the trainer "
                  "needs every buffer in host memory or every one in device "
                  "memory");

  // A dataset fills host tensors only.
  ArtifactPtr linear = loadArtifact(TSR_TEST_LINEAR_ARTIFACT);
  std::string data = dir + "/data.npz";
  std::vector<float> x(16, 1.0f), y(8, 2.0f);
  writeBytes(data, zipBytes({{"x.npy", npyBytes("<f4", {8, 2}, x)},
                             {"y.npy", npyBytes("<f4", {8}, y)}},
                            false));
  tsr_dataset_t *dataset = nullptr;
  ASSERT_EQ(tsr_dataset_open_npz(linear.get(), data.c_str(), &dataset), TSR_OK)
      << tsr_last_error();
  std::vector<TensorPtr> inputs;
  std::vector<tsr_tensor_t *> raw;
  for (size_t i = 0; i < tsr_artifact_num_inputs(linear.get()); ++i) {
    tsr_tensor_info_t info;
    ASSERT_EQ(tsr_artifact_input_info(linear.get(), i, &info), TSR_OK);
    inputs.push_back(makePlaced(
        i == 4 ? TSR_PLACEMENT_DEVICE : TSR_PLACEMENT_HOST, info.dtype,
        std::vector<int64_t>(info.shape, info.shape + info.rank)));
    raw.push_back(inputs.back().get());
  }
  EXPECT_EQ(tsr_dataset_fill_batch(dataset, 0, raw.data(), raw.size()),
            TSR_ERROR_MISMATCH);
  expectLastError("input 4 'x': the tensor lives in device memory");
  tsr_dataset_destroy(dataset);
}

// tessera-run copies the inputs of a device artifact to the device and its
// outputs back (the fake CUDA runtime on LD_LIBRARY_PATH).
TEST(Placement, TesseraRunCopiesToAndFromTheDevice) {
  std::string dir = scratchDir();
  std::string art =
      artifactWithManifest(dir, fakeManifestFor("cuda", "device"));
  std::string in = dir + "/in";
  std::filesystem::create_directories(in);
  FakeInputs inputs = fakeInputs();
  ASSERT_EQ(tsr_tensor_write_npy(inputs.x.get(), (in + "/input_0.npy").c_str()),
            TSR_OK);
  ASSERT_EQ(tsr_tensor_write_npy(inputs.k.get(), (in + "/input_1.npy").c_str()),
            TSR_OK);
  RunResult result =
      runTool(quote(art) + " --inputs-dir " + quote(in) + " --print",
              "LD_LIBRARY_PATH=" TSR_TEST_FAKE_CUDART_DIR);
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.out,
            "output 0 'y': float32[2, 3] = [3, -6, 10.5, 0, 12, -1.5]\n"
            "output 1 'positive': bool[2, 3] = [true, false, true, false, "
            "true, false]\n"
            "output 2 'total': float64[] = [6]\n");
}

// Without the fake, on a machine without a GPU: a clear error, no crash.
TEST(Placement, TesseraRunWithoutDevice) {
  if (hasNvidiaDriver())
    GTEST_SKIP() << "this machine has an NVIDIA driver (/dev/nvidiactl)";
  std::string dir = scratchDir();
  std::string art =
      artifactWithManifest(dir, fakeManifestFor("cuda", "device"));
  std::string in = dir + "/in";
  std::filesystem::create_directories(in);
  FakeInputs inputs = fakeInputs();
  ASSERT_EQ(tsr_tensor_write_npy(inputs.x.get(), (in + "/input_0.npy").c_str()),
            TSR_OK);
  ASSERT_EQ(tsr_tensor_write_npy(inputs.k.get(), (in + "/input_1.npy").c_str()),
            TSR_OK);
  RunResult result =
      runTool(quote(art) + " --inputs-dir " + quote(in) + " --print");
  expectError(result, {"input 0 'x': cannot allocate device memory: 24 bytes "
                       "for a float32[2, 3] tensor: tsr_device_alloc: "});
}

// --comm=nccl loads the NCCL plugin for an artifact with device buffers;
// without a GPU that fails with the plugin's reason.
TEST(Placement, TesseraRunNcclWithoutDevice) {
  if (hasNvidiaDriver())
    GTEST_SKIP() << "this machine has an NVIDIA driver (/dev/nvidiactl)";
  std::string dir = scratchDir();
  std::string art = artifactWithManifest(
      dir, fakeManifestFor("cuda", "device",
                           R"(, "mesh": [{"name": "dp", "size": 1}])"));
  RunResult result = runTool(quote(art) + " --inputs-dir " + quote(dir) +
                             " --print --comm=nccl");
  EXPECT_EQ(result.exitCode, 1) << result.err;
  EXPECT_EQ(result.err.rfind("tessera-run: error: --comm=nccl: ", 0), 0u)
      << result.err;
  // The plugin's reason where this build has it, else that it is missing.
  EXPECT_TRUE(result.err.find("NCCL: ") != std::string::npos ||
              result.err.find("libtessera_comm_nccl.so") != std::string::npos)
      << result.err;
  EXPECT_EQ(result.out, "");
  // MPI moves host memory: refused for this artifact on a mesh.
  result = runTool(quote(art) + " --inputs-dir " + quote(dir) + " --print");
  expectError(result, {"--comm=mpi: the buffers of " + art +
                       " (target cuda) live in device memory, and MPI moves "
                       "host memory (use --comm=nccl)"});
}
