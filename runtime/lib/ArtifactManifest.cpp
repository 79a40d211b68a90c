//===- ArtifactManifest.cpp - Parsing and checking manifest.json ----------===//
//
// Turns an artifact's manifest.json into a Manifest: the tensors with their
// roles, shards and placements, the device mesh and collectives, and for
// mode "train"
// the train object, with every cross-reference checked. The format is
// described in docs/runtime.md.
//
//===----------------------------------------------------------------------===//

#include "Json.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

using namespace tsr;

namespace {

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

/// The manifest format this runtime reads (docs/runtime.md).
constexpr int64_t kManifestVersion = 2;

struct RoleName {
  tsr_role_t role;
  const char *name;
  bool forInputs;
};

constexpr RoleName kRoles[] = {
    {TSR_ROLE_DATA, "data", true},
    {TSR_ROLE_LABEL, "label", true},
    {TSR_ROLE_PARAM, "param", true},
    {TSR_ROLE_STATE, "state", true},
    {TSR_ROLE_PARAM, "param", false},
    {TSR_ROLE_STATE, "state", false},
    {TSR_ROLE_LOSS, "loss", false},
    {TSR_ROLE_METRIC, "metric", false},
    {TSR_ROLE_GRAD, "grad", false},
    {TSR_ROLE_RNG, "rng", true},
    {TSR_ROLE_SYNC, "sync", true},
    // A parameter server's program takes the workers' gradients and loss.
    {TSR_ROLE_GRAD, "grad", true},
    {TSR_ROLE_LOSS, "loss", true},
};

/// The targets this runtime knows, with the one placement their buffers
/// have: every input and output of their artifacts lives there. A manifest
/// without a target is read as a "cpu" one. An artifact of another target
/// says where each buffer lives ("placement").
struct TargetPlacement {
  const char *target;
  tsr_placement_t placement;
};

constexpr TargetPlacement kTargets[] = {{"cpu", TSR_PLACEMENT_HOST},
                                        {"cuda", TSR_PLACEMENT_DEVICE}};

const TargetPlacement *findTarget(const std::string &target) {
  for (const TargetPlacement &known : kTargets)
    if (target == known.target)
      return &known;
  return target.empty() ? &kTargets[0] : nullptr;
}

constexpr tsr_placement_t kPlacements[] = {
    TSR_PLACEMENT_HOST, TSR_PLACEMENT_DEVICE, TSR_PLACEMENT_PINNED_HOST};

std::string where(const char *list, size_t index) {
  return std::string(list) + "[" + std::to_string(index) + "]";
}

tsr_status_t requireString(const Json &object, const char *key,
                           const std::string &where, std::string &out,
                           bool optional = false) {
  const Json *value = findMember(object, key);
  if (!value) {
    if (optional)
      return TSR_OK;
    return fail(TSR_ERROR_PARSE, "missing \"" + std::string(key) + "\"" +
                                     (where.empty() ? "" : " in " + where));
  }
  if (!value->is_string())
    return fail(TSR_ERROR_PARSE,
                (where.empty() ? "" : where + ".") + key + " must be a string");
  out = value->get<std::string>();
  return TSR_OK;
}

/// Reads an optional integer member no smaller than `minimum`; `out` keeps
/// its value when the member is absent.
tsr_status_t optionalInteger(const Json &object, const char *key,
                             const std::string &where, int64_t minimum,
                             int64_t &out, bool *present = nullptr) {
  const Json *value = findMember(object, key);
  if (present)
    *present = value != nullptr;
  if (!value)
    return TSR_OK;
  int64_t integer;
  if (!getInteger(*value, integer) || integer < minimum)
    return fail(
        TSR_ERROR_PARSE,
        where + "." + key + " must be an integer" +
            (minimum > INT64_MIN ? " >= " + std::to_string(minimum) : ""));
  out = integer;
  return TSR_OK;
}

tsr_status_t parseRole(const Json &entry, const std::string &at, bool isInput,
                       TensorSpec &spec) {
  std::string name;
  if (tsr_status_t s = requireString(entry, "role", at, name, true))
    return s;
  if (!findMember(entry, "role")) {
    spec.role = isInput ? TSR_ROLE_DATA : TSR_ROLE_NONE;
    return TSR_OK;
  }
  for (const RoleName &role : kRoles) {
    if (role.forInputs == isInput && name == role.name) {
      spec.role = role.role;
      return TSR_OK;
    }
  }
  return fail(TSR_ERROR_PARSE,
              at + ".role: unknown " + (isInput ? "input" : "output") +
                  " role \"" + name + "\" (expected " +
                  (isInput ? "param, state, data, label, rng or sync"
                           : "loss, param, state, metric or grad") +
                  ")");
}

/// Checks that a state's "init" is representable in its dtype.
tsr_status_t checkInit(const TensorSpec &spec, const std::string &at) {
  double value = spec.init;
  bool fits;
  switch (spec.dtype) {
  case TSR_DTYPE_FLOAT16:
    fits = std::fabs(value) <= 65504.0;
    break;
  case TSR_DTYPE_BFLOAT16:
    fits = std::fabs(value) <= 3.3895313892515355e38;
    break;
  case TSR_DTYPE_FLOAT32:
    fits = std::fabs(value) <= 3.4028234663852886e38;
    break;
  case TSR_DTYPE_FLOAT64:
    fits = true;
    break;
  case TSR_DTYPE_BOOL:
    fits = value == 0 || value == 1;
    break;
  default: {
    int bits = static_cast<int>(tsr_dtype_size(spec.dtype) * 8);
    bool isSigned =
        spec.dtype == TSR_DTYPE_INT8 || spec.dtype == TSR_DTYPE_INT16 ||
        spec.dtype == TSR_DTYPE_INT32 || spec.dtype == TSR_DTYPE_INT64;
    double low = isSigned ? -std::ldexp(1.0, bits - 1) : 0;
    double end = std::ldexp(1.0, isSigned ? bits - 1 : bits);
    fits = value >= low && value < end && value == std::trunc(value);
  }
  }
  if (fits)
    return TSR_OK;
  char text[32];
  std::snprintf(text, sizeof(text), "%.15g", value);
  return fail(TSR_ERROR_PARSE, at + ".init: " + text +
                                   " is not representable in " +
                                   tsr_dtype_name(spec.dtype));
}

/// Parses the role-specific members "updates" and "of" (outputs) and
/// "init" (inputs).
tsr_status_t parseRoleMembers(const Json &entry, const std::string &at,
                              bool isInput, TensorSpec &spec) {
  bool hasUpdates = false, hasOf = false;
  if (!isInput) {
    if (tsr_status_t s =
            optionalInteger(entry, "updates", at, 0, spec.updates, &hasUpdates))
      return s;
    if (tsr_status_t s = optionalInteger(entry, "of", at, 0, spec.of, &hasOf))
      return s;
  }
  bool updating = spec.role == TSR_ROLE_PARAM || spec.role == TSR_ROLE_STATE;
  std::string role = std::string("\"") + tsr_role_name(spec.role) + "\"";
  if (!isInput && updating && !hasUpdates)
    return fail(TSR_ERROR_PARSE,
                at + " has role " + role + " but no \"updates\"");
  if (hasUpdates && !updating)
    return fail(TSR_ERROR_PARSE,
                at + ".updates is only for param and state outputs");
  if (!isInput && spec.role == TSR_ROLE_GRAD && !hasOf)
    return fail(TSR_ERROR_PARSE, at + " has role \"grad\" but no \"of\"");
  if (hasOf && spec.role != TSR_ROLE_GRAD)
    return fail(TSR_ERROR_PARSE, at + ".of is only for grad outputs");
  if (const Json *inPlace = findMember(entry, "in_place")) {
    if (!inPlace->is_boolean())
      return fail(TSR_ERROR_PARSE, at + ".in_place must be true or false");
    if (!hasUpdates)
      return fail(TSR_ERROR_PARSE,
                  at + ".in_place is only for outputs that update an input");
    spec.inPlace = inPlace->get<bool>();
  }
  const Json *init = findMember(entry, "init");
  if (!init)
    return TSR_OK;
  if (!isInput || spec.role != TSR_ROLE_STATE)
    return fail(TSR_ERROR_PARSE, at + ".init is only for state inputs");
  if (!init->is_number())
    return fail(TSR_ERROR_PARSE, at + ".init must be a number");
  spec.init = init->get<double>();
  return checkInit(spec, at);
}

/// Parses "global_shape", "sharding" and "shards" against the mesh: a
/// value split along dimensions of its global shape holds one block of it,
/// and a flat shard of a block holds ceil(n / shards) of its n elements.
tsr_status_t parseLayout(const Json &entry, const std::string &at,
                         const Manifest &manifest, TensorSpec &spec) {
  bool hasShards = false;
  if (tsr_status_t s =
          optionalInteger(entry, "shards", at, 1, spec.shards, &hasShards))
    return s;
  const Json *global = findMember(entry, "global_shape");
  const Json *sharding = findMember(entry, "sharding");
  if (!hasShards && !global && !sharding) {
    spec.globalShape = spec.blockShape = spec.shape;
    return TSR_OK;
  }
  if (!global || !global->is_array())
    return fail(TSR_ERROR_PARSE, at + ": shards and sharding need a "
                                      "global_shape array");
  if (!hasShards && !sharding)
    return fail(TSR_ERROR_PARSE,
                at + ": global_shape needs shards or sharding");
  for (const Json &dim : *global) {
    int64_t size;
    if (!getInteger(dim, size) || size < 0)
      return fail(TSR_ERROR_PARSE,
                  at + ".global_shape must hold non-negative integers");
    spec.globalShape.push_back(size);
  }
  int64_t count;
  size_t bytes;
  if (tsr_status_t s = computeSizes(spec.dtype, spec.globalShape.data(),
                                    spec.globalShape.size(), count, bytes))
    return withContext(s, at + ".global_shape");
  spec.blockShape = spec.globalShape;
  if (sharding) {
    if (!sharding->is_array() || sharding->size() != spec.globalShape.size())
      return fail(TSR_ERROR_PARSE,
                  at +
                      ".sharding must hold one list of mesh axes per "
                      "dimension of global_shape (" +
                      std::to_string(spec.globalShape.size()) + ")");
    std::vector<std::string> seen;
    for (size_t d = 0; d < sharding->size(); ++d) {
      const Json &axes = (*sharding)[d];
      if (!axes.is_array())
        return fail(TSR_ERROR_PARSE,
                    at + ".sharding[" + std::to_string(d) +
                        "] must be an array of mesh axis names");
      int64_t parts = 1;
      spec.sharding.emplace_back();
      for (const Json &axis : axes) {
        std::string name = axis.is_string() ? axis.get<std::string>() : "";
        int64_t index = findMeshAxis(manifest, name);
        if (index < 0)
          return fail(TSR_ERROR_PARSE,
                      at + ".sharding[" + std::to_string(d) + "]: " +
                          (axis.is_string() ? "'" + name + "'"
                                            : std::string("an entry")) +
                          " is not an axis of mesh");
        if (std::find(seen.begin(), seen.end(), name) != seen.end())
          return fail(TSR_ERROR_PARSE, at + ".sharding: mesh axis '" + name +
                                           "' splits two dimensions");
        seen.push_back(name);
        spec.sharding.back().push_back(name);
        parts *= manifest.mesh[static_cast<size_t>(index)].second;
      }
      if (spec.globalShape[d] % parts != 0)
        return fail(TSR_ERROR_PARSE,
                    at + ".sharding: dimension " + std::to_string(d) +
                        " of global_shape " + formatShape(spec.globalShape) +
                        " cannot be split into " + std::to_string(parts) +
                        " equal blocks");
      spec.blockShape[d] /= parts;
    }
  }
  std::vector<int64_t> local = spec.blockShape;
  if (hasShards) {
    computeSizes(spec.dtype, spec.blockShape.data(), spec.blockShape.size(),
                 count, bytes);
    local = {(count + spec.shards - 1) / spec.shards};
  }
  if (spec.shape != local)
    return fail(TSR_ERROR_PARSE,
                at + ": " +
                    (hasShards ? "a shard over " + std::to_string(spec.shards) +
                                     " ranks of the block "
                               : std::string("the block ")) +
                    formatShape(spec.blockShape) + " of " +
                    formatShape(spec.globalShape) + " has shape " +
                    formatShape(local) + ", not " + formatShape(spec.shape));
  return TSR_OK;
}

/// Parses "mesh", "zero" and "collectives" (all optional).
tsr_status_t parseParallel(const Json &root, Manifest &out) {
  if (const Json *mesh = findMember(root, "mesh")) {
    if (!mesh->is_array())
      return fail(TSR_ERROR_PARSE, "mesh must be an array");
    for (size_t i = 0; i < mesh->size(); ++i) {
      const Json &axis = (*mesh)[i];
      std::string at = where("mesh", i), name;
      int64_t size = 0;
      bool hasSize = false;
      if (!axis.is_object())
        return fail(TSR_ERROR_PARSE, at + " must be an object");
      if (tsr_status_t s = requireString(axis, "name", at, name))
        return s;
      if (tsr_status_t s = optionalInteger(axis, "size", at, 1, size, &hasSize))
        return s;
      if (!hasSize)
        return fail(TSR_ERROR_PARSE, "missing \"size\" in " + at);
      out.mesh.emplace_back(name, size);
    }
  }
  if (tsr_status_t s = optionalInteger(root, "zero", "", 0, out.zero))
    return s;
  const Json *list = findMember(root, "collectives");
  if (!list)
    return TSR_OK;
  if (!list->is_array())
    return fail(TSR_ERROR_PARSE, "collectives must be an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const Json &entry = (*list)[i];
    std::string at = where("collectives", i);
    if (!entry.is_object())
      return fail(TSR_ERROR_PARSE, at + " must be an object");
    CollectiveSpec c;
    if (tsr_status_t s = requireString(entry, "kind", at, c.kind))
      return s;
    const Json *axes = findMember(entry, "axes");
    if (!axes || !axes->is_array() || axes->empty())
      return fail(TSR_ERROR_PARSE,
                  at + ".axes must be a non-empty array of mesh axis names");
    for (const Json &axis : *axes) {
      if (!axis.is_string() || findMeshAxis(out, axis.get<std::string>()) < 0)
        return fail(TSR_ERROR_PARSE,
                    at + ".axes: " +
                        (axis.is_string() ? "'" + axis.get<std::string>() + "'"
                                          : std::string("an entry")) +
                        " is not an axis of mesh");
      c.axes.push_back(axis.get<std::string>());
    }
    if (tsr_status_t s = optionalInteger(entry, "bucket", at, 0, c.bucket))
      return s;
    if (const Json *serves = findMember(entry, "serves")) {
      if (!serves->is_array())
        return fail(TSR_ERROR_PARSE, at + ".serves must be an array");
      for (const Json &name : *serves) {
        if (!name.is_string())
          return fail(TSR_ERROR_PARSE, at + ".serves must hold strings");
        c.serves.push_back(name.get<std::string>());
      }
    }
    // "all_reduce #3 (bucket 1 on dp: a, b, c and 4 more)"
    c.description = c.kind + " #" + std::to_string(i) + " (";
    if (c.bucket >= 0)
      c.description += "bucket " + std::to_string(c.bucket) + " ";
    c.description += "on ";
    for (size_t k = 0; k < c.axes.size(); ++k)
      c.description += (k ? "x" : "") + c.axes[k];
    constexpr size_t kNamed = 4;
    for (size_t k = 0; k < c.serves.size() && k < kNamed; ++k)
      c.description += (k ? ", " : ": ") + c.serves[k];
    if (c.serves.size() > kNamed)
      c.description +=
          " and " + std::to_string(c.serves.size() - kNamed) + " more";
    c.description += ")";
    out.collectives.push_back(std::move(c));
  }
  return TSR_OK;
}

/// Parses "profile_regions" (optional): what each region id of the
/// compiled programs' tsr_profile_begin/end calls times.
tsr_status_t parseProfileRegions(const Json &root, Manifest &out) {
  const Json *list = findMember(root, "profile_regions");
  if (!list)
    return TSR_OK;
  if (!list->is_array())
    return fail(TSR_ERROR_PARSE, "profile_regions must be an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const Json &entry = (*list)[i];
    std::string at = where("profile_regions", i);
    if (!entry.is_object())
      return fail(TSR_ERROR_PARSE, at + " must be an object");
    Manifest::ProfileRegion region;
    if (tsr_status_t s = requireString(entry, "kind", at, region.kind))
      return s;
    if (tsr_status_t s = requireString(entry, "callee", at, region.callee))
      return s;
    if (tsr_status_t s = requireString(entry, "node", at, region.node))
      return s;
    const Json *backward = findMember(entry, "backward");
    if (!backward || !backward->is_boolean())
      return fail(TSR_ERROR_PARSE, at + ".backward must be true or false");
    region.backward = backward->get<bool>();
    out.profileRegions.push_back(std::move(region));
  }
  return TSR_OK;
}

/// Parses "placement": where the buffer lives, which a known target
/// decides and any other target must state.
tsr_status_t parsePlacement(const Json &entry, const std::string &at,
                            const std::string &target, TensorSpec &spec) {
  std::string name;
  if (tsr_status_t s = requireString(entry, "placement", at, name, true))
    return s;
  const TargetPlacement *known = findTarget(target);
  if (!findMember(entry, "placement")) {
    if (!known)
      return fail(TSR_ERROR_PARSE,
                  at + " '" + spec.name + "': target \"" + target +
                      "\" is not one this runtime knows, so the entry must "
                      "say where its buffer lives (\"placement\": \"host\", "
                      "\"device\" or \"pinned-host\")");
    spec.placement = known->placement;
    return TSR_OK;
  }
  const tsr_placement_t *placement = std::find_if(
      std::begin(kPlacements), std::end(kPlacements),
      [&](tsr_placement_t p) { return name == tsr_placement_name(p); });
  if (placement == std::end(kPlacements))
    return fail(TSR_ERROR_PARSE,
                at + ".placement: unknown placement \"" + name +
                    "\" (expected host, device or pinned-host)");
  if (known && *placement != known->placement)
    return fail(TSR_ERROR_PARSE,
                at + ".placement: target \"" + known->target + "\" has no " +
                    name + " memory (its buffers live in " +
                    tsr_placement_name(known->placement) + " memory)");
  spec.placement = *placement;
  return TSR_OK;
}

/// Parses the list `key` of `program`, whose path is `at` ("programs[0]").
tsr_status_t parseSpecs(const Json &program, const std::string &owner,
                        const char *key, bool isInput, const Manifest &manifest,
                        std::vector<TensorSpec> &out) {
  const std::string &target = manifest.target;
  const Json *list = findMember(program, key);
  if (!list)
    return fail(TSR_ERROR_PARSE,
                "missing \"" + std::string(key) + "\" in " + owner);
  std::string path = owner + "." + key;
  if (!list->is_array())
    return fail(TSR_ERROR_PARSE, path + " must be an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const Json &entry = (*list)[i];
    std::string at = where(path.c_str(), i);
    if (!entry.is_object())
      return fail(TSR_ERROR_PARSE, at + " must be an object");
    TensorSpec spec;
    std::string dtype;
    if (tsr_status_t s = requireString(entry, "name", at, spec.name))
      return s;
    if (tsr_status_t s = requireString(entry, "dtype", at, dtype))
      return s;
    if (tsr_dtype_from_name(dtype.c_str(), &spec.dtype) != TSR_OK)
      return fail(TSR_ERROR_PARSE,
                  at + ".dtype: unknown dtype \"" + dtype + "\"");
    const Json *shape = findMember(entry, "shape");
    if (!shape)
      return fail(TSR_ERROR_PARSE, "missing \"shape\" in " + at);
    if (!shape->is_array())
      return fail(TSR_ERROR_PARSE, at + ".shape must be an array");
    for (const Json &dim : *shape) {
      int64_t size;
      if (!getInteger(dim, size) || size < 0)
        return fail(TSR_ERROR_PARSE, at + ".shape must hold non-negative "
                                          "integers");
      spec.shape.push_back(size);
    }
    int64_t count;
    size_t bytes;
    if (tsr_status_t s = computeSizes(spec.dtype, spec.shape.data(),
                                      spec.shape.size(), count, bytes))
      return withContext(s, at);
    if (tsr_status_t s = parseRole(entry, at, isInput, spec))
      return s;
    if (tsr_status_t s = parseRoleMembers(entry, at, isInput, spec))
      return s;
    if (tsr_status_t s = parseLayout(entry, at, manifest, spec))
      return s;
    if (tsr_status_t s = parsePlacement(entry, at, target, spec))
      return s;
    out.push_back(std::move(spec));
  }
  return TSR_OK;
}

std::string typeOf(const TensorSpec &spec) {
  return tsr_dtype_name(spec.dtype) + formatShape(spec.shape);
}

/// Checks "updates" and "of" of a program's outputs against the inputs they
/// name.
tsr_status_t checkOutputLinks(const ProgramSpec &program,
                              const std::string &owner) {
  const std::vector<TensorSpec> &inputs = program.inputs;
  std::string outputsPath = owner + ".outputs";
  std::vector<int64_t> updatedBy(inputs.size(), -1);
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const TensorSpec &output = program.outputs[i];
    int64_t target = output.updates >= 0 ? output.updates : output.of;
    if (target < 0)
      continue;
    std::string at = where(outputsPath.c_str(), i);
    const char *member = output.updates >= 0 ? "updates" : "of";
    if (static_cast<size_t>(target) >= inputs.size())
      return fail(TSR_ERROR_PARSE,
                  at + "." + member + ": " + std::to_string(target) +
                      " is not an input index (the artifact has " +
                      std::to_string(inputs.size()) + " inputs)");
    const TensorSpec &input = inputs[target];
    std::string inputName = describe("input", target, input);
    // A gradient that ZeRO-2 or 3 reduce-scattered is a shard of a whole
    // parameter's gradient (the step of an optimizer on the host returns
    // it).
    bool shardOfWhole = output.updates < 0 && output.shards > 1 &&
                        input.shards == 1 &&
                        output.globalShape == input.globalShape;
    if (output.dtype != input.dtype ||
        (output.shape != input.shape && !shardOfWhole))
      return fail(TSR_ERROR_PARSE,
                  at + " '" + output.name + "' is " + typeOf(output) + " but " +
                      inputName + " that it " +
                      (output.updates >= 0 ? "updates" : "is the gradient of") +
                      " is " + typeOf(input));
    if (output.updates < 0)
      continue;
    if (output.placement != input.placement)
      return fail(TSR_ERROR_PARSE,
                  at + " '" + output.name + "' lives in " +
                      tsr_placement_name(output.placement) + " memory but " +
                      inputName + " that it updates lives in " +
                      tsr_placement_name(input.placement) + " memory");
    if (input.role != output.role)
      return fail(TSR_ERROR_PARSE,
                  at + " has role \"" + tsr_role_name(output.role) +
                      "\" but updates " + inputName + " of role \"" +
                      tsr_role_name(input.role) + "\"");
    if (updatedBy[target] >= 0)
      return fail(TSR_ERROR_PARSE,
                  at + " updates " + inputName + ", which " +
                      where(outputsPath.c_str(), updatedBy[target]) +
                      " already updates");
    updatedBy[target] = static_cast<int64_t>(i);
  }
  return TSR_OK;
}

