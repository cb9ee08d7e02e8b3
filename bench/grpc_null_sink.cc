// grpc_null_sink: the transport's own ceiling for bench/e2e.sh, both ways. A gRPC server that
// implements ecd.v1 Objects.Encode (client streaming) by counting and discarding the bytes, so
// that the same `ecctl encode` command that feeds ecd can be pointed at it (`ecctl --addr`) and
// the difference between the two is ecd's own work (EC, CRC, NVMe writes, flush, commit); and
// Objects.Read of an object it was sent, streaming as many bytes (zeros) back as ecd would, from
// memory it filled beforehand, so that `ecctl read` against it is the read's ceiling. Every other
// RPC is UNIMPLEMENTED. Runs until SIGTERM or SIGINT.
//
// Usage: grpc_null_sink [--listen 127.0.0.1:0] [--port-file FILE]
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/util/malloc_policy.h"
#include "wire/data_message.h"
#include "wire/raw_methods.h"

namespace {

namespace v1 = ecd::v1;

// ecd's defaults (daemon/limits.h: 16 MiB messages; ecd accepts received messages up to twice
// that), so the sink's transport is configured as ecd's is.
constexpr int kMaxMessageSize = 16 << 20;
constexpr int kMaxReceiveMessageSize = 2 * kMaxMessageSize;

// The defaults ecd applies to a header field left at 0 (see EncodeHeader in ecd.proto).
constexpr uint32_t kDefaultDataBlocks = 4;
constexpr uint32_t kDefaultParityBlocks = 2;
constexpr uint64_t kDefaultBlockSize = 1 << 20;

// ecd's Read messages carry up to kReadChunk bytes of data each (wire/data_message.h).
using ecd::wire::kReadChunk;
// The full Read messages the sink cycles through: 64 MiB, more than the caches hold, so that the
// kernel copies them into the socket from memory, as it copies ecd's freshly read stripes.
constexpr size_t kReadMessages = 64;

// A serialized ReadResponse of `n` bytes of zeros; with `object`, its size, version and id are
// set (ecd sets them on the first message).
grpc::Slice ReadMessage(const v1::ObjectInfo* object, size_t n) {
  v1::ReadResponse response;
  response.mutable_data()->assign(n, '\0');
  if (object != nullptr) {
    response.set_object_size(object->size());
    response.set_object_version(object->version());
    response.set_object_id(object->id());
  }
  return grpc::Slice(response.SerializeAsString());
}

// Objects.Encode that keeps nothing. The stream is checked as ecd checks its shape (a header on
// the first message only; exactly header.size bytes when the size is declared), and the response
// describes the object ecd would have committed: version 1, the bytes counted, its stripe count.
// Messages are received as ecd receives them: raw gRPC bytes parsed by DataMessage, whose data
// stays in gRPC's slices (ecd then copies it once, into its stripe; the sink not at all).
class NullObjects final : public v1::Objects::Service {
 public:
  NullObjects() {
    MarkMethodStreamed(ecd::wire::ObjectsMethodIndex("Encode"),
                       ecd::wire::RawRequestsHandler(&NullObjects::EncodeFromBytes, this));
    // Read as ecd serves it: the request parsed, the responses written as raw bytes.
    MarkMethodStreamed(
        ecd::wire::ObjectsMethodIndex("Read"),
        ecd::wire::RawResponsesHandler<v1::ReadRequest>(
            [this](grpc::ServerContext* context,
                   grpc::ServerSplitStreamer<v1::ReadRequest, grpc::ByteBuffer>* stream) {
              return ReadFromBytes(context, stream);
            }));
    for (size_t i = 0; i < kReadMessages; ++i) full_.push_back(ReadMessage(nullptr, kReadChunk));
  }

