// StreamSource: an Encode or Update stream's messages read one at a time into the store.
#include "daemon/stream_source.h"

#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ecd::daemon {
namespace {

// How long a stream of undeclared size waits, before it commits, for gRPC to report a failed
// receive as a cancellation (StreamSource::BeforeCommit).
constexpr std::chrono::milliseconds kCancelGrace{20};

}  // namespace

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

StreamSource::StreamSource(grpc::ServerContext* context,
                           grpc::ServerReader<grpc::ByteBuffer>* reader, wire::DataMessage first,
                           const google::protobuf::MessageLite& header_type, const char* what,
                           Bounds bounds, std::optional<uint64_t> declared, StreamIdleTimer* idle)
    : context_(context),
      reader_(reader),
      current_(std::move(first)),
      scratch_(header_type.New()),
      what_(what),
      bounds_(std::move(bounds)),
      declared_(declared),
      idle_(idle),
      received_(current_.data_size()) {}

absl::Status StreamSource::BeforeCommit() {
  const auto until = std::chrono::steady_clock::now() + kCancelGrace;
  while (!context_->IsCancelled()) {
    if (declared_ || std::chrono::steady_clock::now() >= until) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return absl::CancelledError(
      absl::StrCat("the ", what_, " stream failed or was cancelled; nothing was stored"));
}

absl::StatusOr<size_t> StreamSource::Read(absl::Span<uint8_t> buffer) {
  absl::StatusOr<bool> more = Await();
  if (!more.ok()) return more.status();
  if (!*more) return 0;
  const size_t n = current_.CopyData(at_, buffer);
  at_ += n;
  return n;
}

absl::StatusOr<bool> StreamSource::Await() {
  if (absl::Status s = CheckLimits(current_.wire_size()); !s.ok()) return s;
  while (at_ == current_.data_size()) {
    if (done_) return false;
    if (absl::Status s = Next(); !s.ok()) return s;
  }
  return true;
}

absl::Status StreamSource::Next() {
  at_ = 0;
  current_ = wire::DataMessage();  // Nothing of the last message can be read again.
  StreamIdleTimer::Waiting wait(idle_, context_, what_, StreamIdleTimer::kSending);
  const bool got = reader_->Read(&raw_);
  if (wait.Done()) {
    done_ = true;
    return wait.status();
  }
  if (!got) return AtEnd();
  // Checked before parsing, so a message over the limit is refused as such.
  if (absl::Status s = CheckLimits(raw_.Length()); !s.ok()) return s;
  if (absl::Status s = current_.Parse(&raw_, scratch_.get()); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("an ", what_, " message was refused: ", s.message(), "; nothing was stored"));
  }
  if (current_.has_header()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "only the first message of an ", what_, " stream may carry a header; nothing was stored"));
  }
  received_ += current_.data_size();
  return CheckLimits(current_.wire_size());
}

absl::Status StreamSource::AtEnd() {
  done_ = true;
  if (context_->IsCancelled()) {
    return absl::CancelledError(
        absl::StrCat("the client cancelled the ", what_, "; nothing was stored"));
  }
  if (declared_ && *declared_ != received_) {
    return absl::InvalidArgumentError(absl::StrCat("the ", what_, " header declared ", *declared_,
                                                   " bytes but the stream carried ", received_,
                                                   "; nothing was stored"));
  }
  return absl::OkStatus();
}

absl::Status StreamSource::CheckLimits(uint64_t message_size) {
  if (message_size > bounds_.max_message) {
    refused_ = Limit::kMessageSize;
    return absl::ResourceExhaustedError(absl::StrCat(
        "an ", what_, " message of ", message_size, " bytes is larger than the limit of ",
        bounds_.max_message,
        " bytes (--max-message-size); send the data in smaller messages (ecctl sends 1 MiB)"
        "; nothing was stored"));
  }
  if (received_ > bounds_.max_bytes) {
    refused_ = Limit::kObjectSize;
    return absl::InvalidArgumentError(
        absl::StrCat("the ", what_, " stream carried more than ", bounds_.max_bytes,
                     " bytes: ", bounds_.limit_text, "; nothing was stored"));
  }
  return absl::OkStatus();
}

}  // namespace ecd::daemon
