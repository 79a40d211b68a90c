//===- Tensor.cpp - Status, dtypes, tensors and file helpers --------------===//

#include "RuntimeInternal.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tsr;

namespace {

thread_local std::string lastError;

struct DTypeEntry {
  tsr_dtype_t dtype;
  const char *name;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {TSR_DTYPE_FLOAT16, "float16", 2}, {TSR_DTYPE_BFLOAT16, "bfloat16", 2},
    {TSR_DTYPE_FLOAT32, "float32", 4}, {TSR_DTYPE_FLOAT64, "float64", 8},
    {TSR_DTYPE_INT8, "int8", 1},       {TSR_DTYPE_INT16, "int16", 2},
    {TSR_DTYPE_INT32, "int32", 4},     {TSR_DTYPE_INT64, "int64", 8},
    {TSR_DTYPE_UINT8, "uint8", 1},     {TSR_DTYPE_UINT16, "uint16", 2},
    {TSR_DTYPE_UINT32, "uint32", 4},   {TSR_DTYPE_UINT64, "uint64", 8},
    {TSR_DTYPE_BOOL, "bool", 1},
};

const DTypeEntry *lookup(tsr_dtype_t dtype) {
  for (const DTypeEntry &entry : kDTypes)
    if (entry.dtype == dtype)
      return &entry;
  return nullptr;
}

constexpr size_t kAlignment = 64;

/// Host tensors of at least this many bytes get pages of their own
/// (mmap): zero without a memset, so a buffer becomes resident only where
/// it is written. A model's optimizer state is not until the first step,
/// and the parameters are written while the ONNX model's copy of them is
/// freed one by one: loading a GPT-2-shaped model no longer holds every
/// input and the parsed model at once.
constexpr size_t kMappedBytes = size_t(1) << 20;

/// The bytes a host tensor of `bytes` allocates: whole alignment units,
/// at least one.
size_t hostBytes(size_t bytes) {
  size_t allocated = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return allocated == 0 ? kAlignment : allocated;
}

} // namespace

tsr_tensor::~tsr_tensor() {
  if (!data || !ownsData)
    return;
  if (inHostPool)
    noteHostPoolBytes(byteSize, false);
  else
    noteTensorFreed(byteSize);
  if (placement != TSR_PLACEMENT_HOST)
    freePlaced(placement, data);
  else if (hostBytes(byteSize) >= kMappedBytes)
    ::munmap(data, hostBytes(byteSize));
  else
    std::free(data);
}

void tsr::moveToHostPool(tsr_tensor &tensor) {
  if (tensor.inHostPool || !tensor.ownsData)
    return;
  noteTensorFreed(tensor.byteSize);
  noteHostPoolBytes(tensor.byteSize, true);
  tensor.inHostPool = true;
}

tsr_status_t tsr::fail(tsr_status_t status, std::string message) {
  lastError = std::move(message);
  return status;
}

tsr_status_t tsr::withContext(tsr_status_t status, const std::string &context) {
  if (status != TSR_OK)
    lastError = context + ": " + lastError;
  return status;
}

std::string tsr::formatShape(const int64_t *shape, size_t rank) {
  std::string text = "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::string tsr::describe(const char *kind, size_t index,
                          const TensorSpec &spec) {
  return std::string(kind) + " " + std::to_string(index) + " '" + spec.name +
         "'";
}

tsr_status_t tsr::computeSizes(tsr_dtype_t dtype, const int64_t *shape,
                               size_t rank, int64_t &outNumElements,
                               size_t &outByteSize) {
  const DTypeEntry *entry = lookup(dtype);
  if (!entry)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "invalid dtype " + std::to_string(static_cast<int>(dtype)));
  if (rank && !shape)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null shape");
  int64_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return fail(TSR_ERROR_PARSE,
                  "negative dimension in shape " + formatShape(shape, rank));
    if (__builtin_mul_overflow(count, shape[i], &count))
      return fail(TSR_ERROR_PARSE,
                  "shape " + formatShape(shape, rank) + " is too large");
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count),
                             static_cast<uint64_t>(entry->size), &bytes) ||
      bytes > (uint64_t(1) << 62))
    return fail(TSR_ERROR_PARSE,
                "shape " + formatShape(shape, rank) + " is too large");
  outNumElements = count;
  outByteSize = static_cast<size_t>(bytes);
  return TSR_OK;
}

