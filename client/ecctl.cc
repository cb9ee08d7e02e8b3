// ecctl: the operator CLI of ecd. A thin client of the ecd.v1 gRPC API: most subcommands are one
// RPC (`status` is four, the waits poll); errors are one line on stderr and a non-zero exit
// (kExitCodes below, docs/errors.md). Long transfers and waits draw a progress line on stderr
// when it is a terminal (client/progress.h).
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/chunk_reader.h"
#include "client/complete.h"
#include "client/help.h"
#include "client/progress.h"
#include "ecd/tools/ecctl.pb.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "lib/cxl/event_record.h"
#include "lib/cxl/mailbox.h"
#include "lib/util/malloc_policy.h"
#include "lib/util/size.h"
#include "wire/data_message.h"
#include "wire/raw_methods.h"

namespace {

namespace v1 = ecd::v1;
namespace tools = ecd::tools;
using ecd::FormatSize;
using ecd::client::ProgressBar;
using ecd::client::ProgressUnit;

constexpr size_t kChunk = 1 << 20;

// ---- exit codes: the one list; the `ecctl --help` footer prints it, docs/errors.md has it too.

enum ExitCode : int {
  kExitOk = 0,
  kExitEcd = 1,        // ecd answered with an error, could not be reached, or a job failed
  kExitUsage = 2,      // bad flags or arguments
  kExitLocalFile = 3,  // a local file could not be read or written
  kExitDamage = 4,     // scrub left damage behind (with --check-only: found some)
  kExitAuth = 5,       // ecd refused the token (UNAUTHENTICATED or PERMISSION_DENIED)
};

struct ExitCodeDoc {
  ExitCode code;
  const char* meaning;
};

constexpr ExitCodeDoc kExitCodes[] = {
    {kExitOk, "success"},
    {kExitEcd,
     "ecd answered with an error (the line names the gRPC code), ecd could not be reached, or a "
     "waited-for rebuild job failed"},
    {kExitUsage, "usage error: bad flags or arguments"},
    {kExitLocalFile, "a local file could not be read or written"},
    {kExitDamage, "scrub left damage behind (with --check-only: found some)"},
    {kExitAuth,
     "ecd refused the call: no or an unknown token (UNAUTHENTICATED), or the token's role is too "
     "low (PERMISSION_DENIED); see docs/security.md"},
};

// The --help footer.
std::string ExitStatusHelp() {
  std::string text = "Exit status (every error is one line on stderr):\n";
  for (const ExitCodeDoc& e : kExitCodes)
    absl::StrAppend(&text, "  ", e.code, "  ", e.meaning, "\n");
  return text + "See docs/errors.md for each error and how to recover from it.";
}

// A failure to report: one line, one exit code.
struct Failure {
  int exit_code;
  std::string message;
};

// Prints the one stderr line of a failure (newlines in messages from elsewhere become spaces).
void ReportError(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::fflush(stdout);
  std::fprintf(stderr, "ecctl: %s\n", message.c_str());
}

struct Globals {
  std::string addr = "127.0.0.1:7400";
  bool json = false;
  bool quiet = false;
  double timeout = 0;
  // Credentials (docs/security.md): a bearer token from --token, else --token-file, else
  // $ECD_TOKEN; TLS when --tls-ca, --tls-cert or --tls-server-name is given.
  std::string token;
  std::string token_file;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
};

// The whole of a small local file; exit code 3 if it cannot be read.
std::string ReadSmallFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in) throw Failure{kExitLocalFile, absl::StrCat(flag, ": cannot read ", path)};
  return text.str();
}

// The bearer token to send, "" for none: --token, else --token-file's first line, else
// $ECD_TOKEN.
std::string ResolveToken(const Globals& g) {
  if (!g.token.empty()) return g.token;
  if (!g.token_file.empty()) {
    std::string text = ReadSmallFile(g.token_file, "--token-file");
    std::string first(absl::StripAsciiWhitespace(text.substr(0, text.find('\n'))));
    if (first.empty()) {
      throw Failure{kExitUsage, absl::StrCat("--token-file: ", g.token_file,
                                             " holds no token on its first line")};
    }
    return first;
  }
  const char* env = std::getenv("ECD_TOKEN");
  return env != nullptr ? std::string(absl::StripAsciiWhitespace(env)) : "";
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const Globals& g,
                                                             grpc::ChannelArguments& args) {
  if (g.tls_cert.empty() != g.tls_key.empty()) {
    throw Failure{kExitUsage, "--tls-cert and --tls-key go together: give both or neither"};
  }
  if (g.tls_ca.empty() && g.tls_cert.empty() && g.tls_server_name.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  if (!g.tls_ca.empty()) ssl.pem_root_certs = ReadSmallFile(g.tls_ca, "--tls-ca");
  if (!g.tls_cert.empty()) {
    ssl.pem_cert_chain = ReadSmallFile(g.tls_cert, "--tls-cert");
    ssl.pem_private_key = ReadSmallFile(g.tls_key, "--tls-key");
  }
  if (!g.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(g.tls_server_name);
  }
  return grpc::SslCredentials(ssl);
}

// gRPC's status codes are absl's, with the same canonical names ("NOT_FOUND").
std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

class Client {
 public:
  explicit Client(const Globals& g) : g_(g) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    // A fixed 8 MiB receive window per call, as ecd's (no BDP growth): reads stream at full
    // speed and gRPC buffers at most that much per call.
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
    std::shared_ptr<grpc::ChannelCredentials> credentials = ChannelCredentials(g, args);
    token_ = ResolveToken(g);
    channel_ = grpc::CreateCustomChannel(g.addr, credentials, args);
    objects_ = v1::Objects::NewStub(channel_);
    devices_ = v1::Devices::NewStub(channel_);
    rebuilds_ = v1::Rebuilds::NewStub(channel_);
    cxl_ = v1::Cxl::NewStub(channel_);
    catalog_ = v1::Catalog::NewStub(channel_);
  }

  std::unique_ptr<grpc::ClientContext> Context() const {
    auto c = std::make_unique<grpc::ClientContext>();
    if (!token_.empty()) c->AddMetadata("authorization", absl::StrCat("Bearer ", token_));
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
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE && absl::StrContains(message, "andshake")) {
      message = absl::StrCat(message, " (TLS: check --tls-ca, --tls-cert and --tls-key)");
    } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE &&
               (absl::StrContains(message, "connect") ||
                absl::StrContains(message, "Socket closed") ||
                absl::StrContains(message, "DNS resolution") ||
                absl::StrContains(message, "Connection reset"))) {
      message = absl::StrCat(message, " (is ecd running at ", g_.addr, "?)");
    }
    const bool auth = s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
                      s.error_code() == grpc::StatusCode::PERMISSION_DENIED;
    throw Failure{auth ? kExitAuth : kExitEcd,
                  absl::StrCat(what, ": ", CodeName(s.error_code()), ": ", message)};
  }

  v1::Objects::Stub& objects() { return *objects_; }

  // A client stream of `method` ("/ecd.v1.Objects/Encode") whose messages are written as raw
  // bytes (each a serialized request), so StreamFile can read file data straight into the
  // message; the response is parsed as usual. The generated stub's own factory, typed for
  // grpc::ByteBuffer instead of the request message.
  template <typename Response>
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> RawWriter(const char* method,
                                                                  grpc::ClientContext* context,
                                                                  Response* response) {
    return ecd::wire::OpenRawWriter(channel_, method, context, response);
  }
  // A server stream of `method` ("/ecd.v1.Objects/Read") whose responses are read as raw bytes
  // (each a serialized response), so that SaveStream writes their data field to the output
  // straight from gRPC's receive slices (DataMessage) rather than from a copy protobuf made.
  template <typename Request>
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> RawReader(const char* method,
                                                                  grpc::ClientContext* context,
                                                                  const Request& request) {
    return ecd::wire::OpenRawReader(channel_, method, context, request);
  }
  v1::Devices::Stub& devices() { return *devices_; }
  v1::Rebuilds::Stub& rebuilds() { return *rebuilds_; }
  v1::Cxl::Stub& cxl() { return *cxl_; }
  v1::Catalog::Stub& catalog() { return *catalog_; }
  const Globals& globals() const { return g_; }

  // A progress line on stderr, drawn when stderr is a terminal and --quiet is not given.
  ProgressBar Progress(std::string label, ProgressUnit unit) const {
    return ProgressBar(stderr, ecd::client::ProgressWanted(g_.quiet), std::move(label),
                       std::move(unit));
  }

 private:
  const Globals& g_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Objects::Stub> objects_;
  std::unique_ptr<v1::Devices::Stub> devices_;
  std::unique_ptr<v1::Rebuilds::Stub> rebuilds_;
  std::unique_ptr<v1::Cxl::Stub> cxl_;
  std::unique_ptr<v1::Catalog::Stub> catalog_;
};

const char* StateName(v1::DeviceState s) {
  switch (s) {
    case v1::DEVICE_STATE_ONLINE:
      return "online";
    case v1::DEVICE_STATE_FAILING:
      return "failing";
    case v1::DEVICE_STATE_FAILED:
      return "failed";
    case v1::DEVICE_STATE_DOWN:
      return "down";
    default:
      return "unknown";
  }
}

// Every --json document: protobuf's JSON mapping, proto field names, every field present.
void PrintJson(const google::protobuf::Message& m, FILE* to = stdout) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  std::fprintf(to, "%s\n", out.c_str());
}

const char* MatrixName(v1::MatrixType t) {
  return t == v1::MATRIX_TYPE_VANDERMONDE ? "vandermonde" : "cauchy";
}

std::string Shape(const v1::ObjectInfo& o) {
  return absl::StrCat(o.data_blocks(), "+", o.parity_blocks());
}

// ---- encode

// The bytes left to read in `fd` when it is a regular file (from its current offset, where
// reads start), else nullopt.
std::optional<uint64_t> FileSize(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const off_t at = std::max<off_t>(::lseek(fd, 0, SEEK_CUR), 0);
  return at < st.st_size ? static_cast<uint64_t>(st.st_size - at) : 0;
}