/// The manifest path of step output `index`: "programs[1].outputs[0]".
std::string outputPath(const Manifest &manifest, size_t index) {
  for (const CallSpec &call : manifest.schedule) {
    size_t count = manifest.programs[call.program].outputs.size();
    if (index >= call.firstOutput && index < call.firstOutput + count)
      return where("programs", call.program) + "." +
             where("outputs", index - call.firstOutput);
  }
  return where("outputs", index);
}

/// Parses "programs": each a name, an entry symbol, inputs and outputs.
tsr_status_t parsePrograms(const Json &root, Manifest &out) {
  const Json *list = findMember(root, "programs");
  if (!list)
    return fail(TSR_ERROR_PARSE, "missing \"programs\"");
  if (!list->is_array() || list->empty())
    return fail(TSR_ERROR_PARSE, "programs must be a non-empty array");
  for (size_t p = 0; p < list->size(); ++p) {
    const Json &entry = (*list)[p];
    std::string at = where("programs", p);
    if (!entry.is_object())
      return fail(TSR_ERROR_PARSE, at + " must be an object");
    ProgramSpec program;
    if (tsr_status_t s = requireString(entry, "name", at, program.name))
      return s;
    if (tsr_status_t s = requireString(entry, "entry", at, program.entry))
      return s;
    if (program.name.empty() || program.entry.empty())
      return fail(TSR_ERROR_PARSE, at + ": name and entry must not be empty");
    for (size_t q = 0; q < out.programs.size(); ++q)
      if (out.programs[q].name == program.name)
        return fail(TSR_ERROR_PARSE, at + ": name '" + program.name +
                                         "' is also " + where("programs", q) +
                                         "'s");
    if (tsr_status_t s =
            parseSpecs(entry, at, "inputs", true, out, program.inputs))
      return s;
    if (tsr_status_t s =
            parseSpecs(entry, at, "outputs", false, out, program.outputs))
      return s;
    if (tsr_status_t s = checkOutputLinks(program, at))
      return s;
    if (const Json *onHost = findMember(entry, "on_host")) {
      if (!onHost->is_boolean())
        return fail(TSR_ERROR_PARSE, at + ".on_host must be true or false");
      program.onHost = onHost->get<bool>();
      // The CUDA target's programs run on the device; a host program
      // beside them is the CPU target's alone so far.
      if (program.onHost && out.target != "cpu")
        return fail(TSR_ERROR_PARSE,
                    at +
                        " runs on the host, which only target \"cpu\" "
                        "artifacts support (target \"" +
                        out.target + "\")");
    }
    for (size_t i = 0; i < program.inputs.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (program.inputs[j].name == program.inputs[i].name)
          return fail(TSR_ERROR_PARSE, at + "." + where("inputs", i) +
                                           ": name '" + program.inputs[i].name +
                                           "' is also " + at + "." +
                                           where("inputs", j) + "'s");
    out.programs.push_back(std::move(program));
  }
  return TSR_OK;
}

/// Checks that program input `spec` (at `at`) can bind to `bound`, the
/// value of the same name it takes in the step: the same dtype and shape,
/// and for a step input the same role.
tsr_status_t checkBinding(const TensorSpec &spec, const std::string &at,
                          const TensorSpec &bound, const std::string &boundAt,
                          bool toOutput) {
  if (spec.placement != bound.placement)
    return fail(TSR_ERROR_PARSE, at + " '" + spec.name + "' lives in " +
                                     tsr_placement_name(spec.placement) +
                                     " memory but binds by name to " + boundAt +
                                     ", which lives in " +
                                     tsr_placement_name(bound.placement) +
                                     " memory");
  if (spec.dtype == bound.dtype && spec.shape == bound.shape &&
      (toOutput || spec.role == bound.role))
    return TSR_OK;
  return fail(TSR_ERROR_PARSE, at + " '" + spec.name + "' is " + typeOf(spec) +
                                   " (" + tsr_role_name(spec.role) +
                                   ") but binds by name to " + boundAt +
                                   ", which is " + typeOf(bound) + " (" +
                                   tsr_role_name(bound.role) + ")");
}

/// This process's rank in the launcher's world (mpirun, srun), 0 without
/// one.
int64_t launcherRank() {
  for (const char *name :
       {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char *value = std::getenv(name))
      return std::atoll(value);
  return 0;
}

/// Reads a call's "ranks" ({"pp": 1}: the ranks with that coordinate make
/// the call) and sets `mine` to whether this process is one of them.
tsr_status_t parseRanks(const Json &entry, const std::string &at, Manifest &out,
                        size_t program, bool &mine) {
  mine = true;
  const Json *ranks = findMember(entry, "ranks");
  if (!ranks)
    return TSR_OK;
  if (!ranks->is_object())
    return fail(TSR_ERROR_PARSE, at + ".ranks must be an object such as "
                                      "{\"pp\": 1}");
  if (out.selectedRank < 0)
    out.selectedRank = launcherRank();
  for (const auto &item : ranks->items()) {
    const std::string &axis = item.key();
    const Json &value = item.value();
    int64_t index = findMeshAxis(out, axis), coord;
    if (index < 0)
      return fail(TSR_ERROR_PARSE,
                  at + ".ranks: '" + axis + "' is not an axis of mesh");
    int64_t size = out.mesh[index].second;
    if (!getInteger(value, coord) || coord < 0 || coord >= size)
      return fail(TSR_ERROR_PARSE, at + ".ranks." + axis +
                                       " must be a coordinate from 0 to " +
                                       std::to_string(size - 1));
    // Row-major over the mesh, the last axis innermost.
    int64_t inner = 1;
    for (size_t a = index + 1; a < out.mesh.size(); ++a)
      inner *= out.mesh[a].second;
    bool here = (out.selectedRank / inner) % size == coord;
    if (!here)
      out.otherCalls.push_back({program, index, coord});
    mine &= here;
  }
  return TSR_OK;
}

/// Parses "parameter_server" (optional) and finds whether this process,
/// by the launcher's world rank, is a worker or which server.
tsr_status_t parseParameterServer(const Json &root, Manifest &out) {
  const Json *object = findMember(root, "parameter_server");
  if (!object)
    return TSR_OK;
  const std::string at = "parameter_server";
  if (!object->is_object())
    return fail(TSR_ERROR_PARSE, at + " must be an object");
  ParameterServerSpec &ps = out.parameterServer;
  bool hasServers = false;
  if (tsr_status_t s =
          optionalInteger(*object, "servers", at, 1, ps.servers, &hasServers))
    return s;
  if (!hasServers)
    return fail(TSR_ERROR_PARSE, "missing \"servers\" in " + at);
  std::string mode;
  if (tsr_status_t s = requireString(*object, "mode", at, mode))
    return s;
  if (mode == "async") {
    bool hasStaleness = false;
    if (tsr_status_t s = optionalInteger(*object, "staleness", at, 0,
                                         ps.staleness, &hasStaleness))
      return s;
    if (!hasStaleness)
      return fail(TSR_ERROR_PARSE,
                  "missing \"staleness\" in " + at + " (mode \"async\")");
  } else if (mode != "sync") {
    return fail(TSR_ERROR_PARSE, at + ".mode is \"" + mode +
                                     "\", expected \"sync\" or \"async\"");
  }
  const Json *programs = findMember(*object, "programs");
  if (!programs || !programs->is_array() ||
      static_cast<int64_t>(programs->size()) != ps.servers)
    return fail(TSR_ERROR_PARSE, at +
                                     ".programs must list one program per "
                                     "server (" +
                                     std::to_string(ps.servers) + ")");
  for (size_t s = 0; s < programs->size(); ++s) {
    const Json &name = (*programs)[s];
    if (!name.is_string() ||
        std::none_of(out.programs.begin(), out.programs.end(),
                     [&](const ProgramSpec &p) {
                       return p.name == name.get<std::string>();
                     }))
      return fail(TSR_ERROR_PARSE,
                  at + "." + where("programs", s) + " must name a program");
    ps.programs.push_back(name.get<std::string>());
  }
  int64_t dp = findMeshAxis(out, "dp");
  if (dp < 0 || out.mesh.size() != 1)
    return fail(TSR_ERROR_PARSE, at + " needs the mesh to be one axis \"dp\" "
                                      "(the workers)");
  ps.workers = out.mesh[dp].second;
  if (out.selectedRank < 0)
    out.selectedRank = launcherRank();
  if (out.selectedRank >= ps.workers + ps.servers)
    return fail(TSR_ERROR_MISMATCH,
                "the launcher says this process is rank " +
                    std::to_string(out.selectedRank) +
                    ", but the artifact has " + std::to_string(ps.workers) +
                    " workers and " + std::to_string(ps.servers) +
                    " parameter servers (launch " +
                    std::to_string(ps.workers + ps.servers) + " ranks)");
  if (out.selectedRank >= ps.workers)
    ps.server = out.selectedRank - ps.workers;
  return TSR_OK;
}

/// Parses "schedule" and derives the step's inputs and outputs: a program
/// input binds by name to an output of an earlier call of the step, else
/// to the step input of that name (added on first use). A parameter
/// server's step is its own program alone.
tsr_status_t parseSchedule(const Json &root, Manifest &out) {
  const Json *list = findMember(root, "schedule");
  Json serverSchedule;
  if (out.parameterServer.server >= 0) {
    serverSchedule = Json::array(
        {Json{{"program",
               out.parameterServer.programs[out.parameterServer.server]}}});
    list = &serverSchedule;
  }
  if (!list)
    return fail(TSR_ERROR_PARSE, "missing \"schedule\"");
  if (!list->is_array() || list->empty())
    return fail(TSR_ERROR_PARSE, "schedule must be a non-empty array");
  std::vector<std::string> inputPaths;
  std::vector<int64_t> updatedBy;
  for (size_t c = 0; c < list->size(); ++c) {
    const Json &entry = (*list)[c];
    std::string at = where("schedule", c), name;
    if (!entry.is_object())
      return fail(TSR_ERROR_PARSE, at + " must be an object");
    if (tsr_status_t s = requireString(entry, "program", at, name))
      return s;
    CallSpec call;
    while (call.program < out.programs.size() &&
           out.programs[call.program].name != name)
      ++call.program;
    if (call.program == out.programs.size())
      return fail(TSR_ERROR_PARSE,
                  at + ".program: no program is named '" + name + "'");
    bool mine = true;
    if (tsr_status_t s = parseRanks(entry, at, out, call.program, mine))
      return s;
    if (!mine)
      continue;
    const ProgramSpec &program = out.programs[call.program];
    std::string owner = where("programs", call.program);
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      const TensorSpec &spec = program.inputs[i];
      std::string specAt = owner + "." + where("inputs", i);
      Binding binding;
      bool found = false;
      for (size_t k = out.outputs.size(); k-- > 0 && !found;)
        if (out.outputs[k].name == spec.name) {
          binding = {true, k};
          found = true;
        }
      for (size_t k = 0; k < out.inputs.size() && !found; ++k)
        if (out.inputs[k].name == spec.name) {
          binding = {false, k};
          found = true;
        }
      if (!found) {
        binding = {false, out.inputs.size()};
        out.inputs.push_back(spec);
        inputPaths.push_back(specAt);
        updatedBy.push_back(-1);
      } else if (tsr_status_t s = checkBinding(
                     spec, specAt,
                     binding.fromOutput ? out.outputs[binding.index]
                                        : out.inputs[binding.index],
                     binding.fromOutput ? outputPath(out, binding.index)
                                        : inputPaths[binding.index],
                     binding.fromOutput)) {
        return s;
      }
      if (program.onHost && !binding.fromOutput)
        out.inputs[binding.index].onHost = true;
      call.inputs.push_back(binding);
    }
    call.firstOutput = out.outputs.size();
    out.schedule.push_back(call);
    for (size_t k = 0; k < program.outputs.size(); ++k) {
      TensorSpec spec = program.outputs[k];
      spec.onHost = program.onHost;
      size_t index = out.outputs.size();
      for (int64_t *link : {&spec.updates, &spec.of}) {
        if (*link < 0)
          continue;
        const Binding &source = out.schedule.back().inputs[*link];
        if (source.fromOutput)
          return fail(TSR_ERROR_PARSE,
                      outputPath(out, index) + " '" + spec.name +
                          "' refers to an input that an earlier call "
                          "computes; only step inputs can be updated or "
                          "differentiated");
        *link = static_cast<int64_t>(source.index);
      }
      if (spec.updates >= 0) {
        int64_t &by = updatedBy[spec.updates];
        if (by >= 0)
          return fail(TSR_ERROR_PARSE, outputPath(out, index) + " updates " +
                                           inputPaths[spec.updates] + " '" +
                                           spec.name + "', which " +
                                           outputPath(out, by) +
                                           " already updates");
        by = static_cast<int64_t>(index);
      }
      out.outputs.push_back(std::move(spec));
    }
  }
  return TSR_OK;
}

/// Resolves train.tokens.`key` to the index of an input of `role`.
tsr_status_t resolveTokenInput(const Json &tokens, const char *key,
                               tsr_role_t role, const Manifest &manifest,
                               int64_t &out) {
  const std::string at = "train.tokens";
  std::string name;
  if (tsr_status_t s = requireString(tokens, key, at, name))
    return s;
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    const TensorSpec &input = manifest.inputs[i];
    if (input.name != name)
      continue;
    if (input.role != role)
      return fail(TSR_ERROR_PARSE,
                  at + "." + key + ": " + describe("input", i, input) +
                      " has role \"" + tsr_role_name(input.role) +
                      "\", expected \"" + tsr_role_name(role) + "\"");
    if (input.dtype != TSR_DTYPE_INT32 && input.dtype != TSR_DTYPE_INT64)
      return fail(TSR_ERROR_PARSE,
                  at + "." + key + ": " + describe("input", i, input) + " is " +
                      typeOf(input) + ", expected int32 or int64");
    if (input.shape.size() != 2)
      return fail(TSR_ERROR_PARSE,
                  at + "." + key + ": " + describe("input", i, input) + " is " +
                      typeOf(input) + ", expected shape [batch, tokens]");
    out = static_cast<int64_t>(i);
    return TSR_OK;
  }
  return fail(TSR_ERROR_PARSE,
              at + "." + key + ": no input is named '" + name + "'");
}

