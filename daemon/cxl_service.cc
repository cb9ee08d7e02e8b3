// The Cxl service: field-built records in, mailbox commands through.
#include "daemon/cxl_service.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "daemon/auth.h"
#include "lib/cxl/event_drain.h"
#include "lib/repair/health_event_json.h"

namespace ecd::daemon {
namespace {

grpc::Status Bad(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

absl::StatusOr<cxl::EventLog> LogOf(v1::CxlLog log) {
  switch (log) {
    case v1::CXL_LOG_INFORMATIONAL:
      return cxl::EventLog::kInformational;
    case v1::CXL_LOG_WARNING:
      return cxl::EventLog::kWarning;
    case v1::CXL_LOG_FAILURE:
      return cxl::EventLog::kFailure;
    case v1::CXL_LOG_FATAL:
      return cxl::EventLog::kFatal;
    default:
      return absl::InvalidArgumentError("log must be informational, warning, failure or fatal");
  }
}

// A mailbox return code other than Success as a gRPC status that says what to do.
grpc::Status FromReturnCode(cxl::ReturnCode rc, const std::string& what) {
  const std::string name(cxl::ReturnCodeName(rc));
  switch (rc) {
    case cxl::ReturnCode::kSuccess:
      return grpc::Status::OK;
    case cxl::ReturnCode::kInvalidHandle:
      return Bad(absl::StrCat(what, ": ", name,
                              ": clear the oldest records first, in order (`ecctl cxl events` "
                              "lists them)"));
    case cxl::ReturnCode::kInvalidInput:
    case cxl::ReturnCode::kInvalidPayloadLength:
      return Bad(absl::StrCat(what, ": ", name));
    case cxl::ReturnCode::kUnsupported:
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, absl::StrCat(what, ": ", name));
    default:
      return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(what, ": ", name));
  }
}

grpc::Status NoDevice(uint32_t id) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("device ", id, " not found (ecctl device ls)"));
}

const char* ModeName(cxl::InterruptMode m) {
  switch (m) {
    case cxl::InterruptMode::kNone:
      return "none";
    case cxl::InterruptMode::kMsi:
      return "msi";
    case cxl::InterruptMode::kFwInterrupt:
      return "fw";
    default:
      return "reserved";
  }
}

absl::StatusOr<cxl::InterruptMode> ParseMode(const std::string& s) {
  if (s == "none") return cxl::InterruptMode::kNone;
  if (s == "msi") return cxl::InterruptMode::kMsi;
  if (s == "fw") return cxl::InterruptMode::kFwInterrupt;
  return absl::InvalidArgumentError(
      absl::StrCat("interrupt mode \"", s, "\" is not none, msi or fw"));
}

void ToProto(const cxl::EventInterruptPolicy& p, v1::CxlInterruptPolicy* out) {
  out->set_informational(ModeName(p.logs[0].mode));
  out->set_warning(ModeName(p.logs[1].mode));
  out->set_failure(ModeName(p.logs[2].mode));
  out->set_fatal(ModeName(p.logs[3].mode));
}

}  // namespace

