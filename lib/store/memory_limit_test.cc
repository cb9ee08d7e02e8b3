// Tests of the store's memory limit: requests wait for stripe memory instead of failing, an
// encode holds stripe memory in proportion to what its source delivered, a wait ends with the
// caller's deadline or cancellation, a stripe that can never fit is refused, and a limit too
// small for the devices is refused. The budget is a DMA arena whose runs the devices move as
// fixed buffers.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "lib/fault/fault_namespace.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

constexpr uint64_t kPools = 8 * (8u << 20);  // 8 devices x the default 8 MiB DMA pool.
constexpr uint64_t kStripe = 6 * 4096;       // 4+2 blocks of 4 KiB.

// Gives `stall_at` chunks of 4 KiB (a 4+2 stripe of 4 KiB blocks takes 4), then blocks until
// Release: an encode that holds the memory of the stripes those filled and of the one it fills
// next (at most its pipeline).
class StallingSource : public ByteSource {
 public:
  explicit StallingSource(const std::vector<uint8_t>& data, int stall_at = 1)
      : inner_(data, 4096), stall_at_(stall_at) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override {
    if (reads_++ == stall_at_) {
      std::unique_lock lock(mu_);
      stalled_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_; });
    }
    return inner_.Read(buffer);
  }
  void WaitUntilStalled() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return stalled_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  VectorSource inner_;
  const int stall_at_;
  int reads_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stalled_ = false;
  bool released_ = false;
};

class MemoryLimitTest : public TempStoreTest {
 protected:
  // Encodes `name` from `source` on a thread of its own, into *result; join the thread.
  std::thread EncodeOnAThread(const std::string& name, ByteSource& source,
                              absl::StatusOr<ObjectRecord>* result) {
    return std::thread([this, name, &source, result] {
      EncodeParams p;
      p.name = name;
      *result = store_->Encode(p, source);
    });
  }
  void SetUp() override {
    // Room for exactly one encode's pipeline (ec_workers 2 + 1 + 2 writes in flight).
    tweak_ = [](StoreOptions& o) { o.memory_limit = kPools + 5 * kStripe; };
    TempStoreTest::SetUp();
  }
};

TEST_F(MemoryLimitTest, ASecondEncodeWaitsForTheFirstsMemoryThenBothAreStored) {
  ASSERT_EQ(store_->Stats().memory.limit_bytes, 5 * kStripe);
  const std::vector<uint8_t> a = RandomBytes(200000, 1);
  const std::vector<uint8_t> b = RandomBytes(150000, 2);
  StallingSource stalling(a, 4 * 4);  // Filling its fifth stripe: all of the budget.
  absl::StatusOr<ObjectRecord> first;
  std::thread t1 = EncodeOnAThread("a", stalling, &first);
  stalling.WaitUntilStalled();
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, 5 * kStripe);
  std::atomic<bool> second_done{false};
  absl::StatusOr<ObjectRecord> second;
  std::thread t2([&] {
    second = Put("b", b);
    second_done = true;
  });
  while (store_->Stats().memory.waiting == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(second_done.load());  // Waiting, not refused.
  stalling.Release();
  t1.join();
  t2.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*Get("a"), a);
  EXPECT_EQ(*Get("b"), b);
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, 0u);
  EXPECT_GE(store_->Stats().memory.waits, 1u);
  EXPECT_EQ(store_->Stats().memory.refusals, 0u);
}

// A source that waits in Await until Release, then delivers `data`: a client that sent a
// header and nothing more yet.
class SilentSource : public ByteSource {
 public:
  explicit SilentSource(const std::vector<uint8_t>& data) : inner_(data, 4096) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override { return inner_.Read(buffer); }
  absl::StatusOr<bool> Await() override {
    std::unique_lock lock(mu_);
    awaiting_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
    return true;
  }
  void WaitUntilAwaiting() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return awaiting_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  VectorSource inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool awaiting_ = false;
  bool released_ = false;
};

