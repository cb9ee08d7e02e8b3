// Objects, Devices and Rebuilds services: adapters between gRPC and the Store and the
// RepairPlanner.
#include "daemon/services.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "daemon/auth.h"
#include "daemon/convert.h"
#include "daemon/stream_idle.h"
#include "lib/store/store_admin.h"
#include "wire/data_message.h"
#include "wire/raw_methods.h"

namespace ecd::daemon {
namespace {

// How long an Encode or Update stream of undeclared size waits, before it commits, for gRPC to
// report a failed receive as a cancellation (StreamSource::BeforeCommit).
constexpr std::chrono::milliseconds kCancelGrace{20};

// A call stopped because its client cancelled it or its deadline passed: the status the
// client would see anyway, with what was (not) done.
grpc::Status Stopped(const grpc::ServerContext* context, absl::string_view what) {
  if (context->deadline() <= std::chrono::system_clock::now()) {
    return grpc::Status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("the call's deadline passed; ", what, ". Retry with a longer deadline"));
  }
  return grpc::Status(grpc::StatusCode::CANCELLED,
                      absl::StrCat("the client cancelled the call; ", what));
}

// The store's answer to a call, or Stopped when the call ended because the client went away.
// DeadlineExceeded is kept as it is: the call's deadline passed while it waited, or ecd
// cancelled a stalled stream (StreamIdleTimer), which told the client so in these words.
grpc::Status Finish(const grpc::ServerContext* context, const absl::Status& s,
                    absl::string_view what) {
  if (!s.ok() && !absl::IsDeadlineExceeded(s) && context->IsCancelled()) {
    return Stopped(context, what);
  }
  return ToGrpc(s);
}

// When the store's waits for a call give up: at its deadline, or once it is cancelled.
store::Interrupt InterruptOf(grpc::ServerContext* context) {
  store::Interrupt interrupt;
  if (const auto deadline = context->deadline();
      deadline != std::chrono::system_clock::time_point::max()) {
    interrupt.deadline = absl::FromChrono(deadline);
  }
  interrupt.cancelled = [context] { return context->IsCancelled(); };
  return interrupt;
}

// wire::ReadFirstMessage, timed by `idle` as a wait for the client.
absl::StatusOr<wire::DataMessage> ReadFirstTimed(StreamIdleTimer* idle,
                                                 grpc::ServerContext* context,
                                                 grpc::ServerReader<grpc::ByteBuffer>* reader,
                                                 const char* what, absl::string_view method,
                                                 absl::string_view fields,
                                                 google::protobuf::MessageLite* header) {
  StreamIdleTimer::Waiting wait(idle, context, what, StreamIdleTimer::kSending);
  absl::StatusOr<wire::DataMessage> first = wire::ReadFirstMessage(reader, method, fields, header);
  if (wait.Done()) return wait.status();
  return first;
}

// Feeds the data of a client stream (Encode or Update) to the store, the first message's bytes
// included, copying each message's data straight from gRPC's slices into the store's buffer
// (wire::DataMessage). Only the first message may carry a header (of type Header). At most
// `max_bytes` are taken (the stream fails as soon as more arrive, with `refused`), and when
// `declared` is set the stream must carry exactly that many. Each wait for a message is timed by
// the StreamIdleTimer (set_idle_timer): a client that sends nothing for its timeout is cancelled.
template <typename Header>
class StreamSource final : public store::ByteSource {
 public:
  StreamSource(grpc::ServerContext* context, grpc::ServerReader<grpc::ByteBuffer>* reader,
               wire::DataMessage first, const char* what, uint64_t max_bytes,
               std::string limit_text, std::optional<uint64_t> declared = std::nullopt)
      : context_(context),
        reader_(reader),
        current_(std::move(first)),
        what_(what),
        max_bytes_(max_bytes),
        limit_text_(std::move(limit_text)),
        declared_(declared),
        received_(current_.data_size()) {}

  // The limit that stopped the stream, if one did.
  std::optional<Limit> refused() const { return refused_; }

