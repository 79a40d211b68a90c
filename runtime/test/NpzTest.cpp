//===- NpzTest.cpp - The .npz (ZIP) reader --------------------------------===//

#include "Fixtures.h"

#include <random>

using namespace tsr::test;

namespace {

struct NpzDeleter {
  void operator()(tsr_npz_t *npz) const { tsr_npz_destroy(npz); }
};
using NpzPtr = std::unique_ptr<tsr_npz_t, NpzDeleter>;

const std::vector<float> kX = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
const std::vector<int64_t> kY = {7, -8, 9};

std::vector<std::pair<std::string, std::string>> members() {
  return {{"x.npy", npyBytes("<f4", {3, 2}, kX)},
          {"y.npy", npyBytes("<i8", {3}, kY)}};
}

NpzPtr readNpz(const std::string &path) {
  tsr_npz_t *npz = nullptr;
  EXPECT_EQ(tsr_npz_read(path.c_str(), &npz), TSR_OK) << tsr_last_error();
  return NpzPtr(npz);
}

/// Expects reading `bytes` to fail with a one-line message naming the file
/// and containing `needle`.
void expectNpzError(const std::string &path, const std::string &bytes,
                    const std::string &needle) {
  writeBytes(path, bytes);
  tsr_npz_t *npz = nullptr;
  EXPECT_NE(tsr_npz_read(path.c_str(), &npz), TSR_OK) << needle;
  EXPECT_EQ(npz, nullptr);
  std::string message = tsr_last_error();
  EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

/// Overwrites `count` little-endian bytes at `at`.
std::string patched(std::string bytes, size_t at, uint64_t value, int count) {
  std::string field;
  appendLe(field, value, count);
  return bytes.replace(at, count, field);
}

size_t endRecord(const std::string &bytes) { return bytes.rfind("PK\x05\x06"); }
size_t centralHeader(const std::string &bytes) {
  return bytes.find("PK\x01\x02");
}

void readMustNotCrash(const std::string &path, const std::string &bytes) {
  writeBytes(path, bytes);
  tsr_npz_t *npz = nullptr;
  if (tsr_npz_read(path.c_str(), &npz) == TSR_OK) {
    for (size_t i = 0; i < tsr_npz_num_arrays(npz); ++i) {
      tsr_tensor_t *array = tsr_npz_array(npz, i);
      EXPECT_EQ(tsr_tensor_byte_size(array),
                tsr_tensor_num_elements(array) *
                    tsr_dtype_size(tsr_tensor_dtype(array)));
    }
    tsr_npz_destroy(npz);
  } else {
    EXPECT_NE(std::string(tsr_last_error()), "");
  }
}

} // namespace

TEST(Npz, ReadsStoredAndDeflatedArchives) {
  std::string dir = scratchDir();
  for (bool deflated : {false, true}) {
    std::string path = dir + "/data.npz";
    writeBytes(path, zipBytes(members(), deflated, "a comment"));
    NpzPtr npz = readNpz(path);
    ASSERT_TRUE(npz);
    ASSERT_EQ(tsr_npz_num_arrays(npz.get()), 2u);
    tsr_tensor_t *x = tsr_npz_array(npz.get(), 0);
    tsr_tensor_t *y = tsr_npz_array(npz.get(), 1);
    EXPECT_EQ(tsr_npz_array(npz.get(), 2), nullptr);
    EXPECT_STREQ(tsr_tensor_name(x), "x");
    EXPECT_EQ(shapeOf(x), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(elements<float>(x), kX);
    EXPECT_STREQ(tsr_tensor_name(y), "y");
    EXPECT_EQ(elements<int64_t>(y), kY);
  }
}

TEST(Npz, ReadsEmptyArchivesAndArrays) {
  std::string dir = scratchDir();
  std::string path = dir + "/empty.npz";
  writeBytes(path, zipBytes({}, false));
  EXPECT_EQ(tsr_npz_num_arrays(readNpz(path).get()), 0u);
  writeBytes(path,
             zipBytes({{"e.npy", npyBytes<float>("<f4", {0, 4}, {})}}, true));
  NpzPtr npz = readNpz(path);
  EXPECT_EQ(shapeOf(tsr_npz_array(npz.get(), 0)), (std::vector<int64_t>{0, 4}));
}

TEST(Npz, RejectsBadArchives) {
  std::string dir = scratchDir();
  std::string path = dir + "/bad.npz";
  std::string valid = zipBytes(members(), false);
  std::string compressed = zipBytes(members(), true);
  size_t end = endRecord(valid);
  size_t central = centralHeader(valid);

  expectNpzError(path, "", "not an .npz file");
  expectNpzError(path, "plain text, not a ZIP archive at all",
                 "not an .npz file (no ZIP end of central directory record)");
  expectNpzError(path, valid.substr(0, valid.size() - 1),
                 "truncated ZIP archive");
  expectNpzError(path, valid.substr(0, central),
                 "truncated ZIP archive (no end of central directory record)");
  expectNpzError(path, patched(valid, end + 10, 0xFFFF, 2),
                 "ZIP64 archives are not supported");
  expectNpzError(path, patched(valid, end + 16, 0xFFFFFFFF, 4),
                 "ZIP64 archives are not supported");
  expectNpzError(path, patched(valid, central + 20, 0xFFFFFFFF, 4),
                 "member 'x.npy': ZIP64 archives are not supported");
  expectNpzError(path, patched(valid, end + 4, 1, 2),
                 "multi-disk ZIP archives are not supported");
  expectNpzError(path, patched(valid, end + 16, end - 3, 4),
                 "the central directory lies outside the file");
  expectNpzError(path, patched(patched(valid, end + 8, 3, 2), end + 10, 3, 2),
                 "corrupt ZIP central directory");
  expectNpzError(path, patched(valid, central + 10, 12, 2),
                 "member 'x.npy': compression method 12 is not supported "
                 "(only stored and deflate)");
  expectNpzError(path, patched(valid, central + 8, 1, 2),
                 "member 'x.npy': encrypted members are not supported");
  expectNpzError(path, patched(valid, central + 42, 7, 4),
                 "member 'x.npy': corrupt local header");
  expectNpzError(path, patched(valid, central + 20, 5000, 4),
                 "member 'x.npy': data runs past the central directory");
  expectNpzError(path, patched(valid, central + 24, 5, 4),
                 "member 'x.npy': impossible sizes");
  expectNpzError(path, patched(valid, central + 16, 0x12345678, 4),
                 "member 'x.npy': CRC-32 mismatch");
  std::string flipped = valid;
  flipped[flipped.find("NUMPY") + 80] ^= 0x10;
  expectNpzError(path, flipped, "member 'x.npy': CRC-32 mismatch");

  size_t dataAt = compressed.find("x.npy") + 5 + 20;
  std::string brokenDeflate = compressed;
  for (size_t i = 0; i < 8; ++i)
    brokenDeflate[dataAt + i] = '\xff';
  expectNpzError(path, brokenDeflate, "member 'x.npy': corrupt deflate data");
  size_t compressedCentral = centralHeader(compressed);
  expectNpzError(path, patched(compressed, compressedCentral + 24, 10, 4),
                 "member 'x.npy': corrupt deflate data");

  expectNpzError(path, zipBytes({{"x.txt", "hello"}}, false),
                 "member 'x.txt' is not a NAME.npy array");
  expectNpzError(path, zipBytes({{".npy", "hello"}}, false),
                 "member '.npy' is not a NAME.npy array");
  expectNpzError(path, zipBytes({members()[0], members()[0]}, false),
                 "two members are named 'x.npy'");
  expectNpzError(path, zipBytes({{"x.npy", "not numpy"}}, true),
                 "member 'x.npy': not a .npy file (bad magic)");

  tsr_npz_t *npz = nullptr;
  EXPECT_EQ(tsr_npz_read((dir + "/missing.npz").c_str(), &npz), TSR_ERROR_IO);
  EXPECT_NE(std::string(tsr_last_error()).find("missing.npz: cannot open"),
            std::string::npos);
}

TEST(Npz, FuzzedArchivesNeverCrash) {
  std::string dir = scratchDir();
  std::string path = dir + "/fuzz.npz";
  std::mt19937 rng(4321);
  for (bool deflated : {false, true}) {
    std::string valid = zipBytes(members(), deflated);
    for (size_t n = 0; n < valid.size(); ++n)
      readMustNotCrash(path, valid.substr(0, n));
    for (int i = 0; i < 400; ++i) {
      std::string mutated = valid;
      for (int flips = 1 + rng() % 4; flips > 0; --flips)
        mutated[rng() % mutated.size()] ^= static_cast<char>(1 << (rng() % 8));
      readMustNotCrash(path, mutated);
    }
    for (int i = 0; i < 300; ++i) {
      std::string random(rng() % 512, '\0');
      for (char &c : random)
        c = static_cast<char>(rng());
      if (i % 3 == 0)
        random += valid.substr(endRecord(valid));
      else if (i % 3 == 1)
        random = valid.substr(0, rng() % valid.size()) + random;
      readMustNotCrash(path, random);
    }
  }
}