TEST_F(MemoryLimitTest, AnEncodeHoldsStripeMemoryInProportionToWhatItsSourceDelivered) {
  // Nothing delivered yet: nothing held.
  const std::vector<uint8_t> a = RandomBytes(100000, 31);
  SilentSource silent(a);
  absl::StatusOr<ObjectRecord> first;
  std::thread t1 = EncodeOnAThread("silent", silent, &first);
  silent.WaitUntilAwaiting();
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, 0u);
  // Part of one stripe delivered: one stripe held, and the rest of the budget is free for
  // others at once (they neither wait nor are refused).
  StallingSource stalling(a, 1);
  absl::StatusOr<ObjectRecord> second;
  std::thread t2 = EncodeOnAThread("stalling", stalling, &second);
  stalling.WaitUntilStalled();
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, kStripe);
  const std::vector<uint8_t> b = RandomBytes(150000, 32);
  ASSERT_TRUE(Put("other", b).ok());
  EXPECT_EQ(store_->Stats().memory.waits, 0u);
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, kStripe);
  silent.Release();
  stalling.Release();
  t1.join();
  t2.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*Get("silent"), a);
  EXPECT_EQ(*Get("stalling"), a);
  EXPECT_EQ(*Get("other"), b);
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, 0u);
}

TEST_F(MemoryLimitTest, AnEncodeThatCannotGrowGoesOnWithTheStripesItHas) {
  // One encode holds four of the five stripes; another then gets the fifth and no more, and
  // still stores its object, one stripe at a time, without waiting.
  const std::vector<uint8_t> a = RandomBytes(200000, 33);
  StallingSource stalling(a, 3 * 4);  // Three stripes filled, and the fourth being filled.
  absl::StatusOr<ObjectRecord> first;
  std::thread t = EncodeOnAThread("holder", stalling, &first);
  stalling.WaitUntilStalled();
  ASSERT_EQ(store_->Stats().memory.reserved_bytes, 4 * kStripe);
  const std::vector<uint8_t> b = RandomBytes(150000, 34);
  ASSERT_TRUE(Put("narrow", b).ok());
  EXPECT_EQ(store_->Stats().memory.waits, 0u);
  stalling.Release();
  t.join();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*Get("holder"), a);
  EXPECT_EQ(*Get("narrow"), b);
}

TEST_F(MemoryLimitTest, AWaitForMemoryEndsAtTheCallersDeadline) {
  const std::vector<uint8_t> b = RandomBytes(50000, 35);
  ASSERT_TRUE(Put("b", b).ok());
  const std::vector<uint8_t> a = RandomBytes(200000, 36);
  StallingSource stalling(a, 4 * 4);  // All of the budget.
  absl::StatusOr<ObjectRecord> first;
  std::thread t = EncodeOnAThread("a", stalling, &first);
  stalling.WaitUntilStalled();
  ASSERT_EQ(store_->Stats().memory.reserved_bytes, 5 * kStripe);
  const absl::Time start = absl::Now();
  VectorSink sink;
  const absl::Status read =
      store_->Read("b", 0, 0, sink, Interrupt{.deadline = start + absl::Milliseconds(150)});
  EXPECT_EQ(read.code(), absl::StatusCode::kDeadlineExceeded) << read;
  EXPECT_NE(read.message().find("stripe memory"), std::string::npos) << read;
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  std::atomic<bool> gone{false};
  absl::Status encoded;
  std::thread leave([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gone = true;
  });
  VectorSource source(b);
  EncodeParams p;
  p.name = "c";
  encoded = store_->Encode(p, source, Interrupt{.cancelled = [&] { return gone.load(); }}).status();
  leave.join();
  EXPECT_EQ(encoded.code(), absl::StatusCode::kCancelled) << encoded;
  EXPECT_EQ(store_->Stats().memory.waiting, 0u);
  EXPECT_EQ(store_->Stats().memory.refusals, 0u);
  stalling.Release();
  t.join();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(absl::IsNotFound(store_->Stat("c", false, false).status()));  // Nothing stored.
  EXPECT_EQ(*Get("b"), b);
}

