//===- TesseraRunTest.cpp - Artifacts and tessera-run end to end ----------===//

#include "Fixtures.h"

#include <onnx/onnx_pb.h>

#include <random>

using namespace tsr::test;
namespace fs = std::filesystem;

namespace {

const std::vector<float> kX = {1.0f, -2.0f, 3.5f, 0.0f, 4.0f, -0.5f};

/// Writes valid inputs for the fake artifact into `dir`.
void writeFakeInputs(const std::string &dir, bool npy = false) {
  TensorPtr x = makeTensor<float>(TSR_DTYPE_FLOAT32, {2, 3}, kX);
  TensorPtr k = makeTensor<int64_t>(TSR_DTYPE_INT64, {}, {3});
  if (npy) {
    ASSERT_EQ(tsr_tensor_write_npy(x.get(), (dir + "/input_0.npy").c_str()),
              TSR_OK);
    ASSERT_EQ(tsr_tensor_write_npy(k.get(), (dir + "/input_1.npy").c_str()),
              TSR_OK);
  } else {
    ASSERT_EQ(tsr_tensor_write_pb(x.get(), (dir + "/input_0.pb").c_str()),
              TSR_OK);
    ASSERT_EQ(tsr_tensor_write_pb(k.get(), (dir + "/input_1.pb").c_str()),
              TSR_OK);
  }
}

void expectFakeOutputs(const std::string &dir) {
  tsr_tensor_t *raw = nullptr;
  ASSERT_EQ(tsr_tensor_read_pb((dir + "/output_0.pb").c_str(), &raw), TSR_OK)
      << tsr_last_error();
  TensorPtr y(raw);
  EXPECT_STREQ(tsr_tensor_name(y.get()), "y");
  EXPECT_EQ(shapeOf(y.get()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(elements<float>(y.get()),
            (std::vector<float>{3.0f, -6.0f, 10.5f, 0.0f, 12.0f, -1.5f}));

  ASSERT_EQ(tsr_tensor_read_pb((dir + "/output_1.pb").c_str(), &raw), TSR_OK);
  TensorPtr positive(raw);
  EXPECT_STREQ(tsr_tensor_name(positive.get()), "positive");
  EXPECT_EQ(tsr_tensor_dtype(positive.get()), TSR_DTYPE_BOOL);
  EXPECT_EQ(elements<uint8_t>(positive.get()),
            (std::vector<uint8_t>{1, 0, 1, 0, 1, 0}));

  ASSERT_EQ(tsr_tensor_read_pb((dir + "/output_2.pb").c_str(), &raw), TSR_OK);
  TensorPtr total(raw);
  EXPECT_EQ(tsr_tensor_rank(total.get()), 0u);
  EXPECT_EQ(elements<double>(total.get()), (std::vector<double>{6.0}));
}

} // namespace

TEST(Artifact, LoadsManifestAndInvokes) {
  tsr_artifact_t *artifact = nullptr;
  ASSERT_EQ(tsr_artifact_load(TSR_TEST_FAKE_ARTIFACT, &artifact), TSR_OK)
      << tsr_last_error();
  EXPECT_STREQ(tsr_artifact_mode(artifact), "infer");
  EXPECT_STREQ(tsr_artifact_target(artifact), "cpu");
  ASSERT_EQ(tsr_artifact_num_inputs(artifact), 2u);
  ASSERT_EQ(tsr_artifact_num_outputs(artifact), 3u);
  tsr_tensor_info_t info;
  ASSERT_EQ(tsr_artifact_input_info(artifact, 0, &info), TSR_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, TSR_DTYPE_FLOAT32);
  EXPECT_EQ(std::vector<int64_t>(info.shape, info.shape + info.rank),
            (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(tsr_artifact_output_info(artifact, 2, &info), TSR_OK);
  EXPECT_STREQ(info.name, "total");
  EXPECT_EQ(info.rank, 0u);
  EXPECT_EQ(tsr_artifact_output_info(artifact, 3, &info),
            TSR_ERROR_INVALID_ARGUMENT);

  TensorPtr x = makeTensor<float>(TSR_DTYPE_FLOAT32, {2, 3}, kX);
  TensorPtr k = makeTensor<int64_t>(TSR_DTYPE_INT64, {}, {2});
  TensorPtr wrong = makeTensor<float>(TSR_DTYPE_FLOAT32, {3, 2}, kX);
  EXPECT_EQ(tsr_artifact_check_input(artifact, 0, wrong.get()),
            TSR_ERROR_MISMATCH);
  EXPECT_STREQ(tsr_last_error(),
               "input 0 'x': expected shape [2, 3], got [3, 2]");
  EXPECT_EQ(tsr_artifact_check_input(artifact, 1, x.get()), TSR_ERROR_MISMATCH);
  EXPECT_STREQ(tsr_last_error(),
               "input 1 'k': expected dtype int64, got float32");

  std::vector<TensorPtr> outputs;
  std::vector<tsr_tensor_t *> outputPtrs;
  for (size_t i = 0; i < 3; ++i) {
    tsr_tensor_t *output = nullptr;
    ASSERT_EQ(tsr_artifact_create_output(artifact, i, &output), TSR_OK);
    outputs.emplace_back(output);
    outputPtrs.push_back(output);
  }
  EXPECT_STREQ(tsr_tensor_name(outputs[1].get()), "positive");
  const tsr_tensor_t *inputs[] = {x.get(), k.get()};
  ASSERT_EQ(tsr_artifact_invoke(artifact, inputs, 2, outputPtrs.data(), 3),
            TSR_OK)
      << tsr_last_error();
  EXPECT_EQ(elements<float>(outputs[0].get()),
            (std::vector<float>{2.0f, -4.0f, 7.0f, 0.0f, 8.0f, -1.0f}));
  EXPECT_EQ(tsr_artifact_invoke(artifact, inputs, 1, outputPtrs.data(), 3),
            TSR_ERROR_INVALID_ARGUMENT);
  const tsr_tensor_t *swapped[] = {k.get(), x.get()};
  EXPECT_EQ(tsr_artifact_invoke(artifact, swapped, 2, outputPtrs.data(), 3),
            TSR_ERROR_MISMATCH);
  // A program writes its outputs while it reads its inputs: only an
  // "in_place" output may be an input's buffer.
  tsr_tensor_t *aliased[] = {x.get(), outputPtrs[1], outputPtrs[2]};
  EXPECT_EQ(tsr_artifact_invoke(artifact, inputs, 2, aliased, 3),
            TSR_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(tsr_last_error(), "output 0 'y' shares its buffer with an "
                                 "input; only an \"in_place\" output may");
  tsr_artifact_destroy(artifact);
}

TEST(Artifact, RejectsBadManifests) {
  std::string dir = scratchDir();
  std::string valid =
      readBytes(std::string(TSR_TEST_FAKE_ARTIFACT) + "/manifest.json");
  auto expectLoadError = [&](const std::string &manifest,
                             const std::string &needle) {
    std::string art = artifactWithManifest(dir, manifest);
    tsr_artifact_t *artifact = nullptr;
    EXPECT_NE(tsr_artifact_load(art.c_str(), &artifact), TSR_OK) << needle;
    EXPECT_EQ(artifact, nullptr);
    std::string message = tsr_last_error();
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  };
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string text = valid;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  expectLoadError("", "manifest.json: 1:1: unexpected end of input");
  expectLoadError(
      "{\"format\": \"tessera-artifact\",}",
      "manifest.json: 1:31: unexpected '}'; expected string literal");
  expectLoadError("{\"format\": \"tessera-artifact\",\n \"format\": \"x\"}",
                  "manifest.json: 2:10: duplicate key \"format\"");
  expectLoadError(std::string(66, '[') + std::string(66, ']'),
                  "manifest.json: 1:67: nesting too deep");
  expectLoadError("[1, 2]", "top level must be a JSON object");
  expectLoadError(replace("tessera-artifact", "other"), "format is \"other\"");
  expectLoadError(replace("\"version\": 2", "\"version\": 1"),
                  "manifest version 1 was written by an older "
                  "tessera-compile; this runtime reads version 2 (recompile "
                  "the model with this tessera-compile)");
  expectLoadError(replace("\"version\": 2", "\"version\": 3"),
                  "unsupported manifest version (this runtime reads version "
                  "2)");
  expectLoadError(replace("\"float32\", \"shape\": [2, 3]",
                          "\"float8\", \"shape\": [2, 3]"),
                  "inputs[0].dtype: unknown dtype \"float8\"");
  expectLoadError(replace("[2, 3]", "[2, -3]"),
                  "inputs[0].shape must hold non-negative integers");
  expectLoadError(replace("[2, 3]", "[2, 3.5]"),
                  "inputs[0].shape must hold non-negative integers");
  expectLoadError(replace("\"name\": \"k\", ", ""),
                  "missing \"name\" in programs[0].inputs[1]");
  expectLoadError(replace("\"entry\": \"tessera_entry\",", ""),
                  "missing \"entry\" in programs[0]");
  expectLoadError(replace("{\"program\": \"main\"}", "{\"program\": \"x\"}"),
                  "schedule[0].program: no program is named 'x'");
  expectLoadError(replace("\"schedule\"", "\"schedule_\""),
                  "missing \"schedule\"");
  expectLoadError(replace("\"outputs\"", "\"outputz\""), "missing \"outputs\"");
  expectLoadError(replace("tessera_entry", "no_such_entry"),
                  "entry symbol 'no_such_entry' of program 'main' not found");
  expectLoadError(replace("model.so", "missing.so"),
                  "missing.so: cannot load library");

  tsr_artifact_t *artifact = nullptr;
  EXPECT_EQ(tsr_artifact_load((dir + "/nowhere").c_str(), &artifact),
            TSR_ERROR_IO);
  EXPECT_NE(std::string(tsr_last_error()).find("does not exist"),
            std::string::npos);
}

TEST(Artifact, FuzzedManifestsNeverCrash) {
  std::string dir = scratchDir();
  std::string valid =
      readBytes(std::string(TSR_TEST_FAKE_ARTIFACT) + "/manifest.json");
  // A library that does not exist, so no mutation can load a real entry.
  size_t at = valid.find("model.so");
  valid.replace(at, 8, "absent.so");
  std::string art = artifactWithManifest(dir, valid);
  std::mt19937 rng(99);
  auto attempt = [&](const std::string &text) {
    writeBytes(art + "/manifest.json", text);
    tsr_artifact_t *artifact = nullptr;
    EXPECT_NE(tsr_artifact_load(art.c_str(), &artifact), TSR_OK);
    EXPECT_NE(std::string(tsr_last_error()), "");
  };
  for (size_t n = 0; n < valid.size(); ++n)
    attempt(valid.substr(0, n));
  for (int i = 0; i < 500; ++i) {
    std::string mutated = valid;
    for (int flips = 1 + rng() % 3; flips > 0; --flips)
      mutated[rng() % mutated.size()] = "{}[]\",:0-9e.\\ua\x80"[rng() % 17];
    attempt(mutated);
  }
  attempt(std::string(10000, '['));
  attempt("\"\\ud800\"");
}

TEST(TesseraRun, RunsWithPbInputs) {
  std::string dir = scratchDir();
  writeFakeInputs(dir);
  RunResult result =
      runTool(quote(TSR_TEST_FAKE_ARTIFACT) + " --inputs-dir " + quote(dir) +
              " --outputs-dir " + quote(dir + "/out/nested"));
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "");
  expectFakeOutputs(dir + "/out/nested");
}

TEST(TesseraRun, RunsWithNpyInputsAndPrints) {
  std::string dir = scratchDir();
  writeFakeInputs(dir, /*npy=*/true);
  RunResult result =
      runTool(quote(TSR_TEST_FAKE_ARTIFACT) + " --inputs-dir=" + quote(dir) +
              " --outputs-dir=" + quote(dir + "/out") + " --print");
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.out,
            "output 0 'y': float32[2, 3] = [3, -6, 10.5, 0, 12, -1.5]\n"
            "output 1 'positive': bool[2, 3] = [true, false, true, false, "
            "true, false]\n"
            "output 2 'total': float64[] = [6]\n");
  expectFakeOutputs(dir + "/out");
}

TEST(TesseraRun, PrintsWithoutOutputsDir) {
  std::string dir = scratchDir();
  writeFakeInputs(dir);
  RunResult result = runTool(quote(TSR_TEST_FAKE_ARTIFACT) + " --print " +
                             "--inputs-dir " + quote(dir));
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.out.find("output 2 'total': float64[] = [6]"),
            std::string::npos);
}

TEST(TesseraRun, ReadsTypedFieldPbInputs) {
  std::string dir = scratchDir();
  onnx::TensorProto x;
  x.set_name("x");
  x.set_data_type(onnx::TensorProto::FLOAT);
  x.add_dims(2);
  x.add_dims(3);
  for (float v : kX)
    x.add_float_data(v);
  onnx::TensorProto k;
  k.set_data_type(onnx::TensorProto::INT64);
  k.add_int64_data(3);
  std::string bytes;
  ASSERT_TRUE(x.SerializeToString(&bytes));
  writeBytes(dir + "/input_0.pb", bytes);
  ASSERT_TRUE(k.SerializeToString(&bytes));
  writeBytes(dir + "/input_1.pb", bytes);
  RunResult result = runTool(quote(TSR_TEST_FAKE_ARTIFACT) + " --inputs-dir " +
                             quote(dir) + " --outputs-dir " + quote(dir));
  ASSERT_EQ(result.exitCode, 0) << result.err;
  expectFakeOutputs(dir);
}

TEST(TesseraRun, HandlesZeroElementAndHalfTensors) {
  std::string dir = scratchDir();
  TensorPtr e = makeTensor<float>(TSR_DTYPE_FLOAT32, {0, 3}, {});
  TensorPtr h = makeTensor<uint16_t>(TSR_DTYPE_FLOAT16, {2}, {0x3C00, 0xC100});
  ASSERT_EQ(tsr_tensor_write_pb(e.get(), (dir + "/input_0.pb").c_str()),
            TSR_OK);
  ASSERT_EQ(tsr_tensor_write_npy(h.get(), (dir + "/input_1.npy").c_str()),
            TSR_OK);
  RunResult result =
      runTool(quote(TSR_TEST_EMPTY_ARTIFACT) + " --inputs-dir " + quote(dir) +
              " --outputs-dir " + quote(dir) + " --print");
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.out, "output 0 'aligned': int64[] = [5]\n"
                        "output 1 'h_copy': float16[2] = [1, -2.5]\n"
                        "output 2 'none': int32[0] = []\n");
  tsr_tensor_t *raw = nullptr;
  ASSERT_EQ(tsr_tensor_read_pb((dir + "/output_2.pb").c_str(), &raw), TSR_OK);
  TensorPtr none(raw);
  EXPECT_EQ(shapeOf(none.get()), (std::vector<int64_t>{0}));
}

TEST(TesseraRun, Help) {
  RunResult result = runTool("--help");
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(result.out.rfind("usage: tessera-run ART", 0), 0u);
  EXPECT_EQ(result.err, "");
}

TEST(TesseraRun, RepeatTimesInvocations) {
  std::string dir = scratchDir();
  writeFakeInputs(dir);
  RunResult result = runTool(quote(TSR_TEST_FAKE_ARTIFACT) +
                             " --repeat 3 --inputs-dir " + quote(dir));
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.out.rfind("time per invocation: mean ", 0), 0u)
      << result.out;
  EXPECT_NE(result.out.find(" over 3 runs"), std::string::npos) << result.out;
}

