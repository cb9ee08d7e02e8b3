// Objects and Devices services: stream adapters between gRPC and the Store.
#include "daemon/services.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "daemon/convert.h"

namespace ecd::daemon {
namespace {

// Streamed read responses carry at most this many bytes each.
constexpr size_t kReadChunk = 1 << 20;

// Feeds the data of a client stream (Encode or Update) to the store, the first message's bytes
// included. Only the first message may carry a header.
template <typename Request>
class StreamSource final : public store::ByteSource {
 public:
  StreamSource(grpc::ServerContext* context, grpc::ServerReader<Request>* reader, Request first,
               const char* what)
      : context_(context), reader_(reader), current_(std::move(first)), what_(what) {}

  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override {
    while (at_ == current_.data().size()) {
      if (done_) return 0;
      current_.Clear();
      at_ = 0;
      if (!reader_->Read(&current_)) {
        done_ = true;
        if (context_->IsCancelled()) {
          return absl::CancelledError(
              absl::StrCat("the client cancelled the ", what_, "; nothing was stored"));
        }
        return 0;
      }
      if (current_.has_header()) {
        return absl::InvalidArgumentError(absl::StrCat("only the first message of an ", what_,
                                                       " stream may carry a header; nothing was "
                                                       "stored"));
      }
    }
    const size_t n = std::min(buffer.size(), current_.data().size() - at_);
    std::copy_n(current_.data().data() + at_, n, buffer.data());
    at_ += n;
    return n;
  }

 private:
  grpc::ServerContext* const context_;
  grpc::ServerReader<Request>* const reader_;
  Request current_;
  const char* const what_;
  size_t at_ = 0;
  bool done_ = false;
};

// Packs the bytes the store reads into ReadResponse messages of up to kReadChunk bytes.
class ReadStreamSink final : public store::ByteSink {
 public:
  explicit ReadStreamSink(grpc::ServerWriter<v1::ReadResponse>* writer) : writer_(writer) {}

  void SetVersion(uint64_t version) override { pending_.set_object_version(version); }

  absl::Status Start(uint64_t object_size) override {
    pending_.set_object_size(object_size);
    return absl::OkStatus();
  }

