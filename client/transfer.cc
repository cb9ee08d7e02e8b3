// The byte streams of ecctl's object commands (client/transfer.h): files sent without a copy,
// reads written to a partial file renamed into place only once whole.
#include "client/transfer.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "client/chunk_reader.h"
#include "ecd/v1/ecd.pb.h"
#include "wire/data_message.h"

namespace ecd::client {
namespace {

namespace v1 = ecd::v1;

constexpr size_t kChunk = 1 << 20;

// Grows `fd` to a kChunk-byte pipe buffer when it is a pipe (`ecctl read -o - | tool`,
// `tool | ecctl encode -`). A Linux pipe holds 64 KiB by default, so each 1 MiB message would
// cross it in 16 wake-ups of writer and reader; one that holds a whole message crosses in one.
// Best effort: a pipe that may not grow
// (above /proc/sys/fs/pipe-max-size, or past an unprivileged user's pipe quota) keeps its size.
void WidenPipe(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  if (::fcntl(fd, F_GETPIPE_SZ) >= static_cast<int>(kChunk)) return;
  (void)::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(kChunk));
}

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
// the device node with a file. Open() before anything else.
class Destination {
 public:
  explicit Destination(const std::string& out) : out_(out) {}
  ~Destination() {
    if (to_stdout() || committed_) return;
    ::close(fd_);
    if (!direct_) ::unlink(partial_.c_str());
  }
  Destination(const Destination&) = delete;
  Destination& operator=(const Destination&) = delete;