TEST(TesseraRun, CommandLineErrors) {
  std::string art = quote(TSR_TEST_FAKE_ARTIFACT);
  expectError(runTool(""), {"missing artifact directory"});
  expectError(
      runTool(art + " --inputs-dir /tmp"),
      {"missing --outputs-dir (or --print, --repeat or --profile) to run an "
       "inference artifact; a training artifact needs --train --data "
       "FILE --steps N"});
  expectError(runTool(art + " --outputs-dir /tmp/x"), {"missing --inputs-dir"});
  expectError(runTool(art + " --frobnicate"),
              {"unknown option '--frobnicate'"});
  expectError(runTool(art + " --print --inputs-dir"),
              {"--inputs-dir needs a value"});
  expectError(runTool(art + " --print --inputs-dir=a --inputs-dir=b"),
              {"--inputs-dir given more than once"});
  expectError(runTool(art + " other --print"), {"unexpected argument 'other'"});
  expectError(runTool(art + " --repeat 0"),
              {"--repeat needs an integer in [1, 1000000], got '0'"});
  expectError(runTool(art + " --repeat=x2"),
              {"--repeat needs an integer in [1, 1000000], got 'x2'"});
  expectError(runTool(art + " --print --comm=gloo"),
              {"--comm must be mpi or nccl, got 'gloo'"});
  expectError(runTool(art + " --print --comm mpi --comm=nccl"),
              {"--comm given more than once"});
  expectError(runTool(art + " --print --comm="),
              {"--comm needs a non-empty value"});
  expectError(
      runTool(art + " --train --data d --steps 1 --host-bandwidth=fast"),
      {"--host-bandwidth needs a positive rate in bytes/s, optionally "
       "with a unit (KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s; e.g. "
       "25GB/s), got 'fast'"});
  expectError(runTool(art + " --train --data d --steps 1 --device-memory 0"),
              {"--device-memory needs a positive number of bytes, optionally "
               "with a unit (KiB, MiB, GiB, KB, MB, GB; e.g. 6GiB), got '0'"});
  // Below a byte: not rounded down to 0, which would mean unlimited.
  expectError(
      runTool(art + " --train --data d --steps 1 --device-memory=0.5"),
      {"--device-memory needs a positive number of bytes, optionally with a "
       "unit (KiB, MiB, GiB, KB, MB, GB; e.g. 6GiB), got '0.5'"});
  expectError(runTool(art + " --print --device-memory=1GiB"),
              {"--device-memory"});
  // NCCL moves device memory; this cpu artifact's buffers are host memory.
  expectError(runTool(art + " --print --comm=nccl"),
              {"--comm=nccl: the buffers of " TSR_TEST_FAKE_ARTIFACT
               " (target cpu) live in host memory, and NCCL moves device "
               "memory (use --comm=mpi)"});
}

