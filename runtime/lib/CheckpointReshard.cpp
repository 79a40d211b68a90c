//===- CheckpointReshard.cpp - Reading tensors under a new layout ---------===//
//
// A rank of a run on any number of ranks reads its slice of a saved tensor
// from whichever shard files hold it (docs/checkpoints.md, Resuming).
//
//===----------------------------------------------------------------------===//

#include "CheckpointFormat.h"
#include "RuntimeInternal.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>

using namespace tsr;
using namespace tsr::ckpt;

namespace {

/// Copies elements [begin, end) of the tensor's flat index space from the
/// pieces holding them.
tsr_status_t copyRange(const SavedTensor &tensor, int64_t begin, int64_t end,
                       char *out) {
  size_t elementSize = tsr_dtype_size(tensor.dtype);
  int64_t span = tensor.shards == 1 ? tensor.numElements : tensor.localElements;
  while (begin < end) {
    int64_t k = tensor.shards == 1 ? 0 : begin / span;
    int64_t pieceEnd = std::min(end, (k + 1) * span);
    const Piece &piece = tensor.pieces[static_cast<size_t>(k)];
    size_t bytes = static_cast<size_t>(pieceEnd - begin) * elementSize;
    uint64_t offset =
        piece.offset + static_cast<uint64_t>(begin - k * span) * elementSize;
    Fd file(::open(piece.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd < 0)
      return ioError(piece.path, "cannot open");
    if (tsr_status_t s = readAt(file.fd, out, bytes, offset, piece.path))
      return s;
    out += bytes;
    begin = pieceEnd;
  }
  return TSR_OK;
}

tsr_status_t readTensor(const tsr_checkpoint &checkpoint, const char *name,
                        tsr_dtype_t dtype, size_t rank, const int64_t *shape,
                        int64_t shards, int64_t myRank, void *outBuffer,
                        size_t outBytes) {
  if (!name)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null tensor name");
  std::string at = "tensor " + singleQuoted(name);
  const SavedTensor *tensor = nullptr;
  for (const SavedTensor &candidate : checkpoint.tensors)
    if (candidate.name == name)
      tensor = &candidate;
  if (!tensor)
    return fail(TSR_ERROR_MISMATCH, checkpoint.dir + ": has no " + at);
  if (rank && !shape)
    return fail(TSR_ERROR_INVALID_ARGUMENT, at + ": null shape");
  std::vector<int64_t> expected(shape, shape + rank);
  if (tensor->dtype != dtype || tensor->shape != expected)
    return fail(TSR_ERROR_MISMATCH, checkpoint.dir + ": " + at + " is " +
                                        tsr_dtype_name(tensor->dtype) +
                                        formatShape(tensor->shape) +
                                        ", expected " + tsr_dtype_name(dtype) +
                                        formatShape(expected));
  if (shards < 1 || (shards > 1 && (myRank < 0 || myRank >= shards)))
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                at + ": rank " + std::to_string(myRank) + " of " +
                    std::to_string(shards) + " shards");
  int64_t local = localElementsOf(tensor->numElements, shards);
  size_t elementSize = tsr_dtype_size(dtype);
  if (outBytes != static_cast<size_t>(local) * elementSize)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                at + ": the buffer has " + std::to_string(outBytes) +
                    " bytes, the local tensor " +
                    std::to_string(static_cast<size_t>(local) * elementSize));
  if (outBytes && !outBuffer)
    return fail(TSR_ERROR_INVALID_ARGUMENT, at + ": null buffer");
  int64_t begin =
      shards == 1 ? 0 : std::min(myRank * local, tensor->numElements);
  int64_t end = std::min(begin + local, tensor->numElements);
  char *out = static_cast<char *>(outBuffer);
  size_t valid = static_cast<size_t>(end - begin) * elementSize;
  if (outBytes > valid)
    std::memset(out + valid, 0, outBytes - valid);
  return copyRange(*tensor, begin, end, out);
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

int64_t tsr_checkpoint_local_elements(int64_t num_elements, int64_t shards) {
  if (num_elements < 0 || shards < 1)
    return -1;
  return localElementsOf(num_elements, shards);
}

tsr_status_t tsr_checkpoint_read_tensor(const tsr_checkpoint_t *checkpoint,
                                        const char *name, tsr_dtype_t dtype,
                                        size_t rank, const int64_t *shape,
                                        int64_t shards, int64_t my_rank,
                                        void *out_buffer, size_t out_bytes) {
  return guard([&] {
    if (!checkpoint)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null checkpoint");
    return readTensor(*checkpoint, name, dtype, rank, shape, shards, my_rank,
                      out_buffer, out_bytes);
  });
}