  // Refuses messages larger than `max_message` (--max-message-size) with a message naming the
  // limit; gRPC itself refuses only those past its own, larger, cap (see main.cc).
  void set_max_message(uint64_t max_message) { max_message_ = max_message; }
  // Times each wait for a message (may be null: none). Must outlive the source.
  void set_idle_timer(StreamIdleTimer* idle) { idle_ = idle; }

  // A failed receive (a message past gRPC's own cap) looks like the end of the stream to Read,
  // and the call is marked cancelled only a moment later (grpc 1.51's sync API). With a declared
  // size such a stream is short and refused already; without one, the store asks here, after
  // its flush, and this gives the cancellation up to kCancelGrace to show before anything is
  // committed.
  absl::Status BeforeCommit() override {
    const auto until = std::chrono::steady_clock::now() + kCancelGrace;
    while (!context_->IsCancelled()) {
      if (declared_ || std::chrono::steady_clock::now() >= until) return absl::OkStatus();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return absl::CancelledError(
        absl::StrCat("the ", what_, " stream failed or was cancelled; nothing was stored"));
  }

  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override {
    absl::StatusOr<bool> more = Await();
    if (!more.ok()) return more.status();
    if (!*more) return 0;
    const size_t n = current_.CopyData(at_, buffer);
    at_ += n;
    return n;
  }

  absl::StatusOr<bool> Await() override {
    if (absl::Status s = CheckLimits(current_.wire_size()); !s.ok()) return s;
    while (at_ == current_.data_size()) {
      if (done_) return false;
      if (absl::Status s = Next(); !s.ok()) return s;
    }
    return true;
  }

 private:
  // Receives the next message into current_ (done_ at the end of the stream or on an error).
  absl::Status Next() {
    at_ = 0;
    current_ = wire::DataMessage();  // Nothing of the last message can be read again.
    StreamIdleTimer::Waiting wait(idle_, context_, what_, StreamIdleTimer::kSending);
    const bool got = reader_->Read(&raw_);
    if (wait.Done()) {
      done_ = true;
      return wait.status();
    }
    if (!got) {
      done_ = true;
      if (context_->IsCancelled()) {
        return absl::CancelledError(
            absl::StrCat("the client cancelled the ", what_, "; nothing was stored"));
      }
      if (declared_ && *declared_ != received_) {
        return absl::InvalidArgumentError(absl::StrCat("the ", what_, " header declared ",
                                                       *declared_, " bytes but the stream carried ",
                                                       received_, "; nothing was stored"));
      }
      return absl::OkStatus();
    }
    // Checked before parsing, so a message over the limit is refused as such.
    if (absl::Status s = CheckLimits(raw_.Length()); !s.ok()) return s;
    if (absl::Status s = current_.Parse(&raw_, &scratch_); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "an ", what_, " message was refused: ", s.message(), "; nothing was stored"));
    }
    if (current_.has_header()) {
      return absl::InvalidArgumentError(absl::StrCat("only the first message of an ", what_,
                                                     " stream may carry a header; nothing was "
                                                     "stored"));
    }
    received_ += current_.data_size();
    return CheckLimits(current_.wire_size());
  }

  // The refusals: a message over --max-message-size, or more bytes than max_bytes_.
  absl::Status CheckLimits(uint64_t message_size) {
    if (message_size > max_message_) {
      refused_ = Limit::kMessageSize;
      return absl::ResourceExhaustedError(absl::StrCat(
          "an ", what_, " message of ", message_size, " bytes is larger than the limit of ",
          max_message_,
          " bytes (--max-message-size); send the data in smaller messages (ecctl sends 1 MiB)"
          "; nothing was stored"));
    }
    if (received_ > max_bytes_) {
      refused_ = Limit::kObjectSize;
      return absl::InvalidArgumentError(absl::StrCat("the ", what_, " stream carried more than ",
                                                     max_bytes_, " bytes: ", limit_text_,
                                                     "; nothing was stored"));
    }
    return absl::OkStatus();
  }

