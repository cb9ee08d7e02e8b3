// ecctl's CXL commands: cxl inject, events, clear, policy, stats and ingest (ecd.v1.Cxl), and
// cxl decode, which decodes raw event records offline (lib/cxl).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "client/client_core.h"
#include "client/cmd_util.h"
#include "client/commands.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/cxl/event_record.h"
#include "lib/cxl/mailbox.h"

namespace ecd::client {
namespace {

namespace v1 = ecd::v1;

absl::StatusOr<v1::CxlLog> ParseLog(const std::string& s) {
  if (s == "informational" || s == "info") return v1::CXL_LOG_INFORMATIONAL;
  if (s == "warning" || s == "warn") return v1::CXL_LOG_WARNING;
  if (s == "failure" || s == "fail") return v1::CXL_LOG_FAILURE;
  if (s == "fatal") return v1::CXL_LOG_FATAL;
  return Error(kExitUsage,
               absl::StrCat("--log ", s, " is not informational, warning, failure or fatal"));
}

absl::Status CxlInject(ClientCore& c, const v1::CxlInjectRequest& request) {
  v1::CxlInjectResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.cxl().Inject(context.get(), request, &response),
                                absl::StrCat("cxl inject ", request.device())));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  if (response.overflowed()) {
    std::printf("device %u: log full, record dropped and counted as overflow\n", request.device());
  } else {
    std::printf("device %u: record handle %u inserted%s\n", request.device(), response.handle(),
                response.interrupt_raised() ? " (interrupt raised)" : "");
  }
  return absl::OkStatus();
}

absl::Status CxlEvents(ClientCore& c, uint32_t device, const std::string& log) {
  v1::CxlGetEventRecordsRequest request;
  request.set_device(device);
  ECCTL_ASSIGN_OR_RETURN(const v1::CxlLog parsed, ParseLog(log));
  request.set_log(parsed);
  v1::CxlGetEventRecordsResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.cxl().GetEventRecords(context.get(), request, &response),
                                absl::StrCat("cxl events ", device)));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  std::printf("%d records%s%s\n", response.records_size(), response.more_records() ? " (more)" : "",
              response.overflow()
                  ? absl::StrCat(", overflowed: ", response.overflow_count(), " lost").c_str()
                  : "");
  for (const v1::CxlEventRecord& r : response.records()) {
    std::printf("%u %s\n", r.handle(), r.json().c_str());
  }
  return absl::OkStatus();
}

absl::Status CxlClear(ClientCore& c, uint32_t device, const std::string& log,
                      const std::vector<uint32_t>& handles, bool all) {
  v1::CxlClearEventRecordsRequest request;
  request.set_device(device);
  ECCTL_ASSIGN_OR_RETURN(const v1::CxlLog parsed, ParseLog(log));
  request.set_log(parsed);
  request.set_clear_all(all);
  for (uint32_t h : handles) request.add_handles(h);
  v1::CxlClearEventRecordsResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.cxl().ClearEventRecords(context.get(), request, &response),
                                absl::StrCat("cxl clear ", device)));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  std::printf("device %u: cleared\n", device);
  return absl::OkStatus();
}