absl::StatusOr<cxl::EventRecord> RecordFromInject(const v1::CxlInjectRequest& r) {
  absl::StatusOr<cxl::EventLog> log = LogOf(r.log());
  if (!log.ok()) return log.status();
  cxl::EventHeader h;
  h.set_severity(static_cast<cxl::Severity>(static_cast<uint8_t>(*log)));
  if (r.permanent()) h.flags |= cxl::kFlagPermanentCondition;
  if (r.maintenance_needed()) h.flags |= cxl::kFlagMaintenanceNeeded;
  if (r.performance_degraded()) h.flags |= cxl::kFlagPerformanceDegraded;
  if (r.hardware_replacement_needed()) h.flags |= cxl::kFlagHardwareReplacementNeeded;
  if (r.type() == "general-media" || r.type() == "dram") {
    if (r.event_type() > 0xFF || r.transaction_type() > 0xFF || r.channel() > 0xFF ||
        r.rank() > 0xFF || r.event_descriptor() > 0xFF) {
      return absl::InvalidArgumentError(
          "event_type, transaction_type, descriptor, channel and "
          "rank are one byte each");
    }
    const uint64_t address = r.dpa() & cxl::kDpaMask;
    const uint16_t validity = 0x3;  // channel and rank
    if (r.type() == "general-media") {
      cxl::GeneralMediaRecord g;
      g.header = h;
      g.physical_address = address;
      g.descriptor = static_cast<uint8_t>(r.event_descriptor());
      g.type = static_cast<cxl::GmerEventType>(r.event_type());
      g.transaction_type = static_cast<cxl::TransactionType>(r.transaction_type());
      g.validity_flags = validity;
      g.channel = static_cast<uint8_t>(r.channel());
      g.rank = static_cast<uint8_t>(r.rank());
      return cxl::EventRecord(g);
    }
    cxl::DramRecord d;
    d.header = h;
    d.physical_address = address;
    d.descriptor = static_cast<uint8_t>(r.event_descriptor());
    d.type = static_cast<cxl::DramEventType>(r.event_type());
    d.transaction_type = static_cast<cxl::TransactionType>(r.transaction_type());
    d.validity_flags = validity;
    d.channel = static_cast<uint8_t>(r.channel());
    d.rank = static_cast<uint8_t>(r.rank());
    return cxl::EventRecord(d);
  }
  if (r.type() == "memory-module") {
    if (r.module_event_type() > 0xFF || r.health_status() > 0xFF || r.media_status() > 0xFF ||
        r.additional_status() > 0xFF || r.life_used() > 100 || r.temperature() < -32768 ||
        r.temperature() > 32767) {
      return absl::InvalidArgumentError(
          "module event type, health/media/additional status are one byte each, life used is "
          "0..100 and temperature fits 16 bits");
    }
    cxl::MemoryModuleRecord m;
    m.header = h;
    m.event_type = static_cast<cxl::MemModuleEventType>(r.module_event_type());
    m.health.health_status = static_cast<uint8_t>(r.health_status());
    m.health.media_status = static_cast<cxl::MediaStatus>(r.media_status());
    m.health.additional_status = static_cast<uint8_t>(r.additional_status());
    m.health.life_used = static_cast<uint8_t>(r.life_used());
    m.health.device_temp = static_cast<int16_t>(r.temperature());
    m.health.dirty_shutdown_count = r.dirty_shutdown_count();
    return cxl::EventRecord(m);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("record type \"", r.type(), "\" is not general-media, dram or memory-module"));
}

grpc::Status CxlService::Inject(grpc::ServerContext* context, const v1::CxlInjectRequest* request,
                                v1::CxlInjectResponse* response) {
  return gate_.Run(context, "Inject", [&]() -> grpc::Status {
    cxl::EventLogDevice* dev = monitor_->device(request->device());
    if (dev == nullptr) return NoDevice(request->device());
    absl::StatusOr<cxl::EventRecord> record = RecordFromInject(*request);
    if (!record.ok()) return Bad(std::string(record.status().message()));
    absl::StatusOr<cxl::InsertResult> r =
        dev->InsertRecord(*LogOf(request->log()), cxl::EncodeRecord(*record));
    if (!r.ok()) return Bad(std::string(r.status().message()));
    response->set_handle(r->handle);
    response->set_interrupt_raised(r->interrupt_raised);
    response->set_overflowed(!r->stored);
    return grpc::Status::OK;
  });
}

grpc::Status CxlService::GetEventRecords(grpc::ServerContext* context,
                                         const v1::CxlGetEventRecordsRequest* request,
                                         v1::CxlGetEventRecordsResponse* response) {
  return gate_.Run(context, "GetEventRecords", [&]() -> grpc::Status {
    cxl::EventLogDevice* dev = monitor_->device(request->device());
    if (dev == nullptr) return NoDevice(request->device());
    absl::StatusOr<cxl::EventLog> log = LogOf(request->log());
    if (!log.ok()) return Bad(std::string(log.status().message()));
    cxl::MailboxResponse m =
        dev->Execute(cxl::kOpGetEventRecords, cxl::GetEventRecordsInput{*log}.Encode());
    response->set_return_code(std::string(cxl::ReturnCodeName(m.rc)));
    if (m.rc != cxl::ReturnCode::kSuccess) return FromReturnCode(m.rc, "Get Event Records");
    absl::StatusOr<cxl::GetEventRecordsOutput> out = cxl::GetEventRecordsOutput::Decode(m.output);
    if (!out.ok())
      return grpc::Status(grpc::StatusCode::INTERNAL, std::string(out.status().message()));
    response->set_overflow(out->overflow);
    response->set_more_records(out->more_records);
    response->set_overflow_count(out->overflow_count);
    response->set_first_overflow_timestamp(out->first_overflow_ts);
    response->set_last_overflow_timestamp(out->last_overflow_ts);
    for (const cxl::RawEventRecord& raw : out->records) {
      v1::CxlEventRecord* r = response->add_records();
      r->set_handle(cxl::RecordHandle(raw));
      r->set_raw(std::string(raw.begin(), raw.end()));
      absl::StatusOr<cxl::EventRecord> rec = cxl::DecodeRecord(raw);
      if (rec.ok()) r->set_json(cxl::RecordToJson(*rec, cxl::EventLogName(*log)));
    }
    return grpc::Status::OK;
  });
}

