//===- Profile.cpp - Time per region of compiled programs -----------------===//
//
// The other end of tsr-cpu-profile-regions: compiled programs call
// tsr_profile_begin(id) and tsr_profile_end(id) around every kernel, library
// call and copy. Outside a profile both return after one load; inside one
// they read the monotonic clock and add the elapsed time to the region (and
// with a trace, record the call). tessera-run --profile and --trace read
// the sums and the calls back through the C API.
//
//===----------------------------------------------------------------------===//

#include "DurableFile.h"
#include "Json.h"
#include "RuntimeInternal.h"

#include <atomic>
#include <chrono>
#include <vector>

using namespace tsr;

namespace {

using Clock = std::chrono::steady_clock;

/// One recorded call: a region id, or -1 - P for an invocation of program
/// P; start and duration in seconds from the profile's start.
struct Event {
  int32_t region;
  double start, seconds;
};

struct Profile {
  std::atomic<bool> running{false};
  bool trace = false;
  Clock::time_point origin;
  /// The starts of the regions entered and not yet left: a pipeline's
  /// action encloses the regions of its cell.
  std::vector<Clock::time_point> open;
  std::vector<double> seconds;
  std::vector<int64_t> calls;
  std::vector<Event> events;

  double since(Clock::time_point t) const {
    return std::chrono::duration<double>(t - origin).count();
  }
};

Profile &profile() {
  static Profile p;
  return p;
}

} // namespace

ProfilePause::ProfilePause() : wasRunning(profile().running.exchange(false)) {}

ProfilePause::~ProfilePause() {
  if (wasRunning)
    profile().running = true;
}

ProfileSpan::ProfileSpan(size_t program)
    : program(program), active(profile().running && profile().trace),
      start(active ? profile().since(Clock::now()) : 0) {}

ProfileSpan::~ProfileSpan() {
  Profile &p = profile();
  if (!active || !p.running)
    return;
  p.events.push_back({-1 - static_cast<int32_t>(program), start,
                      p.since(Clock::now()) - start});
}

extern "C" {

TSR_API void tsr_profile_begin(int32_t /*region*/) {
  Profile &p = profile();
  if (!p.running.load(std::memory_order_relaxed))
    return;
  p.open.push_back(Clock::now());
}

TSR_API void tsr_profile_end(int32_t region) {
  Profile &p = profile();
  if (!p.running.load(std::memory_order_relaxed) || region < 0 ||
      p.open.empty())
    return;
  Clock::time_point now = Clock::now(), start = p.open.back();
  p.open.pop_back();
  auto index = static_cast<size_t>(region);
  if (index >= p.seconds.size()) {
    p.seconds.resize(index + 1, 0);
    p.calls.resize(index + 1, 0);
  }
  double seconds = std::chrono::duration<double>(now - start).count();
  p.seconds[index] += seconds;
  ++p.calls[index];
  if (p.trace)
    p.events.push_back({region, p.since(start), seconds});
}

} // extern "C"

void tsr_profile_start(int trace) {
  Profile &p = profile();
  p.running = false;
  p.seconds.clear();
  p.calls.clear();
  p.events.clear();
  p.open.clear();
  p.trace = trace != 0;
  p.origin = Clock::now();
  p.running = true;
}

void tsr_profile_stop(void) { profile().running = false; }

size_t tsr_artifact_num_profile_regions(const tsr_artifact_t *artifact) {
  return artifact ? artifact->manifest.profileRegions.size() : 0;
}

tsr_status_t tsr_artifact_profile_region(const tsr_artifact_t *artifact,
                                         size_t index,
                                         tsr_profile_region_t *out) {
  if (!artifact || !out)
    return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
  const auto &regions = artifact->manifest.profileRegions;
  if (index >= regions.size())
    return fail(TSR_ERROR_INVALID_ARGUMENT, "profile region " +
                                                std::to_string(index) + " of " +
                                                std::to_string(regions.size()));
  const Manifest::ProfileRegion &region = regions[index];
  const Profile &p = profile();
  *out = tsr_profile_region_t{region.kind.c_str(),
                              region.callee.c_str(),
                              region.node.c_str(),
                              region.backward ? 1 : 0,
                              index < p.seconds.size() ? p.seconds[index] : 0,
                              index < p.calls.size() ? p.calls[index] : 0};
  return TSR_OK;
}

tsr_status_t tsr_profile_write_trace(const tsr_artifact_t *artifact,
                                     const char *path, int pid) {
  return guard([&] {
    if (!artifact || !path)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "null argument");
    const Manifest &manifest = artifact->manifest;
    const Profile &p = profile();
    Json events = Json::array();
    for (const Event &event : p.events) {
      Json entry;
      if (event.region < 0) {
        size_t program = static_cast<size_t>(-1 - event.region);
        entry["name"] = program < manifest.programs.size()
                            ? manifest.programs[program].name
                            : "program";
        entry["cat"] = "program";
      } else {
        auto index = static_cast<size_t>(event.region);
        if (index >= manifest.profileRegions.size())
          return fail(TSR_ERROR_INVALID_ARGUMENT,
                      "the profile recorded region " + std::to_string(index) +
                          ", which " + artifact->dir +
                          "/manifest.json does not name");
        const Manifest::ProfileRegion &region = manifest.profileRegions[index];
        std::string node = !region.node.empty()     ? region.node
                           : !region.callee.empty() ? region.callee
                                                    : region.kind;
        entry["name"] = region.backward ? "grad " + node : node;
        entry["cat"] = region.kind;
        entry["args"] = Json{{"callee", region.callee}};
      }
      entry["ph"] = "X";
      entry["ts"] = event.start * 1e6;
      entry["dur"] = event.seconds * 1e6;
      entry["pid"] = pid;
      // A pipeline's actions on a row of their own above the regions they
      // enclose.
      bool action =
          event.region >= 0 &&
          manifest.profileRegions[static_cast<size_t>(event.region)].kind ==
              "action";
      entry["tid"] = action ? 1 : 0;
      events.push_back(std::move(entry));
    }
    Json trace{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
    std::string error;
    if (!writeFileDurably(path, dumpJson(trace) + "\n", error))
      return fail(TSR_ERROR_IO, error);
    return TSR_OK;
  });
}