TEST_F(MemoryLimitTest, StripeBuffersAreRunsOfTheArenaThatDevicesMoveAsFixedBuffers) {
  // Device labels are written at open, outside the arena: count from here.
  const std::vector<DeviceStatus> opened = *store_->admin().ListDevices();
  const StoreStats::Arena empty = store_->Stats().arena;
  EXPECT_EQ(empty.bytes, 5 * kStripe);  // the whole budget
  EXPECT_EQ(empty.free_bytes, empty.bytes);
  const std::vector<uint8_t> a = RandomBytes(200000, 3);
  StallingSource stalling(a, 4 * 4);
  absl::StatusOr<ObjectRecord> encoded;
  std::thread t = EncodeOnAThread("a", stalling, &encoded);
  stalling.WaitUntilStalled();
  EXPECT_EQ(store_->Stats().arena.free_bytes, 0u);  // its five stripes are the arena's runs
  stalling.Release();
  t.join();
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_EQ(*Get("a"), a);
  const std::vector<uint8_t> b = RandomBytes(100000, 4);
  ASSERT_TRUE(Put("b", b).ok());  // into runs that still hold bytes of "a" (ArenaReuse below)
  EXPECT_EQ(*Get("b"), b);
  EXPECT_EQ(*Get("a"), a);
  const StoreStats::Arena after = store_->Stats().arena;
  EXPECT_EQ(after.free_bytes, after.bytes);
  EXPECT_EQ(after.fallbacks, 0u);
  const std::vector<DeviceStatus> devices = *store_->admin().ListDevices();
  for (const DeviceStatus& d : devices) EXPECT_EQ(CounterSum({d}, "nvme_fixed_buffers"), 1u);
  EXPECT_GE(CounterSum(devices, "nvme_zero_copy_commands"), 9u * 6 + 9u * 4);
  EXPECT_GE(CounterSum(devices, "nvme_io_uring_fixed_ops"), 9u * 6 + 9u * 4);
  EXPECT_EQ(CounterSum(devices, "nvme_io_uring_plain_ops"),
            CounterSum(opened, "nvme_io_uring_plain_ops"));
  // Only the block-record pages were staged: one per device each encode wrote blocks to.
  uint64_t record_pages = 0;
  for (const char* name : {"a", "b"}) {
    auto st = store_->Stat(name, /*with_blocks=*/true, /*verify=*/false);
    ASSERT_TRUE(st.ok()) << st.status();
    std::set<uint32_t> written;
    for (const auto& stripe : st->stripes) {
      for (const auto& block : stripe.blocks) written.insert(block.record.device);
    }
    record_pages += written.size();
  }
  EXPECT_EQ(CounterSum(devices, "nvme_staged_commands"),
            CounterSum(opened, "nvme_staged_commands") + record_pages);
}

TEST_F(MemoryLimitTest, WithoutTheArenaStripeBuffersAreMappedPerRequestAndStaged) {
  tweak_ = [](StoreOptions& o) {
    o.memory_limit = kPools + 5 * kStripe;
    o.dma_arena_bytes = 0;
  };
  Open();
  EXPECT_EQ(store_->Stats().arena.bytes, 0u);
  const std::vector<uint8_t> a = RandomBytes(100000, 5);
  ASSERT_TRUE(Put("a", a).ok());
  EXPECT_EQ(*Get("a"), a);
  // Copied through the devices' pools: cheaper here than plain I/O that pins pages per I/O.
  const std::vector<DeviceStatus> devices = *store_->admin().ListDevices();
  EXPECT_EQ(CounterSum(devices, "nvme_zero_copy_commands"), 0u);
  EXPECT_GE(CounterSum(devices, "nvme_staged_commands"), 5u * 6);
  EXPECT_EQ(CounterSum(devices, "nvme_io_uring_plain_ops"), 0u);
}

TEST_F(MemoryLimitTest, StripeBuffersBeyondASmallerArenaAreMappedAndCounted) {
  tweak_ = [](StoreOptions& o) {
    o.memory_limit = kPools + 5 * kStripe;
    o.dma_arena_bytes = 2 * kStripe;
  };
  Open();
  EXPECT_EQ(store_->Stats().arena.bytes, 2 * kStripe);
  const std::vector<uint8_t> a = RandomBytes(200000, 6);
  ASSERT_TRUE(Put("a", a).ok());  // five stripes: two in the arena, three mapped
  EXPECT_EQ(store_->Stats().arena.fallbacks, 3u);
  EXPECT_EQ(*Get("a"), a);  // three stripes: two in the arena, one mapped
  EXPECT_EQ(store_->Stats().arena.fallbacks, 4u);
  EXPECT_EQ(store_->Stats().arena.free_bytes, 2 * kStripe);
  const std::vector<DeviceStatus> devices = *store_->admin().ListDevices();
  EXPECT_GT(CounterSum(devices, "nvme_zero_copy_commands"), 0u);  // the arena's runs
  EXPECT_GT(CounterSum(devices, "nvme_staged_commands"), 0u);     // the others
  EXPECT_EQ(CounterSum(devices, "nvme_io_uring_plain_ops"), 0u);
}