// Grows `fd` to a kChunk-byte pipe buffer when it is a pipe (`ecctl read -o - | tool`,
// `tool | ecctl encode -`). A Linux pipe holds 64 KiB by default, so each 1 MiB message crossed
// it in 16 wake-ups of writer and reader: here a 1 GiB stream through a default pipe took 1.1-1.7
// s and through a 1 MiB one 0.6 s (docs/benchmarks.md). Best effort: a pipe that may not grow
// (above /proc/sys/fs/pipe-max-size, or past an unprivileged user's pipe quota) keeps its size.
void WidenPipe(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  if (::fcntl(fd, F_GETPIPE_SZ) >= static_cast<int>(kChunk)) return;
  (void)::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(kChunk));
}

// Opens `file` ("-": stdin) for reading; exit code 3 if it cannot be.
int OpenInput(const std::string& file) {
  const int fd = file == "-" ? STDIN_FILENO : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Failure{kExitLocalFile, absl::StrCat("cannot open ", file, ": ", std::strerror(errno))};
  }
  WidenPipe(fd);
  return fd;
}

void CloseInput(int fd) {
  if (fd != STDIN_FILENO) ::close(fd);
}

// Streams the bytes of `fd` (named `file` in errors) as the data of requests (EncodeRequest or
// UpdateRequest: field 1 the header, field 2 the data) after a first message carrying only the
// header set in `request`, and shows the bytes sent on `progress`. Stops early if the server ends
// the stream (Finish then says why); cancels the call and throws on a read error.
//
// Each data message is a chunk of ChunkReader's (read ahead, O_DIRECT for a regular file) with
// the data field's tag and length written in the room in front of it, in protobuf's wire format:
// ecctl copies no data (protobuf would copy it into a std::string, then into gRPC's slice).
template <typename Request>
void StreamFile(int fd, const std::string& file, const Request& request,
                grpc::ClientWriter<grpc::ByteBuffer>& writer, grpc::ClientContext& context,
                ProgressBar& progress) {
  using google::protobuf::internal::WireFormatLite;
  using google::protobuf::io::CodedOutputStream;
  constexpr uint32_t kDataTag =
      WireFormatLite::MakeTag(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  constexpr int kBuffers = 8;  // Read ahead or still held by gRPC: 8 MiB of ecctl's memory.
  grpc::Slice header(request.SerializeAsString());
  if (!writer.Write(grpc::ByteBuffer(&header, 1))) return;
  const uint64_t total = FileSize(fd).value_or(0);
  uint64_t sent = 0;
  ecd::client::ChunkReader reader(fd, kChunk, kBuffers);
  for (;;) {
    absl::StatusOr<std::optional<ecd::client::Chunk>> chunk = reader.Next();
    if (!chunk.ok()) {
      context.TryCancel();
      throw Failure{kExitLocalFile, absl::StrCat("read ", file, ": ", chunk.status().message())};
    }
    if (!chunk->has_value()) return;
    const size_t n = (*chunk)->size();
    uint8_t prefix[16];  // A one-byte tag and a varint64 (at most 10 bytes).
    uint8_t* end = CodedOutputStream::WriteTagToArray(kDataTag, prefix);
    end = CodedOutputStream::WriteVarint64ToArray(n, end);
    const size_t prefix_size = static_cast<size_t>(end - prefix);
    std::memcpy((*chunk)->Prefix(prefix_size).data(), prefix, prefix_size);
    grpc::Slice message = (*chunk)->TakeSlice(prefix_size);
    if (!writer.Write(grpc::ByteBuffer(&message, 1))) return;
    sent += n;
    progress.Update(sent, total);
  }
}

// The options of `ecctl encode`.
struct EncodeArgs {
  std::string file;
  std::string name;
  uint32_t m = 0;
  uint32_t k = 0;
  std::string matrix = "cauchy";
  std::string block_size;
};

// The header of an encode; exit code 2 for a bad --matrix or --block-size.
v1::EncodeHeader EncodeHeaderOf(const EncodeArgs& a) {
  v1::EncodeHeader h;
  h.set_name(a.name);
  if (h.name().empty()) {
    if (a.file == "-") throw Failure{kExitUsage, "encode from stdin needs --name"};
    h.set_name(std::filesystem::path(a.file).filename().string());
  }
  h.set_data_blocks(a.m);
  h.set_parity_blocks(a.k);
  if (a.matrix == "cauchy") {
    h.set_matrix(v1::MATRIX_TYPE_CAUCHY);
  } else if (a.matrix == "vandermonde") {
    h.set_matrix(v1::MATRIX_TYPE_VANDERMONDE);
  } else {
    throw Failure{kExitUsage,
                  absl::StrCat("--matrix must be cauchy or vandermonde, not \"", a.matrix, "\"")};
  }
  if (!a.block_size.empty()) {
    absl::StatusOr<uint64_t> bs = ecd::ParseSize(a.block_size);
    if (!bs.ok()) throw Failure{kExitUsage, absl::StrCat("--block-size: ", bs.status().message())};
    h.set_block_size(*bs);
  }
  return h;
}

void Encode(Client& c, const EncodeArgs& a) {
  v1::EncodeRequest request;
  *request.mutable_header() = EncodeHeaderOf(a);
  const std::string name = request.header().name();
  const int fd = OpenInput(a.file);
  // A regular file's size goes in the header: ecd refuses one over its limit before any data.
  if (const std::optional<uint64_t> size = FileSize(fd)) {
    request.mutable_header()->set_size(*size);
  }

  auto context = c.Context();
  v1::EncodeResponse response;
  auto writer = c.RawWriter("/ecd.v1.Objects/Encode", context.get(), &response);
  ProgressBar progress = c.Progress(absl::StrCat("encode ", name), ProgressUnit::Bytes());
  StreamFile(fd, a.file, request, *writer, *context, progress);
  CloseInput(fd);
  writer->WritesDone();
  c.Check(writer->Finish(), absl::StrCat("encode ", name));
  progress.Clear();
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
  uint64_t id = 0;       // The object's id (0: not told).
};

// The bytes of a read ask for: [offset, offset + length) of an object (length 0: to the end).
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// How many bytes a read of `range` from an object of `size` bytes delivers.
uint64_t ExpectedBytes(uint64_t size, const ByteRange& range) {
  if (range.offset >= size) return 0;
  const uint64_t rest = size - range.offset;
  return range.length == 0 ? rest : std::min(range.length, rest);
}

// Where a streamed read's bytes go: stdout, or a partial file beside `out` that is fsynced and
// renamed into place only by Commit, so no partial or unchecked bytes are ever left under `out`.
// A destination not committed removes its partial file. An `out` that exists and is not a
// regular file (/dev/null, a FIFO, a device) is written directly: renaming over it would replace
// the device node with a file.
class Destination {
 public:
  explicit Destination(const std::string& out) : out_(out) {
    if (to_stdout()) {
      WidenPipe(fd_);
      return;
    }
    struct stat st {};
    if (::stat(out.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      direct_ = true;
      block_device_ = S_ISBLK(st.st_mode);
      fd_ = ::open(out.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) {
        throw Failure{kExitLocalFile,
                      absl::StrCat("cannot open ", out, ": ", std::strerror(errno))};
      }
      WidenPipe(fd_);  // A FIFO.
      return;
    }
    const std::filesystem::path target(out);
    partial_ = (target.parent_path() /
                absl::StrCat(".", target.filename().string(), ".partial-", ::getpid()))
                   .string();
    fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw Failure{kExitLocalFile,
                    absl::StrCat("cannot create ", partial_, ": ", std::strerror(errno))};
    }
  }
  ~Destination() {
    if (to_stdout() || committed_) return;
    ::close(fd_);
    if (!direct_) ::unlink(partial_.c_str());
  }
  Destination(const Destination&) = delete;
  Destination& operator=(const Destination&) = delete;

  bool to_stdout() const { return out_ == "-"; }

  // Writes all of `data`, its pieces in order (writev, up to IOV_MAX pieces a call); false
  // (errno set) on an error.
  bool Write(absl::Span<const absl::Span<const uint8_t>> data) {
    iov_.clear();
    for (absl::Span<const uint8_t> piece : data) {
      if (!piece.empty()) iov_.push_back({const_cast<uint8_t*>(piece.data()), piece.size()});
    }
    size_t first = 0;  // iov_[first...] is left to write.
    while (first < iov_.size()) {
      const int count = static_cast<int>(std::min<size_t>(iov_.size() - first, IOV_MAX));
      const ssize_t n = ::writev(fd_, iov_.data() + first, count);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      if (n == 0) {  // Not for a non-empty write; never loop on it.
        errno = EIO;
        return false;
      }
      for (size_t left = static_cast<size_t>(n); left > 0;) {
        iovec& v = iov_[first];
        if (left < v.iov_len) {
          v.iov_base = static_cast<uint8_t*>(v.iov_base) + left;
          v.iov_len -= left;
          break;
        }
        left -= v.iov_len;
        ++first;
      }
    }
    return true;
  }

  // Makes the bytes written durable under `out`; exit code 3 if that fails.
  void Commit() {
    if (to_stdout()) return;
    if (direct_) {
      committed_ = true;
      // A block device holds the bytes like a file does; FIFOs and character devices have
      // nothing to sync (fsync would fail with EINVAL).
      if ((block_device_ && ::fsync(fd_) != 0) || ::close(fd_) != 0) {
        throw Failure{kExitLocalFile, absl::StrCat("write ", out_, ": ", std::strerror(errno))};
      }
      return;
    }
    if (::fsync(fd_) != 0 || ::close(fd_) != 0) Fail("write ");
    committed_ = true;  // Closed: only the partial file is left to remove on failure.
    if (::rename(partial_.c_str(), out_.c_str()) != 0) {
      const int err = errno;
      ::unlink(partial_.c_str());
      throw Failure{kExitLocalFile, absl::StrCat("rename to ", out_, ": ", std::strerror(err))};
    }
    SyncDirectory();
  }

 private:
  [[noreturn]] void Fail(const char* what) {
    const int err = errno;
    ::unlink(partial_.c_str());
    committed_ = true;  // Nothing left to clean up.
    throw Failure{kExitLocalFile, absl::StrCat(what, out_, ": ", std::strerror(err))};
  }

  // The new name must survive a crash too: sync the directory that holds it.
  void SyncDirectory() {
    std::string dir = std::filesystem::path(out_).parent_path().string();
    if (dir.empty()) dir = std::string(".");
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0 || ::fsync(dir_fd) != 0) {
      const int err = errno;
      if (dir_fd >= 0) ::close(dir_fd);
      throw Failure{kExitLocalFile,
                    absl::StrCat("sync directory of ", out_, ": ", std::strerror(err))};
    }
    ::close(dir_fd);
  }

  const std::string out_;
  std::string partial_;
  int fd_ = STDOUT_FILENO;
  bool committed_ = false;
  bool direct_ = false;  // `out` is not a regular file: written in place.
  bool block_device_ = false;
  std::vector<iovec> iov_;  // Write's, kept for its capacity.
};