tsr_status_t tsr::createTensor(tsr_dtype_t dtype,
                               const std::vector<int64_t> &shape,
                               tsr_tensor_t **outTensor,
                               tsr_placement_t placement) {
  int64_t count = 0;
  size_t bytes = 0;
  if (tsr_status_t s =
          computeSizes(dtype, shape.data(), shape.size(), count, bytes))
    return s;
  size_t allocated = hostBytes(bytes);
  auto tensor = std::make_unique<tsr_tensor>();
  tensor->shape = shape;
  tensor->placement = placement;
  std::string what = std::to_string(bytes) + " bytes for a " +
                     tsr_dtype_name(dtype) + formatShape(shape) + " tensor";
  if (placement != TSR_PLACEMENT_HOST) {
    // CUDA's allocations are aligned to at least 256 bytes.
    if (tsr_status_t s = allocatePlaced(placement, allocated, &tensor->data))
      return withContext(s, std::string("cannot allocate ") +
                                tsr_placement_name(placement) +
                                " memory: " + what);
  } else if (allocated >= kMappedBytes) {
    void *pages = ::mmap(nullptr, allocated, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED)
      return fail(TSR_ERROR_OUT_OF_MEMORY,
                  "cannot allocate " + what + ": " + std::strerror(errno));
    tensor->data = pages;
  } else {
    tensor->data = std::aligned_alloc(kAlignment, allocated);
    if (!tensor->data)
      return fail(TSR_ERROR_OUT_OF_MEMORY, "cannot allocate " + what);
    std::memset(tensor->data, 0, allocated);
  }
  tensor->dtype = dtype;
  tensor->numElements = count;
  tensor->byteSize = bytes;
  noteTensorAllocated(bytes);
  *outTensor = tensor.release();
  return TSR_OK;
}

bool tsr::satisfiesPlacement(tsr_placement_t actual, tsr_placement_t required) {
  return actual == required || (required == TSR_PLACEMENT_HOST &&
                                actual == TSR_PLACEMENT_PINNED_HOST);
}

tsr_status_t tsr::requireHostReadable(const tsr_tensor &tensor,
                                      const std::string &what) {
  if (tensor.placement != TSR_PLACEMENT_DEVICE)
    return TSR_OK;
  return fail(TSR_ERROR_MISMATCH,
              what + ": the tensor lives in device memory; copy it into a "
                     "host tensor first (tsr_tensor_copy)");
}

tsr_status_t tsr::openRegularFile(const std::string &path, int &fd) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return fail(TSR_ERROR_IO, path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return fail(TSR_ERROR_IO, path + ": not a regular file");
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(TSR_ERROR_IO, path + ": cannot open: " + std::strerror(errno));
  return TSR_OK;
}

tsr_status_t tsr::readFile(const std::string &path, std::string &outBytes) {
  int fd = -1;
  if (tsr_status_t s = openRegularFile(path, fd))
    return s;
  std::FILE *file = ::fdopen(fd, "rb");
  if (!file) {
    ::close(fd);
    return fail(TSR_ERROR_IO, path + ": cannot open: " + std::strerror(errno));
  }
  std::string bytes;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    bytes.append(buffer, n);
  bool failed = std::ferror(file);
  std::fclose(file);
  if (failed)
    return fail(TSR_ERROR_IO, path + ": read error");
  outBytes = std::move(bytes);
  return TSR_OK;
}