// Sets each --set LOG=MODE in `policy`; exit code 2 for one that is not LOG=MODE.
absl::Status SetPolicyModes(const std::vector<std::string>& sets, v1::CxlInterruptPolicy& policy) {
  for (const std::string& s : sets) {  // LOG=MODE
    const size_t eq = s.find('=');
    if (eq == std::string::npos) {
      return Error(kExitUsage, absl::StrCat("--set ", s, " is not LOG=MODE (e.g. failure=msi)"));
    }
    const std::string mode = s.substr(eq + 1);
    ECCTL_ASSIGN_OR_RETURN(const v1::CxlLog log, ParseLog(s.substr(0, eq)));
    switch (log) {
      case v1::CXL_LOG_INFORMATIONAL:
        policy.set_informational(mode);
        break;
      case v1::CXL_LOG_WARNING:
        policy.set_warning(mode);
        break;
      case v1::CXL_LOG_FAILURE:
        policy.set_failure(mode);
        break;
      default:
        policy.set_fatal(mode);
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status CxlPolicy(ClientCore& c, uint32_t device, const std::vector<std::string>& sets) {
  v1::CxlInterruptPolicy policy;
  auto context = c.Context();
  if (sets.empty()) {
    v1::CxlGetInterruptPolicyRequest request;
    request.set_device(device);
    ECCTL_RETURN_IF_ERROR(c.Check(c.cxl().GetInterruptPolicy(context.get(), request, &policy),
                                  absl::StrCat("cxl policy ", device)));
  } else {
    v1::CxlSetInterruptPolicyRequest request;
    request.set_device(device);
    ECCTL_RETURN_IF_ERROR(SetPolicyModes(sets, *request.mutable_policy()));
    ECCTL_RETURN_IF_ERROR(c.Check(c.cxl().SetInterruptPolicy(context.get(), request, &policy),
                                  absl::StrCat("cxl policy ", device, " --set")));
  }
  if (c.globals().json) {
    PrintJson(policy);
    return absl::OkStatus();
  }
  std::printf("informational=%s warning=%s failure=%s fatal=%s\n", policy.informational().c_str(),
              policy.warning().c_str(), policy.failure().c_str(), policy.fatal().c_str());
  return absl::OkStatus();
}

// The whole of `path` ("-": stdin); exit code 3 if it cannot be read.
absl::StatusOr<std::string> ReadAll(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) return Error(kExitLocalFile, absl::StrCat("cannot read ", path));
    text << f.rdbuf();
  }
  return text.str();
}

// Raw records (a multiple of 128 bytes) or JSON lines (the input starts with '{').
bool LooksLikeJson(const std::string& data) {
  const size_t first = data.find_first_not_of(" \t\r\n");
  return first != std::string::npos && data[first] == '{';
}

absl::Status CxlIngest(ClientCore& c, const std::string& path, uint32_t device,
                       const std::string& log) {
  ECCTL_ASSIGN_OR_RETURN(const std::string data, ReadAll(path));
  v1::CxlIngestRequest request;
  request.set_device(device);
  ECCTL_ASSIGN_OR_RETURN(const v1::CxlLog parsed, ParseLog(log));
  request.set_log(parsed);
  if (LooksLikeJson(data)) {
    std::stringstream lines(data);
    std::string line;
    // Blank lines too (ecd skips them), so that ecd's "line N" is line N of the file.
    while (std::getline(lines, line)) request.add_json_lines(line);
  } else {
    if (data.empty() || data.size() % 128 != 0) {
      return Error(kExitLocalFile,
                   absl::StrCat(path, " holds ", data.size(),
                                " bytes, not whole 128-byte records or JSON lines"));
    }
    for (size_t off = 0; off < data.size(); off += 128)
      request.add_raw_records(data.substr(off, 128));
  }
  v1::CxlIngestResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.cxl().Ingest(context.get(), request, &response), "cxl ingest"));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  std::printf("%u records ingested:", response.records());
  for (const std::string& a : response.actions()) std::printf(" %s", a.c_str());
  std::printf("\n");
  return absl::OkStatus();
}

absl::Status CxlStats(ClientCore& c) {
  v1::CxlStats response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(
      c.Check(c.cxl().GetStats(context.get(), v1::CxlStatsRequest(), &response), "cxl stats"));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  std::map<std::string, uint64_t> sorted(response.counters().begin(), response.counters().end());
  for (const auto& [name, value] : sorted) {
    std::printf("%-16s %llu\n", name.c_str(), static_cast<unsigned long long>(value));
  }
  return absl::OkStatus();
}

