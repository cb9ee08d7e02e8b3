// StreamSource: the data of an Encode or Update client stream as the store's ByteSource, copied
// once from gRPC's slices into the store's buffer, with the stream's limits and idle timer.
#ifndef ECD_DAEMON_STREAM_SOURCE_H_
#define ECD_DAEMON_STREAM_SOURCE_H_

#include <google/protobuf/message_lite.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "daemon/request_limiter.h"
#include "daemon/stream_idle.h"
#include "lib/store/byte_stream.h"
#include "wire/data_message.h"

namespace ecd::daemon {

// wire::ReadFirstMessage, timed by `idle` (may be null) as a wait for the client.
absl::StatusOr<wire::DataMessage> ReadFirstTimed(StreamIdleTimer* idle,
                                                 grpc::ServerContext* context,
                                                 grpc::ServerReader<grpc::ByteBuffer>* reader,
                                                 const char* what, absl::string_view method,
                                                 absl::string_view fields,
                                                 google::protobuf::MessageLite* header);

// Feeds the data of a client stream (Encode or Update) to the store, the first message's bytes
// included (wire::DataMessage). Only the first message may carry a header. At most `max_bytes`
// are taken (the stream fails as soon as more arrive, and refused() says which limit), and when
// `declared` is set the stream must carry exactly that many. Each wait for a message is timed by
// the StreamIdleTimer: a client that sends nothing for its timeout is cancelled.
//
// Thread safety: one thread at a time (the store's reader).
class StreamSource final : public store::ByteSource {
 public:
  struct Bounds {
    uint64_t max_bytes = UINT64_MAX;    // data bytes the stream may carry
    std::string limit_text;             // why max_bytes, for the refusal ("the limit is ...")
    uint64_t max_message = UINT64_MAX;  // wire bytes of one message (--max-message-size)
  };
  // `header_type` is the type of the first message's header (EncodeHeader, UpdateHeader); a
  // later message that carries one is refused. `what` ("encode") names the call in messages
  // and must outlive the source, as must `context`, `reader` and `idle` (may be null: untimed).
  StreamSource(grpc::ServerContext* context, grpc::ServerReader<grpc::ByteBuffer>* reader,
               wire::DataMessage first, const google::protobuf::MessageLite& header_type,
               const char* what, Bounds bounds, std::optional<uint64_t> declared,
               StreamIdleTimer* idle);

  // The limit that stopped the stream, if one did.
  std::optional<Limit> refused() const { return refused_; }

  // A failed receive (a message past gRPC's own cap) looks like the end of the stream to Read,
  // and the call is marked cancelled only a moment later (grpc 1.51's sync API). With a declared
  // size such a stream is short and refused already; without one, the store asks here, after
  // its flush, and this gives the cancellation a short grace to show before anything is
  // committed.
  absl::Status BeforeCommit() override;
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override;
  absl::StatusOr<bool> Await() override;

 private:
  // Receives the next message into current_ (done_ at the end of the stream or on an error).
  absl::Status Next();
  // The end of the stream: an error when it was cancelled or short of the declared size.
  absl::Status AtEnd();
  // The refusals: a message over bounds_.max_message, or more bytes than bounds_.max_bytes.
  absl::Status CheckLimits(uint64_t message_size);

  grpc::ServerContext* const context_;
  grpc::ServerReader<grpc::ByteBuffer>* const reader_;
  wire::DataMessage current_;
  grpc::ByteBuffer raw_;  // The message being received.
  // Where a (refused) header of a later message is parsed to.
  std::unique_ptr<google::protobuf::MessageLite> scratch_;
  const char* const what_;
  const Bounds bounds_;
  const std::optional<uint64_t> declared_;
  StreamIdleTimer* const idle_;
  uint64_t received_;  // data bytes of the messages read so far
  uint64_t at_ = 0;
  bool done_ = false;
  std::optional<Limit> refused_;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_STREAM_SOURCE_H_
