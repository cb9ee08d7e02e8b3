// ecctl: the operator CLI of ecd. A thin client of the ecd.v1 gRPC API: every subcommand is one
// RPC; errors are one line on stderr and a non-zero exit (1 from ecd, 2 usage, 3 local files,
// 4 a scrub left or found damage).
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/cxl/event_record.h"
#include "lib/cxl/mailbox.h"
#include "lib/util/size.h"

namespace {

namespace v1 = ecd::v1;
using ecd::FormatSize;

constexpr size_t kChunk = 1 << 20;

// A failure to report: one line, one exit code.
struct Failure {
  int exit_code;
  std::string message;
};

struct Globals {
  std::string addr = "127.0.0.1:7400";
  bool json = false;
  double timeout = 0;
};

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

class Client {
 public:
  explicit Client(const Globals& g) : g_(g) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ = grpc::CreateCustomChannel(g.addr, grpc::InsecureChannelCredentials(), args);
    objects_ = v1::Objects::NewStub(channel_);
    devices_ = v1::Devices::NewStub(channel_);
    rebuilds_ = v1::Rebuilds::NewStub(channel_);
    cxl_ = v1::Cxl::NewStub(channel_);
  }

  std::unique_ptr<grpc::ClientContext> Context() const {
    auto c = std::make_unique<grpc::ClientContext>();
    if (g_.timeout > 0) {
      c->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<int64_t>(g_.timeout * 1000)));
    }
    return c;
  }

  // Throws the one-line failure for a non-OK status.
  void Check(const grpc::Status& s, const std::string& what) const {
    if (s.ok()) return;
    std::string message = s.error_message();
    // The hint is for a transport failure, not for ecd's own UNAVAILABLE (a device flush).
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE &&
        (absl::StrContains(message, "connect") || absl::StrContains(message, "Socket closed") ||
         absl::StrContains(message, "DNS resolution") ||
         absl::StrContains(message, "Connection reset"))) {
      message = absl::StrCat(message, " (is ecd running at ", g_.addr, "?)");
    }
    throw Failure{1, absl::StrCat(what, ": ", CodeName(s.error_code()), ": ", message)};
  }

  v1::Objects::Stub& objects() { return *objects_; }
  v1::Devices::Stub& devices() { return *devices_; }
  v1::Rebuilds::Stub& rebuilds() { return *rebuilds_; }
  v1::Cxl::Stub& cxl() { return *cxl_; }
  const Globals& globals() const { return g_; }

 private:
  const Globals& g_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Objects::Stub> objects_;
  std::unique_ptr<v1::Devices::Stub> devices_;
  std::unique_ptr<v1::Rebuilds::Stub> rebuilds_;
  std::unique_ptr<v1::Cxl::Stub> cxl_;
};

const char* StateName(v1::DeviceState s) {
  switch (s) {
    case v1::DEVICE_STATE_ONLINE:
      return "online";
    case v1::DEVICE_STATE_FAILING:
      return "failing";
    case v1::DEVICE_STATE_FAILED:
      return "failed";
    default:
      return "unknown";
  }
}

void PrintJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  std::printf("%s\n", out.c_str());
}

const char* MatrixName(v1::MatrixType t) {
  return t == v1::MATRIX_TYPE_VANDERMONDE ? "vandermonde" : "cauchy";
}

std::string Shape(const v1::ObjectInfo& o) {
  return absl::StrCat(o.data_blocks(), "+", o.parity_blocks());
}

// ---- encode

// Streams the bytes of `fd` (named `file` in errors) as the data of `request`s, the first of which
// also carries the header already set in `request`. A file with no bytes sends the header
// alone. Stops early if the server ends the stream (Finish then says why); cancels the call and
// throws on a read error.
template <typename Request, typename Writer>
void StreamFile(int fd, const std::string& file, Request& request, Writer& writer,
                grpc::ClientContext& context) {
  std::string buffer(kChunk, '\0');
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      context.TryCancel();
      throw Failure{3, absl::StrCat("read ", file, ": ", std::strerror(err))};
    }
    if (n == 0) break;
    request.set_data(buffer.data(), static_cast<size_t>(n));
    if (!writer.Write(request)) return;
    request.Clear();
  }
  if (request.has_header()) writer.Write(request);
}

void Encode(Client& c, const std::string& file, std::string name, uint32_t m, uint32_t k,
            const std::string& matrix, const std::string& block_size) {
  if (name.empty()) {
    if (file == "-") throw Failure{2, "encode from stdin needs --name"};
    name = std::filesystem::path(file).filename().string();
  }
  v1::EncodeRequest first;
  v1::EncodeHeader* h = first.mutable_header();
  h->set_name(name);
  h->set_data_blocks(m);
  h->set_parity_blocks(k);
  if (matrix == "cauchy") {
    h->set_matrix(v1::MATRIX_TYPE_CAUCHY);
  } else if (matrix == "vandermonde") {
    h->set_matrix(v1::MATRIX_TYPE_VANDERMONDE);
  } else {
    throw Failure{2, absl::StrCat("--matrix must be cauchy or vandermonde, not \"", matrix, "\"")};
  }
  if (!block_size.empty()) {
    absl::StatusOr<uint64_t> bs = ecd::ParseSize(block_size);
    if (!bs.ok()) throw Failure{2, absl::StrCat("--block-size: ", bs.status().message())};
    h->set_block_size(*bs);
  }
  const int fd = file == "-" ? STDIN_FILENO : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Failure{3, absl::StrCat("cannot open ", file, ": ", std::strerror(errno))};

  auto context = c.Context();
  v1::EncodeResponse response;
  auto writer = c.objects().Encode(context.get(), &response);
  v1::EncodeRequest request = std::move(first);
  StreamFile(fd, file, request, *writer, *context);
  if (fd != STDIN_FILENO) ::close(fd);
  writer->WritesDone();
  c.Check(writer->Finish(), absl::StrCat("encode ", name));
  if (c.globals().json) return PrintJson(response);
  const v1::ObjectInfo& o = response.object();
  std::printf("encoded %s: %s in %llu stripes of %s x %s (%s)\n", o.name().c_str(),
              FormatSize(o.size()).c_str(), static_cast<unsigned long long>(o.stripe_count()),
              Shape(o).c_str(), FormatSize(o.block_size()).c_str(), MatrixName(o.matrix()));
}