// Offline: raw records to JSON lines, as the Linux trace events name the fields.
absl::Status CxlDecode(const std::string& path, const std::string& log) {
  ECCTL_ASSIGN_OR_RETURN(const std::string data, ReadAll(path));
  if (data.empty() || data.size() % 128 != 0) {
    return Error(kExitLocalFile,
                 absl::StrCat(path, " holds ", data.size(), " bytes, not whole 128-byte records"));
  }
  // CXL_LOG_INFORMATIONAL..FATAL are 1..4; the device's log numbers are 0..3.
  ECCTL_ASSIGN_OR_RETURN(const v1::CxlLog parsed, ParseLog(log));
  const std::string log_name(ecd::cxl::EventLogName(static_cast<ecd::cxl::EventLog>(parsed - 1)));
  for (size_t off = 0; off < data.size(); off += 128) {
    auto rec = ecd::cxl::DecodeRecord(
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(data.data()) + off, 128));
    if (!rec.ok()) {
      return Error(kExitEcd, absl::StrCat("record ", off / 128, ": ", rec.status().message()));
    }
    std::printf("%s\n", ecd::cxl::RecordToJson(*rec, log_name).c_str());
  }
  return absl::OkStatus();
}

// ---- command line

// The options of the cxl subcommands.
struct CxlArgs {
  uint32_t device = 0;
  std::string log = "failure";
  v1::CxlInjectRequest inject;
  std::string type;
  std::string dpa;
  std::vector<uint32_t> handles;
  bool clear_all = false;
  std::vector<std::string> policy_sets;
  std::string file;
};

// Parses --dpa (bytes; 0x... or decimal) into the inject request; exit code 2 if it is not one.
absl::Status SetDpa(CxlArgs& a) {
  if (a.dpa.empty()) return absl::OkStatus();
  uint64_t dpa = 0;
  const bool hex = a.dpa.rfind("0x", 0) == 0;
  if (!(hex ? absl::SimpleHexAtoi(a.dpa.substr(2), &dpa) : absl::SimpleAtoi(a.dpa, &dpa))) {
    return Error(kExitUsage, absl::StrCat("--dpa ", a.dpa, " is not a number"));
  }
  a.inject.set_dpa(dpa);
  return absl::OkStatus();
}

CLI::Option* AddLogOption(CLI::App* sub, CxlArgs& a, const char* help) {
  return sub->add_option("--log", a.log, help)->capture_default_str();
}

void AddCxlInject(CLI::App* cxl, std::shared_ptr<CxlArgs> a, Selected& selected) {
  auto* sub = cxl->add_subcommand("inject", "Insert an event record into a device's log");
  sub->add_option("DEV", a->device, "Device id")->required();
  AddLogOption(sub, *a, "informational, warning, failure or fatal");
  sub->add_option("--type", a->type, "general-media, dram or memory-module")->required();
  sub->add_option("--dpa", a->dpa, "Device physical address (bytes; 0x... or decimal)");
  v1::CxlInjectRequest* inject = &a->inject;
  auto u32 = [&](const char* flag, const char* help, auto setter) {
    sub->add_option_function<uint32_t>(
        flag, [inject, setter](const uint32_t& v) { (inject->*setter)(v); }, help);
  };
  u32("--descriptor", "Memory event descriptor (1 uncorrectable, 2 threshold, 4 poison overflow)",
      &v1::CxlInjectRequest::set_event_descriptor);
  u32("--event-type", "Media event type", &v1::CxlInjectRequest::set_event_type);
  u32("--transaction-type", "Transaction type", &v1::CxlInjectRequest::set_transaction_type);
  u32("--channel", "Channel", &v1::CxlInjectRequest::set_channel);
  u32("--rank", "Rank", &v1::CxlInjectRequest::set_rank);
  u32("--module-event-type", "Memory module device event type",
      &v1::CxlInjectRequest::set_module_event_type);
  u32("--health-status", "Health status (4 = replacement needed)",
      &v1::CxlInjectRequest::set_health_status);
  u32("--media-status", "Media status (3 = all data lost, 9 = all data loss imminent)",
      &v1::CxlInjectRequest::set_media_status);
  u32("--additional-status", "Additional status", &v1::CxlInjectRequest::set_additional_status);
  u32("--life-used", "Life used, percent", &v1::CxlInjectRequest::set_life_used);
  sub->add_option_function<int32_t>(
      "--temperature", [inject](const int32_t& v) { inject->set_temperature(v); },
      "Device temperature, degrees C");
  sub->add_flag_function(
      "--replacement-needed", [inject](int64_t) { inject->set_hardware_replacement_needed(true); },
      "Set the hardware-replacement-needed header flag");
  sub->add_flag_function(
      "--permanent", [inject](int64_t) { inject->set_permanent(true); },
      "Set the permanent-condition header flag");
  OnRun(sub, selected, [a](ClientCore& c) -> absl::Status {
    a->inject.set_device(a->device);
    ECCTL_ASSIGN_OR_RETURN(const v1::CxlLog log, ParseLog(a->log));
    a->inject.set_log(log);
    a->inject.set_type(a->type);
    ECCTL_RETURN_IF_ERROR(SetDpa(*a));
    return CxlInject(c, a->inject);
  });
}