tsr_status_t parseTrain(const Json &root, Manifest &manifest) {
  TrainSpec &train = manifest.train;
  const Json *object = findMember(root, "train");
  if (!object)
    return fail(TSR_ERROR_PARSE,
                "missing \"train\" (required in mode \"train\")");
  if (!object->is_object())
    return fail(TSR_ERROR_PARSE, "train must be an object");
  bool hasBatch = false;
  if (tsr_status_t s = optionalInteger(*object, "batch_size", "train", 1,
                                       train.batchSize, &hasBatch))
    return s;
  if (!hasBatch)
    return fail(TSR_ERROR_PARSE, "missing \"batch_size\" in train");
  if (tsr_status_t s = optionalInteger(*object, "micro_batches", "train", 1,
                                       train.microBatches))
    return s;
  train.globalBatchSize = train.batchSize;
  if (tsr_status_t s = optionalInteger(*object, "global_batch_size", "train", 1,
                                       train.globalBatchSize))
    return s;
  int64_t dp = findMeshAxis(manifest, "dp");
  int64_t ranks = dp < 0 ? 1 : manifest.mesh[dp].second;
  if (train.globalBatchSize != train.batchSize * ranks)
    return fail(TSR_ERROR_PARSE,
                "train.global_batch_size " +
                    std::to_string(train.globalBatchSize) +
                    " is not batch_size " + std::to_string(train.batchSize) +
                    " times the dp size " + std::to_string(ranks));
  if (tsr_status_t s =
          optionalInteger(*object, "num_classes", "train", 1, train.numClasses))
    return s;
  if (tsr_status_t s =
          optionalInteger(*object, "ignore_index", "train", INT64_MIN,
                          train.ignoreIndex, &train.hasIgnoreIndex))
    return s;
  if (const Json *hparams = findMember(*object, "hparams")) {
    if (!hparams->is_object())
      return fail(TSR_ERROR_PARSE, "train.hparams must be an object");
    for (const auto &[name, value] : hparams->items()) {
      if (!value.is_string())
        return fail(TSR_ERROR_PARSE, "train.hparams." + name +
                                         " must be a string (the value as "
                                         "the compiler's flag spelled it)");
      train.hparams.emplace_back(name, value.get<std::string>());
    }
    std::sort(train.hparams.begin(), train.hparams.end());
  }
  if (const Json *local = findMember(root, "local_sgd")) {
    if (!local->is_object())
      return fail(TSR_ERROR_PARSE, "local_sgd must be an object");
    bool hasSteps = false;
    if (tsr_status_t s = optionalInteger(*local, "steps", "local_sgd", 1,
                                         train.localSteps, &hasSteps))
      return s;
    if (!hasSteps)
      return fail(TSR_ERROR_PARSE, "missing \"steps\" in local_sgd");
  }
  // A parameter server's program takes no batch.
  const Json *tokens = manifest.parameterServer.server < 0
                           ? findMember(*object, "tokens")
                           : nullptr;
  if (tokens) {
    if (!tokens->is_object())
      return fail(TSR_ERROR_PARSE, "train.tokens must be an object");
    if (tsr_status_t s = resolveTokenInput(*tokens, "input", TSR_ROLE_DATA,
                                           manifest, train.tokenInput))
      return s;
    if (tsr_status_t s = resolveTokenInput(*tokens, "label", TSR_ROLE_LABEL,
                                           manifest, train.tokenLabel))
      return s;
    const TensorSpec &input = manifest.inputs[train.tokenInput];
    const TensorSpec &label = manifest.inputs[train.tokenLabel];
    if (input.shape != label.shape)
      return fail(TSR_ERROR_PARSE,
                  "train.tokens: the input '" + input.name + "' is " +
                      typeOf(input) + " but the label '" + label.name +
                      "' is " + typeOf(label) + "; shapes must be equal");
  }
  return TSR_OK;
}

