// ChunkReader: ecctl's input for Encode and Update. A thread reads the input ahead into a fixed
// pool of buffers, each handed out as a gRPC slice with room in front for the message's prefix,
// so a chunk goes from the file to the socket without a copy in ecctl. A regular file is read
// with O_DIRECT when its file system allows it: no page cache to fill and copy out of (a cold
// buffered read costs far more kernel CPU than an O_DIRECT one), and no page cache for ecd's
// own I/O to compete with.
#ifndef ECD_CLIENT_CHUNK_READER_H_
#define ECD_CLIENT_CHUNK_READER_H_

#include <grpcpp/support/slice.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/util/mutex.h"

namespace ecd::client {

class ChunkPool;  // The fixed set of buffers (chunk_reader.cc).

// One chunk of the input, in a buffer of the pool. `prefix_room` bytes in front of the data are
// the caller's to write (a message's framing) before it takes the slice.
class Chunk {
 public:
  static constexpr size_t kPrefixRoom = 4096;  // Keeps the data 4 KiB-aligned for O_DIRECT.

  Chunk(Chunk&&) noexcept;
  Chunk& operator=(Chunk&&) noexcept;
  ~Chunk();

  size_t size() const { return size_; }
  // The last `n` bytes of the room in front of the data. REQUIRES: n <= kPrefixRoom.
  absl::Span<uint8_t> Prefix(size_t n) const { return {data_ - n, n}; }
  // The prefix's last `prefix` bytes and the data, as one slice; the buffer goes back to the
  // pool when gRPC (and every copy of the slice) lets go of it. Call at most once.
  grpc::Slice TakeSlice(size_t prefix);

 private:
  friend class ChunkReader;
  struct Hold;  // Returns a buffer to its pool when destroyed.
  Chunk(std::unique_ptr<Hold> hold, uint8_t* data, size_t size);

  std::unique_ptr<Hold> hold_;
  uint8_t* data_;
  size_t size_;
};

// Thread safety: Next is called by one thread; slices may be released on any thread.
class ChunkReader {
 public:
  // Reads `fd` (not owned; it must stay open until the reader is destroyed) in chunks of
  // `chunk_size` bytes (a multiple of 4096), with up to `buffers` chunks read ahead or held by
  // gRPC. A regular file is read from its current offset with pread, on a private open file
  // description (so `fd`'s flags never change) with O_DIRECT if possible, by
  // kReadThreads threads, each chunk whole (only the last is short). Anything else (a pipe, a
  // terminal) is read with read(2) on the caller's thread, in Next, in the chunks it gives (a
  // read of a pipe can block for ever, and a thread blocked in it could not be stopped).
  ChunkReader(int fd, size_t chunk_size, int buffers);
  // Stops the read-ahead threads, and leaves a regular file's offset just past the bytes Next
  // returned, where read(2) would have left it.
  ~ChunkReader();
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;

  // Concurrent reads of a regular file: one O_DIRECT read at a time would stall behind the
  // writes ecd is making to the same disk.
  static constexpr int kReadThreads = 4;

  // The next chunk in order; nullopt at the end of the input; the read's errno as an error
  // (the reader is then done).
  absl::StatusOr<std::optional<Chunk>> Next();

  // True when the file is being read with O_DIRECT.
  bool direct() const { return direct_.load(std::memory_order_relaxed); }

 private:
  struct Filled {
    int buffer = -1;  // -1: the end, or `error`.
    size_t bytes = 0;
    int error = 0;
  };
  // A read-ahead thread: claims the next chunk's number and reads it, until the end.
  void ReadAhead();
  // Reads the chunk at `offset` into `buffer` (released again at the end or on an error).
  Filled ReadAt(int buffer, uint64_t offset);
  // One read(2) of a pipe or terminal into a free buffer.
  Filled ReadStream();
  // One pread(2) at `offset` (or read(2)), EINTR retried; an O_DIRECT read the file system
  // refuses falls back to buffered reads. Bytes read, or -errno.
  ssize_t ReadOnce(uint8_t* out, size_t size, uint64_t offset);

  const int fd_;
  const size_t chunk_size_;
  const bool positional_;  // A regular file: read by threads_.
  int read_fd_;            // A private description of fd_'s file (a regular file), or fd_.
  std::atomic<bool> direct_{false};
  uint64_t start_ = 0;  // The file offset the input starts at (a regular file).
  std::shared_ptr<ChunkPool> pool_;

  Mutex mu_;
  CondVar filled_cv_;
  uint64_t claimed_ ABSL_GUARDED_BY(mu_) = 0;               // Chunks claimed by the threads.
  bool last_claimed_ ABSL_GUARDED_BY(mu_) = false;          // A read found the end or failed.
  std::map<uint64_t, Filled> filled_ ABSL_GUARDED_BY(mu_);  // Chunks read and not yet taken.
  uint64_t next_ = 0;   // The chunk Next returns next (caller's thread only).
  uint64_t taken_ = 0;  // Bytes Next returned (caller's thread only).
  bool ended_ = false;  // Next returned the end or an error (caller's thread).
  std::vector<std::thread> threads_;
};

}  // namespace ecd::client

#endif  // ECD_CLIENT_CHUNK_READER_H_