// Arena runs are reused; what they held must never reach a disk or a reader. With 512-byte LBAs a
// 960-byte block is written as 1024 bytes, and the 64 bytes of padding come from the buffer.
TEST(ArenaReuse, PaddingWrittenFromReusedRunsIsZero) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ecd_arena_reuse_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  StoreOptions o;
  o.data_dir = dir.string();
  o.device_count = 8;
  o.device_size = 16 << 20;
  o.lba_size = 512;
  o.default_block_size = 1024;
  o.memory_limit = 8 * o.nvme.host_memory_bytes + (4 << 20);
  auto store = *Store::Open(o);
  ASSERT_EQ(store->Stats().arena.bytes, 4u << 20);
  auto put = [&](const std::string& name, const std::vector<uint8_t>& data, uint64_t bs) {
    EncodeParams p;
    p.name = name;
    p.data_blocks = 4;
    p.parity_blocks = 2;
    p.block_size = bs;
    VectorSource src(data);
    return store->Encode(p, src);
  };
  // Fill the arena's first runs with random bytes: 1024-byte blocks have no padding.
  ASSERT_TRUE(put("dirt", RandomBytes(4 * 1024 * 40, 7), 1024).ok());
  const std::vector<uint8_t> x = RandomBytes(4 * 960 * 40 - 123, 8);
  auto stored = put("x", x, 960);
  ASSERT_TRUE(stored.ok()) << stored.status();
  // Rebuild every block of one device through reused runs too.
  auto before = *store->Stat("x", /*with_blocks=*/true, /*verify=*/false);
  const uint32_t failed = before.stripes[0].blocks[0].record.device;
  ASSERT_TRUE(store->admin().SetDeviceState(failed, DeviceState::kFailed).ok());
  ASSERT_TRUE(store->Recover("x", nullptr).ok());
  VectorSink sink;
  ASSERT_TRUE(store->Read("x", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, x);
  auto st = *store->Stat("x", /*with_blocks=*/true, /*verify=*/false);
  int checked = 0;
  for (const auto& stripe : st.stripes) {
    for (const auto& block : stripe.blocks) {
      const BlockRecord& b = block.record;
      ASSERT_EQ(b.lba_count, 2u);
      const std::string path = (dir / "devices" / ("nvme" + std::to_string(b.device) + ".ns"));
      uint8_t padding[64];
      int fd = ::open(path.c_str(), O_RDONLY);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::pread(fd, padding, sizeof(padding), static_cast<off_t>(b.lba * 512 + 960)),
                static_cast<ssize_t>(sizeof(padding)));
      ::close(fd);
      EXPECT_EQ(std::vector<uint8_t>(padding, padding + 64), std::vector<uint8_t>(64, 0))
          << "stripe " << b.stripe << " block " << b.index << " on device " << b.device;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 40 * 6);
  store.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(MemoryLimitTest, ReadsUpdatesAndRecoverWorkInsideTheLimit) {
  const std::vector<uint8_t> data = RandomBytes(300000, 3);
  ASSERT_TRUE(Put("o", data).ok());
  std::vector<std::thread> readers;
  std::atomic<int> good{0};
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      VectorSink sink;
      if (store_->Read("o", 0, 0, sink).ok() && sink.bytes == data) ++good;
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(good.load(), 4);
  std::vector<uint8_t> patch = RandomBytes(10000, 4);
  VectorSource src(patch);
  ASSERT_TRUE(store_->Update("o", 5000, src, false).ok());
  std::vector<uint8_t> expected = data;
  std::copy(patch.begin(), patch.end(), expected.begin() + 5000);
  EXPECT_EQ(*Get("o"), expected);
  ASSERT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
  absl::StatusOr<RecoverProgress> p = store_->Recover("o", {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(p->blocks_rebuilt, 0u);
  EXPECT_EQ(*Get("o"), expected);
  EXPECT_EQ(store_->Stats().memory.reserved_bytes, 0u);
}

// A sink that holds `held` bytes of its own, records the budget's reservation when the first
// bytes reach it and when it is finished, and fails its Write when asked to.
class HoldingSink : public VectorSink {
 public:
  HoldingSink(const Store& budget, uint64_t held) : budget_(budget), held_(held) {}
  uint64_t held_bytes(uint64_t length) const override {
    asked_length = length;
    return held_;
  }
  absl::Status Write(absl::Span<const uint8_t> data, uint32_t reconstructed) override {
    if (reserved_during_read == 0) reserved_during_read = budget_.Stats().memory.reserved_bytes;
    if (fail_writes) return absl::CancelledError("the client went away");
    return VectorSink::Write(data, reconstructed);
  }
  absl::Status Finish(bool ok) override {
    ++finishes;
    finished_ok = ok;
    reserved_at_finish = budget_.Stats().memory.reserved_bytes;
    return absl::OkStatus();
  }
  mutable uint64_t asked_length = 0;
  uint64_t reserved_during_read = 0;
  uint64_t reserved_at_finish = 0;
  int finishes = 0;
  bool finished_ok = false;
  bool fail_writes = false;

 private:
  const Store& budget_;
  const uint64_t held_;
};

TEST_F(MemoryLimitTest, ReadsReserveTheSinksOwnBuffersUntilItIsFinished) {
  const std::vector<uint8_t> data = RandomBytes(10 * 16384, 7);  // 10 stripes of 4 x 4 KiB.
  ASSERT_TRUE(Put("obj", data).ok());
  const Store& budget = *store_;
  // Three stripes (the read-ahead) and the sink's stripe's worth: 4 of the 5 stripes of room,
  // held until the sink is finished.
  HoldingSink small(budget, kStripe);
  ASSERT_TRUE(store_->Read("obj", 100, 50000, small).ok());
  EXPECT_EQ(small.bytes, std::vector<uint8_t>(data.begin() + 100, data.begin() + 50100));
  EXPECT_EQ(small.asked_length, 50000u);
  EXPECT_EQ(small.reserved_during_read, 4 * kStripe);
  EXPECT_EQ(small.finishes, 1);
  EXPECT_TRUE(small.finished_ok);
  EXPECT_EQ(small.reserved_at_finish, 4 * kStripe);
  // A sink holding three stripes' worth leaves room for a read-ahead of two only.
  HoldingSink big(budget, 3 * kStripe);
  ASSERT_TRUE(store_->Read("obj", 0, 0, big).ok());
  EXPECT_EQ(big.bytes, data);
  EXPECT_EQ(big.reserved_during_read, 5 * kStripe);
  EXPECT_EQ(big.reserved_at_finish, 5 * kStripe);
  // A block get: one stripe and the sink's buffers.
  HoldingSink block(budget, kStripe);
  ASSERT_TRUE(store_->GetBlock("obj", 3, 5, block).ok());
  EXPECT_EQ(block.bytes.size(), 4096u);
  EXPECT_EQ(block.asked_length, 4096u);
  EXPECT_EQ(block.reserved_at_finish, 2 * kStripe);
  EXPECT_EQ(block.finishes, 1);
  // A sink that fails is finished once, not ok, still inside the reservation.
  HoldingSink failing(budget, kStripe);
  failing.fail_writes = true;
  EXPECT_TRUE(absl::IsCancelled(store_->Read("obj", 0, 0, failing)));
  EXPECT_EQ(failing.finishes, 1);
  EXPECT_FALSE(failing.finished_ok);
  EXPECT_EQ(failing.reserved_at_finish, 4 * kStripe);
  // A read of nothing is finished too (a sink may still have to say the size).
  HoldingSink empty(budget, kStripe);
  ASSERT_TRUE(store_->Read("obj", data.size(), 0, empty).ok());
  EXPECT_EQ(empty.finishes, 1);
  EXPECT_TRUE(empty.finished_ok);
  EXPECT_EQ(budget.Stats().memory.reserved_bytes, 0u);
}

// Passes the bytes on the way a network sink does without copying: it keeps each pinned piece
// (and its pin) for a while on a thread of its own, as gRPC keeps a slice until it is sent,
// and before it drops the pin checks that the bytes under it are still the object's. The last
// piece of the read it keeps past Finish (in `kept`), for the test to drop.
class PinningSink : public ByteSink {
 public:
  struct Held {
    absl::Span<const uint8_t> data;
    uint64_t at = 0;  // From the start of the read.
    std::shared_ptr<const void> pin;
  };

  PinningSink(const std::vector<uint8_t>& object, uint64_t offset)
      : object_(object), offset_(offset), releaser_([this] { Release(); }) {}
  ~PinningSink() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    releaser_.join();
  }
  absl::Status Start(uint64_t object_size) override {
    end_ = object_size - offset_;
    return absl::OkStatus();
  }
  absl::Status Write(absl::Span<const uint8_t> data, uint32_t) override {
    std::lock_guard lock(mu_);
    at_ += data.size();
    return absl::OkStatus();
  }
  absl::Status WritePinned(absl::Span<const uint8_t> data, uint32_t,
                           const std::shared_ptr<const void>& pin) override {
    std::lock_guard lock(mu_);
    Held h{data, at_, pin};
    at_ += data.size();
    ++pinned;
    if (at_ == end_) {
      kept = std::move(h);  // The read's last piece: no later read of a buffer waits for it.
    } else {
      held_.push_back(std::move(h));
      cv_.notify_all();
    }
    return absl::OkStatus();
  }
  absl::Status Finish(bool) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return held_.empty(); });
    return absl::OkStatus();
  }
  // Whether the bytes of `h` are still the object's.
  bool Intact(const Held& h) const {
    return std::equal(h.data.begin(), h.data.end(), object_.begin() + offset_ + h.at);
  }

  int pinned = 0;
  int changed_under_pin = 0;  // Read after Finish.
  std::optional<Held> kept;

 private:
  // Drops each held piece 1 ms after it came, checking its bytes first.
  void Release() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !held_.empty(); });
      if (stop_) return;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      lock.lock();
      if (!Intact(held_.front())) ++changed_under_pin;
      held_.pop_front();
      cv_.notify_all();
    }
  }

  const std::vector<uint8_t>& object_;
  const uint64_t offset_;
  uint64_t end_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Held> held_;  // Guarded by mu_, as at_ and stop_.
  uint64_t at_ = 0;
  bool stop_ = false;
  std::thread releaser_;  // Last: started once the rest is built.
};