  grpc::ServerContext* const context_;
  grpc::ServerReader<grpc::ByteBuffer>* const reader_;
  wire::DataMessage current_;
  grpc::ByteBuffer raw_;  // The message being received.
  Header scratch_;        // Where a (refused) header of a later message is parsed to.
  const char* const what_;
  const uint64_t max_bytes_;
  const std::string limit_text_;
  const std::optional<uint64_t> declared_;
  uint64_t max_message_ = UINT64_MAX;
  StreamIdleTimer* idle_ = nullptr;
  uint64_t received_;  // data bytes of the messages read so far
  uint64_t at_ = 0;
  bool done_ = false;
  std::optional<Limit> refused_;
};

// Packs the bytes the store reads into ReadResponse messages of up to wire::kReadChunk bytes, built
// as gRPC slices: a small one in front with the other fields and the data field's tag and length
// (protobuf's wire format; data is field 1), then the data. What the store passes pinned
// (WritePinned: a read's blocks) is sent from the store's stripe buffer itself, in slices that
// hold the pin until gRPC lets go of them, in pieces of at least kPinAtLeast bytes; shorter
// pieces, and GetBlock's bytes, are copied once into a slice of the sink's. (Protobuf would copy
// the data into a std::string, then into a slice.) A message that ends in pinned data is sealed
// when the WritePinned call that filled it returns, so that no pin waits in a half-filled
// message while the read waits for that pin to reuse its buffer.
// A sender thread, started with the second message, writes the messages to the stream, so that
// filling one overlaps with sending the one before (a blocking Write took 0.55 s of a 0.75 s
// 1 GiB read when the store's thread did both). At most one sealed message waits for the
// sender, so a read holds up to four messages (held_bytes, reserved from the store's memory
// budget with its stripes until Finish returns): one being filled, one waiting, one being
// written, and one gRPC may still be sending after its Write returned. The store calls Finish.
// Each Write is timed by `idle` (may be null) as a wait for the client to take the data.
class ReadStreamSink final : public store::ByteSink {
 public:
  // Read's or GetBlock's stream (grpc::ServerSplitStreamer<Request, grpc::ByteBuffer>).
  using Streamer = wire::RawResponseWriter;

  // `what` ("read") names the call for the idle timer; it must outlive the sink.
  ReadStreamSink(grpc::ServerContext* context, Streamer* stream, StreamIdleTimer* idle,
                 const char* what)
      : context_(context), stream_(stream), idle_(idle), what_(what) {}
  ~ReadStreamSink() override {
    StopSender();
    if (copy_.has_value()) grpc_slice_unref(*copy_);
  }
  ReadStreamSink(const ReadStreamSink&) = delete;
  ReadStreamSink& operator=(const ReadStreamSink&) = delete;

  void SetObject(const store::ObjectRecord& object) override {
    fields_.set_object_version(object.version);
    fields_.set_object_id(static_cast<uint64_t>(object.id));
  }

  absl::Status Start(uint64_t object_size) override {
    fields_.set_object_size(object_size);
    return absl::OkStatus();
  }

  bool Gone() const override {
    if (context_->IsCancelled()) return true;
    std::lock_guard lock(mu_);
    return failed_;
  }

  uint64_t held_bytes(uint64_t length) const override {
    const uint64_t messages =
        std::clamp<uint64_t>((length + wire::kReadChunk - 1) / wire::kReadChunk, 1, 4);
    return messages * (kRoom + wire::kReadChunk);
  }