void AddCxlLogCommands(CLI::App* cxl, std::shared_ptr<CxlArgs> a, Selected& selected) {
  auto* events = cxl->add_subcommand("events", "Get the uncleared records of a device's log");
  events->add_option("DEV", a->device, "Device id")->required();
  AddLogOption(events, *a, "informational, warning, failure or fatal");
  OnRun(events, selected, [a](ClientCore& c) { return CxlEvents(c, a->device, a->log); });

  auto* clear = cxl->add_subcommand("clear", "Clear records of a device's log by handle");
  clear->add_option("DEV", a->device, "Device id")->required();
  AddLogOption(clear, *a, "informational, warning, failure or fatal");
  clear->add_option("--handles", a->handles, "Handles, oldest first")->delimiter(',');
  clear->add_flag("--all", a->clear_all, "Clear All (only allowed on an overflowed log)");
  OnRun(clear, selected,
        [a](ClientCore& c) { return CxlClear(c, a->device, a->log, a->handles, a->clear_all); });

  auto* policy = cxl->add_subcommand("policy", "Show or set a device's event interrupt policy");
  policy->add_option("DEV", a->device, "Device id")->required();
  policy->add_option("--set", a->policy_sets, "LOG=MODE, MODE none, msi or fw (repeatable)");
  OnRun(policy, selected, [a](ClientCore& c) { return CxlPolicy(c, a->device, a->policy_sets); });
}

void AddCxlAgentCommands(CLI::App* cxl, std::shared_ptr<CxlArgs> a, Selected& selected) {
  OnRun(cxl->add_subcommand("stats", "Counters of the CXL path and the policy actions"), selected,
        CxlStats);
  auto* ingest =
      cxl->add_subcommand("ingest", "Feed records from an outside agent to ecd's CXL policy");
  ingest->add_option("FILE", a->file, "Raw 128-byte records or cxl-monitor JSON lines; - = stdin")
      ->required();
  ingest->add_option("--device", a->device, "Device the raw records come from");
  AddLogOption(ingest, *a, "Log the raw records come from");
  OnRun(ingest, selected, [a](ClientCore& c) { return CxlIngest(c, a->file, a->device, a->log); });

  auto* decode =
      cxl->add_subcommand("decode", "Decode raw 128-byte records to JSON lines (offline)");
  decode->add_option("FILE", a->file, "Raw records; - = stdin")->required();
  AddLogOption(decode, *a, "Log name to print");
  OnRun(decode, selected, [a](ClientCore&) { return CxlDecode(a->file, a->log); });
}

}  // namespace

void AddCxlCommands(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<CxlArgs>();
  auto* cxl = app.add_subcommand("cxl", "CXL memory-device event logs of the devices");
  cxl->require_subcommand(1);
  AddCxlInject(cxl, a, selected);
  AddCxlLogCommands(cxl, a, selected);
  AddCxlAgentCommands(cxl, a, selected);
}

}  // namespace ecd::client
