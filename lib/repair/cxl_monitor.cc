// CxlMonitor: interrupts and polls -> drain -> decode -> policy.
#include "lib/repair/cxl_monitor.h"

#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "lib/cxl/event_drain.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

namespace {

// "Memory Module" -> "memory_module": a name as a metric label value.
std::string LabelValue(std::string_view name) {
  std::string out;
  for (char c : name) out += c == ' ' || c == '-' ? '_' : absl::ascii_tolower(c);
  return out;
}

}  // namespace

HealthEvent HealthEventFromRecord(uint32_t device, cxl::EventLog log,
                                  const cxl::EventRecord& record) {
  HealthEvent e;
  e.device = device;
  e.log = static_cast<int>(log);
  const cxl::EventHeader& h = cxl::HeaderOf(record);
  e.severity = static_cast<int>(h.severity());
  e.permanent = h.permanent_condition();
  e.maintenance_needed = h.maintenance_needed();
  e.performance_degraded = h.performance_degraded();
  e.replacement_needed = h.hardware_replacement_needed();
  if (const auto* gm = std::get_if<cxl::GeneralMediaRecord>(&record)) {
    e.kind = HealthEvent::Kind::kGeneralMedia;
    e.dpa = gm->dpa();
    e.descriptor = gm->descriptor;
  } else if (const auto* dram = std::get_if<cxl::DramRecord>(&record)) {
    e.kind = HealthEvent::Kind::kDram;
    e.dpa = dram->dpa();
    e.descriptor = dram->descriptor;
  } else if (const auto* mm = std::get_if<cxl::MemoryModuleRecord>(&record)) {
    e.kind = HealthEvent::Kind::kMemoryModule;
    e.health_status = mm->health.health_status;
    e.media_status = static_cast<uint8_t>(mm->health.media_status);
    e.additional_status = mm->health.additional_status;
    e.life_used = mm->health.life_used;
    e.temperature = mm->health.device_temp;
  }
  e.description = cxl::RecordToJson(record, cxl::EventLogName(log));
  return e;
}

absl::StatusOr<std::unique_ptr<CxlMonitor>> CxlMonitor::Create(EventPolicy* policy,
                                                               uint32_t device_count,
                                                               const CxlMonitorOptions& options) {
  std::unique_ptr<CxlMonitor> m(new CxlMonitor(policy, options));
  cxl::EventLogDeviceOptions o = options.device;
  for (auto& s : o.initial_policy) s.mode = options.initial_mode;
  for (uint32_t id = 0; id < device_count; ++id) {
    auto d = cxl::EventLogDevice::Create(o);
    if (!d.ok()) return d.status();
    CxlMonitor* self = m.get();
    (*d)->SetInterruptHandler([self, id](cxl::EventLog) {
      {
        MutexLock lock(self->mu_);
        self->pending_.insert(id);
        ++self->stats_.interrupts;
      }
      self->wake_.NotifyAll();
    });
    m->devices_.push_back(*std::move(d));
  }
  {
    MutexLock lock(m->mu_);  // The devices' interrupt handlers are set: they may run already.
    m->stats_.overflows_by_device.assign(device_count, 0);
    m->stats_.overflowed_records_by_device.assign(device_count, 0);
    m->stats_.decode_errors_by_device.assign(device_count, 0);
  }
  m->thread_ = std::thread([self = m.get()] { self->Loop(); });
  return m;
}

CxlMonitor::CxlMonitor(EventPolicy* policy, const CxlMonitorOptions& options)
    : policy_(policy), options_(options) {}

CxlMonitor::~CxlMonitor() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  for (auto& d : devices_) d->SetInterruptHandler(nullptr);
}

cxl::EventLogDevice* CxlMonitor::device(uint32_t id) {
  return id < devices_.size() ? devices_[id].get() : nullptr;
}

