//===- DurableFile.h - Crash-safe replacement of whole files ----*- C++ -*-===//
//
// The runtime's one way to write a file that must never be seen half
// written (checkpoint shards and manifests, saved ONNX models): the bytes go
// to a temporary file in the target's directory, which is fsynced, renamed
// over the target, and the directory fsynced. After a crash the target holds
// either its previous content or all of the new one.
//
// Errors are returned as messages naming the path and the errno text, and
// nothing here depends on the rest of the runtime, so that unit tests can
// compile it directly. Nothing here is part of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_DURABLEFILE_H
#define TESSERA_RUNTIME_LIB_DURABLEFILE_H

#include <cstddef>
#include <string>

namespace tsr {

/// Writes one file durably, in pieces. Every method returns false on
/// failure and leaves the message in error(); the temporary file is removed
/// unless commit() succeeded.
class DurableFile {
public:
  explicit DurableFile(std::string path);
  DurableFile(const DurableFile &) = delete;
  DurableFile &operator=(const DurableFile &) = delete;
  ~DurableFile();

  /// Creates the temporary file beside the target, which must not be
  /// something other than a regular file.
  bool open();
  /// Appends `size` bytes.
  bool write(const void *data, size_t size);
  /// Makes the bytes durable and replaces the target with them.
  bool commit();

  const std::string &error() const { return message; }

private:
  /// Records "PATH: what: errno text" and returns false.
  bool fail(const std::string &what);

  std::string path, temporary, message;
  int fd = -1;
};

/// Replaces `path` with `bytes` through a DurableFile; on failure returns
/// false and describes it in `outError`.
bool writeFileDurably(const std::string &path, const std::string &bytes,
                      std::string &outError);

/// The directory holding `path`: "." for a bare file name.
std::string parentDirectory(const std::string &path);

/// Makes the entries of directory `path` (files renamed into it) durable.
/// Filesystems that cannot sync a directory (EINVAL, EROFS) are accepted.
bool syncDirectory(const std::string &path, std::string &outError);

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_DURABLEFILE_H
