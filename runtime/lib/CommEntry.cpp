//===- CommEntry.cpp - Collectives called from compiled code --------------===//
//
// The launcher binds a communicator to each mesh axis and describes each
// collective of the manifest; compiled code then calls tsrt_* with an axis
// index and a collective id. An unbound axis has size 1: its collectives
// copy. Compiled code cannot take a status, so a failure prints
// "tessera-run: rank R: <description>: <error>" and exits with status 1.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "RuntimeInternal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace tsr;

namespace {

constexpr int64_t kMaxAxes = 64;
constexpr int64_t kMaxCollectives = 1 << 20;

std::vector<tsr_comm_t *> axes;
std::vector<std::string> descriptions;
/// Collectives whose results are reduced gradients (their buffers are
/// counted as such by the allocator).
std::vector<bool> gradientResults;

void noteResult(int64_t id, void *recv) {
  if (id >= 0 && id < static_cast<int64_t>(gradientResults.size()) &&
      gradientResults[id])
    tagGradientBuffer(recv);
}
int64_t currentStep = -1;

tsr_comm_t *axisComm(int64_t axis) {
  return axis >= 0 && axis < static_cast<int64_t>(axes.size()) ? axes[axis]
                                                               : nullptr;
}

std::string describe(int64_t id) {
  std::string text = id >= 0 &&
                             id < static_cast<int64_t>(descriptions.size()) &&
                             !descriptions[id].empty()
                         ? descriptions[id]
                         : "collective #" + std::to_string(id);
  if (currentStep >= 0)
    text += " at step " + std::to_string(currentStep);
  return text;
}

[[noreturn]] void die(const std::string &label) {
  // The errors of a communicator start with the label already.
  const char *error = tsr_last_error();
  if (std::strncmp(error, label.c_str(), label.size()) == 0)
    std::fprintf(stderr, "tessera-run: rank %d: %s\n", processRank(), error);
  else
    std::fprintf(stderr, "tessera-run: rank %d: %s: %s\n", processRank(),
                 label.c_str(), error);
  std::fflush(stderr);
  std::exit(1);
}

/// Checks the arguments as a communicator would, then copies `count`
/// elements: the collective of a one-rank axis.
tsr_status_t copyAlone(const char *what, const void *send, void *recv,
                       int64_t count, int64_t dtype) {
  if (tsr_status_t s = checkDtype(what, dtype))
    return s;
  size_t elementSize = tsr_dtype_size(static_cast<tsr_dtype_t>(dtype));
  if (count < 0)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                std::string(what) + ": negative count");
  if (count > 0 && send != recv)
    std::memmove(recv, send, static_cast<size_t>(count) * elementSize);
  return TSR_OK;
}

} // namespace

tsr_status_t tsr_comm_bind_axis(int64_t axis, tsr_comm_t *comm) {
  if (axis < 0 || axis >= kMaxAxes)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_comm_bind_axis: axis " + std::to_string(axis) +
                    " is not in [0, " + std::to_string(kMaxAxes) + ")");
  if (axis >= static_cast<int64_t>(axes.size()))
    axes.resize(axis + 1, nullptr);
  axes[axis] = comm;
  return TSR_OK;
}

tsr_status_t tsr_comm_describe_collective(int64_t id, const char *description) {
  if (id < 0 || id >= kMaxCollectives)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_comm_describe_collective: id " + std::to_string(id) +
                    " is not in [0, " + std::to_string(kMaxCollectives) + ")");
  return guard([&] {
    if (id >= static_cast<int64_t>(descriptions.size()))
      descriptions.resize(id + 1);
    descriptions[id] = description ? description : "";
    return TSR_OK;
  });
}

void tsr_comm_set_step(int64_t step) { currentStep = step; }

void tsr::markGradientCollective(int64_t id) {
  if (id < 0 || id >= kMaxCollectives)
    return;
  if (id >= static_cast<int64_t>(gradientResults.size()))
    gradientResults.resize(id + 1, false);
  gradientResults[id] = true;
}

int64_t tsrt_axis_rank(int64_t axis) { return tsr_comm_rank(axisComm(axis)); }

int64_t tsrt_axis_size(int64_t axis) { return tsr_comm_size(axisComm(axis)); }

