// The Rebuilds service's handlers, and the wire form of a rebuild job.
#include "daemon/rebuilds_service.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "daemon/convert.h"

namespace ecd::daemon {

namespace {

void ToProto(const repair::RebuildJob& j, v1::RebuildJob* out) {
  out->set_id(j.id);
  out->set_kind(repair::RebuildKindName(j.spec.kind));
  out->set_state(repair::RebuildStateName(j.state));
  out->set_priority(j.priority);
  out->set_device(j.spec.device);
  out->set_first_lba(j.spec.first_lba);
  out->set_lba_count(j.spec.lba_count);
  out->set_object(j.spec.object);
  out->set_reason(j.spec.reason);
  auto ms = [](absl::Time t) { return t == absl::Time() ? 0 : absl::ToUnixMillis(t); };
  out->set_created_unix_ms(ms(j.created));
  out->set_started_unix_ms(ms(j.started));
  out->set_finished_unix_ms(ms(j.finished));
  out->set_objects_total(j.objects_total);
  out->set_objects_done(j.objects_done);
  out->set_blocks_checked(j.blocks_checked);
  out->set_blocks_moved(j.blocks_moved);
  out->set_bytes_moved(j.bytes_moved);
  out->set_error(j.error);
}

}  // namespace

grpc::Status RebuildsService::List(grpc::ServerContext* context,
                                   const v1::ListRebuildsRequest* request,
                                   v1::ListRebuildsResponse* response) {
  return gate_.Run(context, "List", [&]() -> grpc::Status {
    for (const repair::RebuildJob& j : planner_->List()) ToProto(j, response->add_jobs());
    ToProto(planner_->Status(), response->mutable_repair());
    return grpc::Status::OK;
  });
}

grpc::Status RebuildsService::Get(grpc::ServerContext* context,
                                  const v1::GetRebuildRequest* request, v1::RebuildJob* response) {
  return gate_.Run(context, "Get", [&]() -> grpc::Status {
    std::optional<repair::RebuildJob> j = planner_->Get(request->id());
    if (!j) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("rebuild job ", request->id(),
                                       " not found; `ecctl rebuild ls` lists the known jobs"));
    }
    ToProto(*j, response);
    return grpc::Status::OK;
  });
}

grpc::Status RebuildsService::GetRepairStatus(grpc::ServerContext* context,
                                              const v1::RepairStatusRequest* request,
                                              v1::RepairStatus* response) {
  return gate_.Run(context, "GetRepairStatus", [&]() -> grpc::Status {
    ToProto(planner_->Status(), response);
    return grpc::Status::OK;
  });
}

grpc::Status RebuildsService::SetRepair(grpc::ServerContext* context,
                                        const v1::SetRepairRequest* request,
                                        v1::RepairStatus* response) {
  return gate_.Run(context, "SetRepair", [&]() -> grpc::Status {
    if (!request->has_paused() && !request->has_rate_bytes_per_sec()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "SetRepair changes nothing: set paused or rate_bytes_per_sec");
    }
    if (grpc::Status s = ApplyRepairSettings(*request); !s.ok()) return s;
    ToProto(planner_->Status(), response);
    return grpc::Status::OK;
  });
}

grpc::Status RebuildsService::ApplyRepairSettings(const v1::SetRepairRequest& request) {
  std::string changed = "nothing was changed";
  if (request.has_rate_bytes_per_sec()) {
    const uint64_t rate = request.rate_bytes_per_sec();
    if (absl::Status s = planner_->SetRate(rate); !s.ok()) {
      return ToGrpc(absl::Status(
          s.code(), absl::StrCat("cannot set the repair rate: ", s.message(), "; ", changed)));
    }
    changed = absl::StrCat("the rate was set to ",
                           rate == 0 ? "unlimited" : absl::StrCat(rate, " bytes/s"));
  }
  if (request.has_paused()) {
    if (absl::Status s = planner_->SetPaused(request.paused()); !s.ok()) {
      return ToGrpc(
          absl::Status(s.code(), absl::StrCat("cannot ", request.paused() ? "pause" : "resume",
                                              " the repair: ", s.message(), "; ", changed)));
    }
  }
  return grpc::Status::OK;
}

}  // namespace ecd::daemon
