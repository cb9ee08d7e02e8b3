// ReadStreamSink: ReadResponse messages assembled from copied and pinned slices, and the
// sender thread that writes them.
#include "daemon/read_stream_sink.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cstring>
#include <system_error>
#include <utility>

#include "lib/util/mutex.h"

namespace ecd::daemon {
namespace {

// Room for the other fields (four varints) and the data field's tag and length.
constexpr size_t kRoom = 64;
// Smaller pinned pieces are copied (so are blocks this small): every pinned piece ends its
// message, and messages this short would cost more than the copy.
constexpr size_t kPinAtLeast = wire::kReadChunk / 2;
constexpr uint32_t kDataTag = google::protobuf::internal::WireFormatLite::MakeTag(
    1, google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED);  // data

absl::Status GoneError() { return absl::CancelledError("the client went away"); }

}  // namespace

ReadStreamSink::~ReadStreamSink() {
  StopSender();
  if (copy_.has_value()) grpc_slice_unref(*copy_);
}

void ReadStreamSink::SetObject(const store::ObjectRecord& object) {
  fields_.set_object_version(object.version);
  fields_.set_object_id(static_cast<uint64_t>(object.id));
}

absl::Status ReadStreamSink::Start(uint64_t object_size) {
  fields_.set_object_size(object_size);
  return absl::OkStatus();
}

bool ReadStreamSink::Gone() const {
  if (context_->IsCancelled()) return true;
  MutexLock lock(mu_);
  return failed_;
}

uint64_t ReadStreamSink::held_bytes(uint64_t length) const {
  const uint64_t messages =
      std::clamp<uint64_t>((length + wire::kReadChunk - 1) / wire::kReadChunk, 1, 4);
  return messages * (kRoom + wire::kReadChunk);
}

absl::Status ReadStreamSink::Write(absl::Span<const uint8_t> data, uint32_t reconstructed) {
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

std::optional<grpc::Status> ReadStreamSink::IdleStatus() const {
  if (!idle_status_.load()) return std::nullopt;
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                      idle_->Message(what_, StreamIdleTimer::kTaking));
}

absl::Status ReadStreamSink::WritePinned(absl::Span<const uint8_t> data, uint32_t reconstructed,
                                         const std::shared_ptr<const void>& pin) {
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

absl::Status ReadStreamSink::Finish(bool ok) {
  if (!ok) {
    StopSender();
    return absl::OkStatus();
  }
  if (filled_ > 0 || !sent_any_) {
    if (absl::Status s = Send(); !s.ok()) return s;
  }
  MutexLock lock(mu_);
  changed_.Wait(mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return failed_ || (!queued_.has_value() && !writing_);
  });
  return failed_ ? GoneError() : absl::OkStatus();
}

absl::Status ReadStreamSink::Begin(uint32_t reconstructed) {
  if (context_->IsCancelled()) return absl::CancelledError("the call ended");
  fields_.set_reconstructed_blocks(fields_.reconstructed_blocks() + reconstructed);
  return absl::OkStatus();
}

void ReadStreamSink::TakeCopied() {
  if (copy_end_ > copy_begin_) {
    parts_.push_back(grpc::Slice(*copy_, grpc::Slice::ADD_REF).sub(copy_begin_, copy_end_));
    copy_begin_ = copy_end_;
  }
}

absl::Status ReadStreamSink::Send() {
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
  parts_.insert(parts_.begin(), grpc::Slice(prefix, static_cast<size_t>(end - prefix)));  // Copied.
  grpc::ByteBuffer message(parts_.data(), parts_.size());
  parts_.clear();
  filled_ = 0;
  fields_.Clear();
  const auto write_here = [&] { return WriteMessage(message) ? absl::OkStatus() : GoneError(); };
  if (!sent_any_ || inline_) {
    sent_any_ = true;
    return write_here();
  }
  UniqueMutexLock lock(mu_);
  changed_.Wait(
      mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return failed_ || !queued_.has_value(); });
  if (failed_) return GoneError();
  if (!sender_.joinable()) {
    try {
      sender_ = std::thread([this] { SendQueued(); });
    } catch (const std::system_error&) {  // No thread to be had: write on this one.
      inline_ = true;
      lock.Unlock();
      return write_here();
    }
  }
  queued_.emplace(std::move(message));
  lock.Unlock();
  changed_.NotifyAll();
  return absl::OkStatus();
}

bool ReadStreamSink::WriteMessage(const grpc::ByteBuffer& message) {
  StreamIdleTimer::Waiting wait(idle_, context_, what_, StreamIdleTimer::kTaking);
  const bool ok = stream_->Write(message);
  if (wait.Done()) idle_status_.store(true);
  return ok;
}

void ReadStreamSink::StopSender() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    queued_.reset();
  }
  changed_.NotifyAll();
  if (sender_.joinable()) sender_.join();
}

void ReadStreamSink::SendQueued() {
  UniqueMutexLock lock(mu_);
  for (;;) {
    changed_.Wait(
        mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || queued_.has_value(); });
    if (stopping_) return;
    grpc::ByteBuffer message = std::move(*queued_);
    queued_.reset();
    writing_ = true;
    lock.Unlock();
    changed_.NotifyAll();
    const bool ok = WriteMessage(message);
    lock.Lock();
    writing_ = false;
    if (!ok) {
      failed_ = true;
      queued_.reset();  // Its slices may pin a buffer the read waits for.
    }
    changed_.NotifyAll();
    if (failed_) return;
  }
}

}  // namespace ecd::daemon