grpc::Status CxlService::ClearEventRecords(grpc::ServerContext* context,
                                           const v1::CxlClearEventRecordsRequest* request,
                                           v1::CxlClearEventRecordsResponse* response) {
  return gate_.Run(context, "ClearEventRecords", [&]() -> grpc::Status {
    cxl::EventLogDevice* dev = monitor_->device(request->device());
    if (dev == nullptr) return NoDevice(request->device());
    absl::StatusOr<cxl::EventLog> log = LogOf(request->log());
    if (!log.ok()) return Bad(std::string(log.status().message()));
    if (request->handles_size() > static_cast<int>(cxl::ClearEventRecordsInput::kMaxHandles)) {
      return Bad("at most 255 handles per clear");
    }
    cxl::ClearEventRecordsInput in;
    in.log = *log;
    in.clear_all = request->clear_all();
    for (uint32_t h : request->handles()) {
      if (h == 0 || h > 0xFFFF) return Bad(absl::StrCat("handle ", h, " is not 1..65535"));
      in.handles.push_back(static_cast<uint16_t>(h));
    }
    cxl::MailboxResponse m = dev->Execute(cxl::kOpClearEventRecords, in.Encode());
    response->set_return_code(std::string(cxl::ReturnCodeName(m.rc)));
    if (in.clear_all && m.rc == cxl::ReturnCode::kInvalidInput) {
      return Bad(
          "Clear Event Records: Invalid Input: Clear All is only allowed on an overflowed log "
          "and without handles; clear by handle instead");
    }
    return FromReturnCode(m.rc, "Clear Event Records");
  });
}

grpc::Status CxlService::GetInterruptPolicy(grpc::ServerContext* context,
                                            const v1::CxlGetInterruptPolicyRequest* request,
                                            v1::CxlInterruptPolicy* response) {
  return gate_.Run(context, "GetInterruptPolicy", [&]() -> grpc::Status {
    cxl::EventLogDevice* dev = monitor_->device(request->device());
    if (dev == nullptr) return NoDevice(request->device());
    cxl::MailboxResponse m = dev->Execute(cxl::kOpGetEventInterruptPolicy, {});
    if (m.rc != cxl::ReturnCode::kSuccess)
      return FromReturnCode(m.rc, "Get Event Interrupt Policy");
    absl::StatusOr<cxl::EventInterruptPolicy> p = cxl::EventInterruptPolicy::Decode(m.output);
    if (!p.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, std::string(p.status().message()));
    ToProto(*p, response);
    return grpc::Status::OK;
  });
}

grpc::Status CxlService::SetInterruptPolicy(grpc::ServerContext* context,
                                            const v1::CxlSetInterruptPolicyRequest* request,
                                            v1::CxlInterruptPolicy* response) {
  return gate_.Run(context, "SetInterruptPolicy", [&]() -> grpc::Status {
    cxl::EventLogDevice* dev = monitor_->device(request->device());
    if (dev == nullptr) return NoDevice(request->device());
    // Start from the current policy: fields left empty keep their setting.
    cxl::MailboxResponse cur = dev->Execute(cxl::kOpGetEventInterruptPolicy, {});
    absl::StatusOr<cxl::EventInterruptPolicy> p = cxl::EventInterruptPolicy::Decode(cur.output);
    if (!p.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, std::string(p.status().message()));
    const std::string* fields[] = {&request->policy().informational(), &request->policy().warning(),
                                   &request->policy().failure(), &request->policy().fatal()};
    for (int i = 0; i < 4; ++i) {
      if (fields[i]->empty()) continue;
      absl::StatusOr<cxl::InterruptMode> mode = ParseMode(*fields[i]);
      if (!mode.ok()) return Bad(std::string(mode.status().message()));
      p->logs[i].mode = *mode;
    }
    cxl::MailboxResponse m = dev->Execute(cxl::kOpSetEventInterruptPolicy, p->Encode());
    if (m.rc != cxl::ReturnCode::kSuccess)
      return FromReturnCode(m.rc, "Set Event Interrupt Policy");
    v1::CxlGetInterruptPolicyRequest get;
    get.set_device(request->device());
    return GetInterruptPolicy(context, &get, response);
  });
}