  absl::Status Write(absl::Span<const uint8_t> data, uint32_t reconstructed) override {
    if (absl::Status s = Begin(reconstructed); !s.ok()) return s;
    while (!data.empty()) {
      if (!copy_.has_value()) copy_ = grpc_slice_malloc(wire::kReadChunk);
      const size_t n = std::min(wire::kReadChunk - filled_, data.size());
      std::memcpy(GRPC_SLICE_START_PTR(*copy_) + copy_end_, data.data(), n);
      copy_end_ += n;
      filled_ += n;
      data.remove_prefix(n);
      if (filled_ == wire::kReadChunk) {
        if (absl::Status s = Send(); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // The status the call ended with for its client when the idle timer cancelled it (its client
  // took no data for --stream-idle-timeout), whatever the read returned; else nothing.
  std::optional<grpc::Status> IdleStatus() const {
    if (!idle_status_.load()) return std::nullopt;
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        idle_->Message(what_, StreamIdleTimer::kTaking));
  }

  absl::Status WritePinned(absl::Span<const uint8_t> data, uint32_t reconstructed,
                           const std::shared_ptr<const void>& pin) override {
    if (data.size() < kPinAtLeast) return Write(data, reconstructed);
    if (absl::Status s = Begin(reconstructed); !s.ok()) return s;
    while (!data.empty()) {
      if (data.size() < kPinAtLeast) return Write(data, 0);  // A short tail is copied.
      const size_t n = std::min(wire::kReadChunk - filled_, data.size());
      TakeCopied();
      // The slice owns a copy of the pin, dropped when gRPC and this sink are done with it.
      parts_.emplace_back(
          grpc_slice_new_with_user_data(
              const_cast<uint8_t*>(data.data()), n,
              [](void* held) { delete static_cast<std::shared_ptr<const void>*>(held); },
              new std::shared_ptr<const void>(pin)),
          grpc::Slice::STEAL_REF);
      filled_ += n;
      data.remove_prefix(n);
      if (filled_ == wire::kReadChunk || data.empty()) {
        if (absl::Status s = Send(); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // ok: sends what is buffered (one (empty) message when nothing was sent at all, so the client
  // always learns the object's size) and waits until every message is written. Not ok: drops
  // what is not yet being written and waits for the sender to stop.
  absl::Status Finish(bool ok) override {
    if (!ok) {
      StopSender();
      return absl::OkStatus();
    }
    if (filled_ > 0 || !sent_any_) {
      if (absl::Status s = Send(); !s.ok()) return s;
    }
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return failed_ || (!queued_.has_value() && !writing_); });
    return failed_ ? GoneError() : absl::OkStatus();
  }

 private:
  // Room for the other fields (four varints) and the data field's tag and length.
  static constexpr size_t kRoom = 64;
  // Smaller pinned pieces are copied (so are blocks this small): every pinned piece ends its
  // message, and messages this short would cost more than the copy.
  static constexpr size_t kPinAtLeast = wire::kReadChunk / 2;
  static constexpr uint32_t kDataTag = google::protobuf::internal::WireFormatLite::MakeTag(
      1, google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED);  // data

  static absl::Status GoneError() { return absl::CancelledError("the client went away"); }

  // What every Write and WritePinned does first: a cancelled call or a passed deadline stops
  // the read here (between stripes), and the next message counts the blocks rebuilt.
  absl::Status Begin(uint32_t reconstructed) {
    if (context_->IsCancelled()) return absl::CancelledError("the call ended");
    fields_.set_reconstructed_blocks(fields_.reconstructed_blocks() + reconstructed);
    return absl::OkStatus();
  }

  // Moves the bytes copied since the last part into the message's parts.
  void TakeCopied() {
    if (copy_end_ > copy_begin_) {
      parts_.push_back(grpc::Slice(*copy_, grpc::Slice::ADD_REF).sub(copy_begin_, copy_end_));
      copy_begin_ = copy_end_;
    }
  }

  // Seals the buffered message and hands it to the sender (written inline when it is the
  // first: a read of one message starts no thread).
  absl::Status Send() {
    TakeCopied();
    if (copy_.has_value()) grpc_slice_unref(*copy_);  // The parts hold what they use of it.
    copy_.reset();
    copy_begin_ = copy_end_ = 0;
    using google::protobuf::io::CodedOutputStream;
    uint8_t prefix[kRoom];
    uint8_t* end = prefix + fields_.ByteSizeLong();  // Also caches the sizes written below.
    fields_.SerializeWithCachedSizesToArray(prefix);
    end = CodedOutputStream::WriteTagToArray(kDataTag, end);
    end = CodedOutputStream::WriteVarint64ToArray(filled_, end);
    parts_.insert(parts_.begin(),
                  grpc::Slice(prefix, static_cast<size_t>(end - prefix)));  // Copied.
    grpc::ByteBuffer message(parts_.data(), parts_.size());
    parts_.clear();
    filled_ = 0;
    fields_.Clear();
    const auto write_here = [&] { return WriteMessage(message) ? absl::OkStatus() : GoneError(); };
    if (!sent_any_ || inline_) {
      sent_any_ = true;
      return write_here();
    }
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return failed_ || !queued_.has_value(); });
    if (failed_) return GoneError();
    if (!sender_.joinable()) {
      try {
        sender_ = std::thread([this] { SendQueued(); });
      } catch (const std::system_error&) {  // No thread to be had: write on this one.
        inline_ = true;
        lock.unlock();
        return write_here();
      }
    }
    queued_.emplace(std::move(message));
    lock.unlock();
    changed_.notify_all();
    return absl::OkStatus();
  }

  // Writes `message` to the stream, timed as a wait for the client; false when the call is gone.
  bool WriteMessage(const grpc::ByteBuffer& message) {
    StreamIdleTimer::Waiting wait(idle_, context_, what_, StreamIdleTimer::kTaking);
    const bool ok = stream_->Write(message);
    if (wait.Done()) idle_status_.store(true);
    return ok;
  }

  // Stops the sender thread, dropping a message that waits for it; returns once the thread has
  // ended (after the Write it may be in).
  void StopSender() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      queued_.reset();
    }
    changed_.notify_all();
    if (sender_.joinable()) sender_.join();
  }

  // The sender thread: writes each queued message until stopped or the stream fails.
  void SendQueued() {
    std::unique_lock lock(mu_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || queued_.has_value(); });
      if (stopping_) return;
      grpc::ByteBuffer message = std::move(*queued_);
      queued_.reset();
      writing_ = true;
      lock.unlock();
      changed_.notify_all();
      const bool ok = WriteMessage(message);
      lock.lock();
      writing_ = false;
      if (!ok) {
        failed_ = true;
        queued_.reset();  // Its slices may pin a buffer the read waits for.
      }
      changed_.notify_all();
      if (failed_) return;
    }
  }

  grpc::ServerContext* const context_;
  Streamer* const stream_;
  StreamIdleTimer* const idle_;
  const char* const what_;
  std::atomic<bool> idle_status_{false};  // The idle timer cancelled the call.
  v1::ReadResponse fields_;               // Every field but data, for the next message.
  std::vector<grpc::Slice> parts_;        // The next message's data so far, in order.
  std::optional<grpc_slice> copy_;        // Where Write copies to (wire::kReadChunk bytes).
  size_t copy_begin_ = 0, copy_end_ = 0;  // copy_'s bytes not yet in parts_.
  size_t filled_ = 0;                     // Data bytes of the next message.
  bool sent_any_ = false;
  bool inline_ = false;  // No sender thread could be started: every message is written inline.

  mutable std::mutex mu_;  // Guards the members below, shared with the sender thread.
  std::condition_variable changed_;
  std::optional<grpc::ByteBuffer> queued_;  // Sealed, waiting for the sender.
  bool writing_ = false;                    // The sender is inside Write.
  bool failed_ = false;                     // A Write failed: the client is gone.
  bool stopping_ = false;
  std::thread sender_;  // Started with the second message.
};

