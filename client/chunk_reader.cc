// ChunkReader: read-ahead of ecctl's input into pooled, 4 KiB-aligned buffers.
#include "client/chunk_reader.h"

#include <fcntl.h>
#include <grpc/slice.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "lib/util/mutex.h"

namespace ecd::client {

// `count` buffers of kPrefixRoom + chunk bytes, 4 KiB-aligned; Acquire waits for a free one.
class ChunkPool {
 public:
  ChunkPool(int count, size_t chunk) : bytes_(Chunk::kPrefixRoom + chunk) {
    for (int i = 0; i < count; ++i) {
      buffers_.push_back(static_cast<uint8_t*>(std::aligned_alloc(4096, bytes_)));
      free_.push_back(i);
    }
  }
  ~ChunkPool() {
    for (uint8_t* b : buffers_) std::free(b);
  }
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // Where buffer `i`'s data starts.
  uint8_t* data(int i) const { return buffers_[i] + Chunk::kPrefixRoom; }

  // A free buffer; -1 once Stop was called.
  int Acquire() {
    MutexLock lock(mu_);
    cv_.Wait(mu_,
             [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopped_ || !free_.empty(); });
    if (stopped_) return -1;
    const int i = free_.back();
    free_.pop_back();
    return i;
  }
  void Release(int i) {
    {
      MutexLock lock(mu_);
      free_.push_back(i);
    }
    cv_.NotifyOne();
  }
  void Stop() {
    {
      MutexLock lock(mu_);
      stopped_ = true;
    }
    cv_.NotifyAll();
  }

 private:
  const size_t bytes_;
  std::vector<uint8_t*> buffers_;
  Mutex mu_;
  CondVar cv_;
  std::vector<int> free_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

struct Chunk::Hold {
  Hold(std::shared_ptr<ChunkPool> pool, int buffer) : pool(std::move(pool)), buffer(buffer) {}
  ~Hold() { pool->Release(buffer); }
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;