TEST_F(MemoryLimitTest, ReadsReuseAStripeBufferOnlyOnceItsPinsAreGoneAndLetThemOutliveTheRead) {
  const std::vector<uint8_t> data = RandomBytes(size_t{10} * 16384, 8);  // 10 stripes of 4 x 4 KiB.
  ASSERT_TRUE(Put("obj", data).ok());
  const Store& budget = *store_;
  for (uint64_t offset : {uint64_t{0}, uint64_t{5000}}) {
    PinningSink sink(data, offset);
    ASSERT_TRUE(store_->Read("obj", offset, 0, sink).ok());
    EXPECT_EQ(sink.pinned, offset == 0 ? 40 : 39);  // Every block the read touches.
    EXPECT_EQ(sink.changed_under_pin, 0) << "a buffer was read into while pinned";
    // The last pin outlives the read: the bytes under it and the read's memory stay.
    ASSERT_TRUE(sink.kept.has_value());
    EXPECT_TRUE(sink.Intact(*sink.kept));
    EXPECT_GT(budget.Stats().memory.reserved_bytes, 0u);
    EXPECT_EQ(store_->Stats().read_buffers.in_reads, 0);
    EXPECT_EQ(store_->Stats().read_buffers.after_reads, 1);
    // Another read meanwhile (of the last stripe, one buffer: the 2 stripes of room left)
    // gets a buffer of its own and its bytes right.
    absl::StatusOr<std::vector<uint8_t>> again = Get("obj", uint64_t{9} * 16384, 16384);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, std::vector<uint8_t>(data.begin() + ptrdiff_t{9} * 16384, data.end()));
    EXPECT_TRUE(sink.Intact(*sink.kept));
    sink.kept.reset();  // The last pin: the read's buffers go back to the budget.
    EXPECT_EQ(budget.Stats().memory.reserved_bytes, 0u);
    EXPECT_EQ(store_->Stats().read_buffers.after_reads, 0);
  }
}

