// The Objects service's handlers: each passes its gate, then streams between gRPC and the store.
#include "daemon/objects_service.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/call_status.h"
#include "daemon/convert.h"
#include "daemon/read_stream_sink.h"
#include "daemon/stream_source.h"
#include "wire/data_message.h"
#include "wire/raw_methods.h"

namespace ecd::daemon {
namespace {

// The most an ObjectInfo without stripes takes besides its name (its numbers and tags), and so
// what a listed object costs a page beyond its name's bytes.
constexpr size_t kListEntryOverhead = 256;

}  // namespace

ObjectsService::ObjectsService(store::Store* store, repair::Scrubber* scrubber,
                               const repair::ScrubberOptions& scrub_options, const CallRules& rules)
    : gate_(v1::Objects::service_full_name(), rules),
      store_(store),
      scrubber_(scrubber),
      scrub_options_(scrub_options),
      limits_(rules.limits),
      idle_(rules.idle) {
  // grpc::Service's hook for replacing a sync method's handler: the same handlers the generated
  // code installs, typed for raw bytes (wire/raw_methods.h). Encode and Update read their
  // requests as raw bytes (gRPC then registers them as bidi-streaming, which changes nothing for
  // a sync server); Read and GetBlock send their responses so (ReadStreamSink builds them).
  MarkMethodStreamed(wire::ObjectsMethodIndex("Encode"),
                     wire::RawRequestsHandler(&ObjectsService::EncodeFromBytes, this));
  MarkMethodStreamed(wire::ObjectsMethodIndex("Update"),
                     wire::RawRequestsHandler(&ObjectsService::UpdateFromBytes, this));
  MarkMethodStreamed(wire::ObjectsMethodIndex("Read"),
                     wire::RawResponsesHandler<v1::ReadRequest>(
                         [this](grpc::ServerContext* context,
                                grpc::ServerSplitStreamer<v1::ReadRequest, grpc::ByteBuffer>* s) {
                           return ReadFromBytes(context, s);
                         }));
  MarkMethodStreamed(
      wire::ObjectsMethodIndex("GetBlock"),
      wire::RawResponsesHandler<v1::GetBlockRequest>(
          [this](grpc::ServerContext* context,
                 grpc::ServerSplitStreamer<v1::GetBlockRequest, grpc::ByteBuffer>* s) {
            return GetBlockFromBytes(context, s);
          }));
}

grpc::Status ObjectsService::EncodeFromBytes(grpc::ServerContext* context,
                                             grpc::ServerReader<grpc::ByteBuffer>* reader,
                                             v1::EncodeResponse* response) {
  return gate_.Run(context, "Encode", [&]() -> grpc::Status {
    v1::EncodeHeader h;
    absl::StatusOr<wire::DataMessage> first =
        ReadFirstTimed(idle_, context, reader, "encode", "Encode", "name, shape", &h);
    if (!first.ok()) return ToGrpc(first.status());
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
    const std::string size_limit =
        absl::StrCat("the limit is ", limits_.max_object_size, " bytes (--max-object-size)");
    if (h.has_size() && h.size() > limits_.max_object_size) {
      gate_.CountRejection(Limit::kObjectSize);
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("the object is ", h.size(), " bytes; ", size_limit, "; nothing was stored"));
    }
    StreamSource source(context, reader, *std::move(first), h, "encode",
                        {.max_bytes = limits_.max_object_size,
                         .limit_text = size_limit,
                         .max_message = limits_.max_message_size},
                        h.has_size() ? std::optional<uint64_t>(h.size()) : std::nullopt, idle_);
    absl::StatusOr<store::ObjectRecord> object =
        store_->Encode(params, source, InterruptOf(context));
    if (source.refused()) gate_.CountRejection(*source.refused());
    if (!object.ok()) return StatusOfCall(context, object.status(), "nothing was stored");
    ToProto(*object, response->mutable_object());
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::ReadFromBytes(
    grpc::ServerContext* context,
    grpc::ServerSplitStreamer<v1::ReadRequest, grpc::ByteBuffer>* stream) {
  return gate_.Run(context, "Read", [&]() -> grpc::Status {
    v1::ReadRequest request;
    if (auto s = ReadRequestOf(idle_, context, stream, &request, "read")) return *s;
    ReadStreamSink sink(context, stream, idle_, "read");
    absl::Status s = store_->Read(request.name(), request.offset(), request.length(), sink,
                                  InterruptOf(context));
    if (std::optional<grpc::Status> idle = sink.IdleStatus()) return *idle;
    return StatusOfCall(context, s, "the read stopped");
  });
}

grpc::Status ObjectsService::UpdateFromBytes(grpc::ServerContext* context,
                                             grpc::ServerReader<grpc::ByteBuffer>* reader,
                                             v1::UpdateResponse* response) {
  return gate_.Run(context, "Update", [&]() -> grpc::Status {
    v1::UpdateHeader h;
    absl::StatusOr<wire::DataMessage> first =
        ReadFirstTimed(idle_, context, reader, "update", "Update", "name, offset", &h);
    if (!first.ok()) return ToGrpc(first.status());
    // Only an append can grow an object; other updates are bounded by its size already.
    const uint64_t max_bytes =
        !h.append()
            ? UINT64_MAX
            : (h.offset() >= limits_.max_object_size ? 0 : limits_.max_object_size - h.offset());
    StreamSource source(
        context, reader, *std::move(first), h, "update",
        {.max_bytes = max_bytes,
         .limit_text = absl::StrCat("appending it at offset ", h.offset(),
                                    " would make the object larger than ", limits_.max_object_size,
                                    " bytes (--max-object-size)"),
         .max_message = limits_.max_message_size},
        h.has_size() ? std::optional<uint64_t>(h.size()) : std::nullopt, idle_);
    absl::StatusOr<store::UpdateResult> result =
        store_->Update(h.name(), h.offset(), source, h.append(), InterruptOf(context));
    if (source.refused()) gate_.CountRejection(*source.refused());
    if (!result.ok()) return StatusOfCall(context, result.status(), "the object was not changed");
    ToProto(result->object, response->mutable_object());
    response->set_bytes_written(result->bytes_written);
    response->set_stripes_updated(result->stripes_updated);
    response->set_stripes_appended(result->stripes_appended);
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::GetBlockFromBytes(
    grpc::ServerContext* context,
    grpc::ServerSplitStreamer<v1::GetBlockRequest, grpc::ByteBuffer>* stream) {
  return gate_.Run(context, "GetBlock", [&]() -> grpc::Status {
    v1::GetBlockRequest request;
    if (auto s = ReadRequestOf(idle_, context, stream, &request, "block get")) return *s;
    ReadStreamSink sink(context, stream, idle_, "block get");
    absl::Status s = store_->GetBlock(request.name(), request.stripe(), request.index(), sink,
                                      InterruptOf(context));
    if (std::optional<grpc::Status> idle = sink.IdleStatus()) return *idle;
    return StatusOfCall(context, s, "the read stopped");
  });
}

grpc::Status ObjectsService::Stat(grpc::ServerContext* context, const v1::StatRequest* request,
                                  v1::StatResponse* response) {
  return gate_.Run(context, "Stat", [&]() -> grpc::Status {
    absl::StatusOr<store::ObjectStatus> status =
        store_->Stat(request->name(), request->blocks(), request->verify(), InterruptOf(context));
    if (!status.ok()) return StatusOfCall(context, status.status(), "the check stopped");
    ToProto(*status, /*with_stripes=*/true, response->mutable_object());
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::List(grpc::ServerContext* context, const v1::ListRequest* request,
                                  v1::ListResponse* response) {
  return gate_.Run(context, "List", [&]() -> grpc::Status {
    if (request->page_size() < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("page_size is ", request->page_size(),
                                       "; give 0 (the default, 1000) to 10000"));
    }
    store::ListQuery query;
    query.prefix = request->prefix();
    query.delimiter = request->delimiter();
    query.page_size = static_cast<size_t>(request->page_size());
    query.page_token = request->page_token();
    // A page fits half the message limit: names count their bytes, every entry its fields.
    query.max_bytes = limits_.max_message_size / 2;
    query.entry_overhead = kListEntryOverhead;
    absl::StatusOr<store::ObjectListing> page = store_->List(query);
    if (!page.ok()) return ToGrpc(page.status());
    for (const store::ObjectStatus& o : page->objects) {
      ToProto(o, /*with_stripes=*/false, response->add_objects());
    }
    for (std::string& p : page->common_prefixes) response->add_common_prefixes(std::move(p));
    response->set_next_page_token(std::move(page->next_page_token));
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::Count(grpc::ServerContext* context, const v1::CountRequest* request,
                                   v1::CountResponse* response) {
  return gate_.Run(context, "Count", [&]() -> grpc::Status {
    const store::ObjectTotals totals = store_->Totals();
    absl::StatusOr<store::DamageTotals> damage = store_->Damage();
    if (!damage.ok()) return ToGrpc(damage.status());
    response->set_objects(totals.objects);
    response->set_bytes(totals.bytes);
    response->set_degraded_objects(damage->degraded_objects);
    response->set_degraded_stripes(damage->degraded_stripes);
    response->set_lost_stripes(damage->lost_stripes);
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                                    v1::DeleteResponse* response) {
  return gate_.Run(context, "Delete", [&]() -> grpc::Status {
    absl::StatusOr<uint64_t> freed = store_->Delete(request->name(), InterruptOf(context));
    if (!freed.ok()) return StatusOfCall(context, freed.status(), "nothing was deleted");
    response->set_freed_bytes(*freed);
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::Recover(grpc::ServerContext* context,
                                     const v1::RecoverRequest* request,
                                     grpc::ServerWriter<v1::RecoverProgress>* writer) {
  return gate_.Run(context, "Recover", [&]() -> grpc::Status {
    store::RecoverOptions options;
    options.check_all = !request->missing_only();
    // A cancelled call or a passed deadline stops between batches; what was repaired stays.
    options.cancelled = [context] { return context->IsCancelled(); };
    absl::StatusOr<store::RecoverProgress> done = store_->Recover(
        request->name(),
        [&](const store::RecoverProgress& p) {
          v1::RecoverProgress message;
          ToProto(p, &message);
          writer->Write(message);
        },
        options);
    if (!done.ok()) {
      return StatusOfCall(
          context, done.status(),
          "recover stopped between batches (what it repaired so far stays repaired)");
    }
    v1::RecoverProgress last;
    ToProto(*done, &last);
    last.set_done(true);
    writer->Write(last);
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::Scrub(grpc::ServerContext* context, const v1::ScrubRequest* request,
                                   grpc::ServerWriter<v1::ScrubProgress>* writer) {
  return gate_.Run(context, "Scrub", [&]() -> grpc::Status {
    std::vector<std::string> names;
    if (!request->name().empty()) names.push_back(request->name());
    absl::StatusOr<repair::ScrubReport> done = scrubber_->ScrubNow(
        names,
        repair::ScrubOptions{.repair = !request->check_only(),
                             .rate_bytes_per_sec = request->rate_bytes_per_sec()},
        [&](const repair::ScrubReport& report) {
          v1::ScrubProgress message;
          ToProto(report, &message);
          writer->Write(message);
        },
        [context] { return context->IsCancelled(); });
    if (!done.ok()) return StatusOfCall(context, done.status(), "the scrub stopped");
    v1::ScrubProgress last;
    ToProto(*done, &last);
    last.set_done(true);
    writer->Write(last);
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::GetScrubStatus(grpc::ServerContext* context,
                                            const v1::ScrubStatusRequest* request,
                                            v1::ScrubStatusResponse* response) {
  return gate_.Run(context, "GetScrubStatus", [&]() -> grpc::Status {
    ToProto(scrubber_->Status(), scrub_options_, response);
    return grpc::Status::OK;
  });
}

}  // namespace ecd::daemon
