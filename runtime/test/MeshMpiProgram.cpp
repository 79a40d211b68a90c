//===- MeshMpiProgram.cpp - Device meshes on N ranks under mpirun ---------===//
//
// `mesh-mpi-program meshes` (on 4 ranks) creates the meshes dp=2,tp=2,
// a=2,b=1,c=2 and x=4 over the world and checks, for every group mask, the
// group's members and their order: an all-gather of world ranks over the
// group's communicator (and through tsrt_all_gather, as compiled code calls
// it) must equal the list computed here from the row-major layout by
// enumerating the world; masks without a communicator must still report
// the right size and position (tsrt_axis_size/rank). It also checks the
// size-mismatch error and the argument errors; rank 0 prints "meshes ok".
// `mesh-mpi-program unbound` runs a collective over a group the mesh made
// no communicator for, which must end the job with a message naming it.
//
//===----------------------------------------------------------------------===//

#include "tessera-runtime/Comm.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int worldRank = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", worldRank,    \
                   __FILE__, __LINE__, #cond);                                 \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    tsr_status_t status_ = (call);                                             \
    if (status_ != TSR_OK) {                                                   \
      std::fprintf(stderr, "rank %d: %s:%d: %s: %s\n", worldRank, __FILE__,    \
                   __LINE__, #call, tsr_last_error());                         \
      std::exit(2);                                                            \
    }                                                                          \
  } while (0)

/// The coordinates of world rank `rank`: row-major, the last axis
/// innermost.
std::vector<int64_t> coordinatesOf(int64_t rank,
                                   const std::vector<tsr_mesh_axis_t> &axes) {
  std::vector<int64_t> coordinates(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    coordinates[i] = rank % axes[i].size;
    rank /= axes[i].size;
  }
  return coordinates;
}

/// The world ranks of the group `mask` that `rank` belongs to, in group
/// order: every rank that agrees with it on the other axes, sorted by the
/// row-major index of its coordinates on the group's axes.
std::vector<int64_t> expectedGroup(int64_t rank, int64_t mask,
                                   const std::vector<tsr_mesh_axis_t> &axes,
                                   int64_t worldSize) {
  std::vector<int64_t> mine = coordinatesOf(rank, axes);
  std::vector<std::pair<int64_t, int64_t>> members;
  for (int64_t q = 0; q < worldSize; ++q) {
    std::vector<int64_t> theirs = coordinatesOf(q, axes);
    bool same = true;
    int64_t position = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (mask >> i & 1)
        position = position * axes[i].size + theirs[i];
      else
        same = same && theirs[i] == mine[i];
    }
    if (same)
      members.emplace_back(position, q);
  }
  std::vector<int64_t> ordered(members.size(), -1);
  for (auto &[position, q] : members) {
    CHECK(position < static_cast<int64_t>(ordered.size()));
    ordered[position] = q;
  }
  return ordered;
}

int64_t positionOf(int64_t rank, const std::vector<int64_t> &group) {
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i] == rank)
      return static_cast<int64_t>(i);
  return -1;
}

/// Creates `axes` with the extra `groups` and checks every mask of it.
void checkMesh(tsr_comm_t *world, const std::vector<tsr_mesh_axis_t> &axes,
               const std::vector<int64_t> &groups) {
  int64_t n = tsr_comm_size(world);
  tsr_mesh_t *mesh = nullptr;
  CHECK_OK(tsr_mesh_create(world, axes.data(), axes.size(), groups.data(),
                           groups.size(), &mesh));
  CHECK(tsr_mesh_num_axes(mesh) == axes.size());
  std::vector<int64_t> coordinates = coordinatesOf(worldRank, axes);
  for (size_t i = 0; i < axes.size(); ++i) {
    const char *name = nullptr;
    int64_t size = 0, coordinate = -1;
    CHECK_OK(tsr_mesh_axis(mesh, i, &name, &size, &coordinate));
    CHECK(std::strcmp(name, axes[i].name) == 0);
    CHECK(size == axes[i].size);
    CHECK(coordinate == coordinates[i]);
    CHECK(tsr_mesh_find_axis(mesh, axes[i].name) == static_cast<int64_t>(i));
  }
  CHECK(tsr_mesh_find_axis(mesh, "nowhere") == -1);

  int64_t all = (int64_t(1) << axes.size()) - 1;
  for (int64_t mask = 1; mask <= all; ++mask) {
    std::vector<int64_t> want = expectedGroup(worldRank, mask, axes, n);
    int64_t size = static_cast<int64_t>(want.size());
    CHECK(tsrt_axis_size(mask) == size);
    CHECK(tsrt_axis_rank(mask) == positionOf(worldRank, want));
    bool single = (mask & (mask - 1)) == 0;
    bool asked = mask == all || single;
    for (int64_t g : groups)
      asked = asked || g == mask;
    tsr_comm_t *comm = tsr_mesh_group(mesh, mask);
    CHECK((comm != nullptr) == asked);
    if (!comm)
      continue;
    CHECK(tsr_comm_size(comm) == size);
    CHECK(tsr_comm_rank(comm) == positionOf(worldRank, want));
    int64_t me = worldRank;
    std::vector<int64_t> got(size, -1);
    CHECK_OK(tsr_comm_all_gather(comm, &me, got.data(), 1, TSR_DTYPE_INT64,
                                 nullptr));
    CHECK(got == want);
    std::vector<int64_t> viaEntry(size, -1);
    tsrt_all_gather(mask, mask, &me, viaEntry.data(), 1, TSR_DTYPE_INT64,
                    nullptr);
    CHECK(viaEntry == want);
  }
  CHECK(tsr_mesh_group(mesh, 0) == nullptr);
  CHECK(tsr_mesh_group(mesh, all + 1) == nullptr);
  tsr_mesh_destroy(mesh);
  // Destroying the mesh unbinds its groups.
  for (int64_t mask = 1; mask <= all; ++mask)
    CHECK(tsrt_axis_size(mask) == 1 && tsrt_axis_rank(mask) == 0);
}