grpc::Status CxlService::Ingest(grpc::ServerContext* context, const v1::CxlIngestRequest* request,
                                v1::CxlIngestResponse* response) {
  return gate_.Run(context, "Ingest", [&]() -> grpc::Status {
    if (const uint64_t n = static_cast<uint64_t>(request->raw_records_size()) +
                           static_cast<uint64_t>(request->json_lines_size());
        n > limits_.max_ingest_records) {
      gate_.CountRejection(Limit::kIngestRecords);
      return Bad(absl::StrCat("the request carries ", n, " records; the limit is ",
                              limits_.max_ingest_records,
                              " per call (--max-ingest-records); send them in smaller batches. "
                              "Nothing ingested"));
    }
    // Every record is parsed and checked before any is acted on: a bad one fails the call whole.
    std::vector<repair::HealthEvent> events;
    if (request->raw_records_size() > 0) {
      absl::StatusOr<cxl::EventLog> log = LogOf(request->log());
      if (!log.ok()) return Bad(std::string(log.status().message()));
      for (int i = 0; i < request->raw_records_size(); ++i) {
        const std::string& raw = request->raw_records(i);
        absl::StatusOr<cxl::EventRecord> rec = cxl::DecodeRecord(
            absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()));
        if (!rec.ok()) {
          return Bad(
              absl::StrCat("record ", i, ": ", rec.status().message(), "; nothing ingested"));
        }
        repair::HealthEvent e = repair::HealthEventFromRecord(request->device(), *log, *rec);
        if (absl::Status s = policy_->Check(e); !s.ok()) {
          return Bad(absl::StrCat("record ", i, ": ", s.message(), "; nothing ingested"));
        }
        events.push_back(std::move(e));
      }
    }
    for (int i = 0; i < request->json_lines_size(); ++i) {
      const std::string& line = request->json_lines(i);
      // Blank lines are skipped, so that "line N" is the Nth line of the file ecctl sent.
      if (std::all_of(line.begin(), line.end(), absl::ascii_isspace)) continue;
      absl::StatusOr<repair::HealthEvent> e = repair::HealthEventFromJson(line, request->device());
      absl::Status s = e.ok() ? policy_->Check(*e) : e.status();
      if (!s.ok())
        return Bad(absl::StrCat("line ", i + 1, ": ", s.message(), "; nothing ingested"));
      events.push_back(*std::move(e));
    }
    for (const repair::HealthEvent& e : events) {
      response->add_actions(repair::PolicyActionName(policy_->Handle(e)));
    }
    response->set_records(static_cast<uint32_t>(events.size()));
    return grpc::Status::OK;
  });
}

grpc::Status CxlService::GetStats(grpc::ServerContext* context, const v1::CxlStatsRequest* request,
                                  v1::CxlStats* response) {
  return gate_.Run(context, "GetStats", [&]() -> grpc::Status {
    const repair::CxlMonitorStats s = monitor_->stats();
    auto& c = *response->mutable_counters();
    c["interrupts"] = s.interrupts;
    c["drains"] = s.drains;
    c["records"] = s.records;
    c["overflows"] = s.overflows;
    c["overflowed_records"] = s.overflowed_records;
    c["decode_errors"] = s.decode_errors;
    c["drain_errors"] = s.drain_errors;
    for (const auto& a : repair::kPolicyActions.entries())
      c[absl::StrCat("action_", std::string(a.name))] = 0;
    for (const auto& [action, n] : policy_->counters()) c[absl::StrCat("action_", action)] = n;
    return grpc::Status::OK;
  });
}

}  // namespace ecd::daemon