void tsrt_all_reduce(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t count, int64_t dtype, int64_t op) {
  std::string label = describe(id);
  tsr_comm_t *comm = axisComm(axis);
  tsr_status_t status = checkReduction("all_reduce", dtype, op);
  if (status == TSR_OK && !comm) {
    status = copyAlone("all_reduce", send, recv, count, dtype);
  } else if (status == TSR_OK) {
    tsr_comm_set_label(comm, label.c_str());
    status =
        count < 0
            ? fail(TSR_ERROR_INVALID_ARGUMENT, "all_reduce: negative count")
            : tsr_comm_all_reduce(comm, send, recv, count,
                                  static_cast<tsr_dtype_t>(dtype),
                                  static_cast<tsr_reduce_op_t>(op), nullptr);
  }
  if (status != TSR_OK)
    die(label);
  noteResult(id, recv);
}

void tsrt_reduce_scatter(int64_t id, int64_t axis, const void *send, void *recv,
                         int64_t recv_count, int64_t dtype, int64_t op) {
  std::string label = describe(id);
  tsr_comm_t *comm = axisComm(axis);
  tsr_status_t status = checkReduction("reduce_scatter", dtype, op);
  if (status == TSR_OK && !comm) {
    status = copyAlone("reduce_scatter", send, recv, recv_count, dtype);
  } else if (status == TSR_OK) {
    tsr_comm_set_label(comm, label.c_str());
    status =
        recv_count < 0
            ? fail(TSR_ERROR_INVALID_ARGUMENT, "reduce_scatter: negative count")
            : tsr_comm_reduce_scatter(
                  comm, send, recv, recv_count, static_cast<tsr_dtype_t>(dtype),
                  static_cast<tsr_reduce_op_t>(op), nullptr);
  }
  if (status != TSR_OK)
    die(label);
  noteResult(id, recv);
}

void tsrt_all_gather(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t send_count, int64_t dtype) {
  std::string label = describe(id);
  tsr_comm_t *comm = axisComm(axis);
  tsr_status_t status;
  if (!comm) {
    status = copyAlone("all_gather", send, recv, send_count, dtype);
  } else {
    tsr_comm_set_label(comm, label.c_str());
    status =
        send_count < 0
            ? fail(TSR_ERROR_INVALID_ARGUMENT, "negative count")
            : tsr_comm_all_gather(comm, send, recv, send_count,
                                  static_cast<tsr_dtype_t>(dtype), nullptr);
  }
  if (status != TSR_OK)
    die(label);
}

void tsrt_all_to_all(int64_t id, int64_t axis, const void *send, void *recv,
                     int64_t count, int64_t dtype) {
  std::string label = describe(id);
  tsr_comm_t *comm = axisComm(axis);
  tsr_status_t status;
  if (!comm) {
    status = copyAlone("all_to_all", send, recv, count, dtype);
  } else {
    tsr_comm_set_label(comm, label.c_str());
    int64_t size = tsr_comm_size(comm);
    status =
        count < 0 || count % size != 0
            ? fail(TSR_ERROR_INVALID_ARGUMENT,
                   "all_to_all: " + std::to_string(count) +
                       " elements do not split into " + std::to_string(size) +
                       " blocks")
            : tsr_comm_all_to_all(comm, send, recv, count / size,
                                  static_cast<tsr_dtype_t>(dtype), nullptr);
  }
  if (status != TSR_OK)
    die(label);
}

void tsrt_broadcast(int64_t id, int64_t axis, const void *send, void *recv,
                    int64_t count, int64_t dtype, int64_t root) {
  std::string label = describe(id);
  tsr_comm_t *comm = axisComm(axis);
  tsr_status_t status = copyAlone("broadcast", send, recv, count, dtype);
  if (status == TSR_OK && comm) {
    tsr_comm_set_label(comm, label.c_str());
    status = root < 0 || root >= tsr_comm_size(comm)
                 ? fail(TSR_ERROR_INVALID_ARGUMENT,
                        "broadcast: root " + std::to_string(root) +
                            " is not a rank of the axis")
                 : tsr_comm_broadcast(comm, recv, count,
                                      static_cast<tsr_dtype_t>(dtype),
                                      static_cast<int>(root), nullptr);
  }
  if (status != TSR_OK)
    die(label);
}