TEST(TesseraRun, InputErrors) {
  std::string dir = scratchDir();
  std::string run = quote(TSR_TEST_FAKE_ARTIFACT) + " --inputs-dir " +
                    quote(dir) + " --outputs-dir " + quote(dir + "/out");
  std::string input0 = dir + "/input_0.pb";

  expectError(runTool(run), {"input 0 'x': neither " + input0 + " nor " + dir +
                             "/input_0.npy exists"});

  writeFakeInputs(dir);
  fs::remove(dir + "/input_1.pb");
  expectError(runTool(run), {"input 1 'k'", "input_1.pb"});

  writeFakeInputs(dir);
  TensorPtr wrongShape = makeTensor<float>(TSR_DTYPE_FLOAT32, {3, 2}, kX);
  tsr_tensor_write_pb(wrongShape.get(), input0.c_str());
  expectError(runTool(run),
              {input0, "input 0 'x': expected shape [2, 3], got [3, 2]"});

  TensorPtr wrongType =
      makeTensor<double>(TSR_DTYPE_FLOAT64, {2, 3}, {1, 2, 3, 4, 5, 6});
  tsr_tensor_write_pb(wrongType.get(), input0.c_str());
  expectError(runTool(run),
              {input0, "input 0 'x': expected dtype float32, got float64"});

  writeFakeInputs(dir);
  std::string valid = readBytes(input0);
  writeBytes(input0, valid.substr(0, valid.size() - 5));
  expectError(runTool(run), {"input 0 'x'", input0});

  std::mt19937 rng(7);
  for (int i = 0; i < 5; ++i) {
    std::string random(64 + i * 13, '\0');
    for (char &c : random)
      c = static_cast<char>(rng());
    writeBytes(input0, random);
    expectError(runTool(run), {"input 0 'x'", input0});
  }

  fs::remove(input0);
  std::string npy = dir + "/input_0.npy";
  writeBytes(npy, std::string("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'", 25));
  expectError(runTool(run), {npy, "truncated .npy header"});
  writeBytes(npy, "random bytes, not numpy");
  expectError(runTool(run), {npy, "bad magic"});
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

TEST(TesseraRun, ArtifactErrors) {
  std::string dir = scratchDir();
  writeFakeInputs(dir);
  std::string io =
      " --inputs-dir " + quote(dir) + " --outputs-dir " + quote(dir + "/out");

  expectError(runTool(quote(dir + "/none") + io),
              {"artifact directory '" + dir + "/none' does not exist"});
  // An ONNX model given for the artifact: how to compile one.
  writeBytes(dir + "/model.onnx", "not read");
  expectError(runTool(quote(dir + "/model.onnx") + io),
              {"'" + dir +
               "/model.onnx' is an ONNX model, not an artifact directory: "
               "compile it first (tessera-compile " +
               dir +
               "/model.onnx -o ART, with --mode=train and a loss to "
               "train it) and pass ART"});

  std::string art = artifactWithManifest(dir, "{}");
  fs::remove(art + "/manifest.json");
  expectError(runTool(quote(art) + io),
              {art + "/manifest.json: cannot open: No such file or directory"});

  writeBytes(art + "/manifest.json", "{\"format\": \"tessera-artifact\"");
  expectError(runTool(quote(art) + io), {art + "/manifest.json: 1:30:"});

  std::string manifest =
      readBytes(std::string(TSR_TEST_FAKE_ARTIFACT) + "/manifest.json");
  writeBytes(art + "/manifest.json", manifest);
  fs::remove(art + "/model.so");
  writeBytes(art + "/model.so", "not an ELF file");
  expectError(runTool(quote(art) + io),
              {art + "/model.so: cannot load library"});

  artifactWithManifest(dir, replaced(manifest, "\"infer\"", "\"serve\""));
  expectError(runTool(quote(art) + io),
              {"mode \"serve\" is not supported (tessera-run runs \"infer\" "
               "and \"train\" artifacts)"});

  writeBytes(dir + "/file", "");
  expectError(runTool(quote(TSR_TEST_FAKE_ARTIFACT) + " --inputs-dir " +
                      quote(dir) + " --outputs-dir " + quote(dir + "/file")),
              {dir + "/file: exists and is not a directory"});
}