tsr_status_t tsr::writeFile(const std::string &path, const std::string &bytes) {
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return fail(TSR_ERROR_IO,
                path + ": cannot create: " + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok)
    return fail(TSR_ERROR_IO, path + ": write error");
  return TSR_OK;
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

const char *tsr_last_error(void) { return lastError.c_str(); }

const char *tsr_status_name(tsr_status_t status) {
  switch (status) {
  case TSR_OK:
    return "TSR_OK";
  case TSR_ERROR_INVALID_ARGUMENT:
    return "TSR_ERROR_INVALID_ARGUMENT";
  case TSR_ERROR_IO:
    return "TSR_ERROR_IO";
  case TSR_ERROR_PARSE:
    return "TSR_ERROR_PARSE";
  case TSR_ERROR_MISMATCH:
    return "TSR_ERROR_MISMATCH";
  case TSR_ERROR_UNSUPPORTED:
    return "TSR_ERROR_UNSUPPORTED";
  case TSR_ERROR_LOAD:
    return "TSR_ERROR_LOAD";
  case TSR_ERROR_OUT_OF_MEMORY:
    return "TSR_ERROR_OUT_OF_MEMORY";
  case TSR_ERROR_NOT_FINITE:
    return "TSR_ERROR_NOT_FINITE";
  }
  return "TSR_ERROR_UNKNOWN";
}

const char *tsr_dtype_name(tsr_dtype_t dtype) {
  const DTypeEntry *entry = lookup(dtype);
  return entry ? entry->name : "invalid";
}

tsr_status_t tsr_dtype_from_name(const char *name, tsr_dtype_t *out_dtype) {
  if (!name || !out_dtype)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  for (const DTypeEntry &entry : kDTypes) {
    if (std::strcmp(entry.name, name) == 0) {
      *out_dtype = entry.dtype;
      return TSR_OK;
    }
  }
  return fail(TSR_ERROR_PARSE, std::string("unknown dtype '") + name + "'");
}

size_t tsr_dtype_size(tsr_dtype_t dtype) {
  const DTypeEntry *entry = lookup(dtype);
  return entry ? entry->size : 0;
}

tsr_status_t tsr_tensor_create(tsr_dtype_t dtype, size_t rank,
                               const int64_t *shape,
                               tsr_tensor_t **out_tensor) {
  return guard([&] {
    if (!out_tensor || (rank && !shape))
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    std::vector<int64_t> dims(shape, shape + rank);
    return createTensor(dtype, dims, out_tensor);
  });
}

void tsr_tensor_destroy(tsr_tensor_t *tensor) { delete tensor; }

tsr_dtype_t tsr_tensor_dtype(const tsr_tensor_t *tensor) {
  return tensor->dtype;
}

size_t tsr_tensor_rank(const tsr_tensor_t *tensor) {
  return tensor->shape.size();
}

const int64_t *tsr_tensor_shape(const tsr_tensor_t *tensor) {
  static const int64_t kNoDims[1] = {0};
  return tensor->shape.empty() ? kNoDims : tensor->shape.data();
}

int64_t tsr_tensor_num_elements(const tsr_tensor_t *tensor) {
  return tensor->numElements;
}

size_t tsr_tensor_byte_size(const tsr_tensor_t *tensor) {
  return tensor->byteSize;
}

void *tsr_tensor_data(tsr_tensor_t *tensor) { return tensor->data; }

tsr_placement_t tsr_tensor_placement(const tsr_tensor_t *tensor) {
  return tensor->placement;
}

const char *tsr_placement_name(tsr_placement_t placement) {
  switch (placement) {
  case TSR_PLACEMENT_HOST:
    return "host";
  case TSR_PLACEMENT_DEVICE:
    return "device";
  case TSR_PLACEMENT_PINNED_HOST:
    return "pinned-host";
  }
  return "invalid";
}

const char *tsr_tensor_name(const tsr_tensor_t *tensor) {
  return tensor->name.c_str();
}

tsr_status_t tsr_tensor_set_name(tsr_tensor_t *tensor, const char *name) {
  return guard([&] {
    if (!tensor || !name)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    tensor->name = name;
    return TSR_OK;
  });
}