/// Expects tsr_mesh_create to fail with `status` and a message holding
/// every one of `needles`.
void checkRefused(tsr_comm_t *world, const std::vector<tsr_mesh_axis_t> &axes,
                  const std::vector<int64_t> &groups, tsr_status_t status,
                  const std::vector<std::string> &needles) {
  tsr_mesh_t *mesh = reinterpret_cast<tsr_mesh_t *>(1);
  CHECK(tsr_mesh_create(world, axes.data(), axes.size(), groups.data(),
                        groups.size(), &mesh) == status);
  CHECK(mesh == nullptr);
  std::string error = tsr_last_error();
  for (const std::string &needle : needles)
    if (error.find(needle) == std::string::npos) {
      std::fprintf(stderr, "rank %d: '%s' does not contain '%s'\n", worldRank,
                   error.c_str(), needle.c_str());
      std::exit(2);
    }
  CHECK(tsrt_axis_size(1) == 1);
}

void checkMeshes(tsr_comm_t *world) {
  CHECK(tsr_comm_size(world) == 4);
  // The layout of TsrAttrs.td's example, spelled out: the tp groups are
  // world ranks {0, 1} and {2, 3}, the dp groups {0, 2} and {1, 3}.
  const std::vector<tsr_mesh_axis_t> dpTp = {{"dp", 2}, {"tp", 2}};
  const std::vector<std::vector<int64_t>> tpGroups = {
      {0, 1}, {0, 1}, {2, 3}, {2, 3}};
  const std::vector<std::vector<int64_t>> dpGroups = {
      {0, 2}, {1, 3}, {0, 2}, {1, 3}};
  CHECK(expectedGroup(worldRank, 2, dpTp, 4) == tpGroups[worldRank]);
  CHECK(expectedGroup(worldRank, 1, dpTp, 4) == dpGroups[worldRank]);
  CHECK(expectedGroup(worldRank, 3, dpTp, 4) ==
        (std::vector<int64_t>{0, 1, 2, 3}));
  checkMesh(world, dpTp, {});
  // Three axes, one of size 1; the group {a, c} (mask 5) on request, the
  // groups {a, b} and {b, c} (masks 3 and 6) without a communicator.
  checkMesh(world, {{"a", 2}, {"b", 1}, {"c", 2}}, {5, 5});
  checkMesh(world, {{"x", 4}}, {1});
  // Any grouping works, also after destroying a mesh.
  checkMesh(world, {{"dp", 1}, {"tp", 4}}, {3});

  checkRefused(world, {{"dp", 2}, {"tp", 3}}, {}, TSR_ERROR_MISMATCH,
               {"the mesh dp=2,tp=3 has 6 ranks (the product of its axis "
                "sizes) but the world communicator has 4"});
  checkRefused(world, {}, {}, TSR_ERROR_MISMATCH,
               {"the mesh (no axes) has 1 rank", "has 4"});
  checkRefused(world, {{"dp", 2}, {"dp", 2}}, {}, TSR_ERROR_INVALID_ARGUMENT,
               {"axis 1: name 'dp' is also axis 0's"});
  checkRefused(world, {{"dp", 0}, {"tp", 4}}, {}, TSR_ERROR_INVALID_ARGUMENT,
               {"axis 0 'dp' has size 0, expected at least 1"});
  checkRefused(world, {{"dp", 2}, {"tp", 2}}, {4}, TSR_ERROR_INVALID_ARGUMENT,
               {"group mask 4 is not a non-empty set of the mesh's 2 axes"});
  checkRefused(
      world,
      {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}, {"f", 1}, {"g", 4}},
      {}, TSR_ERROR_INVALID_ARGUMENT, {"7 axes; a mesh has at most 6"});
}

/// A collective over the group {a, c} of a=2,b=1,c=2, which the mesh was
/// created without.
void runUnbound(tsr_comm_t *world) {
  const tsr_mesh_axis_t axes[] = {{"a", 2}, {"b", 1}, {"c", 2}};
  tsr_mesh_t *mesh = nullptr;
  CHECK_OK(tsr_mesh_create(world, axes, 3, nullptr, 0, &mesh));
  CHECK_OK(
      tsr_comm_describe_collective(4, "all_reduce #4 (on axc: fc1.weight)"));
  CHECK(tsrt_axis_size(5) == 4);
  float value = 1.0f, sum = 0.0f;
  tsrt_all_reduce(4, 5, &value, &sum, 1, TSR_DTYPE_FLOAT32, TSR_REDUCE_SUM,
                  nullptr);
  std::fprintf(stderr, "rank %d: the collective returned\n", worldRank);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mesh-mpi-program meshes | unbound\n");
    return 2;
  }
  std::string mode = argv[1];
  tsr_comm_options_t options = {30, -1};
  tsr_comm_t *world = nullptr;
  CHECK_OK(tsr_comm_init(TSR_COMM_MPI, &options, &world));
  worldRank = tsr_comm_rank(world);
  if (mode == "meshes") {
    checkMeshes(world);
    if (worldRank == 0)
      std::printf("meshes ok on %d ranks\n", tsr_comm_size(world));
  } else if (mode == "unbound") {
    runUnbound(world);
  } else {
    return 2;
  }
  tsr_comm_destroy(world);
  return 0;
}