// Writes a stream of raw ReadResponse messages (Client::RawReader) for `range` into `out` ("-":
// stdout), showing the bytes on `progress`; never leaves partial or unchecked bytes under `out`.
Streamed SaveStream(Client& c, const std::string& what, grpc::ClientContext& context,
                    grpc::ClientReader<grpc::ByteBuffer>& stream, const std::string& out,
                    const ByteRange& range, ProgressBar& progress) {
  Destination destination(out);
  Streamed got;
  uint64_t expected = 0;
  grpc::ByteBuffer raw;
  ecd::wire::DataMessage chunk;
  v1::ReadResponse fields;  // All but the data, which stays in gRPC's slices.
  while (stream.Read(&raw)) {
    if (absl::Status s = chunk.ParseAround(&raw, v1::ReadResponse::kDataFieldNumber, &fields);
        !s.ok()) {
      context.TryCancel();
      throw Failure{kExitEcd, absl::StrCat(what, ": ecd sent a response ecctl cannot read (",
                                           s.message(), ")")};
    }
    if (got.version == 0) got.version = fields.object_version();
    if (got.id == 0) got.id = fields.object_id();
    if (fields.object_size() > 0) expected = ExpectedBytes(fields.object_size(), range);
    got.reconstructed += fields.reconstructed_blocks();
    if (!destination.Write(chunk.data())) {
      const int err = errno;
      context.TryCancel();
      throw Failure{kExitLocalFile, absl::StrCat("write ", out, ": ", std::strerror(err))};
    }
    got.bytes += chunk.data_size();
    progress.Update(got.bytes, expected);
  }
  c.Check(stream.Finish(), what);
  destination.Commit();
  return got;
}

// The summary of a read or block get goes to stderr when the bytes go to stdout.
FILE* SummaryStream(const std::string& out) { return out == "-" ? stderr : stdout; }

// ---- read

// The options of `ecctl read`.
struct ReadArgs {
  std::string name;
  std::string out;
  std::string offset;
  std::string length;
};

// Parses a size option that may be empty (0); exit code 2 if it is not a size.
uint64_t OptionalSize(const char* flag, const std::string& text) {
  if (text.empty()) return 0;
  absl::StatusOr<uint64_t> v = ecd::ParseSize(text);
  if (!v.ok()) throw Failure{kExitUsage, absl::StrCat(flag, ": ", v.status().message())};
  return *v;
}

void Read(Client& c, const ReadArgs& a) {
  const ByteRange range{OptionalSize("--offset", a.offset), OptionalSize("--length", a.length)};
  v1::ReadRequest request;
  request.set_name(a.name);
  request.set_offset(range.offset);
  request.set_length(range.length);
  auto context = c.Context();
  auto reader = c.RawReader("/ecd.v1.Objects/Read", context.get(), request);
  ProgressBar progress = c.Progress(absl::StrCat("read ", a.name), ProgressUnit::Bytes());
  const Streamed got =
      SaveStream(c, absl::StrCat("read ", a.name), *context, *reader, a.out, range, progress);
  progress.Clear();
  if (c.globals().json) {
    tools::ReadResult result;
    result.set_name(a.name);
    result.set_bytes(got.bytes);
    result.set_reconstructed_blocks(got.reconstructed);
    result.set_version(got.version);
    result.set_id(got.id);
    return PrintJson(result, SummaryStream(a.out));
  }
  std::fprintf(SummaryStream(a.out), "read %s: %s -> %s (%u blocks reconstructed)\n",
               a.name.c_str(), FormatSize(got.bytes).c_str(), a.out.c_str(), got.reconstructed);
}

// ---- block get

// The options of `ecctl block get`.
struct BlockGetArgs {
  std::string name;
  uint64_t stripe = 0;
  uint32_t index = 0;
  std::string out;
};

void BlockGet(Client& c, const BlockGetArgs& a) {
  v1::GetBlockRequest request;
  request.set_name(a.name);
  request.set_stripe(a.stripe);
  request.set_index(a.index);
  auto context = c.Context();
  auto reader = c.RawReader("/ecd.v1.Objects/GetBlock", context.get(), request);
  const std::string what =
      absl::StrCat("block get ", a.name, " stripe ", a.stripe, " index ", a.index);
  ProgressBar progress = c.Progress(what, ProgressUnit::Bytes());
  const Streamed got = SaveStream(c, what, *context, *reader, a.out, ByteRange{}, progress);
  progress.Clear();
  if (c.globals().json) {
    tools::BlockGetResult result;
    result.set_name(a.name);
    result.set_stripe(a.stripe);
    result.set_index(a.index);
    result.set_bytes(got.bytes);
    result.set_reconstructed(got.reconstructed > 0);
    return PrintJson(result, SummaryStream(a.out));
  }
  std::fprintf(SummaryStream(a.out), "%s: %s -> %s%s\n", what.c_str(),
               FormatSize(got.bytes).c_str(), a.out.c_str(),
               got.reconstructed ? " (the stored copy was bad: rebuilt from its stripe)" : "");
}

// ---- recover

void Recover(Client& c, const std::string& name, bool missing_only) {
  v1::RecoverRequest request;
  request.set_name(name);
  request.set_missing_only(missing_only);
  auto context = c.Context();
  auto reader = c.objects().Recover(context.get(), request);
  ProgressBar progress = c.Progress(absl::StrCat("recover ", name), ProgressUnit::Items("stripes"));
  v1::RecoverProgress p, last;
  while (reader->Read(&p)) {
    last = p;
    progress.Update(p.stripes_done(), p.stripes_total());
  }
  c.Check(reader->Finish(), absl::StrCat("recover ", name));
  progress.Clear();
  if (c.globals().json) return PrintJson(last);
  std::printf("recovered %s: %llu stripes %s, %llu blocks read, %llu blocks rebuilt (%s)\n",
              name.c_str(), static_cast<unsigned long long>(last.stripes_done()),
              missing_only ? "walked" : "checked",
              static_cast<unsigned long long>(last.blocks_checked()),
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

// The options of `ecctl scrub`.
struct ScrubArgs {
  std::string name;  // Empty: every object.
  bool check_only = false;
  std::string rate;
  bool status = false;
};

// The bytes of every block a scrub of `name` (empty: every object) reads; 0 if unknown.
uint64_t ScrubBytes(Client& c, const std::string& name) {
  v1::ListResponse response;
  auto context = c.Context();
  if (!c.objects().List(context.get(), v1::ListRequest(), &response).ok()) return 0;
  uint64_t total = 0;
  for (const v1::ObjectInfo& o : response.objects()) {
    if (!name.empty() && o.name() != name) continue;
    total += o.stripe_count() * (o.data_blocks() + o.parity_blocks()) * o.block_size();
  }
  return total;
}

// Exit code 4 (and the one line) when a scrub left damage behind or, checking only, found some.
void ThrowIfDamage(const v1::ScrubProgress& last, bool check_only) {
  const v1::ScrubFindings& f = last.found();
  if (last.objects_failed() > 0) {
    throw Failure{kExitDamage, absl::StrCat("scrub: ", last.objects_failed(),
                                            " objects are still damaged (first: ", last.errors(0),
                                            "); see docs/errors.md (DATA_LOSS)")};
  }
  if (check_only && f.blocks_corrupt() + f.blocks_unreadable() + f.parity_mismatches() > 0) {
    throw Failure{kExitDamage,
                  "scrub --check-only found damage and repaired nothing; run `ecctl scrub` "
                  "to repair it"};
  }
}

void Scrub(Client& c, const ScrubArgs& a) {
  v1::ScrubRequest request;
  request.set_name(a.name);
  request.set_check_only(a.check_only);
  request.set_rate_bytes_per_sec(OptionalSize("--rate", a.rate));
  const std::string what = a.name.empty() ? "every object" : a.name;
  ProgressBar progress = c.Progress(absl::StrCat("scrub ", what), ProgressUnit::Bytes());
  const uint64_t total = progress.enabled() ? ScrubBytes(c, a.name) : 0;
  auto context = c.Context();
  auto reader = c.objects().Scrub(context.get(), request);
  v1::ScrubProgress p, last;
  while (reader->Read(&p)) {
    last = p;
    progress.Update(p.found().bytes_checked(), total);
  }
  c.Check(reader->Finish(), absl::StrCat("scrub ", what));
  progress.Clear();
  if (c.globals().json) {
    PrintJson(last);
  } else {
    std::printf("scrubbed %llu objects: %s\n", static_cast<unsigned long long>(last.objects_done()),
                Findings(last.found()).c_str());
  }
  ThrowIfDamage(last, a.check_only);
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
    throw Failure{kExitUsage, "--data-hex needs an even number of hex digits (two per byte)"};
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
        throw Failure{kExitUsage, absl::StrCat("--data-hex: \"", std::string(1, ch),
                                               "\" is not a hex digit (use 0-9, a-f)")};
      }
      byte = byte * 16 + v;
    }
    out.push_back(static_cast<char>(byte));
  }
  return out;
}