/// Resolves train.eval: a program outside the schedule whose inputs are
/// step inputs of the same name, dtype and shape, with a loss output.
tsr_status_t resolveEval(const Json &train, Manifest &manifest) {
  const Json *name = findMember(train, "eval");
  if (!name || manifest.parameterServer.server >= 0)
    return TSR_OK;
  const std::string at = "train.eval";
  if (!name->is_string())
    return fail(TSR_ERROR_PARSE, at + " must name a program");
  TrainSpec &spec = manifest.train;
  for (size_t p = 0; p < manifest.programs.size(); ++p)
    if (manifest.programs[p].name == name->get<std::string>())
      spec.evalProgram = static_cast<int64_t>(p);
  if (spec.evalProgram < 0)
    return fail(TSR_ERROR_PARSE, at + ": no program is named '" +
                                     name->get<std::string>() + "'");
  const ProgramSpec &program = manifest.programs[spec.evalProgram];
  for (const TensorSpec &input : program.inputs) {
    size_t k = 0;
    while (k < manifest.inputs.size() && manifest.inputs[k].name != input.name)
      ++k;
    if (k == manifest.inputs.size() ||
        manifest.inputs[k].dtype != input.dtype ||
        manifest.inputs[k].shape != input.shape)
      return fail(TSR_ERROR_PARSE,
                  at + ": program '" + program.name + "' takes '" + input.name +
                      "' (" + typeOf(input) +
                      "), which is not a step input of that type");
    spec.evalInputs.push_back(k);
  }
  bool found = false;
  for (size_t o = 0; o < program.outputs.size() && !found; ++o) {
    const TensorSpec &output = program.outputs[o];
    if (output.role == TSR_ROLE_LOSS && output.shape.empty() &&
        (output.dtype == TSR_DTYPE_FLOAT32 ||
         output.dtype == TSR_DTYPE_FLOAT64)) {
      spec.evalLoss = o;
      found = true;
    }
  }
  if (!found)
    return fail(TSR_ERROR_PARSE, at + ": program '" + program.name +
                                     "' has no float scalar output with "
                                     "role \"loss\"");
  return TSR_OK;
}

