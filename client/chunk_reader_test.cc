// ChunkReader: every byte of a file or a pipe, in order, through pooled buffers that go back to
// the pool when the slices holding them are released.
#include "client/chunk_reader.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace ecd::client {
namespace {

constexpr size_t kChunk = 64 << 10;

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// A file holding `bytes` in `dir` (the test's temporary directory, or /dev/shm), open for reading.
class TempFile {
 public:
  TempFile(const std::string& dir, const std::string& bytes) {
    path_ = dir + "/chunk_reader_test.XXXXXX";
    const int fd = ::mkstemp(path_.data());
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    fd_ = ::open(path_.c_str(), O_RDONLY);
  }
  ~TempFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Everything the reader returns, each chunk taken as a slice with a 3-byte prefix written in front
// (checked), and the slices held until the end when `hold` (so the pool must be big enough).
std::string ReadAll(ChunkReader& reader, size_t* chunks) {
  std::string out;
  *chunks = 0;
  for (;;) {
    absl::StatusOr<std::optional<Chunk>> next = reader.Next();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) break;
    Chunk& chunk = **next;
    EXPECT_GT(chunk.size(), 0u);
    EXPECT_LE(chunk.size(), kChunk);
    std::memcpy(chunk.Prefix(3).data(), "abc", 3);
    grpc::Slice slice = chunk.TakeSlice(3);
    EXPECT_EQ(slice.size(), chunk.size() + 3);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(slice.begin()), 3), "abc");
    out.append(reinterpret_cast<const char*>(slice.begin()) + 3, slice.size() - 3);
    ++*chunks;
  }
  return out;
}

TEST(ChunkReaderTest, ReadsEveryByteOfFilesOfEdgeSizes) {
  const char* tmp = std::getenv("TMPDIR");
  // Both where O_DIRECT works (ext4 here) and where it may not (tmpfs: the buffered fallback).
  for (const std::string& dir :
       {std::string(tmp != nullptr ? tmp : "/tmp"), std::string("/dev/shm")}) {
    for (size_t size : {size_t{0}, size_t{1}, kChunk - 1, kChunk, kChunk + 1, 5 * kChunk + 4097}) {
      const std::string bytes = RandomBytes(size, size);
      TempFile file(dir, bytes);
      ChunkReader reader(file.fd(), kChunk, 3);
      size_t chunks = 0;
      EXPECT_EQ(ReadAll(reader, &chunks), bytes) << dir << " " << size;
      EXPECT_EQ(chunks, (size + kChunk - 1) / kChunk) << dir << " " << size;
      absl::StatusOr<std::optional<Chunk>> after = reader.Next();
      ASSERT_TRUE(after.ok());
      EXPECT_FALSE(after->has_value());  // The end stays the end.
    }
  }
}

TEST(ChunkReaderTest, StartsWhereTheFileOffsetStands) {
  const std::string bytes = RandomBytes(3 * kChunk + 10, 3);
  TempFile file(std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp", bytes);
  // Aligned (O_DIRECT can go on) and unaligned (buffered reads take over).
  for (off_t at : {off_t{4096}, off_t{5000}}) {
    ASSERT_EQ(::lseek(file.fd(), at, SEEK_SET), at);
    {
      ChunkReader reader(file.fd(), kChunk, 3);
      size_t chunks = 0;
      EXPECT_EQ(ReadAll(reader, &chunks), bytes.substr(static_cast<size_t>(at))) << at;
      // O_DIRECT, if any, is on the reader's own description, not on the caller's.
      EXPECT_EQ(::fcntl(file.fd(), F_GETFL) & O_DIRECT, 0);
    }
    // Left past what was read, as read(2) would (the next reader of a shared stdin).
    EXPECT_EQ(::lseek(file.fd(), 0, SEEK_CUR), static_cast<off_t>(bytes.size()));
  }
  // A reader stopped early leaves the offset past the chunks it returned, not those read ahead.
  ASSERT_EQ(::lseek(file.fd(), 0, SEEK_SET), 0);
  {
    ChunkReader reader(file.fd(), kChunk, 3);
    absl::StatusOr<std::optional<Chunk>> first = reader.Next();
    ASSERT_TRUE(first.ok() && first->has_value());
  }
  EXPECT_EQ(::lseek(file.fd(), 0, SEEK_CUR), static_cast<off_t>(kChunk));
}

TEST(ChunkReaderTest, ReadsAPipeInTheChunksItGets) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string bytes = RandomBytes(3 * kChunk + 123, 9);
  std::thread writer([&] {
    // Pieces of odd sizes, so that reads come back short.
    for (size_t at = 0; at < bytes.size();) {
      const size_t n = std::min<size_t>(7777, bytes.size() - at);
      EXPECT_EQ(::write(fds[1], bytes.data() + at, n), static_cast<ssize_t>(n));
      at += n;
    }
    ::close(fds[1]);
  });
  ChunkReader reader(fds[0], kChunk, 2);
  EXPECT_FALSE(reader.direct());
  size_t chunks = 0;
  EXPECT_EQ(ReadAll(reader, &chunks), bytes);
  writer.join();
  ::close(fds[0]);
}

TEST(ChunkReaderTest, ABufferIsReusedOnlyAfterItsSliceIsReleased) {
  const std::string bytes = RandomBytes(4 * kChunk, 5);
  TempFile file(std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp", bytes);
  ChunkReader reader(file.fd(), kChunk, 2);
  std::vector<grpc::Slice> held;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::optional<Chunk>> next = reader.Next();
    ASSERT_TRUE(next.ok() && next->has_value());
    held.push_back((*next)->TakeSlice(0));
  }
  // Both buffers are held: the third chunk comes only once one is released.
  std::atomic<bool> got{false};
  std::string third;
  std::thread next([&] {
    absl::StatusOr<std::optional<Chunk>> chunk = reader.Next();
    ASSERT_TRUE(chunk.ok() && chunk->has_value());
    third.assign(reinterpret_cast<const char*>((*chunk)->Prefix(0).data()), (*chunk)->size());
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got);
  // The held slices still hold their own bytes.
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(held[0].begin()), kChunk),
            bytes.substr(0, kChunk));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(held[1].begin()), kChunk),
            bytes.substr(kChunk, kChunk));
  held.erase(held.begin());
  next.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(third, bytes.substr(2 * kChunk, kChunk));
}

TEST(ChunkReaderTest, AReadErrorEndsTheInputWithTheErrno) {
  // A directory opened for reading: read(2) fails with EISDIR (not a regular file: no thread).
  const int fd = ::open("/", O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  ChunkReader reader(fd, kChunk, 1);
  absl::StatusOr<std::optional<Chunk>> next = reader.Next();
  EXPECT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find(std::strerror(EISDIR)), std::string::npos)
      << next.status();
  next = reader.Next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  ::close(fd);
}

}  // namespace
}  // namespace ecd::client