// The options of `ecctl update`.
struct UpdateArgs {
  std::string name;
  std::string offset;
  std::string file;
  std::string data_hex;
  bool hex_given = false;
  bool append = false;
};

// Overwrites [offset, offset + n) of an object with a file's bytes (or --data-hex), as one
// new version; prints the new version and size.
void Update(Client& c, const UpdateArgs& a) {
  if (a.file.empty() == !a.hex_given) {
    throw Failure{kExitUsage,
                  "update needs exactly one of --file F (\"-\" for stdin) or --data-hex HEX"};
  }
  absl::StatusOr<uint64_t> offset = ecd::ParseSize(a.offset);
  if (!offset.ok())
    throw Failure{kExitUsage, absl::StrCat("--offset: ", offset.status().message())};
  const std::string inline_bytes = a.hex_given ? DecodeHex(a.data_hex) : std::string();
  const int fd = a.hex_given ? -1 : OpenInput(a.file);
  v1::UpdateRequest request;
  v1::UpdateHeader* h = request.mutable_header();
  h->set_name(a.name);
  h->set_offset(*offset);
  h->set_append(a.append);
  if (a.hex_given) {
    h->set_size(inline_bytes.size());
  } else if (const std::optional<uint64_t> size = FileSize(fd)) {
    h->set_size(*size);
  }

  auto context = c.Context();
  v1::UpdateResponse response;
  auto writer = c.RawWriter("/ecd.v1.Objects/Update", context.get(), &response);
  ProgressBar progress = c.Progress(absl::StrCat("update ", a.name), ProgressUnit::Bytes());
  if (a.hex_given) {
    request.set_data(inline_bytes);
    grpc::Slice message(request.SerializeAsString());
    writer->Write(grpc::ByteBuffer(&message, 1));  // If the server ended early, Finish says why.
  } else {
    // On a read error the stream is cancelled: the daemon drops the new extents and the old
    // version stays.
    StreamFile(fd, a.file, request, *writer, *context, progress);
    CloseInput(fd);
  }
  writer->WritesDone();
  c.Check(writer->Finish(), absl::StrCat("update ", a.name));
  progress.Clear();
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
  std::printf("redundancy:       %s\n", o.lost_stripes() > 0 ? "DATA LOST in some stripes"
                                        : o.degraded_stripes() > 0
                                            ? "degraded (being repaired: ecctl repair status)"
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

// ---- catalog backup

// Streams the catalog's backup into FILE.partial, fsyncs it and renames it to FILE, so that
// FILE is either a whole copy or absent.
void CatalogBackup(Client& c, const std::string& file) {
  const std::string partial = file + ".partial";
  FILE* out = std::fopen(partial.c_str(), "wb");
  if (out == nullptr) {
    throw Failure{kExitLocalFile,
                  absl::StrCat("cannot create ", partial, ": ", std::strerror(errno))};
  }
  auto fail_local = [&](const std::string& what) {
    std::fclose(out);
    std::remove(partial.c_str());
    throw Failure{kExitLocalFile, absl::StrCat(what, " ", partial, ": ", std::strerror(errno))};
  };
  auto context = c.Context();
  auto reader = c.catalog().Backup(context.get(), v1::CatalogBackupRequest());
  ProgressBar progress = c.Progress("catalog backup", ProgressUnit::Bytes());
  v1::CatalogBackupChunk chunk;
  uint64_t got = 0, declared = 0;
  bool done = false;
  while (reader->Read(&chunk)) {
    if (!chunk.data().empty() &&
        std::fwrite(chunk.data().data(), 1, chunk.data().size(), out) != chunk.data().size()) {
      fail_local("cannot write");
    }
    got += chunk.data().size();
    if (chunk.done()) {
      done = true;
      declared = chunk.size_bytes();
    }
    progress.Update(got, 0);
  }
  progress.Clear();
  const grpc::Status status = reader->Finish();
  if (!status.ok() || !done || declared != got) {
    std::fclose(out);
    std::remove(partial.c_str());
    c.Check(status, "catalog backup");
    throw Failure{kExitEcd, absl::StrCat("catalog backup: the stream ended after ", got,
                                         " bytes without its end; nothing was written, retry")};
  }
  if (std::fflush(out) != 0 || ::fsync(::fileno(out)) != 0) fail_local("cannot flush");
  std::fclose(out);
  if (std::rename(partial.c_str(), file.c_str()) != 0) {
    throw Failure{kExitLocalFile, absl::StrCat("cannot rename ", partial, " to ", file, ": ",
                                               std::strerror(errno))};
  }
  if (c.globals().json) {
    tools::CatalogBackupResult result;
    result.set_file(file);
    result.set_bytes(got);
    return PrintJson(result);
  }
  std::printf("catalog backed up to %s (%s): a SQLite database, a copy as of one moment\n",
              file.c_str(), FormatSize(got).c_str());
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

// ---- repair

// "2024-05-01 12:00:00 UTC".
std::string UtcTime(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

// "12m5s ago", or "just now" under a second.
std::string Ago(int64_t unix_ms) {
  const absl::Duration d = absl::Now() - absl::FromUnixMillis(unix_ms);
  if (d < absl::Seconds(1)) return "just now";
  return absl::StrCat(absl::FormatDuration(absl::Trunc(d, absl::Seconds(1))), " ago");
}

// running, paused, stalled or idle.
const char* RepairState(const v1::RepairStatus& r) {
  if (r.paused()) return "paused";
  if (!r.stalled().empty()) return "stalled";
  return r.stripes_queued() > 0 ? "running" : "idle";
}

// "0: 3, 1: 117, 2: 4000".
std::string ByRedundancy(const v1::RepairStatus& r) {
  std::vector<std::string> parts;
  parts.reserve(r.stripes_by_redundancy_size());
  for (int left = 0; left < r.stripes_by_redundancy_size(); ++left) {
    parts.push_back(absl::StrCat(left, ": ", r.stripes_by_redundancy(left)));
  }
  return parts.empty() ? "no stripes" : absl::StrJoin(parts, ", ");
}

// The repair's paragraph in `rebuild ls`, `repair status` and `status`: its state and queue,
// what it did since ecd started, its rate and ETA, the stripes by redundancy left, and why it
// is paused or stalled.
std::vector<std::string> RepairSummary(const v1::RepairStatus& r) {
  std::vector<std::string> lines;
  std::string head =
      absl::StrCat("repair: ", RepairState(r), "; ", r.stripes_queued(), " stripes to repair");
  if (r.stripes_waiting() > 0) {
    absl::StrAppend(&head, ", ", r.stripes_waiting(), " waiting for down devices (repair delay ",
                    absl::FormatDuration(absl::Seconds(r.delay_seconds())), ")");
  }
  lines.push_back(head);
  std::string done =
      absl::StrCat("  since ecd started: ", r.stripes_repaired(), " stripes, ", r.blocks_repaired(),
                   " blocks, ", FormatSize(r.bytes_repaired()), " repaired");
  if (r.stripes_lost() > 0) {
    absl::StrAppend(&done, "; ", r.stripes_lost(),
                    " stripes lost (fewer than M good blocks: cannot be repaired)");
  }
  lines.push_back(done);
  lines.push_back(absl::StrCat(
      "  rate ", ecd::client::FormatRate(ProgressUnit::Bytes(), r.bytes_per_sec()), " (limit ",
      r.rate_bytes_per_sec() == 0 ? "none" : FormatSize(r.rate_bytes_per_sec()) + "/s", "), ETA ",
      r.eta_seconds() < 0 ? "unknown"
                          : ecd::client::FormatEta(static_cast<double>(r.eta_seconds()))));
  lines.push_back(absl::StrCat("  stripes by redundancy left: ", ByRedundancy(r)));
  if (r.paused()) {
    lines.push_back("  paused: no repair starts until `ecctl repair resume`");
  }
  if (!r.stalled().empty()) lines.push_back(absl::StrCat("  stalled: ", r.stalled()));
  return lines;
}

void PrintLines(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
}

// `what` names the command in errors.
v1::RepairStatus GetRepairStatus(Client& c, const std::string& what) {
  v1::RepairStatus status;
  auto context = c.Context();
  c.Check(c.rebuilds().GetRepairStatus(context.get(), v1::RepairStatusRequest(), &status), what);
  return status;
}

void RepairStatus(Client& c) {
  const v1::RepairStatus r = GetRepairStatus(c, "repair status");
  if (c.globals().json) return PrintJson(r);
  PrintLines(RepairSummary(r));
  for (const v1::RepairLevel& l : r.repaired_by_redundancy()) {
    std::printf("  repaired with %u redundancy left: %llu stripes (batches %llu to %llu)\n",
                l.redundancy_left(), static_cast<unsigned long long>(l.stripes()),
                static_cast<unsigned long long>(l.first_batch()),
                static_cast<unsigned long long>(l.last_batch()));
  }
  if (r.last_progress_unix_ms() != 0) {
    std::printf("  last progress: %s (%s)\n", UtcTime(r.last_progress_unix_ms()).c_str(),
                Ago(r.last_progress_unix_ms()).c_str());
  }
}

// `repair pause`, `resume` and `rate`: one SetRepair with what `request` sets. `what` names the
// command in errors.
v1::RepairStatus SetRepair(Client& c, const v1::SetRepairRequest& request,
                           const std::string& what) {
  v1::RepairStatus status;
  auto context = c.Context();
  c.Check(c.rebuilds().SetRepair(context.get(), request, &status), what);
  return status;
}

void RepairPause(Client& c, bool paused) {
  v1::SetRepairRequest request;
  request.set_paused(paused);
  const v1::RepairStatus r = SetRepair(c, request, paused ? "repair pause" : "repair resume");
  if (c.globals().json) return PrintJson(r);
  if (paused) {
    std::printf("repair paused: no repair starts until `ecctl repair resume`; %llu stripes wait\n",
                static_cast<unsigned long long>(r.stripes_queued()));
  } else {
    std::printf("repair resumed: %llu stripes to repair\n",
                static_cast<unsigned long long>(r.stripes_queued()));
  }
}

void RepairRate(Client& c, const std::string& rate) {
  absl::StatusOr<uint64_t> bytes = ecd::ParseSize(rate);
  if (!bytes.ok()) {
    throw Failure{kExitUsage,
                  absl::StrCat("repair rate: ", bytes.status().message(), "; 0 means no limit")};
  }
  v1::SetRepairRequest request;
  request.set_rate_bytes_per_sec(*bytes);
  const v1::RepairStatus r = SetRepair(c, request, absl::StrCat("repair rate ", rate));
  if (c.globals().json) return PrintJson(r);
  std::printf("repair rate limit: %s\n", r.rate_bytes_per_sec() == 0
                                             ? "none"
                                             : (FormatSize(r.rate_bytes_per_sec()) + "/s").c_str());
}

// ---- devices

// "down since 2024-05-01 12:00:00 UTC (12m5s ago): writes kept failing".
std::string DownLine(const v1::DeviceInfo& d) {
  return absl::StrCat("down since ", UtcTime(d.down_since_unix_ms()), " (",
                      Ago(d.down_since_unix_ms()), "): ", d.down_reason());
}

// "file system /var/lib/ecd (catalog, devices 0-7): 12.3 GiB free of 50.0 GiB, 256.0 MiB kept
// free (--fs-reserve)", and a warning once new data no longer fits.
std::string FileSystemLine(const v1::FileSystemInfo& fs) {
  std::vector<std::string> holds;
  if (fs.catalog()) holds.push_back("catalog");
  std::vector<std::string> runs;  // "0-7", "9"
  for (int i = 0; i < fs.devices_size();) {
    int j = i;
    while (j + 1 < fs.devices_size() && fs.devices(j + 1) == fs.devices(j) + 1) ++j;
    runs.push_back(i == j ? absl::StrCat(fs.devices(i))
                          : absl::StrCat(fs.devices(i), "-", fs.devices(j)));
    i = j + 1;
  }
  if (!runs.empty()) {
    holds.push_back(
        absl::StrCat(fs.devices_size() == 1 ? "device " : "devices ", absl::StrJoin(runs, ", ")));
  }
  std::string line =
      absl::StrCat("file system ", fs.path(), " (", absl::StrJoin(holds, ", "),
                   "): ", FormatSize(fs.free_bytes()), " free of ", FormatSize(fs.size_bytes()),
                   ", ", FormatSize(fs.reserve_bytes()), " kept free (--fs-reserve)");
  if (fs.free_bytes() < fs.reserve_bytes() + fs.claimed_bytes()) {
    absl::StrAppend(&line, "; NEARLY FULL: new data is refused (ecctl rm, or free space on it)");
  }
  return line;
}

// `what` names the command in errors.
v1::ListDevicesResponse ListDevices(Client& c, const std::string& what = "device ls") {
  v1::ListDevicesResponse response;
  auto context = c.Context();
  c.Check(c.devices().List(context.get(), v1::ListDevicesRequest(), &response), what);
  return response;
}

void DeviceList(Client& c) {
  const v1::ListDevicesResponse response = ListDevices(c);
  if (c.globals().json) return PrintJson(response);
  std::printf("%-4s %-7s %11s %11s %11s %8s  %s\n", "ID", "STATE", "SIZE", "USED", "FREE", "BLOCKS",
              "PATH");
  for (const v1::DeviceInfo& d : response.devices()) {
    std::printf("%-4u %-7s %11s %11s %11s %8llu  %s\n", d.id(), StateName(d.state()),
                FormatSize(d.size_bytes()).c_str(), FormatSize(d.used_bytes()).c_str(),
                FormatSize(d.free_bytes()).c_str(), static_cast<unsigned long long>(d.blocks()),
                d.path().c_str());
    if (d.state() == v1::DEVICE_STATE_DOWN) std::printf("     %s\n", DownLine(d).c_str());
  }
  for (const v1::FileSystemInfo& fs : response.file_systems()) {
    std::printf("%s\n", FileSystemLine(fs).c_str());
  }
}

// Running and queued jobs first, then the newest finished ones. `what` names the command in errors.
v1::ListRebuildsResponse ListJobs(Client& c, const std::string& what = "rebuild ls") {
  v1::ListRebuildsResponse response;
  auto context = c.Context();
  c.Check(c.rebuilds().List(context.get(), v1::ListRebuildsRequest(), &response), what);
  return response;
}

void RebuildList(Client& c) {
  const v1::ListRebuildsResponse response = ListJobs(c);
  if (c.globals().json) return PrintJson(response);
  PrintLines(RepairSummary(response.repair()));
  std::printf("\n");
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

// `what` names the command in errors.
v1::RebuildJob GetJob(Client& c, uint64_t id, const std::string& what) {
  v1::GetRebuildRequest request;
  request.set_id(id);
  v1::RebuildJob job;
  auto context = c.Context();
  c.Check(c.rebuilds().Get(context.get(), request, &job), what);
  return job;
}

void RebuildGet(Client& c, uint64_t id) {
  PrintJson(GetJob(c, id, absl::StrCat("rebuild get ", id)));
}

// ---- rebuild waits

constexpr absl::Duration kPollInterval = absl::Milliseconds(200);

bool Finished(const v1::RebuildJob& j) { return j.state() == "done" || j.state() == "failed"; }

bool AllFinished(const v1::ListRebuildsResponse& jobs) {
  return std::all_of(jobs.jobs().begin(), jobs.jobs().end(), Finished);
}

// The ids of the jobs queued or running now.
std::vector<uint64_t> ActiveJobIds(Client& c) {
  std::vector<uint64_t> ids;
  const v1::ListRebuildsResponse jobs = ListJobs(c);
  for (const v1::RebuildJob& j : jobs.jobs()) {
    if (!Finished(j)) ids.push_back(j.id());
  }
  return ids;
}

// Polls the jobs `ids` until every one has finished, showing the objects they have done on a
// progress line; gives up with DEADLINE_EXCEEDED after --timeout seconds (0: never).
v1::ListRebuildsResponse WaitForJobs(Client& c, const std::vector<uint64_t>& ids,
                                     const std::string& label) {
  ProgressBar progress = c.Progress(label, ProgressUnit::Items("objects"));
  const double timeout = c.globals().timeout;
  const absl::Time deadline =
      timeout > 0 ? absl::Now() + absl::Seconds(timeout) : absl::InfiniteFuture();
  for (;;) {
    v1::ListRebuildsResponse now;
    uint64_t done = 0, total = 0;
    for (uint64_t id : ids) {
      *now.add_jobs() = GetJob(c, id, absl::StrCat("rebuild job ", id));
      done += now.jobs().rbegin()->objects_done();
      total += now.jobs().rbegin()->objects_total();
    }
    progress.Update(done, total);
    if (AllFinished(now)) return now;
    if (absl::Now() >= deadline) {
      throw Failure{kExitEcd, absl::StrCat(label, ": DEADLINE_EXCEEDED: still running after ",
                                           timeout, " s (ecctl rebuild ls)")};
    }
    absl::SleepFor(kPollInterval);
  }
}

// Exit code 1 with the one line when a job failed.
void ThrowIfJobFailed(const v1::ListRebuildsResponse& jobs) {
  for (const v1::RebuildJob& j : jobs.jobs()) {
    if (j.state() == "failed") {
      throw Failure{kExitEcd, absl::StrCat("rebuild job ", j.id(), " (", j.kind(),
                                           ") failed: ", j.error(), "; see docs/cxl.md")};
    }
  }
}

// "rebuild job 3" or "rebuild jobs 3,4".
std::string JobsLabel(const std::vector<uint64_t>& ids) {
  return absl::StrCat(ids.size() == 1 ? "rebuild job " : "rebuild jobs ", absl::StrJoin(ids, ","));
}

void RebuildWait(Client& c, std::vector<uint64_t> ids) {
  if (ids.empty()) ids = ActiveJobIds(c);
  const v1::ListRebuildsResponse jobs = WaitForJobs(c, ids, JobsLabel(ids));
  ThrowIfJobFailed(jobs);
  if (c.globals().json) return PrintJson(jobs);
  if (ids.empty()) std::printf("no rebuild jobs queued or running\n");
  for (const v1::RebuildJob& j : jobs.jobs()) {
    std::printf("rebuild job %llu (%s): %s; %llu/%llu objects, %llu blocks moved (%s)\n",
                static_cast<unsigned long long>(j.id()), j.kind().c_str(), j.state().c_str(),
                static_cast<unsigned long long>(j.objects_done()),
                static_cast<unsigned long long>(j.objects_total()),
                static_cast<unsigned long long>(j.blocks_moved()),
                FormatSize(j.bytes_moved()).c_str());
  }
}

v1::CxlLog ParseLog(const std::string& s) {
  if (s == "informational" || s == "info") return v1::CXL_LOG_INFORMATIONAL;
  if (s == "warning" || s == "warn") return v1::CXL_LOG_WARNING;
  if (s == "failure" || s == "fail") return v1::CXL_LOG_FAILURE;
  if (s == "fatal") return v1::CXL_LOG_FATAL;
  throw Failure{kExitUsage,
                absl::StrCat("--log ", s, " is not informational, warning, failure or fatal")};
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
        throw Failure{kExitUsage, absl::StrCat("--set ", s, " is not LOG=MODE (e.g. failure=msi)")};
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
    if (!f) throw Failure{kExitLocalFile, absl::StrCat("cannot read ", path)};
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
    // Blank lines too (ecd skips them), so that ecd's "line N" is line N of the file.
    while (std::getline(lines, line)) request.add_json_lines(line);
  } else {
    if (data.empty() || data.size() % 128 != 0) {
      throw Failure{kExitLocalFile,
                    absl::StrCat(path, " holds ", data.size(),
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
    throw Failure{kExitLocalFile,
                  absl::StrCat(path, " holds ", data.size(), " bytes, not whole 128-byte records")};
  }
  // CXL_LOG_INFORMATIONAL..FATAL are 1..4; the device's log numbers are 0..3.
  const std::string log_name(
      ecd::cxl::EventLogName(static_cast<ecd::cxl::EventLog>(ParseLog(log) - 1)));
  for (size_t off = 0; off < data.size(); off += 128) {
    auto rec = ecd::cxl::DecodeRecord(
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(data.data()) + off, 128));
    if (!rec.ok()) {
      throw Failure{kExitEcd, absl::StrCat("record ", off / 128, ": ", rec.status().message())};
    }
    std::printf("%s\n", ecd::cxl::RecordToJson(*rec, log_name).c_str());
  }
}

// ---- device state

v1::SetDeviceStateResponse SetDeviceState(Client& c, uint32_t id, v1::DeviceState state) {
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
  return response;
}

// `device fail` and `device online`.
void DeviceSet(Client& c, uint32_t id, v1::DeviceState state) {
  const v1::SetDeviceStateResponse response = SetDeviceState(c, id, state);
  if (c.globals().json) return PrintJson(response);
  std::printf("device %u is now %s\n", id, StateName(response.device().state()));
}

// `device replace`: a new blank namespace in the slot of a failed or down device.
void DeviceReplace(Client& c, uint32_t id) {
  v1::ReplaceDeviceRequest request;
  request.set_id(id);
  v1::ReplaceDeviceResponse response;
  auto context = c.Context();
  c.Check(c.devices().Replace(context.get(), request, &response),
          absl::StrCat("device replace ", id));
  if (c.globals().json) return PrintJson(response);
  std::printf(
      "device %u replaced: now %s with a new blank namespace; the repair rebuilds its %llu "
      "blocks\n",
      id, StateName(response.device().state()),
      static_cast<unsigned long long>(response.device().blocks()));
}

// The evacuation job of device `id`: the running or queued one, else the newest finished one.
uint64_t EvacuationJobOf(Client& c, uint32_t id) {
  const v1::ListRebuildsResponse jobs = ListJobs(c);
  for (const v1::RebuildJob& j : jobs.jobs()) {
    if (j.kind() == "evacuate-device" && j.device() == id) return j.id();
  }
  throw Failure{kExitEcd, absl::StrCat("device evacuate ", id,
                                       ": NOT_FOUND: no evacuation job for the device in "
                                       "`ecctl rebuild ls`")};
}

v1::DeviceInfo DeviceOf(Client& c, uint32_t id) {
  const v1::ListDevicesResponse devices = ListDevices(c);
  for (const v1::DeviceInfo& d : devices.devices()) {
    if (d.id() == id) return d;
  }
  throw Failure{kExitEcd, absl::StrCat("device ", id, ": NOT_FOUND (ecctl device ls)")};
}

// `device evacuate`: queues the evacuation and, with `wait`, polls its job until it is done.
void Evacuate(Client& c, uint32_t id, bool wait) {
  v1::SetDeviceStateResponse response = SetDeviceState(c, id, v1::DEVICE_STATE_FAILING);
  if (wait) {
    const uint64_t job = EvacuationJobOf(c, id);
    ThrowIfJobFailed(WaitForJobs(c, {job}, absl::StrCat("evacuate device ", id)));
    *response.mutable_device() = DeviceOf(c, id);
  }
  if (c.globals().json) return PrintJson(response);
  if (wait) {
    std::printf("device %u: evacuated, now %s with %llu blocks\n", id,
                StateName(response.device().state()),
                static_cast<unsigned long long>(response.device().blocks()));
    return;
  }
  std::printf("device %u: evacuation queued (see ecctl rebuild ls); it becomes failed when empty\n",
              id);
}

// ---- status

constexpr int kRecentCxlJobs = 5;
constexpr size_t kStatusWidth = 120;  // Job lines are cut to this many columns.

void AddDevices(Client& c, tools::Status& s) {
  v1::ListDevicesResponse devices = ListDevices(c, "status");
  for (v1::DeviceInfo& d : *devices.mutable_devices()) {
    d.clear_counters();
    s.set_capacity_bytes(s.capacity_bytes() + d.size_bytes());
    s.set_used_bytes(s.used_bytes() + d.used_bytes());
    s.set_free_bytes(s.free_bytes() + d.free_bytes());
    if (d.state() == v1::DEVICE_STATE_ONLINE) s.set_devices_online(s.devices_online() + 1);
    if (d.state() == v1::DEVICE_STATE_FAILING) s.set_devices_failing(s.devices_failing() + 1);
    if (d.state() == v1::DEVICE_STATE_FAILED) s.set_devices_failed(s.devices_failed() + 1);
    if (d.state() == v1::DEVICE_STATE_DOWN) s.set_devices_down(s.devices_down() + 1);
    *s.add_devices() = std::move(d);
  }
  *s.mutable_file_systems() = devices.file_systems();
}

void AddObjects(Client& c, tools::Status& s) {
  v1::ListResponse response;
  auto context = c.Context();
  c.Check(c.objects().List(context.get(), v1::ListRequest(), &response), "status");
  for (const v1::ObjectInfo& o : response.objects()) {
    s.set_objects(s.objects() + 1);
    s.set_object_bytes(s.object_bytes() + o.size());
    s.set_degraded_stripes(s.degraded_stripes() + o.degraded_stripes());
    s.set_lost_stripes(s.lost_stripes() + o.lost_stripes());
    if (o.degraded_stripes() + o.lost_stripes() > 0) {
      s.set_degraded_objects(s.degraded_objects() + 1);
    }
  }
}

// The jobs and the repair's status (one Rebuilds.List).
void AddRebuilds(Client& c, tools::Status& s) {
  v1::ListRebuildsResponse jobs = ListJobs(c, "status");
  *s.mutable_repair() = jobs.repair();
  std::sort(jobs.mutable_jobs()->begin(), jobs.mutable_jobs()->end(),
            [](const v1::RebuildJob& a, const v1::RebuildJob& b) { return a.id() > b.id(); });
  for (const v1::RebuildJob& j : jobs.jobs()) {
    if (!Finished(j)) *s.add_rebuilds() = j;
    if (absl::StartsWith(j.reason(), "CXL: ") && s.recent_cxl_jobs_size() < kRecentCxlJobs) {
      *s.add_recent_cxl_jobs() = j;
    }
  }
  std::stable_partition(s.mutable_rebuilds()->begin(), s.mutable_rebuilds()->end(),
                        [](const v1::RebuildJob& j) { return j.state() == "running"; });
}

void AddCxl(Client& c, tools::Status& s) {
  v1::CxlStats response;
  auto context = c.Context();
  c.Check(c.cxl().GetStats(context.get(), v1::CxlStatsRequest(), &response), "status");
  s.mutable_cxl_counters()->insert(response.counters().begin(), response.counters().end());
}

tools::Status CollectStatus(Client& c) {
  tools::Status s;
  AddDevices(c, s);
  AddObjects(c, s);
  AddRebuilds(c, s);
  AddCxl(c, s);
  return s;
}

void PrintStatusDevices(const tools::Status& s) {
  // Down devices are named only when there are some.
  const std::string down =
      s.devices_down() == 0 ? "" : absl::StrCat(", ", s.devices_down(), " down");
  std::printf("devices: %d (%u online, %u failing, %u failed%s); %s capacity, %s used, %s free\n",
              s.devices_size(), s.devices_online(), s.devices_failing(), s.devices_failed(),
              down.c_str(), FormatSize(s.capacity_bytes()).c_str(),
              FormatSize(s.used_bytes()).c_str(), FormatSize(s.free_bytes()).c_str());
  std::printf("  %-4s %-8s %11s %11s %8s\n", "ID", "STATE", "CAPACITY", "USED", "BLOCKS");
  for (const v1::DeviceInfo& d : s.devices()) {
    std::printf("  %-4u %-8s %11s %11s %8llu\n", d.id(), StateName(d.state()),
                FormatSize(d.size_bytes()).c_str(), FormatSize(d.used_bytes()).c_str(),
                static_cast<unsigned long long>(d.blocks()));
    if (d.state() == v1::DEVICE_STATE_DOWN) std::printf("       %s\n", DownLine(d).c_str());
  }
  for (const v1::FileSystemInfo& fs : s.file_systems()) {
    std::printf("%s\n", FileSystemLine(fs).c_str());
  }
}

void PrintStatusObjects(const tools::Status& s) {
  std::printf("objects: %llu (%s); %llu degraded: %llu degraded stripes, %llu lost stripes\n",
              static_cast<unsigned long long>(s.objects()), FormatSize(s.object_bytes()).c_str(),
              static_cast<unsigned long long>(s.degraded_objects()),
              static_cast<unsigned long long>(s.degraded_stripes()),
              static_cast<unsigned long long>(s.lost_stripes()));
}

// "  3    evacuate-device running  dev 7  " and then its progress or its reason, cut to fit.
std::string JobLine(const v1::RebuildJob& j) {
  const std::string head =
      absl::StrFormat("  %-4d %-16s %-8s dev %-3d ", j.id(), j.kind(), j.state(), j.device());
  if (j.state() == "running") {
    const double elapsed = (absl::ToUnixMillis(absl::Now()) - j.started_unix_ms()) / 1000.0;
    return ecd::client::RenderProgress(head, ProgressUnit::Items("objects"), j.objects_done(),
                                       j.objects_total(), std::max(elapsed, 0.0), kStatusWidth);
  }
  const std::string why = j.error().empty() ? j.reason() : j.error();
  return (head + why).substr(0, kStatusWidth);
}

void PrintStatusJobs(const tools::Status& s) {
  const auto running =
      std::count_if(s.rebuilds().begin(), s.rebuilds().end(),
                    [](const v1::RebuildJob& j) { return j.state() == "running"; });
  std::printf("rebuild jobs: %lld running, %lld queued\n", static_cast<long long>(running),
              static_cast<long long>(s.rebuilds_size() - running));
  for (const v1::RebuildJob& j : s.rebuilds()) std::printf("%s\n", JobLine(j).c_str());
}

uint64_t Counter(const tools::Status& s, const std::string& name) {
  auto it = s.cxl_counters().find(name);
  return it == s.cxl_counters().end() ? 0 : it->second;
}

void PrintStatusCxl(const tools::Status& s) {
  std::printf("CXL: %llu records; policy actions:",
              static_cast<unsigned long long>(Counter(s, "records")));
  for (const char* action : {"fail", "evacuate", "rebuild", "count", "ignore"}) {
    std::printf(" %llu %s",
                static_cast<unsigned long long>(Counter(s, absl::StrCat("action_", action))),
                action);
  }
  std::printf("\n");
  if (s.recent_cxl_jobs_size() == 0) return;
  std::printf("recent CXL jobs:\n");
  for (const v1::RebuildJob& j : s.recent_cxl_jobs()) std::printf("%s\n", JobLine(j).c_str());
}

void Status(Client& c) {
  const tools::Status s = CollectStatus(c);
  if (c.globals().json) return PrintJson(s);
  PrintStatusDevices(s);
  PrintStatusObjects(s);
  PrintLines(RepairSummary(s.repair()));
  PrintStatusJobs(s);
  PrintStatusCxl(s);
}

// ---- command line

// The command the command line names, run once it parsed.
struct Selected {
  std::function<void(Client&)> run;
};

// Makes `sub` the command to run, with `run`, when the command line names it.
void OnRun(CLI::App* sub, Selected& selected, std::function<void(Client&)> run) {
  sub->callback([&selected, run = std::move(run)] { selected.run = run; });
}

void AddGlobalOptions(CLI::App& app, Globals& g) {
  app.formatter(std::make_shared<ecd::client::ExpandingFormatter>());
  app.require_subcommand(1);
  app.fallthrough();  // The global options may come after the subcommand too.
  app.set_help_all_flag("--help-all", "Print the help of every subcommand and exit");
  app.set_version_flag("--version", std::string("ecctl ") + ECD_VERSION);
  app.footer(ExitStatusHelp());
  app.add_option("--addr", g.addr, "ecd address, host:port or unix:/path")->capture_default_str();
  app.add_flag("--json", g.json, "Print machine-readable JSON (shapes: docs/ecctl.md)");
  app.add_flag("-q,--quiet", g.quiet, "Draw no progress line on stderr");
  app.add_option("--timeout", g.timeout, "Give up after this many seconds (0: never)");
  app.add_option("--token", g.token,
                 "Bearer token for an ecd with --tokens-file (beats --token-file and $ECD_TOKEN)");
  app.add_option("--token-file", g.token_file,
                 "Read the bearer token from the first line of this file (beats $ECD_TOKEN)");
  app.add_option("--tls-ca", g.tls_ca, "TLS: the CA (PEM) that signed ecd's certificate");
  app.add_option("--tls-cert", g.tls_cert, "Mutual TLS: this client's certificate (PEM)");
  app.add_option("--tls-key", g.tls_key, "Mutual TLS: this client's private key (PEM)");
  app.add_option("--tls-server-name", g.tls_server_name,
                 "TLS: the name to check ecd's certificate against (default: the --addr host)");
}

void AddEncode(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<EncodeArgs>();
  auto* sub = app.add_subcommand("encode", "Store a file as a new erasure-coded object");
  sub->add_option("FILE", a->file, "File to store, or - for stdin")->required();
  sub->add_option("--name", a->name, "Object name (default: the file's name)");
  sub->add_option("--data,-m", a->m, "Data blocks per stripe M (1..128; default 4)");
  sub->add_option("--parity,-k", a->k, "Parity blocks per stripe K (1..32; default 2)");
  sub->add_option("--matrix", a->matrix, "cauchy or vandermonde")->capture_default_str();
  sub->add_option("--block-size", a->block_size, "Block size, a multiple of 64 (e.g. 64K, 1M)");
  OnRun(sub, selected, [a](Client& c) { Encode(c, *a); });
}

void AddRead(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<ReadArgs>();
  auto* sub = app.add_subcommand("read", "Read an object (rebuilding lost blocks) into a file");
  sub->add_option("NAME", a->name, "Object name")->required();
  sub->add_option("-o,--output", a->out, "Output file, or - for stdout")->required();
  sub->add_option("--offset", a->offset, "First byte to read");
  sub->add_option("--length", a->length, "Bytes to read (default: to the end)");
  OnRun(sub, selected, [a](Client& c) { Read(c, *a); });
}

void AddUpdate(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<UpdateArgs>();
  auto* sub = app.add_subcommand("update", "Overwrite a byte range of an object (a new version)");
  sub->add_option("NAME", a->name, "Object name")->required();
  sub->add_option("--offset", a->offset, "First byte to overwrite (e.g. 4096, 1M)")->required();
  sub->add_option("--file", a->file, "File with the new bytes, or - for stdin");
  auto* hex = sub->add_option("--data-hex", a->data_hex, "The new bytes as hex digits");
  sub->add_flag("--append", a->append, "Let the bytes run past the end and grow the object");
  OnRun(sub, selected, [a, hex](Client& c) {
    a->hex_given = hex->count() > 0;
    Update(c, *a);
  });
}

void AddRecover(CLI::App& app, Selected& selected) {
  auto name = std::make_shared<std::string>();
  auto missing_only = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("recover", "Check every block and rebuild the bad ones");
  sub->add_option("NAME", *name, "Object name")->required();
  sub->add_flag("--missing-only", *missing_only,
                "Rebuild only blocks known lost (on devices not online, or flagged corrupt), "
                "reading M good blocks of each such stripe, data first; skip the other stripes");
  OnRun(sub, selected, [name, missing_only](Client& c) { Recover(c, *name, *missing_only); });
}

void AddScrub(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<ScrubArgs>();
  auto* sub = app.add_subcommand(
      "scrub",
      "Read every block of an object (or of all), check checksums and parity, repair; exit 4 "
      "if damage is left");
  sub->add_option("NAME", a->name, "Object name (default: every object)");
  sub->add_flag("--check-only", a->check_only, "Report what is wrong, repair nothing");
  sub->add_option("--rate", a->rate, "Bytes read per second (e.g. 100M; default: no limit)");
  sub->add_flag("--status", a->status, "Show the background scrubber and what scrubs found")
      ->excludes("NAME")
      ->excludes("--check-only")
      ->excludes("--rate");
  OnRun(sub, selected, [a](Client& c) { a->status ? ScrubStatus(c) : Scrub(c, *a); });
}

void AddStat(CLI::App& app, Selected& selected) {
  struct StatArgs {
    std::string name;
    bool blocks = false;
    bool verify = false;
  };
  auto a = std::make_shared<StatArgs>();
  auto* sub = app.add_subcommand("stat", "Show an object and its health per stripe");
  sub->add_option("NAME", a->name, "Object name")->required();
  sub->add_flag("--blocks", a->blocks, "List every block of every stripe");
  sub->add_flag("--verify", a->verify, "Read every block and check its CRC32C");
  OnRun(sub, selected, [a](Client& c) { Stat(c, a->name, a->blocks, a->verify); });
}

void AddListAndRemove(CLI::App& app, Selected& selected) {
  OnRun(app.add_subcommand("ls", "List objects"), selected, List);
  auto name = std::make_shared<std::string>();
  auto* rm = app.add_subcommand("rm", "Delete an object");
  rm->add_option("NAME", *name, "Object name")->required();
  OnRun(rm, selected, [name](Client& c) { Remove(c, *name); });
}

void AddBlock(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<BlockGetArgs>();
  auto* block = app.add_subcommand("block", "Stored blocks");
  block->require_subcommand(1);
  auto* get = block->add_subcommand("get", "Export one stored block (data or parity)");
  get->add_option("NAME", a->name, "Object name")->required();
  get->add_option("--stripe", a->stripe, "Stripe number")->required();
  get->add_option("--index", a->index, "Block index: 0..M-1 data, M.. parity")->required();
  get->add_option("-o,--output", a->out, "Output file, or - for stdout")->required();
  OnRun(get, selected, [a](Client& c) { BlockGet(c, *a); });
}

void AddDevice(CLI::App& app, Selected& selected) {
  auto* dev = app.add_subcommand("device", "Devices");
  dev->require_subcommand(1);
  OnRun(dev->add_subcommand("ls", "List devices"), selected, DeviceList);
  auto id = std::make_shared<uint32_t>(0);
  for (auto [name, help, state] :
       {std::tuple{"fail", "Take a device out of service", v1::DEVICE_STATE_FAILED},
        std::tuple{"online", "Put a device back in service", v1::DEVICE_STATE_ONLINE}}) {
    auto* sub = dev->add_subcommand(name, help);
    sub->add_option("DEV", *id, "Device id")->required();
    OnRun(sub, selected, [id, state = state](Client& c) { DeviceSet(c, *id, state); });
  }
  auto* replace = dev->add_subcommand(
      "replace",
      "Put a new blank namespace in a failed or down device's slot (its disk was replaced); the "
      "repair rebuilds its blocks");
  replace->add_option("DEV", *id, "Device id")->required();
  OnRun(replace, selected, [id](Client& c) { DeviceReplace(c, *id); });
  auto wait = std::make_shared<bool>(false);
  auto* evacuate =
      dev->add_subcommand("evacuate", "Move every block off a device, then take it out of service");
  evacuate->add_option("DEV", *id, "Device id")->required();
  evacuate->add_flag("--wait", *wait, "Wait until the device is empty (and failed)");
  OnRun(evacuate, selected, [id, wait](Client& c) { Evacuate(c, *id, *wait); });
}

// The options of the cxl subcommands.
struct CxlArgs {
  uint32_t device = 0;
  std::string log = "failure";
  v1::CxlInjectRequest inject;
  std::string type;
  std::string dpa;
  std::vector<uint32_t> handles;
  bool clear_all = false;
  std::vector<std::string> policy_sets;
  std::string file;
};

// Parses --dpa (bytes; 0x... or decimal) into the inject request; exit code 2 if it is not one.
void SetDpa(CxlArgs& a) {
  if (a.dpa.empty()) return;
  uint64_t dpa = 0;
  const bool hex = a.dpa.rfind("0x", 0) == 0;
  if (!(hex ? absl::SimpleHexAtoi(a.dpa.substr(2), &dpa) : absl::SimpleAtoi(a.dpa, &dpa))) {
    throw Failure{kExitUsage, absl::StrCat("--dpa ", a.dpa, " is not a number")};
  }
  a.inject.set_dpa(dpa);
}

CLI::Option* AddLogOption(CLI::App* sub, CxlArgs& a, const char* help) {
  return sub->add_option("--log", a.log, help)->capture_default_str();
}

void AddCxlInject(CLI::App* cxl, std::shared_ptr<CxlArgs> a, Selected& selected) {
  auto* sub = cxl->add_subcommand("inject", "Insert an event record into a device's log");
  sub->add_option("DEV", a->device, "Device id")->required();
  AddLogOption(sub, *a, "informational, warning, failure or fatal");
  sub->add_option("--type", a->type, "general-media, dram or memory-module")->required();
  sub->add_option("--dpa", a->dpa, "Device physical address (bytes; 0x... or decimal)");
  v1::CxlInjectRequest* inject = &a->inject;
  auto u32 = [&](const char* flag, const char* help, auto setter) {
    sub->add_option_function<uint32_t>(
        flag, [inject, setter](const uint32_t& v) { (inject->*setter)(v); }, help);
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
  sub->add_option_function<int32_t>(
      "--temperature", [inject](const int32_t& v) { inject->set_temperature(v); },
      "Device temperature, degrees C");
  sub->add_flag_function(
      "--replacement-needed", [inject](int64_t) { inject->set_hardware_replacement_needed(true); },
      "Set the hardware-replacement-needed header flag");
  sub->add_flag_function(
      "--permanent", [inject](int64_t) { inject->set_permanent(true); },
      "Set the permanent-condition header flag");
  OnRun(sub, selected, [a](Client& c) {
    a->inject.set_device(a->device);
    a->inject.set_log(ParseLog(a->log));
    a->inject.set_type(a->type);
    SetDpa(*a);
    CxlInject(c, a->inject);
  });
}

void AddCxlLogCommands(CLI::App* cxl, std::shared_ptr<CxlArgs> a, Selected& selected) {
  auto* events = cxl->add_subcommand("events", "Get the uncleared records of a device's log");
  events->add_option("DEV", a->device, "Device id")->required();
  AddLogOption(events, *a, "informational, warning, failure or fatal");
  OnRun(events, selected, [a](Client& c) { CxlEvents(c, a->device, a->log); });

  auto* clear = cxl->add_subcommand("clear", "Clear records of a device's log by handle");
  clear->add_option("DEV", a->device, "Device id")->required();
  AddLogOption(clear, *a, "informational, warning, failure or fatal");
  clear->add_option("--handles", a->handles, "Handles, oldest first")->delimiter(',');
  clear->add_flag("--all", a->clear_all, "Clear All (only allowed on an overflowed log)");
  OnRun(clear, selected,
        [a](Client& c) { CxlClear(c, a->device, a->log, a->handles, a->clear_all); });

  auto* policy = cxl->add_subcommand("policy", "Show or set a device's event interrupt policy");
  policy->add_option("DEV", a->device, "Device id")->required();
  policy->add_option("--set", a->policy_sets, "LOG=MODE, MODE none, msi or fw (repeatable)");
  OnRun(policy, selected, [a](Client& c) { CxlPolicy(c, a->device, a->policy_sets); });
}

void AddCxlAgentCommands(CLI::App* cxl, std::shared_ptr<CxlArgs> a, Selected& selected) {
  OnRun(cxl->add_subcommand("stats", "Counters of the CXL path and the policy actions"), selected,
        CxlStats);
  auto* ingest =
      cxl->add_subcommand("ingest", "Feed records from an outside agent to ecd's CXL policy");
  ingest->add_option("FILE", a->file, "Raw 128-byte records or cxl-monitor JSON lines; - = stdin")
      ->required();
  ingest->add_option("--device", a->device, "Device the raw records come from");
  AddLogOption(ingest, *a, "Log the raw records come from");
  OnRun(ingest, selected, [a](Client& c) { CxlIngest(c, a->file, a->device, a->log); });

  auto* decode =
      cxl->add_subcommand("decode", "Decode raw 128-byte records to JSON lines (offline)");
  decode->add_option("FILE", a->file, "Raw records; - = stdin")->required();
  AddLogOption(decode, *a, "Log name to print");
  OnRun(decode, selected, [a](Client&) { CxlDecode(a->file, a->log); });
}

void AddCxl(CLI::App& app, Selected& selected) {
  auto a = std::make_shared<CxlArgs>();
  auto* cxl = app.add_subcommand("cxl", "CXL memory-device event logs of the devices");
  cxl->require_subcommand(1);
  AddCxlInject(cxl, a, selected);
  AddCxlLogCommands(cxl, a, selected);
  AddCxlAgentCommands(cxl, a, selected);
}

void AddRebuild(CLI::App& app, Selected& selected) {
  auto* rebuild = app.add_subcommand("rebuild", "Proactive rebuild jobs");
  rebuild->require_subcommand(1);
  OnRun(rebuild->add_subcommand(
            "ls", "The repair's summary, then the rebuild jobs, running and queued first"),
        selected, RebuildList);
  auto id = std::make_shared<uint64_t>(0);
  auto* get = rebuild->add_subcommand("get", "Show one rebuild job as JSON");
  get->add_option("ID", *id, "Job id")->required();
  OnRun(get, selected, [id](Client& c) { RebuildGet(c, *id); });
  auto ids = std::make_shared<std::vector<uint64_t>>();
  auto* wait = rebuild->add_subcommand(
      "wait", "Wait until rebuild jobs finish (default: every queued or running one)");
  wait->add_option("ID", *ids, "Job ids");
  OnRun(wait, selected, [ids](Client& c) { RebuildWait(c, *ids); });
}

void AddRepair(CLI::App& app, Selected& selected) {
  auto* repair = app.add_subcommand(
      "repair", "The repair that brings every stripe back to full redundancy on its own");
  repair->require_subcommand(1);
  OnRun(repair->add_subcommand(
            "status", "Queue, progress, rate, ETA and stripes by redundancy left of the repair"),
        selected, RepairStatus);
  OnRun(repair->add_subcommand(
            "pause", "Stop starting repairs (e.g. during maintenance that takes devices away)"),
        selected, [](Client& c) { RepairPause(c, true); });
  OnRun(repair->add_subcommand("resume", "Start repairing again after a pause"), selected,
        [](Client& c) { RepairPause(c, false); });
  auto rate = std::make_shared<std::string>();
  auto* sub = repair->add_subcommand(
      "rate", "Set the repair's bandwidth limit (kept across restarts; beats ecd --rebuild-rate)");
  sub->add_option("RATE", *rate, "Bytes per second, e.g. 100M; 0: no limit")->required();
  OnRun(sub, selected, [rate](Client& c) { RepairRate(c, *rate); });
}

void AddCatalog(CLI::App& app, Selected& selected) {
  auto* catalog = app.add_subcommand("catalog", "The catalog of objects and their blocks");
  catalog->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* backup = catalog->add_subcommand(
      "backup", "Copy the catalog, consistent as of one moment, into FILE while ecd serves");
  backup->add_option("FILE", *file, "Where the copy goes (a SQLite database)")->required();
  OnRun(backup, selected, [file](Client& c) { CatalogBackup(c, *file); });
}

void AddStatus(CLI::App& app, Selected& selected) {
  OnRun(app.add_subcommand("status",
                           "Devices, capacity, objects, damage, repair, rebuild jobs and CXL "
                           "actions at once"),
        selected, Status);
}

// The hidden `__complete -- WORD... CURRENT` of client/ecctl.bash-completion.
void AddComplete(CLI::App& app, Selected& selected) {
  auto words = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand("__complete", "")->group("");
  sub->add_option("WORDS", *words, "The words typed so far, the one being completed last");
  OnRun(sub, selected, [&app, words](Client&) {
    for (const std::string& w : ecd::client::CompletionCandidates(app, *words)) {
      std::printf("%s\n", w.c_str());
    }
  });
}

// Help and --version exit 0; anything else is a usage error, one line.
int ParseFailure(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);
  ReportError(absl::StrCat(e.what(), "; see ecctl --help"));
  return kExitUsage;
}

int Main(int argc, char** argv) {
  // gRPC's own log lines (e.g. a failed TLS handshake) would break the one-line error rule;
  // the status that ends the call says the same. GRPC_VERBOSITY=debug brings them back.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  Globals g;
  Selected selected;
  CLI::App app{"ecctl: operate an ecd erasure-coding storage daemon", "ecctl"};
  AddGlobalOptions(app, g);
  AddEncode(app, selected);
  AddRead(app, selected);
  AddUpdate(app, selected);
  AddRecover(app, selected);
  AddScrub(app, selected);
  AddStat(app, selected);
  AddListAndRemove(app, selected);
  AddBlock(app, selected);
  AddDevice(app, selected);
  AddCxl(app, selected);
  AddRebuild(app, selected);
  AddRepair(app, selected);
  AddCatalog(app, selected);
  AddStatus(app, selected);
  AddComplete(app, selected);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ParseFailure(app, e);
  }
  try {
    Client c(g);
    selected.run(c);
  } catch (const Failure& f) {
    ReportError(f.message);
    return f.exit_code;
  }
  return kExitOk;
}
}  // namespace

int main(int argc, char** argv) {
  ecd::ApplyMallocPolicy();  // A read receives MiB-sized messages as ecd does (its sys time /4).
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {  // Nothing else may escape: one line, non-zero exit.
    ReportError(e.what());
    return kExitEcd;
  }
}