// The request of a Read or GetBlock (their one message), or the status to end the call with.
// The wait for it is timed by `idle` (may be null).
template <typename Request>
std::optional<grpc::Status> ReadRequestOf(
    StreamIdleTimer* idle, grpc::ServerContext* context,
    grpc::ServerSplitStreamer<Request, grpc::ByteBuffer>* stream, Request* request,
    const char* what) {
  StreamIdleTimer::Waiting wait(idle, context, what, StreamIdleTimer::kSending);
  const bool got = stream->Read(request);
  if (wait.Done()) return ToGrpc(wait.status());
  if (got) return std::nullopt;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "the call carried no request message, or one that does not parse: its "
                      "object name (or another string in it) is not valid UTF-8, or its bytes are "
                      "not protobuf; send exactly one request, with names as UTF-8 text");
}

}  // namespace

ObjectsService::ObjectsService(store::Store* store, repair::Scrubber* scrubber,
                               const repair::ScrubberOptions& scrub_options)
    : store_(store), scrubber_(scrubber), scrub_options_(scrub_options) {
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
      if (gate_.limiter() != nullptr) gate_.limiter()->CountRejection(Limit::kObjectSize);
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("the object is ", h.size(), " bytes; ", size_limit, "; nothing was stored"));
    }
    StreamSource<v1::EncodeHeader> source(
        context, reader, *std::move(first), "encode", limits_.max_object_size, size_limit,
        h.has_size() ? std::optional<uint64_t>(h.size()) : std::nullopt);
    source.set_max_message(limits_.max_message_size);
    source.set_idle_timer(idle_);
    absl::StatusOr<store::ObjectRecord> object =
        store_->Encode(params, source, InterruptOf(context));
    if (source.refused() && gate_.limiter() != nullptr)
      gate_.limiter()->CountRejection(*source.refused());
    if (!object.ok()) return Finish(context, object.status(), "nothing was stored");
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
    return Finish(context, s, "the read stopped");
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
    StreamSource<v1::UpdateHeader> source(
        context, reader, *std::move(first), "update", max_bytes,
        absl::StrCat("appending it at offset ", h.offset(), " would make the object larger than ",
                     limits_.max_object_size, " bytes (--max-object-size)"),
        h.has_size() ? std::optional<uint64_t>(h.size()) : std::nullopt);
    source.set_max_message(limits_.max_message_size);
    source.set_idle_timer(idle_);
    absl::StatusOr<store::UpdateResult> result =
        store_->Update(h.name(), h.offset(), source, h.append(), InterruptOf(context));
    if (source.refused() && gate_.limiter() != nullptr)
      gate_.limiter()->CountRejection(*source.refused());
    if (!result.ok()) return Finish(context, result.status(), "the object was not changed");
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
    return Finish(context, s, "the read stopped");
  });
}

