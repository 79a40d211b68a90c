//===- ArenaPlan.cpp - Offsets for one call's blocks in one arena ---------===//

#include "ArenaPlan.h"

#include <algorithm>
#include <limits>

using namespace tsr;

bool tsr::planArena(std::vector<ArenaEvent> events, uint64_t alignment,
                    ArenaPlan &out) {
  out = ArenaPlan();
  constexpr size_t kOpen = std::numeric_limits<size_t>::max();
  // Each block's lifetime [start, end) in event positions, and its size.
  std::vector<size_t> start, end;
  std::vector<uint64_t> size;
  uint64_t live = 0, peak = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const ArenaEvent &event = events[i];
    if (!event.isFree) {
      if (event.block != start.size())
        return false;
      uint64_t rounded = (event.bytes + alignment - 1) & ~(alignment - 1);
      start.push_back(i);
      end.push_back(kOpen);
      size.push_back(rounded);
      live += rounded;
      peak = std::max(peak, live);
      continue;
    }
    if (event.block >= start.size() || end[event.block] != kOpen)
      return false;
    end[event.block] = i;
    live -= size[event.block];
  }
  if (std::find(end.begin(), end.end(), kOpen) != end.end())
    return false;

  size_t count = start.size();
  std::vector<uint32_t> order(count);
  for (uint32_t b = 0; b < count; ++b)
    order[b] = b;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return size[a] != size[b] ? size[a] > size[b] : a < b;
  });

  std::vector<uint64_t> offsets(count, 0);
  // The blocks placed so far, by offset.
  std::vector<uint32_t> placed;
  placed.reserve(count);
  uint64_t bytes = 0;
  for (uint32_t b : order) {
    // Walk the placed blocks whose lifetimes overlap b's in address order:
    // `cursor` is the lowest address above all of them seen so far, and a
    // gap opens wherever the next one starts above it.
    uint64_t cursor = 0, best = 0;
    uint64_t bestGap = std::numeric_limits<uint64_t>::max();
    for (uint32_t p : placed) {
      if (start[p] >= end[b] || start[b] >= end[p])
        continue;
      if (offsets[p] >= cursor + size[b] && offsets[p] - cursor < bestGap) {
        bestGap = offsets[p] - cursor;
        best = cursor;
      }
      cursor = std::max(cursor, offsets[p] + size[p]);
    }
    offsets[b] =
        bestGap == std::numeric_limits<uint64_t>::max() ? cursor : best;
    bytes = std::max(bytes, offsets[b] + size[b]);
    auto at = std::upper_bound(
        placed.begin(), placed.end(), offsets[b],
        [&](uint64_t offset, uint32_t p) { return offset < offsets[p]; });
    placed.insert(at, b);
  }

  out.events = std::move(events);
  out.offsets = std::move(offsets);
  out.bytes = bytes;
  out.peak = peak;
  return true;
}
