// EventPolicy: turns device health reports (CXL event records, decoded by lib/cxl) into store
// actions, and carries them out through the rebuild scheduler:
//
//   Fatal severity                                   -> the device is failed at once
//   Memory Module: replacement needed (header flag or
//     health status), media status "data lost" or
//     "loss imminent", life used or temperature
//     critical                                        -> evacuate the device (highest priority)
//   General Media / DRAM with the uncorrectable or
//     threshold descriptor bit                       -> move the blocks whose extents overlap the
//                                                       reported DPA to other devices
//   anything else (Informational included)           -> counted
//
// Each action is configurable (count, ignore or the action above) and is logged with the record
// that caused it. A device's DPA space maps 1:1 onto its namespace bytes, so DPA d lies in LBA
// d / lba_size (docs/cxl.md).
#ifndef ECD_LIB_REPAIR_EVENT_POLICY_H_
#define ECD_LIB_REPAIR_EVENT_POLICY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/repair/repair_planner.h"
#include "lib/store/store.h"
#include "lib/util/enum_table.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

// The fields of a health report the policy looks at, independent of the record's byte format.
struct HealthEvent {
  enum class Kind { kGeneralMedia, kDram, kMemoryModule, kOther };
  Kind kind = Kind::kOther;
  uint32_t device = 0;
  int log = 0;       // 0 Informational, 1 Warning, 2 Failure, 3 Fatal
  int severity = 0;  // header flags bits 1:0, same scale
  bool permanent = false;
  bool maintenance_needed = false;
  bool performance_degraded = false;
  bool replacement_needed = false;  // header flag
  // General Media / DRAM.
  uint64_t dpa = 0;        // 64-byte aligned
  uint8_t descriptor = 0;  // bit 0 uncorrectable, bit 1 threshold, bit 2 poison list overflow
  // Memory Module.
  uint8_t health_status = 0;      // bit 2 replacement needed
  uint8_t media_status = 0;       // 3 all data lost, 6 write persistency loss imminent, 9 ...
  uint8_t additional_status = 0;  // bits 1:0 life used, 3:2 temperature (2 = critical)
  uint8_t life_used = 0;          // percent
  int16_t temperature = 0;        // degrees C
  std::string description;        // the record, one line, for the log
};

enum class PolicyAction { kIgnore, kCount, kRebuildRange, kEvacuate, kFail };
// Every action and its name, the one list flags, help, parsing and counters are made from.
inline constexpr EnumName<PolicyAction> kPolicyActionEntries[] = {
    {PolicyAction::kIgnore, "ignore"},
    {PolicyAction::kCount, "count"},
    {PolicyAction::kRebuildRange, "rebuild"},
    {PolicyAction::kEvacuate, "evacuate"},
    {PolicyAction::kFail, "fail"}};
inline constexpr EnumTable kPolicyActions(kPolicyActionEntries, "unknown");
static_assert(kPolicyActions.Valid());

const char* PolicyActionName(PolicyAction a);
// The action named `name`; InvalidArgument naming the actions there are.
absl::StatusOr<PolicyAction> ParsePolicyAction(const std::string& name);
// The names of every action, in kPolicyActions' order.
std::vector<std::string> PolicyActionNames();

struct EventPolicyOptions {
  PolicyAction media_error = PolicyAction::kRebuildRange;  // GM/DRAM uncorrectable or threshold
  PolicyAction module_critical = PolicyAction::kEvacuate;  // Memory Module conditions above
  PolicyAction fatal = PolicyAction::kFail;                // Fatal severity or Fatal log
  PolicyAction other = PolicyAction::kCount;               // everything else
  uint32_t life_used_critical = 95;                        // percent, also counts as critical
  int temperature_critical = 85;                           // degrees C
};

// Thread safety: Handle may be called concurrently.
class EventPolicy {
 public:
  // Both must outlive the policy.
  EventPolicy(store::Store* store, RepairPlanner* rebuilds, const EventPolicyOptions& options);

  // What the options say to do with `e`, and why.
  std::pair<PolicyAction, std::string> Decide(const HealthEvent& e) const;
  // Whether `e` names something real, for reports from outside the devices (Cxl.Ingest) to be
  // checked before any is acted on. InvalidArgument when e.device is not a device of the store,
  // or a General Media or DRAM report's DPA is at or past the end of its device (a DPA maps 1:1
  // onto the namespace's bytes); the message says which, without saying where `e` came from.
  absl::Status Check(const HealthEvent& e) const;
  // Decides and acts; returns the action taken (kCount/kIgnore do nothing but count).
  PolicyAction Handle(const HealthEvent& e);

  // Events handled, by action name.
  std::map<std::string, uint64_t> counters() const;

 private:
  store::Store* const store_;
  RepairPlanner* const rebuilds_;
  const EventPolicyOptions options_;
  mutable Mutex mu_;
  std::map<std::string, uint64_t> counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ecd::repair

#endif  // ECD_LIB_REPAIR_EVENT_POLICY_H_
