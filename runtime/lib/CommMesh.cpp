//===- CommMesh.cpp - The communicators of a device mesh ------------------===//
//
// A mesh lays the ranks of a world communicator out over named axes,
// row-major with the last axis innermost (Comm.h). For each group of axes a
// program communicates over it splits one communicator off the world: the
// ranks that agree on every other axis share a color, and the key orders
// them row-major over the group's own axes, so that a group's rank is the
// position that compiled code (tsrt_axis_rank, tsr.local_shard's block)
// expects. Every group is then bound to its mask, and the layout is
// registered for masks without a communicator.
//
//===----------------------------------------------------------------------===//

#include "CommInternal.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <memory>
#include <set>

using namespace tsr;

namespace {
tsr_comm_t *boundParameterServerWorld = nullptr;
} // namespace

tsr_comm_t *tsr::parameterServerWorld() { return boundParameterServerWorld; }

struct tsr_mesh {
  std::vector<std::string> names;
  MeshLayout layout;
  /// The communicators, by mask, in increasing mask order.
  std::vector<std::pair<int64_t, tsr_comm_t *>> groups;
  /// With parameter servers: the workers' or the servers' part of the
  /// world (owned), and the world (the caller's), bound for the trainer.
  tsr_comm_t *side = nullptr, *parameterServerWorld = nullptr;

  tsr_mesh() = default;
  tsr_mesh(const tsr_mesh &) = delete;
  tsr_mesh &operator=(const tsr_mesh &) = delete;
  ~tsr_mesh() {
    for (auto &[mask, comm] : groups) {
      if (boundGroup(mask) == comm)
        tsr_comm_bind_axis(mask, nullptr);
      tsr_comm_destroy(comm);
    }
    if (registeredMeshLayout() == &layout)
      registerMeshLayout(nullptr);
    if (boundParameterServerWorld == parameterServerWorld)
      boundParameterServerWorld = nullptr;
    if (side)
      tsr_comm_destroy(side);
  }
};

namespace {

/// Group masks are the group arguments of tsr_comm_bind_axis, below 64.
constexpr size_t kMaxMeshAxes = 6;

/// "dp=2,tp=2", or "(no axes)".
std::string describeMesh(const tsr_mesh_axis_t *axes, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i)
    text += (i ? "," : "") + std::string(axes[i].name) + "=" +
            std::to_string(axes[i].size);
  return text.empty() ? "(no axes)" : text;
}

tsr_status_t checkAxes(const tsr_mesh_axis_t *axes, size_t count,
                       int64_t &outRanks) {
  if (count && !axes)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_mesh_create: null axes");
  if (count > kMaxMeshAxes)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_mesh_create: " + std::to_string(count) +
                    " axes; a mesh has at most " +
                    std::to_string(kMaxMeshAxes) +
                    " (group masks are below 64)");
  int64_t ranks = 1;
  for (size_t i = 0; i < count; ++i) {
    std::string at = "tsr_mesh_create: axis " + std::to_string(i);
    if (!axes[i].name || !*axes[i].name)
      return fail(TSR_ERROR_INVALID_ARGUMENT, at + " has no name");
    for (size_t j = 0; j < i; ++j)
      if (std::string(axes[j].name) == axes[i].name)
        return fail(TSR_ERROR_INVALID_ARGUMENT, at + ": name '" + axes[i].name +
                                                    "' is also axis " +
                                                    std::to_string(j) + "'s");
    if (axes[i].size < 1 || __builtin_mul_overflow(ranks, axes[i].size, &ranks))
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  at + " '" + axes[i].name + "' has size " +
                      std::to_string(axes[i].size) +
                      (axes[i].size < 1 ? ", expected at least 1"
                                        : ", too many ranks in all"));
  }
  outRanks = ranks;
  return TSR_OK;
}

