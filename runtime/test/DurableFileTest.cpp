//===- DurableFileTest.cpp - Crash-safe replacement of whole files --------===//

#include "DurableFile.h"

#include "Fixtures.h"

#include <sys/stat.h>
#include <unistd.h>

using namespace tsr;
using namespace tsr::test;
namespace fs = std::filesystem;

namespace {

/// The names of the entries of `dir`.
std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void expectError(const std::string &error, const std::string &path,
                 const std::string &reason) {
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  EXPECT_NE(error.find(reason), std::string::npos) << error;
}

} // namespace

TEST(DurableFile, WritesAndReplacesWithoutLeavingTemporaries) {
  std::string dir = scratchDir();
  std::string path = dir + "/file.bin";
  std::string error;
  ASSERT_TRUE(writeFileDurably(path, "first", error)) << error;
  EXPECT_EQ(readBytes(path), "first");
  std::string large(9 << 20, '\0');
  for (size_t i = 0; i < large.size(); ++i)
    large[i] = static_cast<char>(i * 131 + (i >> 13));
  ASSERT_TRUE(writeFileDurably(path, large, error)) << error;
  EXPECT_EQ(readBytes(path), large);
  ASSERT_TRUE(writeFileDurably(path, "", error)) << error;
  EXPECT_EQ(readBytes(path), "");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"file.bin"});

  // A bare file name lands in the working directory.
  std::string cwd = fs::current_path().string();
  fs::current_path(dir);
  bool ok = writeFileDurably("bare.txt", "bare", error);
  fs::current_path(cwd);
  ASSERT_TRUE(ok) << error;
  EXPECT_EQ(readBytes(dir + "/bare.txt"), "bare");
}

TEST(DurableFile, WritesInPiecesAndCommitsOnlyOnRequest) {
  std::string dir = scratchDir();
  std::string path = dir + "/pieces.bin";
  writeBytes(path, "old");
  {
    DurableFile file(path);
    ASSERT_TRUE(file.open()) << file.error();
    ASSERT_TRUE(file.write("new ", 4)) << file.error();
    ASSERT_TRUE(file.write("content", 7)) << file.error();
    EXPECT_EQ(readBytes(path), "old");
    ASSERT_TRUE(file.commit()) << file.error();
  }
  EXPECT_EQ(readBytes(path), "new content");
  {
    DurableFile abandoned(path);
    ASSERT_TRUE(abandoned.open()) << abandoned.error();
    ASSERT_TRUE(abandoned.write("lost", 4)) << abandoned.error();
  }
  EXPECT_EQ(readBytes(path), "new content");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"pieces.bin"});
}

TEST(DurableFile, NamesThePathAndTheReason) {
  std::string dir = scratchDir();
  std::string error;
  std::string missing = dir + "/missing/file.bin";
  EXPECT_FALSE(writeFileDurably(missing, "x", error));
  expectError(error, missing,
              "cannot create a temporary file in " + dir +
                  "/missing: No such file or directory");

  writeBytes(dir + "/plain", "");
  std::string underFile = dir + "/plain/file.bin";
  EXPECT_FALSE(writeFileDurably(underFile, "x", error));
  expectError(error, underFile, "Not a directory");

  fs::create_directory(dir + "/sub");
  EXPECT_FALSE(writeFileDurably(dir + "/sub", "x", error));
  expectError(error, dir + "/sub", "exists and is not a regular file");
  EXPECT_FALSE(writeFileDurably("/dev/null", "x", error));
  expectError(error, "/dev/null", "exists and is not a regular file");

  // Permission bits do not stop root.
  std::string locked = dir + "/locked";
  fs::create_directory(locked);
  ::chmod(locked.c_str(), 0555);
  if (::geteuid() != 0) {
    EXPECT_FALSE(writeFileDurably(locked + "/file.bin", "x", error));
    expectError(error, locked + "/file.bin", "Permission denied");
  }
  ::chmod(locked.c_str(), 0755);
  EXPECT_EQ(entries(locked), std::vector<std::string>{});

  EXPECT_FALSE(syncDirectory(dir + "/missing", error));
  expectError(error, dir + "/missing",
              "cannot open directory: No such file or directory");
}
