// Helpers shared by the store's tests: byte sources and sinks over vectors, random data.
#ifndef ECD_LIB_STORE_STORE_TEST_UTIL_H_
#define ECD_LIB_STORE_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lib/store/store.h"

namespace ecd::store {

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

inline std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// A fresh store of 8 devices of 16 MiB with 4 KiB blocks in a temporary directory per test.
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
    auto s = Store::Open(o);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

  std::filesystem::path dir_;
  NamespaceFactory factory_;
  std::unique_ptr<Store> store_;
};

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_STORE_TEST_UTIL_H_