  absl::Status Write(absl::Span<const uint8_t> data, uint32_t reconstructed) override {
    pending_.set_reconstructed_blocks(pending_.reconstructed_blocks() + reconstructed);
    while (!data.empty()) {
      const size_t room = kReadChunk - pending_.data().size();
      const size_t n = std::min(room, data.size());
      pending_.mutable_data()->append(reinterpret_cast<const char*>(data.data()), n);
      data.remove_prefix(n);
      if (pending_.data().size() == kReadChunk) {
        if (absl::Status s = Send(); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // Sends what is buffered; also sends one (empty) message when nothing was sent at all, so
  // the client always learns the object's size.
  absl::Status Finish() {
    if (!pending_.data().empty() || !sent_any_) return Send();
    return absl::OkStatus();
  }

 private:
  absl::Status Send() {
    if (!writer_->Write(pending_)) return absl::CancelledError("the client went away");
    sent_any_ = true;
    pending_.Clear();
    return absl::OkStatus();
  }

  grpc::ServerWriter<v1::ReadResponse>* const writer_;
  v1::ReadResponse pending_;
  bool sent_any_ = false;
};

}  // namespace

grpc::Status ObjectsService::Encode(grpc::ServerContext* context,
                                    grpc::ServerReader<v1::EncodeRequest>* reader,
                                    v1::EncodeResponse* response) {
  v1::EncodeRequest first;
  if (!reader->Read(&first)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "empty Encode stream: the first message must carry a header");
  }
  if (!first.has_header()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first EncodeRequest must carry a header (name, shape)");
  }
  const v1::EncodeHeader& h = first.header();
  store::EncodeParams params;
  params.name = h.name();
  params.data_blocks = h.data_blocks();
  params.parity_blocks = h.parity_blocks();
  params.block_size = h.block_size();
  params.matrix = FromProto(h.matrix());
  if (h.matrix() != v1::MATRIX_TYPE_UNSPECIFIED && h.matrix() != v1::MATRIX_TYPE_CAUCHY &&
      h.matrix() != v1::MATRIX_TYPE_VANDERMONDE) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("unknown matrix type ", h.matrix(), "; use cauchy or vandermonde"));
  }
  StreamSource<v1::EncodeRequest> source(context, reader, std::move(first), "encode");
  absl::StatusOr<store::ObjectRecord> object = store_->Encode(params, source);
  if (!object.ok()) return ToGrpc(object.status());
  ToProto(*object, response->mutable_object());
  return grpc::Status::OK;
}

grpc::Status ObjectsService::Read(grpc::ServerContext* context, const v1::ReadRequest* request,
                                  grpc::ServerWriter<v1::ReadResponse>* writer) {
  ReadStreamSink sink(writer);
  absl::Status s = store_->Read(request->name(), request->offset(), request->length(), sink);
  if (s.ok()) s = sink.Finish();
  return ToGrpc(s);
}

grpc::Status ObjectsService::Update(grpc::ServerContext* context,
                                    grpc::ServerReader<v1::UpdateRequest>* reader,
                                    v1::UpdateResponse* response) {
  v1::UpdateRequest first;
  if (!reader->Read(&first)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "empty Update stream: the first message must carry a header");
  }
  if (!first.has_header()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first UpdateRequest must carry a header (name, offset)");
  }
  const v1::UpdateHeader h = first.header();
  StreamSource<v1::UpdateRequest> source(context, reader, std::move(first), "update");
  absl::StatusOr<store::UpdateResult> result =
      store_->Update(h.name(), h.offset(), source, h.append());
  if (!result.ok()) return ToGrpc(result.status());
  ToProto(result->object, response->mutable_object());
  response->set_bytes_written(result->bytes_written);
  response->set_stripes_updated(result->stripes_updated);
  response->set_stripes_appended(result->stripes_appended);
  return grpc::Status::OK;
}

grpc::Status ObjectsService::GetBlock(grpc::ServerContext* context,
                                      const v1::GetBlockRequest* request,
                                      grpc::ServerWriter<v1::ReadResponse>* writer) {
  ReadStreamSink sink(writer);
  absl::Status s = store_->GetBlock(request->name(), request->stripe(), request->index(), sink);
  if (s.ok()) s = sink.Finish();
  return ToGrpc(s);
}

grpc::Status ObjectsService::Stat(grpc::ServerContext* context, const v1::StatRequest* request,
                                  v1::StatResponse* response) {
  absl::StatusOr<store::ObjectStatus> status =
      store_->Stat(request->name(), request->blocks(), request->verify());
  if (!status.ok()) return ToGrpc(status.status());
  ToProto(*status, /*with_stripes=*/true, response->mutable_object());
  return grpc::Status::OK;
}

grpc::Status ObjectsService::List(grpc::ServerContext* context, const v1::ListRequest* request,
                                  v1::ListResponse* response) {
  absl::StatusOr<std::vector<store::ObjectStatus>> objects = store_->List();
  if (!objects.ok()) return ToGrpc(objects.status());
  for (const store::ObjectStatus& o : *objects) {
    ToProto(o, /*with_stripes=*/false, response->add_objects());
  }
  return grpc::Status::OK;
}

grpc::Status ObjectsService::Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                                    v1::DeleteResponse* response) {
  absl::StatusOr<uint64_t> freed = store_->Delete(request->name());
  if (!freed.ok()) return ToGrpc(freed.status());
  response->set_freed_bytes(*freed);
  return grpc::Status::OK;
}

grpc::Status ObjectsService::Recover(grpc::ServerContext* context,
                                     const v1::RecoverRequest* request,
                                     grpc::ServerWriter<v1::RecoverProgress>* writer) {
  absl::StatusOr<store::RecoverProgress> done =
      store_->Recover(request->name(), [&](const store::RecoverProgress& p) {
        v1::RecoverProgress message;
        ToProto(p, &message);
        writer->Write(message);  // A vanished client does not stop the repair.
      });
  if (!done.ok()) return ToGrpc(done.status());
  v1::RecoverProgress last;
  ToProto(*done, &last);
  last.set_done(true);
  writer->Write(last);
  return grpc::Status::OK;
}