  // Opens the file to write; exit code 3 if it cannot be.
  absl::Status Open() {
    if (to_stdout()) {
      WidenPipe(fd_);
      return absl::OkStatus();
    }
    struct stat st {};
    if (::stat(out_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      direct_ = true;
      block_device_ = S_ISBLK(st.st_mode);
      fd_ = ::open(out_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) {
        committed_ = true;  // Nothing to clean up.
        return Error(kExitLocalFile,
                     absl::StrCat("cannot open ", out_, ": ", std::strerror(errno)));
      }
      WidenPipe(fd_);  // A FIFO.
      return absl::OkStatus();
    }
    const std::filesystem::path target(out_);
    partial_ = (target.parent_path() /
                absl::StrCat(".", target.filename().string(), ".partial-", ::getpid()))
                   .string();
    fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      committed_ = true;  // Nothing to clean up.
      return Error(kExitLocalFile,
                   absl::StrCat("cannot create ", partial_, ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

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
  absl::Status Commit() {
    if (to_stdout()) return absl::OkStatus();
    if (direct_) {
      committed_ = true;
      // A block device holds the bytes like a file does; FIFOs and character devices have
      // nothing to sync (fsync would fail with EINVAL).
      if ((block_device_ && ::fsync(fd_) != 0) || ::close(fd_) != 0) {
        return Error(kExitLocalFile, absl::StrCat("write ", out_, ": ", std::strerror(errno)));
      }
      return absl::OkStatus();
    }
    if (::fsync(fd_) != 0 || ::close(fd_) != 0) return Fail("write ");
    committed_ = true;  // Closed: only the partial file is left to remove on failure.
    if (::rename(partial_.c_str(), out_.c_str()) != 0) {
      const int err = errno;
      ::unlink(partial_.c_str());
      return Error(kExitLocalFile, absl::StrCat("rename to ", out_, ": ", std::strerror(err)));
    }
    return SyncDirectory();
  }

 private:
  absl::Status Fail(const char* what) {
    const int err = errno;
    ::unlink(partial_.c_str());
    committed_ = true;  // Nothing left to clean up.
    return Error(kExitLocalFile, absl::StrCat(what, out_, ": ", std::strerror(err)));
  }

  // The new name must survive a crash too: sync the directory that holds it.
  absl::Status SyncDirectory() {
    std::string dir = std::filesystem::path(out_).parent_path().string();
    if (dir.empty()) dir = std::string(".");
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0 || ::fsync(dir_fd) != 0) {
      const int err = errno;
      if (dir_fd >= 0) ::close(dir_fd);
      return Error(kExitLocalFile,
                   absl::StrCat("sync directory of ", out_, ": ", std::strerror(err)));
    }
    ::close(dir_fd);
    return absl::OkStatus();
  }

  const std::string out_;
  std::string partial_;
  int fd_ = STDOUT_FILENO;
  bool committed_ = false;
  bool direct_ = false;  // `out` is not a regular file: written in place.
  bool block_device_ = false;
  std::vector<iovec> iov_;  // Write's, kept for its capacity.
};

}  // namespace

std::optional<uint64_t> FileSize(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const off_t at = std::max<off_t>(::lseek(fd, 0, SEEK_CUR), 0);
  return at < st.st_size ? static_cast<uint64_t>(st.st_size - at) : 0;
}

absl::StatusOr<int> OpenInput(const std::string& file) {
  const int fd = file == "-" ? STDIN_FILENO : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(kExitLocalFile, absl::StrCat("cannot open ", file, ": ", std::strerror(errno)));
  }
  WidenPipe(fd);
  return fd;
}

void CloseInput(int fd) {
  if (fd != STDIN_FILENO) ::close(fd);
}

absl::Status StreamFile(int fd, const std::string& file, const google::protobuf::Message& request,
                        grpc::ClientWriter<grpc::ByteBuffer>& writer, grpc::ClientContext& context,
                        ProgressBar& progress) {
  using google::protobuf::internal::WireFormatLite;
  using google::protobuf::io::CodedOutputStream;
  constexpr uint32_t kDataTag =
      WireFormatLite::MakeTag(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  constexpr int kBuffers = 8;  // Read ahead or still held by gRPC: 8 MiB of ecctl's memory.
  grpc::Slice header(request.SerializeAsString());
  if (!writer.Write(grpc::ByteBuffer(&header, 1))) return absl::OkStatus();
  const uint64_t total = FileSize(fd).value_or(0);
  uint64_t sent = 0;
  ChunkReader reader(fd, kChunk, kBuffers);
  for (;;) {
    absl::StatusOr<std::optional<Chunk>> chunk = reader.Next();
    if (!chunk.ok()) {
      context.TryCancel();
      return Error(kExitLocalFile, absl::StrCat("read ", file, ": ", chunk.status().message()));
    }
    if (!chunk->has_value()) return absl::OkStatus();
    const size_t n = (*chunk)->size();
    uint8_t prefix[16];  // A one-byte tag and a varint64 (at most 10 bytes).
    uint8_t* end = CodedOutputStream::WriteTagToArray(kDataTag, prefix);
    end = CodedOutputStream::WriteVarint64ToArray(n, end);
    const size_t prefix_size = static_cast<size_t>(end - prefix);
    std::memcpy((*chunk)->Prefix(prefix_size).data(), prefix, prefix_size);
    grpc::Slice message = (*chunk)->TakeSlice(prefix_size);
    if (!writer.Write(grpc::ByteBuffer(&message, 1))) return absl::OkStatus();
    sent += n;
    progress.Update(sent, total);
  }
}

absl::StatusOr<Streamed> SaveStream(ClientCore& c, const std::string& what,
                                    grpc::ClientContext& context,
                                    grpc::ClientReader<grpc::ByteBuffer>& stream,
                                    const std::string& out, const ByteRange& range,
                                    ProgressBar& progress) {
  Destination destination(out);
  ECCTL_RETURN_IF_ERROR(destination.Open());
  Streamed got;
  uint64_t expected = 0;
  grpc::ByteBuffer raw;
  ecd::wire::DataMessage chunk;
  v1::ReadResponse fields;  // All but the data, which stays in gRPC's slices.
  while (stream.Read(&raw)) {
    if (absl::Status s = chunk.ParseAround(&raw, v1::ReadResponse::kDataFieldNumber, &fields);
        !s.ok()) {
      context.TryCancel();
      return Error(kExitEcd, absl::StrCat(what, ": ecd sent a response ecctl cannot read (",
                                          s.message(), ")"));
    }
    if (got.version == 0) got.version = fields.object_version();
    if (got.id == 0) got.id = fields.object_id();
    if (fields.object_size() > 0) expected = ExpectedBytes(fields.object_size(), range);
    got.reconstructed += fields.reconstructed_blocks();
    if (!destination.Write(chunk.data())) {
      const int err = errno;
      context.TryCancel();
      return Error(kExitLocalFile, absl::StrCat("write ", out, ": ", std::strerror(err)));
    }
    got.bytes += chunk.data_size();
    progress.Update(got.bytes, expected);
  }
  ECCTL_RETURN_IF_ERROR(c.Check(stream.Finish(), what));
  ECCTL_RETURN_IF_ERROR(destination.Commit());
  return got;
}

FILE* SummaryStream(const std::string& out) { return out == "-" ? stderr : stdout; }

}  // namespace ecd::client