grpc::Status ObjectsService::Stat(grpc::ServerContext* context, const v1::StatRequest* request,
                                  v1::StatResponse* response) {
  return gate_.Run(context, "Stat", [&]() -> grpc::Status {
    absl::StatusOr<store::ObjectStatus> status =
        store_->Stat(request->name(), request->blocks(), request->verify(), InterruptOf(context));
    if (!status.ok()) return Finish(context, status.status(), "the check stopped");
    ToProto(*status, /*with_stripes=*/true, response->mutable_object());
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::List(grpc::ServerContext* context, const v1::ListRequest* request,
                                  v1::ListResponse* response) {
  return gate_.Run(context, "List", [&]() -> grpc::Status {
    absl::StatusOr<std::vector<store::ObjectStatus>> objects = store_->List();
    if (!objects.ok()) return ToGrpc(objects.status());
    for (const store::ObjectStatus& o : *objects) {
      ToProto(o, /*with_stripes=*/false, response->add_objects());
    }
    return grpc::Status::OK;
  });
}

grpc::Status ObjectsService::Delete(grpc::ServerContext* context, const v1::DeleteRequest* request,
                                    v1::DeleteResponse* response) {
  return gate_.Run(context, "Delete", [&]() -> grpc::Status {
    absl::StatusOr<uint64_t> freed = store_->Delete(request->name(), InterruptOf(context));
    if (!freed.ok()) return Finish(context, freed.status(), "nothing was deleted");
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
      return Finish(context, done.status(),
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
    if (!done.ok()) return Finish(context, done.status(), "the scrub stopped");
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

grpc::Status DevicesService::List(grpc::ServerContext* context,
                                  const v1::ListDevicesRequest* request,
                                  v1::ListDevicesResponse* response) {
  return gate_.Run(context, "List", [&]() -> grpc::Status {
    absl::StatusOr<std::vector<store::DeviceStatus>> devices = store_->admin().ListDevices();
    if (!devices.ok()) return ToGrpc(devices.status());
    for (const store::DeviceStatus& d : *devices) ToProto(d, response->add_devices());
    for (const store::FileSystemUsage& fs : store_->Stats().file_systems) {
      ToProto(fs, response->add_file_systems());
    }
    return grpc::Status::OK;
  });
}

grpc::Status DevicesService::SetState(grpc::ServerContext* context,
                                      const v1::SetDeviceStateRequest* request,
                                      v1::SetDeviceStateResponse* response) {
  return gate_.Run(context, "SetState", [&]() -> grpc::Status {
    const std::optional<store::DeviceState> state = FromProto(request->state());
    if (!state || *state == store::DeviceState::kDown) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "device state must be ONLINE, FAILING (evacuate) or FAILED; ecd marks "
                          "devices DOWN itself");
    }
    if (*state == store::DeviceState::kFailing) return Evacuate(request->id(), response);
    absl::StatusOr<store::DeviceStatus> device =
        store_->admin().SetDeviceState(request->id(), *state);
    if (!device.ok()) return ToGrpc(device.status());
    ToProto(*device, response->mutable_device());
    return grpc::Status::OK;
  });
}

grpc::Status DevicesService::Evacuate(uint32_t id, v1::SetDeviceStateResponse* response) {
  absl::StatusOr<std::vector<store::DeviceStatus>> all = store_->admin().ListDevices();
  if (!all.ok()) return ToGrpc(all.status());
  if (id >= all->size()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("device ", id, " not found (ecctl device ls)"));
  }
  // A failing device may be evacuated again (after a job failed for lack of space); a failed
  // or down one has nothing left that could be read off it.
  switch ((*all)[id].record.state) {
    case store::DeviceState::kFailed:
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          absl::StrCat("device ", id,
                       " is failed: nothing can be moved off it; the repair rebuilds its blocks "
                       "elsewhere (ecctl repair status). Run `ecctl device replace ",
                       id, "` once its disk is replaced"));
    case store::DeviceState::kDown:
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          absl::StrCat("device ", id,
                       " is down: nothing can be read off it. Its blocks are rebuilt once it has "
                       "been down for the repair delay; `ecctl device fail ",
                       id, "` rebuilds them now, `ecctl device online ", id,
                       "` brings it back if its disk is there again"));
    default:
      break;
  }
  repair::RebuildSpec spec;
  spec.kind = repair::RebuildKind::kEvacuateDevice;
  spec.device = id;
  spec.reason = "operator asked to evacuate the device";
  planner_->Submit(spec);
  ToProto((*all)[id], response->mutable_device());
  response->mutable_device()->set_state(v1::DEVICE_STATE_FAILING);
  return grpc::Status::OK;
}

absl::StatusOr<store::DeviceRecord> DevicesService::RecordOf(uint32_t id) const {
  for (const store::DeviceRecord& r : store_->admin().DeviceRecords()) {
    if (r.id == id) return r;
  }
  return absl::NotFoundError(absl::StrCat("device ", id, " not found (ecctl device ls)"));
}

grpc::Status DevicesService::Replace(grpc::ServerContext* context,
                                     const v1::ReplaceDeviceRequest* request,
                                     v1::ReplaceDeviceResponse* response) {
  return gate_.Run(context, "Replace", [&]() -> grpc::Status {
    const uint32_t id = request->id();
    absl::StatusOr<store::DeviceRecord> record = RecordOf(id);
    if (!record.ok()) return ToGrpc(record.status());
    if (record->state == store::DeviceState::kOnline ||
        record->state == store::DeviceState::kFailing) {
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          absl::StrCat("device ", id, " is ", store::DeviceStateName(record->state),
                       ": only a failed or down device is replaced. Fail it first (`ecctl device "
                       "fail ",
                       id, "`), or evacuate it (`ecctl device evacuate ", id,
                       " --wait`) to move its blocks off while it still reads"));
    }
    absl::StatusOr<store::DeviceStatus> device = store_->admin().ReplaceDevice(id);
    if (!device.ok()) return ToGrpc(device.status());
    ToProto(*device, response->mutable_device());
    return grpc::Status::OK;
  });
}

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
