// Helpers shared by the store's tests: byte sources and sinks over vectors, random data, and a
// fixture with a fresh store per test. Not thread-safe: each object is used by one thread.
#ifndef ECD_LIB_STORE_STORE_TEST_UTIL_H_
#define ECD_LIB_STORE_STORE_TEST_UTIL_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lib/store/store.h"
#include "lib/store/store_admin.h"

namespace ecd::store {

// Serves `data` in reads of at most `chunk` bytes; with `fail_at` > 0, every Read from byte
// `fail_at` on fails with Cancelled. Borrows `data`, which must outlive it.
class VectorSource : public ByteSource {
 public:
  explicit VectorSource(const std::vector<uint8_t>& data, size_t chunk = 7777, size_t fail_at = 0)
      : data_(data), chunk_(chunk), fail_at_(fail_at) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override {
    if (fail_at_ != 0 && at_ >= fail_at_) return absl::CancelledError("client went away");
    const size_t n = std::min({buffer.size(), chunk_, data_.size() - at_});
    std::copy_n(data_.begin() + static_cast<long>(at_), n, buffer.begin());
    at_ += n;
    return n;
  }

 private:
  const std::vector<uint8_t>& data_;
  const size_t chunk_;
  const size_t fail_at_;
  size_t at_ = 0;
};

// Collects the bytes written to it, and the sum of their `reconstructed` counts.
class VectorSink : public ByteSink {
 public:
  absl::Status Start(uint64_t size) override {
    size_ = size;
    return absl::OkStatus();
  }
  absl::Status Write(absl::Span<const uint8_t> data, uint32_t reconstructed) override {
    bytes.insert(bytes.end(), data.begin(), data.end());
    this->reconstructed += reconstructed;
    return absl::OkStatus();
  }
  std::vector<uint8_t> bytes;
  uint32_t reconstructed = 0;
  uint64_t size_ = 0;
};

// `n` pseudo-random bytes, the same for the same seed.
// Every committed object with its health, through List's pages of `page_size` (a store only
// ever lists a page at a time).
inline absl::StatusOr<std::vector<ObjectStatus>> ListAll(Store& store, size_t page_size = 7) {
  std::vector<ObjectStatus> all;
  ListQuery query;
  query.page_size = page_size;
  for (;;) {
    absl::StatusOr<ObjectListing> page = store.List(query);
    if (!page.ok()) return page.status();
    for (ObjectStatus& o : page->objects) all.push_back(std::move(o));
    if (page->next_page_token.empty()) return all;
    query.page_token = page->next_page_token;
  }
}

inline std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Sums one named NVMe counter over all devices.
inline uint64_t CounterSum(const std::vector<DeviceStatus>& devices, const std::string& name) {
  uint64_t sum = 0;
  for (const auto& d : devices) {
    for (const auto& [n, v] : d.counters) {
      if (n == name) sum += v;
    }
  }
  return sum;
}

// A fresh store of 8 devices of 16 MiB with 4 KiB blocks in a temporary directory per test,
// with helpers to store, read and damage objects. Its memory limit leaves 32 MiB of stripe
// memory, all of it the DMA arena, as a daemon's would be: stripe buffers are reused arena runs.
// Clobber, Snapshot and Restore reach into the namespace files and assume the default 4 KiB LBAs.
class TempStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ecd_store_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    Open();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // (Re)opens the store, as a restart does, with the namespace factory of the last Open.
  void Open() { Open(factory_); }
  // (Re)opens the store with `factory` (empty: the default NVMe namespaces) for this and later
  // opens.
  void Open(NamespaceFactory factory) {
    store_.reset();
    factory_ = std::move(factory);
    StoreOptions o;
    o.namespace_factory = factory_;
    o.data_dir = dir_.string();
    o.device_count = 8;
    o.device_size = 16 << 20;
    o.default_block_size = 4096;
    o.memory_limit = 8 * o.nvme.host_memory_bytes + (32 << 20);
    if (tweak_) tweak_(o);
    auto s = Store::Open(o);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

  absl::StatusOr<ObjectRecord> Put(const std::string& name, const std::vector<uint8_t>& data,
                                   uint32_t m = 4, uint32_t k = 2, uint64_t bs = 4096,
                                   ec::MatrixType type = ec::MatrixType::kCauchy) {
    EncodeParams p;
    p.name = name;
    p.data_blocks = m;
    p.parity_blocks = k;
    p.block_size = bs;
    p.matrix = type;
    VectorSource src(data);
    return store_->Encode(p, src);
  }
  absl::StatusOr<std::vector<uint8_t>> Get(const std::string& name, uint64_t offset = 0,
                                           uint64_t length = 0, uint32_t* reconstructed = nullptr) {
    VectorSink sink;
    absl::Status s = store_->Read(name, offset, length, sink);
    if (!s.ok()) return s;
    if (reconstructed) *reconstructed = sink.reconstructed;
    return sink.bytes;
  }
  // Overwrites the first bytes of a stored block in its namespace file.
  void Clobber(const BlockRecord& b, uint8_t value) {
    const std::string path = (dir_ / "devices" / ("nvme" + std::to_string(b.device) + ".ns"));
    int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> junk(100, value);
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(b.lba * 4096 + 10)), 100);
    ::close(fd);
  }
  std::vector<uint8_t> Snapshot(const BlockRecord& b) {
    const std::string path = (dir_ / "devices" / ("nvme" + std::to_string(b.device) + ".ns"));
    std::vector<uint8_t> bytes(b.lba_count * 4096);
    int fd = ::open(path.c_str(), O_RDONLY);
    EXPECT_EQ(::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(b.lba * 4096)),
              static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    return bytes;
  }
  void Restore(const BlockRecord& b, const std::vector<uint8_t>& bytes) {
    const std::string path = (dir_ / "devices" / ("nvme" + std::to_string(b.device) + ".ns"));
    int fd = ::open(path.c_str(), O_WRONLY);
    EXPECT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(b.lba * 4096)),
              static_cast<ssize_t>(bytes.size()));
    ::close(fd);
  }
  uint64_t TotalFree() {
    auto d = store_->admin().ListDevices();
    EXPECT_TRUE(d.ok());
    uint64_t f = 0;
    for (const auto& x : *d) f += x.free_bytes;
    return f;
  }
  // Returns a block as stored, through the store (rebuilt if bad).
  std::vector<uint8_t> Block(const std::string& name, uint64_t stripe, uint32_t index) {
    VectorSink sink;
    absl::Status s = store_->GetBlock(name, stripe, index, sink);
    EXPECT_TRUE(s.ok()) << s;
    return sink.bytes;
  }

  std::filesystem::path dir_;
  NamespaceFactory factory_;
  std::function<void(StoreOptions&)> tweak_;  // Applied to the options of every Open.
  std::unique_ptr<Store> store_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_TEST_UTIL_H_
