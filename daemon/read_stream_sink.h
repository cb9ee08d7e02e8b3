// ReadStreamSink: the bytes a Read or GetBlock returns, as ReadResponse messages built in gRPC
// slices, sent by a thread of its own while the store fills the next one.
#ifndef ECD_DAEMON_READ_STREAM_SINK_H_
#define ECD_DAEMON_READ_STREAM_SINK_H_

#include <grpc/slice.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>
#include <grpcpp/support/status.h>
#include <grpcpp/support/sync_stream.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "daemon/convert.h"
#include "daemon/stream_idle.h"
#include "ecd/v1/ecd.pb.h"
#include "lib/store/byte_stream.h"
#include "lib/util/mutex.h"
#include "wire/data_message.h"
#include "wire/raw_methods.h"

namespace ecd::daemon {

// written, and one gRPC may still be sending after its Write returned. The store calls Finish.
// Each Write is timed by `idle` (may be null) as a wait for the client to take the data.
//
// Thread safety: the store calls it from one thread; the sender thread is its own.
class ReadStreamSink final : public store::ByteSink {
 public:
  // Read's or GetBlock's stream (grpc::ServerSplitStreamer<Request, grpc::ByteBuffer>).
  using Streamer = wire::RawResponseWriter;

  // `what` ("read") names the call for the idle timer; it must outlive the sink.
  ReadStreamSink(grpc::ServerContext* context, Streamer* stream, StreamIdleTimer* idle,
                 const char* what)
      : context_(context), stream_(stream), idle_(idle), what_(what) {}
  ~ReadStreamSink() override;
  ReadStreamSink(const ReadStreamSink&) = delete;
  ReadStreamSink& operator=(const ReadStreamSink&) = delete;

  void SetObject(const store::ObjectRecord& object) override;

  absl::Status Start(uint64_t object_size) override;

  bool Gone() const override;

  uint64_t held_bytes(uint64_t length) const override;

  absl::Status Write(absl::Span<const uint8_t> data, uint32_t reconstructed) override;

  // The status the call ended with for its client when the idle timer cancelled it (its client
  // took no data for --stream-idle-timeout), whatever the read returned; else nothing.
  std::optional<grpc::Status> IdleStatus() const;

  absl::Status WritePinned(absl::Span<const uint8_t> data, uint32_t reconstructed,
                           const std::shared_ptr<const void>& pin) override;

  // ok: sends what is buffered (one (empty) message when nothing was sent at all, so the client
  // always learns the object's size) and waits until every message is written. Not ok: drops
  // what is not yet being written and waits for the sender to stop.
  absl::Status Finish(bool ok) override;

 private:
  // What every Write and WritePinned does first: a cancelled call or a passed deadline stops
  // the read here (between stripes), and the next message counts the blocks rebuilt.
  absl::Status Begin(uint32_t reconstructed);

  // Moves the bytes copied since the last part into the message's parts.
  void TakeCopied();

  // Seals the buffered message and hands it to the sender (written inline when it is the
  // first: a read of one message starts no thread).
  absl::Status Send();

  // Writes `message` to the stream, timed as a wait for the client; false when the call is gone.
  bool WriteMessage(const grpc::ByteBuffer& message);

  // Stops the sender thread, dropping a message that waits for it; returns once the thread has
  // ended (after the Write it may be in).
  void StopSender();

  // The sender thread: writes each queued message until stopped or the stream fails.
  void SendQueued();

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

  mutable Mutex mu_;  // Shared with the sender thread.
  CondVar changed_;
  std::optional<grpc::ByteBuffer> queued_ ABSL_GUARDED_BY(mu_);  // Sealed, waiting for the sender.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;                    // The sender is inside Write.
  bool failed_ ABSL_GUARDED_BY(mu_) = false;  // A Write failed: the client is gone.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
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

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_READ_STREAM_SINK_H_