CxlMonitorStats CxlMonitor::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void CxlMonitor::DrainNow() {
  MutexLock lock(mu_);
  ++drain_requests_;
  const uint64_t target = generation_ + 1;
  wake_.NotifyAll();
  drained_.Wait(
      mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return generation_ >= target || stop_; });
}

void CxlMonitor::Loop() {
  UniqueMutexLock lock(mu_);
  absl::Time next_poll = absl::Now() + options_.poll_interval;
  while (!stop_) {
    const bool polling = options_.poll_interval > absl::ZeroDuration();
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || !pending_.empty() || drain_requests_ > 0;
    };
    if (polling) {
      wake_.WaitFor(
          mu_, absl::ToChronoMilliseconds(std::max(absl::ZeroDuration(), next_poll - absl::Now())),
          ready);
    } else {
      wake_.Wait(mu_, ready);
    }
    if (stop_) break;
    const bool full = drain_requests_ > 0 || (polling && absl::Now() >= next_poll);
    std::set<uint32_t> todo;
    if (full) {
      for (uint32_t id = 0; id < devices_.size(); ++id) todo.insert(id);
      next_poll = absl::Now() + options_.poll_interval;
    } else {
      todo.swap(pending_);
    }
    const uint64_t requests = drain_requests_;
    lock.Unlock();
    for (uint32_t id : todo) DrainDevice(id);
    lock.Lock();
    if (full) {
      for (uint32_t id : todo) pending_.erase(id);
      drain_requests_ -= requests;
      ++generation_;
      drained_.NotifyAll();
    }
  }
  drained_.NotifyAll();
}

void CxlMonitor::DrainDevice(uint32_t id) {
  cxl::EventLogDevice* dev = devices_[id].get();
  cxl::EventDrainer drainer(
      [dev](uint16_t op, absl::Span<const uint8_t> in) { return dev->Execute(op, in); },
      dev->options().payload_size,
      [&](cxl::EventLog log, const cxl::RawEventRecord& raw) {
        absl::StatusOr<cxl::EventRecord> rec = cxl::DecodeRecord(raw);
        if (!rec.ok()) {
          Log(LogLevel::kWarning, "device %d %s log: undecodable CXL record: %s", id,
              cxl::EventLogName(log), rec.status().message());
          MutexLock lock(mu_);
          ++stats_.decode_errors;
          ++stats_.decode_errors_by_device[id];
          return;
        }
        for (const std::string& w : cxl::RecordWarnings(*rec)) {
          Log(LogLevel::kWarning, "device %d CXL record: %s", id, w);
        }
        {
          std::tuple<uint32_t, std::string, std::string, std::string> key{
              id, LabelValue(cxl::EventLogName(log)),
              LabelValue(cxl::RecordKindName(cxl::KindOf(*rec))),
              LabelValue(cxl::SeverityName(cxl::HeaderOf(*rec).severity()))};
          MutexLock lock(mu_);
          ++stats_.records;
          ++stats_.records_by[std::move(key)];
        }
        policy_->Handle(HealthEventFromRecord(id, log, *rec));
      },
      [&](const cxl::OverflowReport& o) {
        Log(LogLevel::kWarning,
            "device %d %s log overflowed: %d records lost (first at %d ns, last at %d ns)", id,
            cxl::EventLogName(o.log), o.overflow_count, o.first_overflow_ts, o.last_overflow_ts);
        MutexLock lock(mu_);
        ++stats_.overflows;
        ++stats_.overflows_by_device[id];
        stats_.overflowed_records += o.overflow_count;
        stats_.overflowed_records_by_device[id] += o.overflow_count;
      });
  absl::StatusOr<uint64_t> n = drainer.DrainAll();
  MutexLock lock(mu_);
  ++stats_.drains;
  if (!n.ok()) {
    ++stats_.drain_errors;
    Log(LogLevel::kError, "device %d: draining CXL events failed: %s", id, n.status().message());
  }
}

}  // namespace ecd::repair
