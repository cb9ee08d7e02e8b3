// DataMessage: one EncodeRequest or UpdateRequest as gRPC received it (or, for ecctl, one
// ReadResponse). The small header is parsed with protobuf; the data bytes stay in gRPC's receive
// slices and are copied once, straight into the store's stripe buffer (or written from them to
// ecctl's output), instead of twice (protobuf would first copy them into a std::string).
// ObjectsService receives these two methods as raw grpc::ByteBuffers for that, and ecctl
// receives Read and GetBlock responses so.
#ifndef ECD_WIRE_DATA_MESSAGE_H_
#define ECD_WIRE_DATA_MESSAGE_H_

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>
#include <grpcpp/support/sync_stream.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ecd::wire {

// The methods whose requests ObjectsService reads as raw ByteBuffers (and parses with
// DataMessage); interceptors see those messages as grpc::ByteBuffer, not protobuf.
inline constexpr const char* kRawRequestMethods[] = {"/ecd.v1.Objects/Encode",
                                                     "/ecd.v1.Objects/Update"};

// ecd streams a Read's or GetBlock's bytes in ReadResponse messages of at most this many data
// bytes each (bench/grpc_null_sink serves its Read in the same messages).
inline constexpr size_t kReadChunk = 1 << 20;

// The index of ecd.v1.Objects' method `name` ("Encode") in the generated service: its position
// in ecd.proto, which grpc::Service::MarkMethodStreamed takes to replace the method's handler.
int ObjectsMethodIndex(const std::string& name);

// The wire layout both requests share: `header` (field 1, a message) and `data` (field 2, bytes).
// Other fields are skipped, as protobuf skips unknown fields. As with protobuf, a repeated
// `data` field keeps its last value and repeated `header` fields merge.
//
// Thread safety: none; one thread owns it (a call's handler in ecd, the reading thread in
// ecctl).
class DataMessage {
 public:
  DataMessage() = default;
  DataMessage(DataMessage&&) = default;
  DataMessage& operator=(DataMessage&&) = default;

  // Takes `buffer`'s bytes (it is left empty) and parses them. `header` is cleared and then
  // filled when the message has a header. A top-level string field of the header that is not
  // valid UTF-8 (which protobuf would refuse, logging an ERROR line) is set as it came, for the
  // caller's rules to refuse by name (an object name: "object name is not valid UTF-8 ...").
  // INVALID_ARGUMENT (naming what is malformed) when the bytes are not a valid message of this
  // layout; the DataMessage is then empty.
  absl::Status Parse(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* header);
  // As Parse, for a message whose field `data_field` (bytes) is the data and whose other fields
  // (scalars, or anything protobuf parses) are parsed into `others`, a message of the same type
  // (its data field is then left empty), e.g. a ReadResponse. has_header() stays false.
  absl::Status ParseAround(grpc::ByteBuffer* buffer, uint32_t data_field,
                           google::protobuf::MessageLite* others);

  bool has_header() const { return has_header_; }
  // The serialized size: what --max-message-size limits.
  uint64_t wire_size() const { return wire_size_; }
  uint64_t data_size() const { return data_size_; }

  // Copies the data bytes [offset, offset + out.size()) that exist into `out`; returns how many.
  size_t CopyData(uint64_t offset, absl::Span<uint8_t> out) const;
  // The data bytes, in pieces, in order: spans into the slices this message holds.
  absl::Span<const absl::Span<const uint8_t>> data() const { return data_; }

 private:
  void Reset();
  // Takes `buffer`'s slices (it is left empty); the message is then reset and holds them.
  absl::Status Take(grpc::ByteBuffer* buffer);

  std::vector<grpc::Slice> slices_;              // Owns the bytes `data_` points into.
  std::vector<absl::Span<const uint8_t>> data_;  // The data field, in pieces, in order.
  uint64_t wire_size_ = 0;
  uint64_t data_size_ = 0;
  bool has_header_ = false;
};

// The first message of an Encode or Update stream (`method`: "Encode"), which must carry the
// header (`fields` names what it holds, for the error); the header is parsed into `header`.
// INVALID_ARGUMENT for an empty stream, bytes that are not a valid message, or no header.
absl::StatusOr<DataMessage> ReadFirstMessage(grpc::ServerReader<grpc::ByteBuffer>* reader,
                                             absl::string_view method, absl::string_view fields,
                                             google::protobuf::MessageLite* header);

}  // namespace ecd::wire

#endif  // ECD_WIRE_DATA_MESSAGE_H_