// Stores with room for 40 stripes whose pipelines StoreOptions::stripes_in_flight sets.
class StripesInFlightTest : public TempStoreTest {
 protected:
  // Reopens the store with `stripes_in_flight`; every read takes 2 ms, so that a recover holds
  // its stripes long enough to be seen.
  void OpenWith(size_t stripes_in_flight) {
    tweak_ = [stripes_in_flight](StoreOptions& o) {
      o.memory_limit = kPools + 40 * kStripe;
      o.stripes_in_flight = stripes_in_flight;
    };
    FaultRule slow;
    slow.op = FaultRule::Op::kRead;
    slow.kind = FaultRule::Kind::kLatency;
    slow.latency = absl::Milliseconds(2);
    std::map<uint32_t, std::vector<FaultRule>> rules;
    for (uint32_t d = 0; d < 8; ++d) rules[d] = {slow};
    Open(FaultInjectingFactory(NvmeNamespaceFactory({}), std::move(rules), 1));
  }
  // The stripes an encode, a read and a recover (device 1 failed) of a 12-stripe object
  // reserved, in that order; checks the bytes after each.
  std::vector<uint64_t> StripesReserved(const std::string& name) {
    const Store& budget = *store_;
    const std::vector<uint8_t> data = RandomBytes(12 * 16384, 9);
    std::vector<uint64_t> stripes;
    StallingSource stalling(data, 10 * 4);  // Past the deepest pipeline asked for (10).
    absl::StatusOr<ObjectRecord> stored;
    std::thread encode([&] {
      EncodeParams p;
      p.name = name;
      stored = store_->Encode(p, stalling);
    });
    stalling.WaitUntilStalled();
    stripes.push_back(budget.Stats().memory.reserved_bytes / kStripe);
    stalling.Release();
    encode.join();
    EXPECT_TRUE(stored.ok()) << stored.status();
    HoldingSink sink(budget, 0);
    EXPECT_TRUE(store_->Read(name, 0, 0, sink).ok());
    EXPECT_EQ(sink.bytes, data);
    stripes.push_back(sink.reserved_during_read / kStripe);
    EXPECT_TRUE(store_->admin().SetDeviceState(1, DeviceState::kFailed).ok());
    std::atomic<bool> done{false};
    uint64_t most = 0;
    std::thread watch([&] {
      while (!done.load()) {
        most = std::max(most, budget.Stats().memory.reserved_bytes);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
    absl::StatusOr<RecoverProgress> p = store_->Recover(name, {});
    done = true;
    watch.join();
    EXPECT_TRUE(p.ok()) << p.status();
    EXPECT_GT(p->blocks_rebuilt, 0u);
    EXPECT_EQ(*Get(name), data);
    stripes.push_back(most / kStripe);
    EXPECT_EQ(budget.Stats().memory.reserved_bytes, 0u);
    EXPECT_TRUE(
        store_->admin().SetDeviceState(1, DeviceState::kOnline).ok());  // For the next object.
    return stripes;
  }
};

TEST_F(StripesInFlightTest, SetsTheDepthOfEncodeReadAndRecoverPipelines) {
  OpenWith(0);  // Each its own: encode ec_workers (2) + 3, read 3, recover 4.
  EXPECT_EQ(StripesReserved("auto"), (std::vector<uint64_t>{5, 3, 4}));
  OpenWith(2);
  EXPECT_EQ(StripesReserved("two"), (std::vector<uint64_t>{2, 2, 2}));
  OpenWith(7);
  EXPECT_EQ(StripesReserved("seven"), (std::vector<uint64_t>{7, 7, 7}));
}

TEST_F(StripesInFlightTest, NoRequestTakesMoreThanAQuarterOfTheLimitWhateverIsAsked) {
  OpenWith(30);  // A quarter of the 40 stripes of room is 10.
  EXPECT_EQ(StripesReserved("wide"), (std::vector<uint64_t>{10, 10, 10}));
}

TEST_F(StripesInFlightTest, AReadAsksForNoMoreStripesThanItReads) {
  OpenWith(7);
  const std::vector<uint8_t> data = RandomBytes(12 * 16384, 10);
  ASSERT_TRUE(Put("o", data).ok());
  const Store& budget = *store_;
  HoldingSink one(budget, 0);
  ASSERT_TRUE(store_->Read("o", 16384 + 5, 100, one).ok());  // Inside stripe 1.
  EXPECT_EQ(one.bytes, std::vector<uint8_t>(data.begin() + 16389, data.begin() + 16489));
  EXPECT_EQ(one.reserved_during_read, kStripe);
  HoldingSink two(budget, 0);
  ASSERT_TRUE(store_->Read("o", 16380, 10, two).ok());  // Across stripes 0 and 1.
  EXPECT_EQ(two.bytes, std::vector<uint8_t>(data.begin() + 16380, data.begin() + 16390));
  EXPECT_EQ(two.reserved_during_read, 2 * kStripe);
}

TEST(StripesInFlight, OneOrMoreThanTheMostIsRefusedBeforeAnythingIsCreated) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ecd_stripes_in_flight_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  for (size_t bad : {size_t{1}, kMaxStripesInFlight + 1}) {
    StoreOptions o;
    o.data_dir = dir.string();
    o.stripes_in_flight = bad;
    absl::StatusOr<std::unique_ptr<Store>> s = Store::Open(o);
    ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.status().message().find("2..64"), std::string::npos) << s.status();
    EXPECT_FALSE(std::filesystem::exists(dir)) << "Open created " << dir;
  }
}

TEST_F(MemoryLimitTest, AStripeThatCanNeverFitIsRefusedAndNothingIsStored) {
  const uint64_t before = TotalFree();
  absl::StatusOr<ObjectRecord> r = Put("wide", RandomBytes(100000, 5), 4, 2, 64 << 10);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("--memory-limit"), std::string::npos) << r.status();
  EXPECT_EQ(TotalFree(), before);
  EXPECT_TRUE(absl::IsNotFound(Get("wide").status()));
  EXPECT_TRUE(Put("narrow", RandomBytes(1000, 6)).ok());  // The store still serves.
}

