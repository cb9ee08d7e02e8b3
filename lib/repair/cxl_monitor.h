// CxlMonitor: one emulated CXL memory device (event logs + mailbox) per storage device, and the
// host side that listens to them. An insert that raises a device's event interrupt (or, for
// logs in no-interrupt mode, a poll tick) wakes the monitor thread, which drains the device like
// the Linux driver (lib/cxl/event_drain.h), decodes each record, and hands it to the
// EventPolicy. Every record, overflow and decode error is counted; each action is logged with
// the record that caused it.
#ifndef ECD_LIB_REPAIR_CXL_MONITOR_H_
#define ECD_LIB_REPAIR_CXL_MONITOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "lib/cxl/event_log.h"
#include "lib/cxl/event_record.h"
#include "lib/repair/event_policy.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

struct CxlMonitorOptions {
  cxl::EventLogDeviceOptions device;  // capacity, payload size; initial_policy is set below
  // Interrupt mode every log starts with (operators change it with Set Event Interrupt Policy).
  cxl::InterruptMode initial_mode = cxl::InterruptMode::kMsi;
  // How often logs are drained without an interrupt; zero turns polling off.
  absl::Duration poll_interval = absl::Seconds(1);
};

struct CxlMonitorStats {
  uint64_t interrupts = 0;
  uint64_t drains = 0;
  uint64_t records = 0;
  uint64_t overflows = 0;  // overflow reports (each says how many records the log lost)
  uint64_t overflowed_records = 0;
  uint64_t decode_errors = 0;
  uint64_t drain_errors = 0;
  // Decoded records by (device, log, record type, severity), the names lower case with
  // underscores ("failure", "general_media", "fatal") as metric labels take them.
  std::map<std::tuple<uint32_t, std::string, std::string, std::string>, uint64_t> records_by;
  std::vector<uint64_t> overflows_by_device;           // index: device
  std::vector<uint64_t> overflowed_records_by_device;  // records lost, index: device
  std::vector<uint64_t> decode_errors_by_device;       // index: device
};

// The policy's view of a decoded record.
HealthEvent HealthEventFromRecord(uint32_t device, cxl::EventLog log,
                                  const cxl::EventRecord& record);

// Thread safety: all methods are safe to call concurrently.
class CxlMonitor {
 public:
  // REQUIRES: `policy` outlives the monitor.
  static absl::StatusOr<std::unique_ptr<CxlMonitor>> Create(EventPolicy* policy,
                                                            uint32_t device_count,
                                                            const CxlMonitorOptions& options);
  ~CxlMonitor();

  uint32_t device_count() const { return static_cast<uint32_t>(devices_.size()); }
  // The emulated CXL device of storage device `id`, or null.
  cxl::EventLogDevice* device(uint32_t id);

  // Drains every device now, on the calling thread's behalf (waits for the monitor thread).
  void DrainNow();
  CxlMonitorStats stats() const;

 private:
  CxlMonitor(EventPolicy* policy, const CxlMonitorOptions& options);
  void Loop();
  void DrainDevice(uint32_t id);

  EventPolicy* const policy_;
  const CxlMonitorOptions options_;
  std::vector<std::unique_ptr<cxl::EventLogDevice>> devices_;

  mutable Mutex mu_;
  CondVar wake_;
  CondVar drained_;
  std::set<uint32_t> pending_ ABSL_GUARDED_BY(mu_);   // Devices that raised an interrupt
  uint64_t drain_requests_ ABSL_GUARDED_BY(mu_) = 0;  // DrainNow calls not yet served
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;      // Completed full drains
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  CxlMonitorStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace ecd::repair

#endif  // ECD_LIB_REPAIR_CXL_MONITOR_H_