  std::shared_ptr<ChunkPool> pool;
  int buffer;
};

Chunk::Chunk(std::unique_ptr<Hold> hold, uint8_t* data, size_t size)
    : hold_(std::move(hold)), data_(data), size_(size) {}
Chunk::Chunk(Chunk&&) noexcept = default;
Chunk& Chunk::operator=(Chunk&&) noexcept = default;
Chunk::~Chunk() = default;

grpc::Slice Chunk::TakeSlice(size_t prefix) {
  grpc_slice slice = grpc_slice_new_with_user_data(
      data_ - prefix, prefix + size_, [](void* hold) { delete static_cast<Hold*>(hold); },
      hold_.release());
  return grpc::Slice(slice, grpc::Slice::STEAL_REF);
}

namespace {

bool IsRegular(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

ChunkReader::ChunkReader(int fd, size_t chunk_size, int buffers)
    : fd_(fd),
      chunk_size_(chunk_size),
      positional_(IsRegular(fd)),
      read_fd_(fd),
      pool_(std::make_shared<ChunkPool>(buffers, chunk_size)) {
  if (!positional_) return;
  // From where the file offset stands, as read(2) would (`ecctl encode - <file` after a shell
  // read part of it). An offset that is not 4 KiB-aligned makes O_DIRECT refuse the first
  // read, and buffered reads take over.
  if (const off_t at = ::lseek(fd_, 0, SEEK_CUR); at > 0) start_ = static_cast<uint64_t>(at);
  // O_DIRECT goes on a private open file description of the same file, never on `fd`'s, which
  // a shell or parent process may share (and would find changed if ecctl were killed). Without
  // /proc, or with a file system that refuses O_DIRECT (EINVAL), the page cache it is.
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  int own = ::open(self.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (own >= 0) {
    direct_ = true;
  } else {
    own = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (own >= 0) read_fd_ = own;
  for (int i = 0; i < kReadThreads; ++i) threads_.emplace_back([this] { ReadAhead(); });
}

ChunkReader::~ChunkReader() {
  pool_->Stop();  // A thread waiting for a buffer gives up; one reading finishes its read.
  for (std::thread& t : threads_) t.join();
  if (!positional_) return;
  if (read_fd_ != fd_) ::close(read_fd_);
  // Past what was taken, as read(2) would have left it (the next reader of a shared stdin).
  ::lseek(fd_, static_cast<off_t>(start_ + taken_), SEEK_SET);
}

ssize_t ChunkReader::ReadOnce(uint8_t* out, size_t size, uint64_t offset) {
  for (;;) {
    // Read before the call: another thread may turn O_DIRECT off meanwhile, and this read's
    // EINVAL must then still count as O_DIRECT's.
    const bool direct = direct_.load();
    const ssize_t n = positional_ ? ::pread(read_fd_, out, size, static_cast<off_t>(offset))
                                  : ::read(read_fd_, out, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && direct) {
      // Some file systems take the flag but refuse the read; so does an unaligned offset (the
      // start of the input, or after the file's short last chunk). Buffered reads take over
      // (on the private description only).
      direct_ = false;
      ::fcntl(read_fd_, F_SETFL, ::fcntl(read_fd_, F_GETFL) & ~O_DIRECT);
      continue;
    }
    return n < 0 ? -errno : n;
  }
}

ChunkReader::Filled ChunkReader::ReadAt(int buffer, uint64_t offset) {
  uint8_t* const out = pool_->data(buffer);
  size_t got = 0;
  while (got < chunk_size_) {  // Whole chunks, so that the chunk numbers stay offsets.
    const ssize_t n = ReadOnce(out + got, chunk_size_ - got, offset + got);
    if (n < 0) {
      pool_->Release(buffer);
      return Filled{.error = static_cast<int>(-n)};
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == 0) {
    pool_->Release(buffer);
    return Filled{};
  }
  return Filled{.buffer = buffer, .bytes = got};
}

ChunkReader::Filled ChunkReader::ReadStream() {
  const int buffer = pool_->Acquire();
  if (buffer < 0) return Filled{};
  const ssize_t n = ReadOnce(pool_->data(buffer), chunk_size_, 0);
  if (n > 0) return Filled{.buffer = buffer, .bytes = static_cast<size_t>(n)};
  pool_->Release(buffer);
  return Filled{.error = n < 0 ? static_cast<int>(-n) : 0};
}

void ChunkReader::ReadAhead() {
  for (;;) {
    const int buffer = pool_->Acquire();
    if (buffer < 0) return;  // Stopped.
    uint64_t number = 0;
    {
      MutexLock lock(mu_);
      if (last_claimed_) {
        pool_->Release(buffer);
        return;
      }
      number = claimed_++;
    }
    const Filled f = ReadAt(buffer, start_ + number * chunk_size_);
    const bool last = f.buffer < 0 || f.bytes < chunk_size_;
    {
      MutexLock lock(mu_);
      filled_[number] = f;
      if (last) last_claimed_ = true;
    }
    filled_cv_.NotifyAll();
    if (last) return;
  }
}

absl::StatusOr<std::optional<Chunk>> ChunkReader::Next() {
  if (ended_) return std::nullopt;
  Filled f;
  if (!positional_) {
    f = ReadStream();
  } else {
    MutexLock lock(mu_);
    filled_cv_.Wait(
        mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return filled_.count(next_) != 0; });
    f = filled_[next_];
    filled_.erase(next_++);
    // Only the file's last chunk is short: after it, the end.
    if (f.buffer >= 0 && f.bytes < chunk_size_) ended_ = true;
  }
  if (f.buffer < 0) {
    ended_ = true;
    if (f.error != 0) return absl::InternalError(std::strerror(f.error));
    return std::nullopt;
  }
  taken_ += f.bytes;
  return Chunk(std::make_unique<Chunk::Hold>(pool_, f.buffer), pool_->data(f.buffer), f.bytes);
}

}  // namespace ecd::client