TEST_F(MemoryLimitTest, AnObjectThatCouldNotBeUpdatedOrRepairedIsNotStored) {
  // One 6+2 x 8 KiB stripe (64 KiB) fits the 120 KiB budget, but an update needs two stripes
  // and a recover two stripes and K blocks (144 KiB): refused before anything is stored.
  const uint64_t before = TotalFree();
  absl::StatusOr<ObjectRecord> r = Put("fragile", RandomBytes(100000, 7), 6, 2, 8192);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("--memory-limit"), std::string::npos) << r.status();
  EXPECT_EQ(TotalFree(), before);
  EXPECT_EQ(store_->Stats().memory.refusals, 1u);
  // A 5+2 x 4 KiB object (64 KiB to repair) is stored and recovered with parity verified.
  const std::vector<uint8_t> data = RandomBytes(100000, 8);
  ASSERT_TRUE(Put("sturdy", data, 5, 2, 4096).ok());
  ASSERT_TRUE(store_->admin().SetDeviceState(0, DeviceState::kFailed).ok());
  RecoverOptions verify;
  verify.verify_parity = true;
  absl::StatusOr<RecoverProgress> p = store_->Recover("sturdy", {}, verify);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*Get("sturdy"), data);
}

TEST_F(MemoryLimitTest, ALimitBelowTheDevicePoolsIsRefusedAtOpen) {
  store_.reset();
  StoreOptions o;
  o.data_dir = dir_.string();
  o.device_count = 8;
  o.device_size = 16 << 20;
  o.default_block_size = 4096;
  o.memory_limit = kPools + kStripe;  // One default stripe, but no room to update or repair.
  absl::StatusOr<std::unique_ptr<Store>> s = Store::Open(o);
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
  EXPECT_NE(s.status().message().find("--memory-limit"), std::string::npos) << s.status();
  o.memory_limit = kPools + 14 * 4096;  // Two 4+2 stripes and two blocks: enough.
  s = Store::Open(o);
  EXPECT_TRUE(s.ok()) << s.status();
}

}  // namespace
}  // namespace ecd::store