/// Splits the communicator of group `mask` off `world`: color numbers the
/// coordinates on the other axes, key those on the group's own axes, both
/// row-major in mesh order.
tsr_status_t splitGroup(tsr_comm_t *world, const MeshLayout &layout,
                        int64_t mask, tsr_comm_t **out) {
  int64_t color = 0, key = 0;
  for (size_t i = 0; i < layout.sizes.size(); ++i) {
    int64_t &index = mask >> i & 1 ? key : color;
    index = index * layout.sizes[i] + layout.coordinates[i];
  }
  tsr_comm_t *comm = nullptr;
  if (tsr_status_t s = tsr_comm_split(world, static_cast<int>(color),
                                      static_cast<int>(key), &comm))
    return s;
  // The keys of a color are 0 ... N-1, so the split must number the group
  // exactly as the layout does.
  if (tsr_comm_size(comm) != layout.groupSize(mask) ||
      tsr_comm_rank(comm) != key) {
    tsr_comm_destroy(comm);
    return fail(TSR_ERROR_IO, "tsr_mesh_create: the split of group mask " +
                                  std::to_string(mask) +
                                  " has the wrong size or order");
  }
  *out = comm;
  return TSR_OK;
}

tsr_status_t createMesh(tsr_comm_t *world, const tsr_mesh_axis_t *axes,
                        size_t numAxes, const int64_t *groups, size_t numGroups,
                        std::unique_ptr<tsr_mesh> &out) {
  if (!world)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_mesh_create: null world communicator");
  if (numGroups && !groups)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_mesh_create: null groups");
  int64_t ranks = 1;
  if (tsr_status_t s = checkAxes(axes, numAxes, ranks))
    return s;
  int64_t all = (int64_t(1) << numAxes) - 1;
  std::set<int64_t> masks;
  for (size_t g = 0; g < numGroups; ++g) {
    if (groups[g] < 1 || groups[g] > all)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tsr_mesh_create: group mask " + std::to_string(groups[g]) +
                      " is not a non-empty set of the mesh's " +
                      std::to_string(numAxes) + " axes (1 ... " +
                      std::to_string(all) + ")");
    masks.insert(groups[g]);
  }
  int worldSize = tsr_comm_size(world);
  if (ranks != worldSize)
    return fail(TSR_ERROR_MISMATCH,
                "the mesh " + describeMesh(axes, numAxes) + " has " +
                    std::to_string(ranks) + " rank" + (ranks == 1 ? "" : "s") +
                    " (the product of its axis sizes) but the world "
                    "communicator has " +
                    std::to_string(worldSize));
  for (size_t i = 0; i < numAxes; ++i)
    masks.insert(int64_t(1) << i);
  if (numAxes)
    masks.insert(all);

  auto mesh = std::make_unique<tsr_mesh>();
  int64_t rank = tsr_comm_rank(world);
  for (size_t i = 0; i < numAxes; ++i) {
    mesh->names.push_back(axes[i].name);
    mesh->layout.sizes.push_back(axes[i].size);
  }
  // The last axis is innermost.
  mesh->layout.coordinates.resize(numAxes);
  for (size_t i = numAxes; i-- > 0;) {
    mesh->layout.coordinates[i] = rank % axes[i].size;
    rank /= axes[i].size;
  }
  for (int64_t mask : masks) {
    tsr_comm_t *comm = nullptr;
    if (tsr_status_t s = splitGroup(world, mesh->layout, mask, &comm))
      return s;
    mesh->groups.emplace_back(mask, comm);
  }
  for (auto &[mask, comm] : mesh->groups)
    if (tsr_status_t s = tsr_comm_bind_axis(mask, comm))
      return s;
  registerMeshLayout(&mesh->layout);
  out = std::move(mesh);
  return TSR_OK;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

tsr_status_t tsr_mesh_create(tsr_comm_t *world, const tsr_mesh_axis_t *axes,
                             size_t num_axes, const int64_t *groups,
                             size_t num_groups, tsr_mesh_t **out_mesh) {
  return guard([&] {
    if (!out_mesh)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_mesh_create: null out_mesh");
    *out_mesh = nullptr;
    std::unique_ptr<tsr_mesh> mesh;
    if (tsr_status_t s =
            createMesh(world, axes, num_axes, groups, num_groups, mesh))
      return s;
    *out_mesh = mesh.release();
    return TSR_OK;
  });
}