/// The checks of mode "train" that span several inputs and outputs.
tsr_status_t checkTrain(Manifest &manifest) {
  const TrainSpec &train = manifest.train;
  bool hasParams = false;
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    const TensorSpec &input = manifest.inputs[i];
    hasParams |= input.role == TSR_ROLE_PARAM;
    bool batched = input.role == TSR_ROLE_DATA || input.role == TSR_ROLE_LABEL;
    if (batched && (input.shape.empty() || input.shape[0] != train.batchSize))
      return fail(TSR_ERROR_PARSE,
                  describe("input", i, input) + " (" +
                      tsr_role_name(input.role) + ") is " + typeOf(input) +
                      " but its first dimension must be train.batch_size " +
                      std::to_string(train.batchSize));
    bool integral =
        input.dtype != TSR_DTYPE_FLOAT16 && input.dtype != TSR_DTYPE_BFLOAT16 &&
        input.dtype != TSR_DTYPE_FLOAT32 && input.dtype != TSR_DTYPE_FLOAT64 &&
        input.dtype != TSR_DTYPE_BOOL;
    if ((input.role == TSR_ROLE_RNG || input.role == TSR_ROLE_SYNC) &&
        (input.dtype != TSR_DTYPE_INT64 || !input.shape.empty()))
      return fail(TSR_ERROR_PARSE, describe("input", i, input) + " (" +
                                       tsr_role_name(input.role) + ") is " +
                                       typeOf(input) +
                                       ", expected an int64 scalar");
    if (train.numClasses && input.role == TSR_ROLE_LABEL && !integral)
      return fail(TSR_ERROR_PARSE, "train.num_classes is set but the label " +
                                       describe("input", i, input) + " is " +
                                       typeOf(input) +
                                       ", not an integer tensor");
  }
  if (hasParams && manifest.onnx.empty())
    return fail(TSR_ERROR_PARSE, "missing \"onnx\" (param inputs take their "
                                 "initial values from its initializers)");
  int64_t loss = -1;
  for (size_t i = 0; i < manifest.outputs.size(); ++i) {
    const TensorSpec &output = manifest.outputs[i];
    if (output.role != TSR_ROLE_LOSS)
      continue;
    if (loss >= 0)
      return fail(TSR_ERROR_PARSE, outputPath(manifest, i) +
                                       ": a second output with role "
                                       "\"loss\" (" +
                                       outputPath(manifest, loss) + " is one)");
    if ((output.dtype != TSR_DTYPE_FLOAT32 &&
         output.dtype != TSR_DTYPE_FLOAT64) ||
        !output.shape.empty())
      return fail(TSR_ERROR_PARSE,
                  outputPath(manifest, i) + " (loss '" + output.name +
                      "') is " + typeOf(output) +
                      ", expected a float32 or float64 scalar");
    loss = static_cast<int64_t>(i);
  }
  if (loss < 0)
    return fail(TSR_ERROR_PARSE, "no output has role \"loss\" (mode "
                                 "\"train\" needs exactly one)");
  manifest.train.lossOutput = static_cast<size_t>(loss);
  return TSR_OK;
}

} // namespace