// What a streamed read delivered.
struct Streamed {
  uint64_t bytes = 0;
  uint32_t reconstructed = 0;
  uint64_t version = 0;  // The object version the bytes come from (0: not told).
};

// Writes a stream of ReadResponse into `out` ("-": stdout) through a partial file that is
// fsynced and renamed into place only when the stream ends OK, so no partial or unchecked
// bytes are ever left under `out`.
Streamed SaveStream(Client& c, const std::string& what, grpc::ClientContext& context,
                    grpc::ClientReader<v1::ReadResponse>& stream, const std::string& out) {
  const bool to_stdout = out == "-";
  std::string partial;
  int fd = STDOUT_FILENO;
  if (!to_stdout) {
    std::filesystem::path target(out);
    partial = (target.parent_path() /
               absl::StrCat(".", target.filename().string(), ".partial-", ::getpid()))
                  .string();
    fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      throw Failure{3, absl::StrCat("cannot create ", partial, ": ", std::strerror(errno))};
  }
  auto discard = [&] {
    if (!to_stdout) {
      ::close(fd);
      ::unlink(partial.c_str());
    }
  };
  v1::ReadResponse chunk;
  uint64_t total = 0;
  uint32_t reconstructed = 0;
  uint64_t version = 0;
  while (stream.Read(&chunk)) {
    if (version == 0) version = chunk.object_version();
    reconstructed += chunk.reconstructed_blocks();
    const std::string& d = chunk.data();
    size_t at = 0;
    while (at < d.size()) {
      ssize_t n = ::write(fd, d.data() + at, d.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        context.TryCancel();
        discard();
        throw Failure{3, absl::StrCat("write ", out, ": ", std::strerror(err))};
      }
      at += static_cast<size_t>(n);
    }
    total += d.size();
  }
  grpc::Status status = stream.Finish();
  if (!status.ok()) {
    discard();  // Never leave partial or unchecked bytes under the output name.
    c.Check(status, what);
  }
  if (!to_stdout) {
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
      const int err = errno;
      ::unlink(partial.c_str());
      throw Failure{3, absl::StrCat("write ", out, ": ", std::strerror(err))};
    }
    if (::rename(partial.c_str(), out.c_str()) != 0) {
      const int err = errno;
      ::unlink(partial.c_str());
      throw Failure{3, absl::StrCat("rename to ", out, ": ", std::strerror(err))};
    }
    // The new name must survive a crash too: sync the directory that holds it.
    std::string dir = std::filesystem::path(out).parent_path().string();
    if (dir.empty()) dir = std::string(".");
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0 || ::fsync(dir_fd) != 0) {
      const int err = errno;
      if (dir_fd >= 0) ::close(dir_fd);
      throw Failure{3, absl::StrCat("sync directory of ", out, ": ", std::strerror(err))};
    }
    ::close(dir_fd);
  }
  return Streamed{total, reconstructed, version};
}

// ---- read

void Read(Client& c, const std::string& name, const std::string& out, const std::string& offset,
          const std::string& length) {
  v1::ReadRequest request;
  request.set_name(name);
  for (auto [text, setter] : {std::pair<const std::string*, void (v1::ReadRequest::*)(uint64_t)>{
                                  &offset, &v1::ReadRequest::set_offset},
                              {&length, &v1::ReadRequest::set_length}}) {
    if (text->empty()) continue;
    absl::StatusOr<uint64_t> v = ecd::ParseSize(*text);
    if (!v.ok()) throw Failure{2, std::string(v.status().message())};
    (request.*setter)(*v);
  }
  auto context = c.Context();
  auto reader = c.objects().Read(context.get(), request);
  const Streamed got = SaveStream(c, absl::StrCat("read ", name), *context, *reader, out);
  const bool to_stdout = out == "-";
  const uint64_t total = got.bytes;
  const uint32_t reconstructed = got.reconstructed;
  if (c.globals().json) {
    std::fprintf(to_stdout ? stderr : stdout,
                 "{\"name\":\"%s\",\"bytes\":\"%llu\",\"reconstructed_blocks\":%u,"
                 "\"version\":\"%llu\"}\n",
                 name.c_str(), static_cast<unsigned long long>(total), reconstructed,
                 static_cast<unsigned long long>(got.version));
    return;
  }
  std::fprintf(to_stdout ? stderr : stdout, "read %s: %s -> %s (%u blocks reconstructed)\n",
               name.c_str(), FormatSize(total).c_str(), out.c_str(), reconstructed);
}

// ---- block get

void BlockGet(Client& c, const std::string& name, uint64_t stripe, uint32_t index,
              const std::string& out) {
  v1::GetBlockRequest request;
  request.set_name(name);
  request.set_stripe(stripe);
  request.set_index(index);
  auto context = c.Context();
  auto reader = c.objects().GetBlock(context.get(), request);
  const std::string what = absl::StrCat("block get ", name, " stripe ", stripe, " index ", index);
  const Streamed got = SaveStream(c, what, *context, *reader, out);
  FILE* to = out == "-" ? stderr : stdout;
  if (c.globals().json) {
    std::fprintf(to,
                 "{\"name\":\"%s\",\"stripe\":\"%llu\",\"index\":%u,\"bytes\":\"%llu\","
                 "\"reconstructed\":%s}\n",
                 name.c_str(), static_cast<unsigned long long>(stripe), index,
                 static_cast<unsigned long long>(got.bytes), got.reconstructed ? "true" : "false");
    return;
  }
  std::fprintf(to, "%s: %s -> %s%s\n", what.c_str(), FormatSize(got.bytes).c_str(), out.c_str(),
               got.reconstructed ? " (the stored copy was bad: rebuilt from its stripe)" : "");
}