grpc::Status ObjectsService::Scrub(grpc::ServerContext* context, const v1::ScrubRequest* request,
                                   grpc::ServerWriter<v1::ScrubProgress>* writer) {
  std::vector<std::string> names;
  if (!request->name().empty()) names.push_back(request->name());
  absl::StatusOr<store::ScrubReport> done = scrubber_->ScrubNow(
      names,
      store::ScrubOptions{.repair = !request->check_only(),
                          .rate_bytes_per_sec = request->rate_bytes_per_sec()},
      [&](const store::ScrubReport& report) {
        v1::ScrubProgress message;
        ToProto(report, &message);
        writer->Write(message);
      },
      [context] { return context->IsCancelled(); });
  if (!done.ok()) return ToGrpc(done.status());
  v1::ScrubProgress last;
  ToProto(*done, &last);
  last.set_done(true);
  writer->Write(last);
  return grpc::Status::OK;
}

grpc::Status ObjectsService::GetScrubStatus(grpc::ServerContext* context,
                                            const v1::ScrubStatusRequest* request,
                                            v1::ScrubStatusResponse* response) {
  ToProto(scrubber_->Status(), scrub_options_, response);
  return grpc::Status::OK;
}

grpc::Status DevicesService::List(grpc::ServerContext* context,
                                  const v1::ListDevicesRequest* request,
                                  v1::ListDevicesResponse* response) {
  absl::StatusOr<std::vector<store::DeviceStatus>> devices = store_->ListDevices();
  if (!devices.ok()) return ToGrpc(devices.status());
  for (const store::DeviceStatus& d : *devices) ToProto(d, response->add_devices());
  return grpc::Status::OK;
}

grpc::Status DevicesService::SetState(grpc::ServerContext* context,
                                      const v1::SetDeviceStateRequest* request,
                                      v1::SetDeviceStateResponse* response) {
  store::DeviceState state;
  switch (request->state()) {
    case v1::DEVICE_STATE_ONLINE:
      state = store::DeviceState::kOnline;
      break;
    case v1::DEVICE_STATE_FAILED:
      state = store::DeviceState::kFailed;
      break;
    case v1::DEVICE_STATE_FAILING: {
      // Evacuation: the job marks the device failing, moves its blocks, then fails it.
      absl::StatusOr<std::vector<store::DeviceStatus>> all = store_->ListDevices();
      if (!all.ok()) return ToGrpc(all.status());
      if (request->id() >= all->size()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            absl::StrCat("device ", request->id(), " not found (ecctl device ls)"));
      }
      // A failing device may be evacuated again (after a job failed for lack of space); a
      // failed one has nothing left that could be read off it.
      if ((*all)[request->id()].record.state == store::DeviceState::kFailed) {
        return grpc::Status(
            grpc::StatusCode::FAILED_PRECONDITION,
            absl::StrCat("device ", request->id(),
                         " is failed: nothing can be moved off it. Run `ecctl recover NAME` for "
                         "its objects, or `ecctl device online ",
                         request->id(), "` once it is replaced"));
      }
      store::RebuildSpec spec;
      spec.kind = store::RebuildKind::kEvacuateDevice;
      spec.device = request->id();
      spec.reason = "operator asked to evacuate the device";
      rebuilds_->Submit(std::move(spec));
      ToProto((*all)[request->id()], response->mutable_device());
      response->mutable_device()->set_state(v1::DEVICE_STATE_FAILING);
      return grpc::Status::OK;
    }
    default:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "device state must be ONLINE, FAILING (evacuate) or FAILED");
  }
  absl::StatusOr<store::DeviceStatus> device = store_->SetDeviceState(request->id(), state);
  if (!device.ok()) return ToGrpc(device.status());
  ToProto(*device, response->mutable_device());
  return grpc::Status::OK;
}

namespace {

void ToProto(const store::RebuildJob& j, v1::RebuildJob* out) {
  out->set_id(j.id);
  out->set_kind(store::RebuildKindName(j.spec.kind));
  out->set_state(store::RebuildStateName(j.state));
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
  for (const store::RebuildJob& j : rebuilds_->List()) ToProto(j, response->add_jobs());
  return grpc::Status::OK;
}

grpc::Status RebuildsService::Get(grpc::ServerContext* context,
                                  const v1::GetRebuildRequest* request, v1::RebuildJob* response) {
  std::optional<store::RebuildJob> j = rebuilds_->Get(request->id());
  if (!j) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("rebuild job ", request->id(),
                                     " not found; `ecctl rebuild ls` lists the known jobs"));
  }
  ToProto(*j, response);
  return grpc::Status::OK;
}

}  // namespace ecd::daemon
