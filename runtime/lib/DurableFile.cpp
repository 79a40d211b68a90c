//===- DurableFile.cpp - Crash-safe replacement of whole files ------------===//
//
// Part of the Tessera runtime; see DurableFile.h.
//
//===----------------------------------------------------------------------===//

#include "DurableFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

using namespace tsr;

namespace {

/// Large writes go to the kernel in pieces of at most this size.
constexpr size_t kChunkSize = size_t(4) << 20;

/// Makes the temporary names of one process distinct.
std::atomic<unsigned> temporaryCount{0};

} // namespace

std::string tsr::parentDirectory(const std::string &path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

DurableFile::DurableFile(std::string path) : path(std::move(path)) {}

DurableFile::~DurableFile() {
  if (fd >= 0)
    ::close(fd);
  if (!temporary.empty())
    ::unlink(temporary.c_str());
}

bool DurableFile::fail(const std::string &what) {
  int error = errno;
  message = path + ": " + what + ": " + std::strerror(error);
  return false;
}

bool DurableFile::open() {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    message = path + ": exists and is not a regular file";
    return false;
  }
  // Names left by a crashed process are skipped, not reused.
  for (int attempt = 0;; ++attempt) {
    std::string name = path + ".tmp." + std::to_string(::getpid()) + "." +
                       std::to_string(temporaryCount++);
    fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      temporary = name;
      return true;
    }
    if (errno != EEXIST || attempt == 100)
      return fail("cannot create a temporary file in " + parentDirectory(path));
  }
}

bool DurableFile::write(const void *data, size_t size) {
  const char *bytes = static_cast<const char *>(data);
  while (size) {
    ssize_t n = ::write(fd, bytes, std::min(size, kChunkSize));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail("write error");
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool DurableFile::commit() {
  if (::fsync(fd) != 0)
    return fail("cannot fsync");
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return fail("write error");
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    return fail("cannot rename " + temporary + " over it");
  temporary.clear();
  return syncDirectory(parentDirectory(path), message);
}

bool tsr::writeFileDurably(const std::string &path, const std::string &bytes,
                           std::string &outError) {
  DurableFile file(path);
  if (file.open() && file.write(bytes.data(), bytes.size()) && file.commit())
    return true;
  outError = file.error();
  return false;
}

bool tsr::syncDirectory(const std::string &path, std::string &outError) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    outError = path + ": cannot open directory: " + std::strerror(errno);
    return false;
  }
  bool ok = ::fsync(fd) == 0 || errno == EINVAL || errno == EROFS;
  int error = errno;
  ::close(fd);
  if (!ok)
    outError = path + ": cannot fsync directory: " + std::strerror(error);
  return ok;
}