// ---- recover

void Recover(Client& c, const std::string& name) {
  v1::RecoverRequest request;
  request.set_name(name);
  auto context = c.Context();
  auto reader = c.objects().Recover(context.get(), request);
  v1::RecoverProgress p, last;
  const bool tty = ::isatty(STDERR_FILENO);
  while (reader->Read(&p)) {
    last = p;
    if (tty && !p.done()) {
      std::fprintf(stderr, "\rrecovering %s: %llu/%llu stripes, %llu blocks rebuilt", name.c_str(),
                   static_cast<unsigned long long>(p.stripes_done()),
                   static_cast<unsigned long long>(p.stripes_total()),
                   static_cast<unsigned long long>(p.blocks_rebuilt()));
    }
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  c.Check(reader->Finish(), absl::StrCat("recover ", name));
  if (c.globals().json) return PrintJson(last);
  std::printf("recovered %s: %llu stripes checked, %llu blocks rebuilt (%s)\n", name.c_str(),
              static_cast<unsigned long long>(last.stripes_done()),
              static_cast<unsigned long long>(last.blocks_rebuilt()),
              FormatSize(last.bytes_rebuilt()).c_str());
}

// ---- scrub

std::string Findings(const v1::ScrubFindings& f) {
  return absl::StrCat(FormatSize(f.bytes_checked()), " checked in ", f.stripes_checked(),
                      " stripes; ", f.blocks_corrupt(), " corrupt, ", f.blocks_unreadable(),
                      " unreadable, ", f.parity_mismatches(), " parity mismatches; ",
                      f.blocks_repaired(), " blocks repaired, ", f.lost_stripes(), " stripes lost");
}

// Exit code of a scrub that left damage behind (or, checking only, found some).
constexpr int kScrubFoundDamage = 4;

void Scrub(Client& c, const std::string& name, bool check_only, const std::string& rate_text) {
  v1::ScrubRequest request;
  request.set_name(name);
  request.set_check_only(check_only);
  if (!rate_text.empty()) {
    absl::StatusOr<uint64_t> rate = ecd::ParseSize(rate_text);
    if (!rate.ok()) throw Failure{2, absl::StrCat("--rate: ", rate.status().message())};
    request.set_rate_bytes_per_sec(*rate);
  }
  const std::string what = name.empty() ? "every object" : name;
  auto context = c.Context();
  auto reader = c.objects().Scrub(context.get(), request);
  v1::ScrubProgress p, last;
  const bool tty = ::isatty(STDERR_FILENO);
  while (reader->Read(&p)) {
    last = p;
    if (tty && !p.done()) {
      std::fprintf(stderr, "\r\033[Kscrubbing %s: %llu/%llu objects, %s checked, %llu bad",
                   p.current().empty() ? what.c_str() : p.current().c_str(),
                   static_cast<unsigned long long>(p.objects_done()),
                   static_cast<unsigned long long>(p.objects_total()),
                   FormatSize(p.found().bytes_checked()).c_str(),
                   static_cast<unsigned long long>(p.found().blocks_corrupt() +
                                                   p.found().blocks_unreadable() +
                                                   p.found().parity_mismatches()));
    }
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  c.Check(reader->Finish(), absl::StrCat("scrub ", what));
  if (c.globals().json) {
    PrintJson(last);
  } else {
    std::printf("scrubbed %llu objects: %s\n", static_cast<unsigned long long>(last.objects_done()),
                Findings(last.found()).c_str());
  }
  const v1::ScrubFindings& f = last.found();
  if (last.objects_failed() > 0) {
    throw Failure{kScrubFoundDamage,
                  absl::StrCat("scrub: ", last.objects_failed(),
                               " objects are still damaged (first: ", last.errors(0),
                               "); see docs/errors.md (DATA_LOSS)")};
  }
  if (check_only && f.blocks_corrupt() + f.blocks_unreadable() + f.parity_mismatches() > 0) {
    throw Failure{kScrubFoundDamage,
                  "scrub --check-only found damage and repaired nothing; run `ecctl scrub` "
                  "to repair it"};
  }
}

void ScrubStatus(Client& c) {
  v1::ScrubStatusResponse r;
  auto context = c.Context();
  c.Check(c.objects().GetScrubStatus(context.get(), v1::ScrubStatusRequest(), &r), "scrub status");
  if (c.globals().json) return PrintJson(r);
  auto when = [](int64_t ms) {
    return ms == 0 ? std::string("never")
                   : absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixMillis(ms),
                                      absl::UTCTimeZone());
  };
  if (!r.background()) {
    std::printf("background scrub: off (--scrub-interval-hours 0)\n");
  } else {
    std::printf(
        "background scrub: every %s at %s/s, %s\n",
        absl::FormatDuration(absl::Seconds(r.interval_seconds())).c_str(),
        r.rate_bytes_per_sec() == 0 ? "full speed" : FormatSize(r.rate_bytes_per_sec()).c_str(),
        r.running() ? "running now" : "idle");
    std::printf("last pass finished: %s; next pass: %s\n", when(r.last_finished_unix_ms()).c_str(),
                r.running() ? "now" : when(r.next_start_unix_ms()).c_str());
    if (r.running()) {
      std::printf("current pass: %llu/%llu objects, %s\n",
                  static_cast<unsigned long long>(r.current().objects_done()),
                  static_cast<unsigned long long>(r.current().objects_total()),
                  Findings(r.current().found()).c_str());
    }
    if (r.passes() > 0) {
      std::printf("last pass: %llu objects, %s\n",
                  static_cast<unsigned long long>(r.last().objects_done()),
                  Findings(r.last().found()).c_str());
    }
  }
  std::printf("since ecd started: %llu objects scrubbed (%llu left damaged), %s\n",
              static_cast<unsigned long long>(r.objects_scrubbed_total()),
              static_cast<unsigned long long>(r.objects_failed_total()),
              Findings(r.found_total()).c_str());
}

// ---- update

// The bytes of a hex string ("" is none); exit code 2 for anything but pairs of hex digits.
std::string DecodeHex(const std::string& hex) {
  if (hex.size() % 2 != 0) {
    throw Failure{2, "--data-hex needs an even number of hex digits (two per byte)"};
  }
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int byte = 0;
    for (char ch : {hex[i], hex[i + 1]}) {
      const int v = ch >= '0' && ch <= '9'   ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
      if (v < 0) {
        throw Failure{2, absl::StrCat("--data-hex: \"", std::string(1, ch),
                                      "\" is not a hex digit (use 0-9, a-f)")};
      }
      byte = byte * 16 + v;
    }
    out.push_back(static_cast<char>(byte));
  }
  return out;
}

