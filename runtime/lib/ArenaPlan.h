//===- ArenaPlan.h - Offsets for one call's blocks in one arena -*- C++ -*-===//
//
// A call of a compiled program allocates and frees the same blocks in the
// same order every time: its shapes are static. planArena takes one call's
// sequence of allocations and frees and places every block at a fixed
// offset of one buffer, the arena, so that no two blocks live at the same
// time share a byte. The runtime then serves the next calls' allocations
// from the arena (Memory.cpp): no malloc, no page faults after the first
// call, and an arena about as large as the most bytes ever live at once.
//
// The placement is the greedy-by-size heuristic (Pisarchyk and Lee,
// "Efficient Memory Management for Deep Neural Net Inference", 2020, the
// offset calculation of TFLite's arena planner; onnxruntime's memory
// patterns record a run's allocations for the same purpose): blocks in
// order of decreasing size, each in the smallest gap that fits it between
// the blocks already placed whose lifetimes overlap its own, or above them
// all. The arena is never smaller than the peak of live bytes and, on the
// traces of real training steps, within a few percent of it; planArena
// reports both.
//
// Nothing here depends on the rest of the runtime, so that unit tests can
// compile it directly. Nothing here is part of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_ARENAPLAN_H
#define TESSERA_RUNTIME_LIB_ARENAPLAN_H

#include <cstdint>
#include <vector>

namespace tsr {

/// One allocation (of `bytes`) or one free of a call. `block` numbers the
/// call's allocations from 0 in order; a free names the block it frees.
struct ArenaEvent {
  uint64_t bytes = 0;
  uint32_t block = 0;
  bool isFree = false;

  bool operator==(const ArenaEvent &other) const {
    return bytes == other.bytes && block == other.block &&
           isFree == other.isFree;
  }
};

/// Where each block of one call goes.
struct ArenaPlan {
  /// The call the plan was made from; a later call follows the plan while
  /// its events repeat these.
  std::vector<ArenaEvent> events;
  /// Per block, its offset from the arena's start.
  std::vector<uint64_t> offsets;
  /// The arena's size: the highest end of a placed block.
  uint64_t bytes = 0;
  /// The most bytes (each block rounded up to the alignment) live at once:
  /// no placement needs less.
  uint64_t peak = 0;
};

/// Plans `events` with every offset and size rounded up to `alignment` (a
/// power of two). Returns false, leaving `out` empty, unless every block is
/// allocated once and freed once after its allocation, and the frees name
/// only blocks allocated before them.
bool planArena(std::vector<ArenaEvent> events, uint64_t alignment,
               ArenaPlan &out);

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_ARENAPLAN_H
