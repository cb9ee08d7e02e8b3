// The byte streams of ecctl's object commands: a local file sent as Encode or Update messages
// (StreamFile) and Read or GetBlock responses saved to a file or stdout (SaveStream).
#ifndef ECD_CLIENT_TRANSFER_H_
#define ECD_CLIENT_TRANSFER_H_

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client_core.h"
#include "client/progress.h"

namespace ecd::client {

// The bytes left to read in `fd` when it is a regular file (from its current offset, where
// reads start), else nullopt.
std::optional<uint64_t> FileSize(int fd);

// Opens `file` ("-": stdin) for reading; exit code 3 if it cannot be.
absl::StatusOr<int> OpenInput(const std::string& file);

// Closes what OpenInput opened (not stdin).
void CloseInput(int fd);

// Streams the bytes of `fd` (named `file` in errors) as the data of requests (EncodeRequest or
// UpdateRequest: field 1 the header, field 2 the data) after a first message carrying only the
// header set in `request`, and shows the bytes sent on `progress`. Stops early (OK) if the
// server ends the stream (Finish then says why); cancels the call and fails with exit code 3 on
// a read error.
//
// Each data message is a chunk of ChunkReader's (read ahead, O_DIRECT for a regular file) with
// the data field's tag and length written in the room in front of it, in protobuf's wire format:
// ecctl copies no data (protobuf would copy it into a std::string, then into gRPC's slice).
absl::Status StreamFile(int fd, const std::string& file, const google::protobuf::Message& request,
                        grpc::ClientWriter<grpc::ByteBuffer>& writer, grpc::ClientContext& context,
                        ProgressBar& progress);

// What a streamed read delivered.
struct Streamed {
  uint64_t bytes = 0;
  uint32_t reconstructed = 0;
  uint64_t version = 0;  // The object version the bytes come from (0: not told).
  uint64_t id = 0;       // The object's id (0: not told).
};

// The bytes of a read ask for: [offset, offset + length) of an object (length 0: to the end).
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Writes a stream of raw ReadResponse messages (ClientCore::RawReader) for `range` into `out`
// ("-": stdout), showing the bytes on `progress`; never leaves partial or unchecked bytes under
// `out`. `what` names the command in errors.
absl::StatusOr<Streamed> SaveStream(ClientCore& c, const std::string& what,
                                    grpc::ClientContext& context,
                                    grpc::ClientReader<grpc::ByteBuffer>& stream,
                                    const std::string& out, const ByteRange& range,
                                    ProgressBar& progress);

// The summary of a read or block get goes to stderr when the bytes go to stdout.
FILE* SummaryStream(const std::string& out);

}  // namespace ecd::client

#endif  // ECD_CLIENT_TRANSFER_H_