// Overwrites [offset, offset + n) of an object with a file's bytes (or --data-hex), as one
// new version; prints the new version and size.
void Update(Client& c, const std::string& name, const std::string& offset_text,
            const std::string& file, const std::string& hex, bool hex_given, bool append) {
  if (file.empty() == !hex_given) {
    throw Failure{2, "update needs exactly one of --file F (\"-\" for stdin) or --data-hex HEX"};
  }
  absl::StatusOr<uint64_t> offset = ecd::ParseSize(offset_text);
  if (!offset.ok()) throw Failure{2, absl::StrCat("--offset: ", offset.status().message())};
  const std::string inline_bytes = hex_given ? DecodeHex(hex) : std::string();
  int fd = -1;
  if (!hex_given) {
    fd = file == "-" ? STDIN_FILENO : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Failure{3, absl::StrCat("cannot open ", file, ": ", std::strerror(errno))};
  }
  v1::UpdateRequest request;
  v1::UpdateHeader* h = request.mutable_header();
  h->set_name(name);
  h->set_offset(*offset);
  h->set_append(append);

  auto context = c.Context();
  v1::UpdateResponse response;
  auto writer = c.objects().Update(context.get(), &response);
  if (hex_given) {
    request.set_data(inline_bytes);
    writer->Write(request);  // if the server ended the stream early, Finish says why
  } else {
    // On a read error the stream is cancelled: the daemon drops the new extents and the old
    // version stays.
    StreamFile(fd, file, request, *writer, *context);
    if (fd != STDIN_FILENO) ::close(fd);
  }
  writer->WritesDone();
  c.Check(writer->Finish(), absl::StrCat("update ", name));
  if (c.globals().json) return PrintJson(response);
  const v1::ObjectInfo& o = response.object();
  std::printf("updated %s: %llu bytes at offset %llu; now version %llu, %s (%llu bytes)\n",
              o.name().c_str(), static_cast<unsigned long long>(response.bytes_written()),
              static_cast<unsigned long long>(*offset),
              static_cast<unsigned long long>(o.version()), FormatSize(o.size()).c_str(),
              static_cast<unsigned long long>(o.size()));
}

// ---- stat, ls, rm

void Stat(Client& c, const std::string& name, bool blocks, bool verify) {
  v1::StatRequest request;
  request.set_name(name);
  request.set_blocks(blocks);
  request.set_verify(verify);
  v1::StatResponse response;
  auto context = c.Context();
  c.Check(c.objects().Stat(context.get(), request, &response), absl::StrCat("stat ", name));
  if (c.globals().json) return PrintJson(response);
  const v1::ObjectInfo& o = response.object();
  const uint64_t width = o.data_blocks() + o.parity_blocks();
  std::printf("name:             %s\n", o.name().c_str());
  std::printf("size:             %s (%llu bytes)\n", FormatSize(o.size()).c_str(),
              static_cast<unsigned long long>(o.size()));
  std::printf("version:          %llu\n", static_cast<unsigned long long>(o.version()));
  std::printf("shape:            %s (%s)\n", Shape(o).c_str(), MatrixName(o.matrix()));
  std::printf("block size:       %s\n", FormatSize(o.block_size()).c_str());
  std::printf("stripes:          %llu\n", static_cast<unsigned long long>(o.stripe_count()));
  std::printf("degraded stripes: %llu\n", static_cast<unsigned long long>(o.degraded_stripes()));
  std::printf("lost stripes:     %llu\n", static_cast<unsigned long long>(o.lost_stripes()));
  std::printf("redundancy:       %s\n", o.lost_stripes() > 0       ? "DATA LOST in some stripes"
                                        : o.degraded_stripes() > 0 ? "degraded (run ecctl recover)"
                                                                   : "full");
  std::printf("created:          %s\n",
              absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixMillis(o.created_unix_ms()),
                               absl::UTCTimeZone())
                  .c_str());
  if (!blocks) return;
  std::printf("\n%-8s %-7s %-5s %-6s %-12s %-10s %s\n", "STRIPE", "HEALTHY", "BLOCK", "DEVICE",
              "LBA", "CRC32C", "STATE");
  for (const v1::StripeInfo& s : o.stripes()) {
    for (const v1::BlockInfo& b : s.blocks()) {
      std::printf("%-8llu %u/%-5llu %-5u %-6u %-12llu %08x   %s\n",
                  static_cast<unsigned long long>(s.index()), s.healthy_blocks(),
                  static_cast<unsigned long long>(width), b.index(), b.device(),
                  static_cast<unsigned long long>(b.lba()), b.crc32c(), b.healthy() ? "ok" : "BAD");
    }
  }
}

void List(Client& c) {
  v1::ListResponse response;
  auto context = c.Context();
  c.Check(c.objects().List(context.get(), v1::ListRequest(), &response), "ls");
  if (c.globals().json) return PrintJson(response);
  std::printf("%-32s %12s %-6s %-12s %8s %9s\n", "NAME", "SIZE", "SHAPE", "MATRIX", "STRIPES",
              "DEGRADED");
  for (const v1::ObjectInfo& o : response.objects()) {
    std::printf("%-32s %12s %-6s %-12s %8llu %9llu\n", o.name().c_str(),
                FormatSize(o.size()).c_str(), Shape(o).c_str(), MatrixName(o.matrix()),
                static_cast<unsigned long long>(o.stripe_count()),
                static_cast<unsigned long long>(o.degraded_stripes()));
  }
}