tsr_status_t tsr::parseManifest(const std::string &text, Manifest &out) {
  Json root;
  if (tsr_status_t s = parseJson(text, root))
    return s;
  if (!root.is_object())
    return fail(TSR_ERROR_PARSE, "top level must be a JSON object");
  std::string format;
  if (tsr_status_t s = requireString(root, "format", "", format))
    return s;
  if (format != "tessera-artifact")
    return fail(TSR_ERROR_PARSE,
                "format is \"" + format + "\", expected \"tessera-artifact\"");
  const Json *version = findMember(root, "version");
  if (!version)
    return fail(TSR_ERROR_PARSE, "missing \"version\"");
  int64_t versionNumber;
  if (getInteger(*version, versionNumber) && versionNumber >= 0 &&
      versionNumber < kManifestVersion)
    return fail(TSR_ERROR_UNSUPPORTED,
                "manifest version " + std::to_string(versionNumber) +
                    " was written by an older tessera-compile; this runtime "
                    "reads version " +
                    std::to_string(kManifestVersion) +
                    " (recompile the model with this tessera-compile)");
  if (!getInteger(*version, versionNumber) || versionNumber != kManifestVersion)
    return fail(TSR_ERROR_UNSUPPORTED,
                "unsupported manifest version (this runtime reads version " +
                    std::to_string(kManifestVersion) + ")");
  if (tsr_status_t s = requireString(root, "mode", "", out.mode, true))
    return s;
  if (tsr_status_t s = requireString(root, "target", "", out.target, true))
    return s;
  if (tsr_status_t s = requireString(root, "library", "", out.library))
    return s;
  if (out.library.empty())
    return fail(TSR_ERROR_PARSE, "library must not be empty");
  if (tsr_status_t s = requireString(root, "onnx", "", out.onnx, true))
    return s;
  // The mesh first: the programs' tensors are split along its axes.
  if (tsr_status_t s = parseParallel(root, out))
    return s;
  if (tsr_status_t s = parsePrograms(root, out))
    return s;
  if (tsr_status_t s = parseParameterServer(root, out))
    return s;
  if (tsr_status_t s = parseProfileRegions(root, out))
    return s;
  if (tsr_status_t s = parseSchedule(root, out))
    return s;
  if (out.mode != "train")
    return TSR_OK;
  if (tsr_status_t s = parseTrain(root, out))
    return s;
  if (tsr_status_t s = resolveEval(*findMember(root, "train"), out))
    return s;
  return checkTrain(out);
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

const char *tsr_role_name(tsr_role_t role) {
  for (const RoleName &entry : kRoles)
    if (entry.role == role)
      return entry.name;
  return "";
}