tsr_status_t tsr_mesh_create_for_artifact(tsr_comm_t *world,
                                          const tsr_artifact_t *artifact,
                                          tsr_mesh_t **out_mesh) {
  return guard([&] {
    if (!out_mesh || !artifact)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tsr_mesh_create_for_artifact: null argument");
    *out_mesh = nullptr;
    const Manifest &manifest = artifact->manifest;
    // The artifact kept the calls of the rank the launcher said this
    // process is; the world communicator must agree.
    if (manifest.selectedRank >= 0 && world &&
        tsr_comm_rank(world) != manifest.selectedRank)
      return fail(TSR_ERROR_MISMATCH,
                  artifact->dir + ": the artifact kept the calls of rank " +
                      std::to_string(manifest.selectedRank) +
                      " (from the launcher's environment) but this process "
                      "is rank " +
                      std::to_string(tsr_comm_rank(world)) +
                      " of the world communicator");
    std::vector<tsr_mesh_axis_t> axes;
    for (const auto &[name, size] : manifest.mesh)
      axes.push_back({name.c_str(), size});
    std::vector<int64_t> groups;
    for (const CollectiveSpec &collective : manifest.collectives) {
      int64_t mask = 0;
      for (const std::string &axis : collective.axes)
        mask |= int64_t(1) << findMeshAxis(manifest, axis);
      groups.push_back(mask);
    }
    // With parameter servers the mesh is the workers': ranks 0 ... N-1
    // split off to build it, and the servers take none.
    const ParameterServerSpec &ps = manifest.parameterServer;
    tsr_comm_t *side = nullptr;
    if (ps.servers > 0) {
      if (!world)
        return fail(TSR_ERROR_INVALID_ARGUMENT,
                    "tsr_mesh_create: null world communicator");
      int size = tsr_comm_size(world);
      if (size != ps.workers + ps.servers)
        return fail(TSR_ERROR_MISMATCH,
                    artifact->dir + ": the artifact has " +
                        std::to_string(ps.workers) + " workers and " +
                        std::to_string(ps.servers) +
                        " parameter servers, but the world communicator "
                        "has " +
                        std::to_string(size) + " ranks (launch " +
                        std::to_string(ps.workers + ps.servers) + ")");
      bool server = tsr_comm_rank(world) >= ps.workers;
      if (tsr_status_t s = tsr_comm_split(world, server ? 1 : 0,
                                          tsr_comm_rank(world), &side))
        return withContext(s, artifact->dir);
      if (server) {
        axes.clear();
        groups.clear();
      }
    }
    std::unique_ptr<tsr_mesh> mesh;
    tsr_status_t created = TSR_OK;
    if (side && axes.empty())
      mesh = std::make_unique<tsr_mesh>();
    else
      created = createMesh(side ? side : world, axes.data(), axes.size(),
                           groups.data(), groups.size(), mesh);
    if (created) {
      if (side)
        tsr_comm_destroy(side);
      return withContext(created, artifact->dir);
    }
    if (side) {
      mesh->side = side;
      mesh->parameterServerWorld = world;
      boundParameterServerWorld = world;
    }
    if (tsr_status_t s = describeCollectives(manifest))
      return s;
    *out_mesh = mesh.release();
    return TSR_OK;
  });
}

void tsr_mesh_destroy(tsr_mesh_t *mesh) { delete mesh; }

size_t tsr_mesh_num_axes(const tsr_mesh_t *mesh) {
  return mesh ? mesh->names.size() : 0;
}

tsr_status_t tsr_mesh_axis(const tsr_mesh_t *mesh, size_t index,
                           const char **out_name, int64_t *out_size,
                           int64_t *out_coordinate) {
  if (!mesh || !out_name || !out_size || !out_coordinate)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "tsr_mesh_axis: null argument");
  if (index >= mesh->names.size())
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "tsr_mesh_axis: axis " + std::to_string(index) +
                    " of a mesh of " + std::to_string(mesh->names.size()));
  *out_name = mesh->names[index].c_str();
  *out_size = mesh->layout.sizes[index];
  *out_coordinate = mesh->layout.coordinates[index];
  return TSR_OK;
}

int64_t tsr_mesh_find_axis(const tsr_mesh_t *mesh, const char *name) {
  if (!mesh || !name)
    return -1;
  auto it = std::find(mesh->names.begin(), mesh->names.end(), name);
  return it == mesh->names.end() ? -1 : it - mesh->names.begin();
}

tsr_comm_t *tsr_mesh_group(const tsr_mesh_t *mesh, int64_t mask) {
  if (!mesh)
    return nullptr;
  for (const auto &[groupMask, comm] : mesh->groups)
    if (groupMask == mask)
      return comm;
  return nullptr;
}