void Remove(Client& c, const std::string& name) {
  v1::DeleteRequest request;
  request.set_name(name);
  v1::DeleteResponse response;
  auto context = c.Context();
  c.Check(c.objects().Delete(context.get(), request, &response), absl::StrCat("rm ", name));
  if (c.globals().json) return PrintJson(response);
  std::printf("removed %s (freed %s)\n", name.c_str(), FormatSize(response.freed_bytes()).c_str());
}

// ---- devices

void DeviceList(Client& c) {
  v1::ListDevicesResponse response;
  auto context = c.Context();
  c.Check(c.devices().List(context.get(), v1::ListDevicesRequest(), &response), "device ls");
  if (c.globals().json) return PrintJson(response);
  std::printf("%-4s %-7s %11s %11s %11s %8s  %s\n", "ID", "STATE", "SIZE", "USED", "FREE", "BLOCKS",
              "PATH");
  for (const v1::DeviceInfo& d : response.devices()) {
    std::printf("%-4u %-7s %11s %11s %11s %8llu  %s\n", d.id(), StateName(d.state()),
                FormatSize(d.size_bytes()).c_str(), FormatSize(d.used_bytes()).c_str(),
                FormatSize(d.free_bytes()).c_str(), static_cast<unsigned long long>(d.blocks()),
                d.path().c_str());
  }
}

void RebuildList(Client& c) {
  v1::ListRebuildsResponse response;
  auto context = c.Context();
  c.Check(c.rebuilds().List(context.get(), v1::ListRebuildsRequest(), &response), "rebuild ls");
  if (c.globals().json) return PrintJson(response);
  std::printf("%-5s %-16s %-8s %-4s %9s %8s %10s  %s\n", "ID", "KIND", "STATE", "DEV", "OBJECTS",
              "MOVED", "BYTES", "REASON / ERROR");
  for (const v1::RebuildJob& j : response.jobs()) {
    const std::string objects = absl::StrCat(j.objects_done(), "/", j.objects_total());
    std::printf("%-5llu %-16s %-8s %-4u %9s %8llu %10s  %s\n",
                static_cast<unsigned long long>(j.id()), j.kind().c_str(), j.state().c_str(),
                j.device(), objects.c_str(), static_cast<unsigned long long>(j.blocks_moved()),
                FormatSize(j.bytes_moved()).c_str(),
                (j.error().empty() ? j.reason() : j.error()).c_str());
  }
}

void RebuildGet(Client& c, uint64_t id) {
  v1::GetRebuildRequest request;
  request.set_id(id);
  v1::RebuildJob job;
  auto context = c.Context();
  c.Check(c.rebuilds().Get(context.get(), request, &job), absl::StrCat("rebuild get ", id));
  PrintJson(job);
}

v1::CxlLog ParseLog(const std::string& s) {
  if (s == "informational" || s == "info") return v1::CXL_LOG_INFORMATIONAL;
  if (s == "warning" || s == "warn") return v1::CXL_LOG_WARNING;
  if (s == "failure" || s == "fail") return v1::CXL_LOG_FAILURE;
  if (s == "fatal") return v1::CXL_LOG_FATAL;
  throw Failure{2, absl::StrCat("--log ", s, " is not informational, warning, failure or fatal")};
}

void CxlInject(Client& c, const v1::CxlInjectRequest& request) {
  v1::CxlInjectResponse response;
  auto context = c.Context();
  c.Check(c.cxl().Inject(context.get(), request, &response),
          absl::StrCat("cxl inject ", request.device()));
  if (c.globals().json) return PrintJson(response);
  if (response.overflowed()) {
    std::printf("device %u: log full, record dropped and counted as overflow\n", request.device());
  } else {
    std::printf("device %u: record handle %u inserted%s\n", request.device(), response.handle(),
                response.interrupt_raised() ? " (interrupt raised)" : "");
  }
}

void CxlEvents(Client& c, uint32_t device, const std::string& log) {
  v1::CxlGetEventRecordsRequest request;
  request.set_device(device);
  request.set_log(ParseLog(log));
  v1::CxlGetEventRecordsResponse response;
  auto context = c.Context();
  c.Check(c.cxl().GetEventRecords(context.get(), request, &response),
          absl::StrCat("cxl events ", device));
  if (c.globals().json) return PrintJson(response);
  std::printf("%d records%s%s\n", response.records_size(), response.more_records() ? " (more)" : "",
              response.overflow()
                  ? absl::StrCat(", overflowed: ", response.overflow_count(), " lost").c_str()
                  : "");
  for (const v1::CxlEventRecord& r : response.records()) {
    std::printf("%u %s\n", r.handle(), r.json().c_str());
  }
}

void CxlClear(Client& c, uint32_t device, const std::string& log,
              const std::vector<uint32_t>& handles, bool all) {
  v1::CxlClearEventRecordsRequest request;
  request.set_device(device);
  request.set_log(ParseLog(log));
  request.set_clear_all(all);
  for (uint32_t h : handles) request.add_handles(h);
  v1::CxlClearEventRecordsResponse response;
  auto context = c.Context();
  c.Check(c.cxl().ClearEventRecords(context.get(), request, &response),
          absl::StrCat("cxl clear ", device));
  if (c.globals().json) return PrintJson(response);
  std::printf("device %u: cleared\n", device);
}