  // Streams the size of the object last encoded under the request's name, in ecd's messages:
  // the first and a short last one built for the call, every other one a reference to one of
  // full_ in turn (no copy). NOT_FOUND and OUT_OF_RANGE as ecd answers them.
  grpc::Status ReadFromBytes(grpc::ServerContext* context,
                             grpc::ServerSplitStreamer<v1::ReadRequest, grpc::ByteBuffer>* stream) {
    v1::ReadRequest request;
    if (!stream->Read(&request)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no ReadRequest");
    }
    v1::ObjectInfo object;
    {
      std::lock_guard lock(mu_);
      auto it = objects_.find(request.name());
      if (it == objects_.end()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            absl::StrCat("no object named \"", request.name(),
                                         "\" was encoded to this sink; encode it first"));
      }
      object = it->second;
    }
    const uint64_t size = object.size();
    if (request.offset() > size) {
      return grpc::Status(
          grpc::StatusCode::OUT_OF_RANGE,
          absl::StrCat("offset ", request.offset(), " is past the end (", size, " bytes)"));
    }
    uint64_t left = size - request.offset();
    if (request.length() > 0) left = std::min<uint64_t>(left, request.length());
    size_t next = 0;
    bool first = true;
    do {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kReadChunk));
      grpc::Slice message = first || n < kReadChunk ? ReadMessage(first ? &object : nullptr, n)
                                                    : full_[next++ % kReadMessages];
      if (!stream->Write(grpc::ByteBuffer(&message, 1))) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      }
      left -= n;
      first = false;
    } while (left > 0 && !context->IsCancelled());
    return grpc::Status::OK;
  }

  grpc::Status EncodeFromBytes(grpc::ServerContext* context,
                               grpc::ServerReader<grpc::ByteBuffer>* reader,
                               v1::EncodeResponse* response) {
    v1::EncodeHeader header, later;
    absl::StatusOr<ecd::wire::DataMessage> first =
        ecd::wire::ReadFirstMessage(reader, "Encode", "name, shape", &header);
    if (!first.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          std::string(first.status().message()));
    }
    ecd::wire::DataMessage message = *std::move(first);
    grpc::ByteBuffer raw;
    uint64_t bytes = message.data_size();
    uint64_t messages = 1;
    while (reader->Read(&raw)) {
      if (absl::Status s = message.Parse(&raw, &later); !s.ok()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message()));
      }
      if (message.has_header()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "only the first EncodeRequest may carry a header");
      }
      bytes += message.data_size();
      ++messages;
    }
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    if (header.has_size() && header.size() != bytes) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("the header declares ", header.size(),
                                       " bytes but the stream carried ", bytes));
    }
    const uint32_t m = header.data_blocks() ? header.data_blocks() : kDefaultDataBlocks;
    const uint32_t k = header.parity_blocks() ? header.parity_blocks() : kDefaultParityBlocks;
    const uint64_t block = header.block_size() ? header.block_size() : kDefaultBlockSize;
    const uint64_t stripe = static_cast<uint64_t>(m) * block;
    v1::ObjectInfo* o = response->mutable_object();
    o->set_name(header.name());
    o->set_size(bytes);
    o->set_data_blocks(m);
    o->set_parity_blocks(k);
    o->set_matrix(header.matrix() == v1::MATRIX_TYPE_VANDERMONDE ? v1::MATRIX_TYPE_VANDERMONDE
                                                                 : v1::MATRIX_TYPE_CAUCHY);
    o->set_block_size(block);
    o->set_stripe_count((bytes + stripe - 1) / stripe);
    o->set_created_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
    o->set_version(1);
    total_bytes_ += bytes;
    {
      std::lock_guard lock(mu_);
      o->set_id(++last_id_);
      objects_[header.name()] = *o;
    }
    std::fprintf(stderr, "grpc_null_sink: %s: %llu bytes in %llu messages discarded\n",
                 header.name().c_str(), static_cast<unsigned long long>(bytes),
                 static_cast<unsigned long long>(messages));
    return grpc::Status::OK;
  }

  uint64_t total_bytes() const { return total_bytes_.load(); }

 private:
  std::atomic<uint64_t> total_bytes_{0};
  std::vector<grpc::Slice> full_;  // kReadMessages messages of kReadChunk bytes; read-only.
  std::mutex mu_;
  // Guarded by mu_: name -> the object its last Encode answered with, under ids from 1 up.
  std::map<std::string, v1::ObjectInfo> objects_;
  uint64_t last_id_ = 0;
};

int Main(int argc, char** argv) {
  ecd::ApplyMallocPolicy();  // Receive as ecd does, or the ceiling would be too low.
  std::string listen = "127.0.0.1:0";
  std::string port_file;
  CLI::App app{
      "grpc_null_sink: ecd.v1 Objects.Encode that counts and discards the bytes, and Objects.Read "
      "that streams as many back"};
  app.add_option("--listen", listen, "TCP address to serve on (port 0 picks one)")
      ->capture_default_str();
  app.add_option("--port-file", port_file, "Write the bound TCP port to this file");
  CLI11_PARSE(app, argc, argv);

  // SIGTERM and SIGINT are taken by sigwait; block them before gRPC starts its threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  NullObjects objects;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageSize);
  builder.SetMaxSendMessageSize(kMaxMessageSize);
  builder.RegisterService(&objects);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "grpc_null_sink: cannot listen on %s\n", listen.c_str());
    return 1;
  }
  if (!port_file.empty()) std::ofstream(port_file) << port << "\n";
  std::fprintf(stderr, "grpc_null_sink: serving on %s (port %d)\n", listen.c_str(), port);

  std::thread waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  });
  server->Wait();
  waiter.join();
  std::fprintf(stderr, "grpc_null_sink: stopped; %llu bytes discarded in all\n",
               static_cast<unsigned long long>(objects.total_bytes()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
