// The repair planner's plan, shared by its source files (repair_planner.cc plans and works it,
// repair_jobs.cc ends the jobs it shows done). Internal to lib/repair.
#ifndef ECD_LIB_REPAIR_REPAIR_PLAN_H_
#define ECD_LIB_REPAIR_REPAIR_PLAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/repair/repair_planner.h"

namespace ecd::repair {

// One stripe to repair, and how much redundancy it has left (healthy blocks minus M).
struct RepairPlanner::Work {
  int64_t object_id = 0;
  std::string object;
  uint64_t stripe = 0;
  uint32_t redundancy = 0;
  bool move_only = false;  // every block is healthy; some must move (evacuation, media range)
  uint32_t parity = 0;
  int64_t move_device = -1;  // the device a block must move off, if any: credited to its job
  uint64_t bytes = 0;        // an estimate of what its repair writes
};

// What one plan found, built without the planner's lock.
struct RepairPlanner::Findings {
  std::vector<Work> queue;
  std::map<uint32_t, std::map<uint32_t, uint64_t>> degraded;  // K -> redundancy -> stripes
  std::map<uint32_t, uint64_t> lost_by_parity;
  std::vector<uint64_t> blocks_on;  // blocks to move off each failing device, repairable stripes
  std::vector<uint64_t> lost_on;    // blocks on each failing device in stripes that are lost
  std::vector<uint64_t> stripes_in_range;  // repairable stripes in each media range
  uint64_t waiting = 0;
  uint64_t lost = 0;
};

}  // namespace ecd::repair

#endif  // ECD_LIB_REPAIR_REPAIR_PLAN_H_