void CxlPolicy(Client& c, uint32_t device, const std::vector<std::string>& sets) {
  v1::CxlInterruptPolicy policy;
  auto context = c.Context();
  if (sets.empty()) {
    v1::CxlGetInterruptPolicyRequest request;
    request.set_device(device);
    c.Check(c.cxl().GetInterruptPolicy(context.get(), request, &policy),
            absl::StrCat("cxl policy ", device));
  } else {
    v1::CxlSetInterruptPolicyRequest request;
    request.set_device(device);
    for (const std::string& s : sets) {  // LOG=MODE
      const size_t eq = s.find('=');
      if (eq == std::string::npos) {
        throw Failure{2, absl::StrCat("--set ", s, " is not LOG=MODE (e.g. failure=msi)")};
      }
      const std::string mode = s.substr(eq + 1);
      switch (ParseLog(s.substr(0, eq))) {
        case v1::CXL_LOG_INFORMATIONAL:
          request.mutable_policy()->set_informational(mode);
          break;
        case v1::CXL_LOG_WARNING:
          request.mutable_policy()->set_warning(mode);
          break;
        case v1::CXL_LOG_FAILURE:
          request.mutable_policy()->set_failure(mode);
          break;
        default:
          request.mutable_policy()->set_fatal(mode);
          break;
      }
    }
    c.Check(c.cxl().SetInterruptPolicy(context.get(), request, &policy),
            absl::StrCat("cxl policy ", device, " --set"));
  }
  if (c.globals().json) return PrintJson(policy);
  std::printf("informational=%s warning=%s failure=%s fatal=%s\n", policy.informational().c_str(),
              policy.warning().c_str(), policy.failure().c_str(), policy.fatal().c_str());
}

std::string ReadAll(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Failure{3, absl::StrCat("cannot read ", path)};
    text << f.rdbuf();
  }
  return text.str();
}

// Raw records (a multiple of 128 bytes) or JSON lines (the input starts with '{').
bool LooksLikeJson(const std::string& data) {
  const size_t first = data.find_first_not_of(" \t\r\n");
  return first != std::string::npos && data[first] == '{';
}

void CxlIngest(Client& c, const std::string& path, uint32_t device, const std::string& log) {
  const std::string data = ReadAll(path);
  v1::CxlIngestRequest request;
  request.set_device(device);
  request.set_log(ParseLog(log));
  if (LooksLikeJson(data)) {
    std::stringstream lines(data);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.find_first_not_of(" \t\r") != std::string::npos) request.add_json_lines(line);
    }
  } else {
    if (data.empty() || data.size() % 128 != 0) {
      throw Failure{3, absl::StrCat(path, " holds ", data.size(),
                                    " bytes, not whole 128-byte records or JSON lines")};
    }
    for (size_t off = 0; off < data.size(); off += 128)
      request.add_raw_records(data.substr(off, 128));
  }
  v1::CxlIngestResponse response;
  auto context = c.Context();
  c.Check(c.cxl().Ingest(context.get(), request, &response), "cxl ingest");
  if (c.globals().json) return PrintJson(response);
  std::printf("%u records ingested:", response.records());
  for (const std::string& a : response.actions()) std::printf(" %s", a.c_str());
  std::printf("\n");
}

void CxlStats(Client& c) {
  v1::CxlStats response;
  auto context = c.Context();
  c.Check(c.cxl().GetStats(context.get(), v1::CxlStatsRequest(), &response), "cxl stats");
  if (c.globals().json) return PrintJson(response);
  std::map<std::string, uint64_t> sorted(response.counters().begin(), response.counters().end());
  for (const auto& [name, value] : sorted) {
    std::printf("%-16s %llu\n", name.c_str(), static_cast<unsigned long long>(value));
  }
}

// Offline: raw records to JSON lines, as the Linux trace events name the fields.
void CxlDecode(const std::string& path, const std::string& log) {
  const std::string data = ReadAll(path);
  if (data.empty() || data.size() % 128 != 0) {
    throw Failure{3,
                  absl::StrCat(path, " holds ", data.size(), " bytes, not whole 128-byte records")};
  }
  // CXL_LOG_INFORMATIONAL..FATAL are 1..4; the device's log numbers are 0..3.
  const std::string log_name(
      ecd::cxl::EventLogName(static_cast<ecd::cxl::EventLog>(ParseLog(log) - 1)));
  for (size_t off = 0; off < data.size(); off += 128) {
    auto rec = ecd::cxl::DecodeRecord(
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(data.data()) + off, 128));
    if (!rec.ok()) {
      throw Failure{1, absl::StrCat("record ", off / 128, ": ", rec.status().message())};
    }
    std::printf("%s\n", ecd::cxl::RecordToJson(*rec, log_name).c_str());
  }
}

void DeviceSet(Client& c, uint32_t id, v1::DeviceState state) {
  v1::SetDeviceStateRequest request;
  request.set_id(id);
  request.set_state(state);
  v1::SetDeviceStateResponse response;
  auto context = c.Context();
  const char* verb = state == v1::DEVICE_STATE_FAILED    ? "fail"
                     : state == v1::DEVICE_STATE_FAILING ? "evacuate"
                                                         : "online";
  c.Check(c.devices().SetState(context.get(), request, &response),
          absl::StrCat("device ", verb, " ", id));
  if (c.globals().json) return PrintJson(response);
  if (state == v1::DEVICE_STATE_FAILING) {
    std::printf(
        "device %u: evacuation queued (see ecctl rebuild ls); it becomes failed when empty\n", id);
    return;
  }
  std::printf("device %u is now %s\n", id, StateName(response.device().state()));
}

