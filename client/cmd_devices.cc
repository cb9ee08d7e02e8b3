// ecctl's device commands: device ls, fail, online, replace and evacuate (ecd.v1.Devices; an
// evacuation's --wait polls its rebuild job).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/client_core.h"
#include "client/cmd_util.h"
#include "client/commands.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/util/size.h"

namespace ecd::client {
namespace {

namespace v1 = ecd::v1;
using ecd::FormatSize;

absl::Status DeviceList(ClientCore& c) {
  ECCTL_ASSIGN_OR_RETURN(const v1::ListDevicesResponse response, ListDevices(c));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  std::printf("%-4s %-7s %11s %11s %11s %8s  %s\n", "ID", "STATE", "SIZE", "USED", "FREE", "BLOCKS",
              "PATH");
  for (const v1::DeviceInfo& d : response.devices()) {
    std::printf("%-4u %-7s %11s %11s %11s %8llu  %s\n", d.id(), StateName(d.state()),
                FormatSize(d.size_bytes()).c_str(), FormatSize(d.used_bytes()).c_str(),
                FormatSize(d.free_bytes()).c_str(), static_cast<unsigned long long>(d.blocks()),
                d.path().c_str());
    if (d.state() == v1::DEVICE_STATE_DOWN) std::printf("     %s\n", DownLine(d).c_str());
  }
  for (const v1::FileSystemInfo& fs : response.file_systems()) {
    std::printf("%s\n", FileSystemLine(fs).c_str());
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SetDeviceStateResponse> SetDeviceState(ClientCore& c, uint32_t id,
                                                          v1::DeviceState state) {
  v1::SetDeviceStateRequest request;
  request.set_id(id);
  request.set_state(state);
  v1::SetDeviceStateResponse response;
  auto context = c.Context();
  const char* verb = state == v1::DEVICE_STATE_FAILED    ? "fail"
                     : state == v1::DEVICE_STATE_FAILING ? "evacuate"
                                                         : "online";
  ECCTL_RETURN_IF_ERROR(c.Check(c.devices().SetState(context.get(), request, &response),
                                absl::StrCat("device ", verb, " ", id)));
  return response;
}

// `device fail` and `device online`.
absl::Status DeviceSet(ClientCore& c, uint32_t id, v1::DeviceState state) {
  ECCTL_ASSIGN_OR_RETURN(const v1::SetDeviceStateResponse response, SetDeviceState(c, id, state));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  std::printf("device %u is now %s\n", id, StateName(response.device().state()));
  return absl::OkStatus();
}

// `device replace`: a new blank namespace in the slot of a failed or down device.
absl::Status DeviceReplace(ClientCore& c, uint32_t id) {
  v1::ReplaceDeviceRequest request;
  request.set_id(id);
  v1::ReplaceDeviceResponse response;
  auto context = c.Context();
  ECCTL_RETURN_IF_ERROR(c.Check(c.devices().Replace(context.get(), request, &response),
                                absl::StrCat("device replace ", id)));
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  std::printf(
      "device %u replaced: now %s with a new blank namespace; the repair rebuilds its %llu "
      "blocks\n",
      id, StateName(response.device().state()),
      static_cast<unsigned long long>(response.device().blocks()));
  return absl::OkStatus();
}

// The evacuation job of device `id`: the running or queued one, else the newest finished one.
absl::StatusOr<uint64_t> EvacuationJobOf(ClientCore& c, uint32_t id) {
  ECCTL_ASSIGN_OR_RETURN(const v1::ListRebuildsResponse jobs, ListJobs(c));
  for (const v1::RebuildJob& j : jobs.jobs()) {
    if (j.kind() == "evacuate-device" && j.device() == id) return j.id();
  }
  return Error(kExitEcd, absl::StrCat("device evacuate ", id,
                                      ": NOT_FOUND: no evacuation job for the device in "
                                      "`ecctl rebuild ls`"));
}

absl::StatusOr<v1::DeviceInfo> DeviceOf(ClientCore& c, uint32_t id) {
  ECCTL_ASSIGN_OR_RETURN(const v1::ListDevicesResponse devices, ListDevices(c));
  for (const v1::DeviceInfo& d : devices.devices()) {
    if (d.id() == id) return d;
  }
  return Error(kExitEcd, absl::StrCat("device ", id, ": NOT_FOUND (ecctl device ls)"));
}

// `device evacuate`: queues the evacuation and, with `wait`, polls its job until it is done.
absl::Status Evacuate(ClientCore& c, uint32_t id, bool wait) {
  ECCTL_ASSIGN_OR_RETURN(v1::SetDeviceStateResponse response,
                         SetDeviceState(c, id, v1::DEVICE_STATE_FAILING));
  if (wait) {
    ECCTL_ASSIGN_OR_RETURN(const uint64_t job, EvacuationJobOf(c, id));
    ECCTL_ASSIGN_OR_RETURN(const v1::ListRebuildsResponse jobs,
                           WaitForJobs(c, {job}, absl::StrCat("evacuate device ", id)));
    ECCTL_RETURN_IF_ERROR(JobFailure(jobs));
    ECCTL_ASSIGN_OR_RETURN(*response.mutable_device(), DeviceOf(c, id));
  }
  if (c.globals().json) {
    PrintJson(response);
    return absl::OkStatus();
  }
  if (wait) {
    std::printf("device %u: evacuated, now %s with %llu blocks\n", id,
                StateName(response.device().state()),
                static_cast<unsigned long long>(response.device().blocks()));
    return absl::OkStatus();
  }
  std::printf("device %u: evacuation queued (see ecctl rebuild ls); it becomes failed when empty\n",
              id);
  return absl::OkStatus();
}

}  // namespace

void AddDeviceCommands(CLI::App& app, Selected& selected) {
  auto* dev = app.add_subcommand("device", "Devices");
  dev->require_subcommand(1);
  OnRun(dev->add_subcommand("ls", "List devices"), selected, DeviceList);
  auto id = std::make_shared<uint32_t>(0);
  for (auto [name, help, state] :
       {std::tuple{"fail", "Take a device out of service", v1::DEVICE_STATE_FAILED},
        std::tuple{"online", "Put a device back in service", v1::DEVICE_STATE_ONLINE}}) {
    auto* sub = dev->add_subcommand(name, help);
    sub->add_option("DEV", *id, "Device id")->required();
    OnRun(sub, selected, [id, state = state](ClientCore& c) { return DeviceSet(c, *id, state); });
  }
  auto* replace = dev->add_subcommand(
      "replace",
      "Put a new blank namespace in a failed or down device's slot (its disk was replaced); the "
      "repair rebuilds its blocks");
  replace->add_option("DEV", *id, "Device id")->required();
  OnRun(replace, selected, [id](ClientCore& c) { return DeviceReplace(c, *id); });
  auto wait = std::make_shared<bool>(false);
  auto* evacuate =
      dev->add_subcommand("evacuate", "Move every block off a device, then take it out of service");
  evacuate->add_option("DEV", *id, "Device id")->required();
  evacuate->add_flag("--wait", *wait, "Wait until the device is empty (and failed)");
  OnRun(evacuate, selected, [id, wait](ClientCore& c) { return Evacuate(c, *id, *wait); });
}

}  // namespace ecd::client