int Main(int argc, char** argv) {
  Globals g;
  CLI::App app{"ecctl: operate an ecd erasure-coding storage daemon"};
  app.require_subcommand(1);
  app.add_option("--addr", g.addr, "ecd address, host:port or unix:/path")->capture_default_str();
  app.add_flag("--json", g.json, "Print machine-readable JSON");
  app.add_option("--timeout", g.timeout, "Give up after this many seconds (0: never)");

  std::string file, name, matrix = "cauchy", block_size, out, offset, length;
  uint32_t m = 0, k = 0, device = 0;
  bool blocks = false, verify = false;

  auto* encode = app.add_subcommand("encode", "Store a file as a new erasure-coded object");
  encode->add_option("FILE", file, "File to store, or - for stdin")->required();
  encode->add_option("--name", name, "Object name (default: the file's name)");
  encode->add_option("--data,-m", m, "Data blocks per stripe M (1..128; default 4)");
  encode->add_option("--parity,-k", k, "Parity blocks per stripe K (1..32; default 2)");
  encode->add_option("--matrix", matrix, "cauchy or vandermonde")->capture_default_str();
  encode->add_option("--block-size", block_size, "Block size, a multiple of 64 (e.g. 64K, 1M)");

  auto* read = app.add_subcommand("read", "Read an object (rebuilding lost blocks) into a file");
  read->add_option("NAME", name, "Object name")->required();
  read->add_option("-o,--output", out, "Output file, or - for stdout")->required();
  read->add_option("--offset", offset, "First byte to read");
  read->add_option("--length", length, "Bytes to read (default: to the end)");

  std::string update_offset, data_hex;
  bool append = false;
  auto* update =
      app.add_subcommand("update", "Overwrite a byte range of an object (a new version)");
  update->add_option("NAME", name, "Object name")->required();
  update->add_option("--offset", update_offset, "First byte to overwrite (e.g. 4096, 1M)")
      ->required();
  update->add_option("--file", file, "File with the new bytes, or - for stdin");
  auto* hex_option = update->add_option("--data-hex", data_hex, "The new bytes as hex digits");
  update->add_flag("--append", append, "Let the bytes run past the end and grow the object");

  auto* recover = app.add_subcommand("recover", "Check every block and rebuild the bad ones");
  recover->add_option("NAME", name, "Object name")->required();

  bool check_only = false, scrub_status = false;
  std::string scrub_rate;
  auto* scrub = app.add_subcommand(
      "scrub",
      "Read every block of an object (or of all), check checksums and parity, repair; exit 4 "
      "if damage is left");
  scrub->add_option("NAME", name, "Object name (default: every object)");
  scrub->add_flag("--check-only", check_only, "Report what is wrong, repair nothing");
  scrub->add_option("--rate", scrub_rate, "Bytes read per second (e.g. 100M; default: no limit)");
  scrub->add_flag("--status", scrub_status, "Show the background scrubber and what scrubs found")
      ->excludes("NAME")
      ->excludes("--check-only")
      ->excludes("--rate");

  auto* stat = app.add_subcommand("stat", "Show an object and its health per stripe");
  stat->add_option("NAME", name, "Object name")->required();
  stat->add_flag("--blocks", blocks, "List every block of every stripe");
  stat->add_flag("--verify", verify, "Read every block and check its CRC32C");

  auto* ls = app.add_subcommand("ls", "List objects");
  auto* rm = app.add_subcommand("rm", "Delete an object");
  rm->add_option("NAME", name, "Object name")->required();

  uint64_t stripe_index = 0;
  uint32_t block_index = 0;
  auto* block = app.add_subcommand("block", "Stored blocks");
  block->require_subcommand(1);
  auto* block_get = block->add_subcommand("get", "Export one stored block (data or parity)");
  block_get->add_option("NAME", name, "Object name")->required();
  block_get->add_option("--stripe", stripe_index, "Stripe number")->required();
  block_get->add_option("--index", block_index, "Block index: 0..M-1 data, M.. parity")->required();
  block_get->add_option("-o,--output", out, "Output file, or - for stdout")->required();

  auto* dev = app.add_subcommand("device", "Devices");
  dev->require_subcommand(1);
  auto* dev_ls = dev->add_subcommand("ls", "List devices");
  auto* dev_fail = dev->add_subcommand("fail", "Take a device out of service");
  dev_fail->add_option("DEV", device, "Device id")->required();
  auto* dev_online = dev->add_subcommand("online", "Put a device back in service");
  dev_online->add_option("DEV", device, "Device id")->required();
  auto* dev_evacuate =
      dev->add_subcommand("evacuate", "Move every block off a device, then take it out of service");
  dev_evacuate->add_option("DEV", device, "Device id")->required();

  // cxl
  v1::CxlInjectRequest inject;
  std::string cxl_log = "failure", cxl_type, dpa_text;
  std::vector<uint32_t> handles;
  std::vector<std::string> policy_sets;
  bool clear_all = false;
  auto* cxl = app.add_subcommand("cxl", "CXL memory-device event logs of the devices");
  cxl->require_subcommand(1);
  auto* cxl_inject = cxl->add_subcommand("inject", "Insert an event record into a device's log");
  cxl_inject->add_option("DEV", device, "Device id")->required();
  cxl_inject->add_option("--log", cxl_log, "informational, warning, failure or fatal")
      ->capture_default_str();
  cxl_inject->add_option("--type", cxl_type, "general-media, dram or memory-module")->required();
  cxl_inject->add_option("--dpa", dpa_text, "Device physical address (bytes; 0x... or decimal)");
  auto u32 = [&](const char* flag, const char* help, auto setter) {
    cxl_inject->add_option_function<uint32_t>(
        flag, [&inject, setter](const uint32_t& v) { (inject.*setter)(v); }, help);
  };
  u32("--descriptor", "Memory event descriptor (1 uncorrectable, 2 threshold, 4 poison overflow)",
      &v1::CxlInjectRequest::set_event_descriptor);
  u32("--event-type", "Media event type", &v1::CxlInjectRequest::set_event_type);
  u32("--transaction-type", "Transaction type", &v1::CxlInjectRequest::set_transaction_type);
  u32("--channel", "Channel", &v1::CxlInjectRequest::set_channel);
  u32("--rank", "Rank", &v1::CxlInjectRequest::set_rank);
  u32("--module-event-type", "Memory module device event type",
      &v1::CxlInjectRequest::set_module_event_type);
  u32("--health-status", "Health status (4 = replacement needed)",
      &v1::CxlInjectRequest::set_health_status);
  u32("--media-status", "Media status (3 = all data lost, 9 = all data loss imminent)",
      &v1::CxlInjectRequest::set_media_status);
  u32("--additional-status", "Additional status", &v1::CxlInjectRequest::set_additional_status);
  u32("--life-used", "Life used, percent", &v1::CxlInjectRequest::set_life_used);
  cxl_inject->add_option_function<int32_t>(
      "--temperature", [&inject](const int32_t& v) { inject.set_temperature(v); },
      "Device temperature, degrees C");
  cxl_inject->add_flag_function(
      "--replacement-needed", [&inject](int64_t) { inject.set_hardware_replacement_needed(true); },
      "Set the hardware-replacement-needed header flag");
  cxl_inject->add_flag_function(
      "--permanent", [&inject](int64_t) { inject.set_permanent(true); },
      "Set the permanent-condition header flag");
  auto* cxl_events = cxl->add_subcommand("events", "Get the uncleared records of a device's log");
  cxl_events->add_option("DEV", device, "Device id")->required();
  cxl_events->add_option("--log", cxl_log, "informational, warning, failure or fatal")
      ->capture_default_str();
  auto* cxl_clear = cxl->add_subcommand("clear", "Clear records of a device's log by handle");
  cxl_clear->add_option("DEV", device, "Device id")->required();
  cxl_clear->add_option("--log", cxl_log, "informational, warning, failure or fatal")
      ->capture_default_str();
  cxl_clear->add_option("--handles", handles, "Handles, oldest first")->delimiter(',');
  cxl_clear->add_flag("--all", clear_all, "Clear All (only allowed on an overflowed log)");
  auto* cxl_policy = cxl->add_subcommand("policy", "Show or set a device's event interrupt policy");
  cxl_policy->add_option("DEV", device, "Device id")->required();
  cxl_policy->add_option("--set", policy_sets, "LOG=MODE, MODE none, msi or fw (repeatable)");

  auto* cxl_stats = cxl->add_subcommand("stats", "Counters of the CXL path and the policy actions");
  std::string cxl_file;
  auto* cxl_ingest =
      cxl->add_subcommand("ingest", "Feed records from an outside agent to ecd's CXL policy");
  cxl_ingest
      ->add_option("FILE", cxl_file, "Raw 128-byte records or cxl-monitor JSON lines; - = stdin")
      ->required();
  cxl_ingest->add_option("--device", device, "Device the raw records come from");
  cxl_ingest->add_option("--log", cxl_log, "Log the raw records come from")->capture_default_str();
  auto* cxl_decode =
      cxl->add_subcommand("decode", "Decode raw 128-byte records to JSON lines (offline)");
  cxl_decode->add_option("FILE", cxl_file, "Raw records; - = stdin")->required();
  cxl_decode->add_option("--log", cxl_log, "Log name to print")->capture_default_str();

  uint64_t job_id = 0;
  auto* rebuild = app.add_subcommand("rebuild", "Proactive rebuild jobs");
  rebuild->require_subcommand(1);
  auto* rebuild_ls = rebuild->add_subcommand("ls", "List rebuild jobs, running and queued first");
  auto* rebuild_get = rebuild->add_subcommand("get", "Show one rebuild job as JSON");
  rebuild_get->add_option("ID", job_id, "Job id")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::fprintf(stderr, "ecctl: %s; see ecctl --help\n", what.c_str());
    return 2;
  }

  if (cxl_decode->parsed()) {  // offline: no daemon
    try {
      CxlDecode(cxl_file, cxl_log);
    } catch (const Failure& f) {
      std::fprintf(stderr, "ecctl: %s\n", f.message.c_str());
      return f.exit_code;
    }
    return 0;
  }
  try {
    Client c(g);
    if (encode->parsed()) {
      Encode(c, file, name, m, k, matrix, block_size);
    } else if (read->parsed()) {
      Read(c, name, out, offset, length);
    } else if (update->parsed()) {
      Update(c, name, update_offset, file, data_hex, hex_option->count() > 0, append);
    } else if (recover->parsed()) {
      Recover(c, name);
    } else if (scrub->parsed()) {
      if (scrub_status) {
        ScrubStatus(c);
      } else {
        Scrub(c, name, check_only, scrub_rate);
      }
    } else if (stat->parsed()) {
      Stat(c, name, blocks, verify);
    } else if (ls->parsed()) {
      List(c);
    } else if (rm->parsed()) {
      Remove(c, name);
    } else if (block_get->parsed()) {
      BlockGet(c, name, stripe_index, block_index, out);
    } else if (dev_ls->parsed()) {
      DeviceList(c);
    } else if (dev_fail->parsed()) {
      DeviceSet(c, device, v1::DEVICE_STATE_FAILED);
    } else if (dev_online->parsed()) {
      DeviceSet(c, device, v1::DEVICE_STATE_ONLINE);
    } else if (dev_evacuate->parsed()) {
      DeviceSet(c, device, v1::DEVICE_STATE_FAILING);
    } else if (cxl_inject->parsed()) {
      inject.set_device(device);
      inject.set_log(ParseLog(cxl_log));
      inject.set_type(cxl_type);
      if (!dpa_text.empty()) {
        uint64_t dpa = 0;
        const bool hex = dpa_text.rfind("0x", 0) == 0;
        if (!(hex ? absl::SimpleHexAtoi(dpa_text.substr(2), &dpa)
                  : absl::SimpleAtoi(dpa_text, &dpa))) {
          throw Failure{2, absl::StrCat("--dpa ", dpa_text, " is not a number")};
        }
        inject.set_dpa(dpa);
      }
      CxlInject(c, inject);
    } else if (cxl_events->parsed()) {
      CxlEvents(c, device, cxl_log);
    } else if (cxl_clear->parsed()) {
      CxlClear(c, device, cxl_log, handles, clear_all);
    } else if (cxl_stats->parsed()) {
      CxlStats(c);
    } else if (cxl_ingest->parsed()) {
      CxlIngest(c, cxl_file, device, cxl_log);
    } else if (cxl_policy->parsed()) {
      CxlPolicy(c, device, policy_sets);
    } else if (rebuild_ls->parsed()) {
      RebuildList(c);
    } else if (rebuild_get->parsed()) {
      RebuildGet(c, job_id);
    }
  } catch (const Failure& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "ecctl: %s\n", f.message.c_str());
    return f.exit_code;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {  // Nothing else may escape: one line, non-zero exit.
    std::fprintf(stderr, "ecctl: %s\n", e.what());
    return 1;
  }
}
