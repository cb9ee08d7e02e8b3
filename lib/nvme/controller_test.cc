// Controller tests: random data through PRPs, the controller and io_uring round-trips byte-exact
// at random LBAs across many queue wraparounds; every invalid command fails with its NVMe
// status and moves no data; contiguous pages coalesce into one I/O; short transfers and
// unreadable memory become statuses; buffers registered for DMA move in place, and a region
// that is no longer registered is a Data Transfer Error.
#include "lib/nvme/controller.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "lib/nvme/device.h"
#include "lib/nvme/driver.h"
#include "lib/nvme/prp_builder.h"

namespace ecd::nvme {
namespace {

constexpr uint32_t kLba = 4096;
constexpr uint64_t kLbas = 4096;  // 16 MiB namespace

std::string TempFile(const std::string& name, uint64_t bytes, uint8_t fill) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string base = dir ? dir : "/tmp";
  std::string path = base + "/ecd_controller_test_" + std::to_string(::getpid()) + "_" + name;
  std::vector<uint8_t> chunk(1 << 20, fill);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  for (uint64_t off = 0; off < bytes; off += chunk.size()) {
    EXPECT_EQ(::pwrite(fd, chunk.data(), std::min<uint64_t>(chunk.size(), bytes - off), off),
              static_cast<ssize_t>(std::min<uint64_t>(chunk.size(), bytes - off)));
  }
  ::close(fd);
  return path;
}

std::vector<uint8_t> FileBytes(const std::string& path, uint64_t off, uint64_t len) {
  std::vector<uint8_t> out(len);
  int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_EQ(::pread(fd, out.data(), len, off), static_cast<ssize_t>(len));
  ::close(fd);
  return out;
}

TEST(Device, RandomRoundTripsAcrossQueueWraparound) {
  const std::string path = TempFile("rt", kLbas * kLba, 0);
  DeviceOptions o;
  o.controller.queue_entries = 8;  // wraps every 8 commands
  o.controller.mdts = 5;           // 128 KiB commands: 1 MiB I/O becomes 8 commands
  o.host_memory_bytes = 2 << 20;
  auto dev = Device::Open(path, kLba, kLbas, o);
  ASSERT_TRUE(dev.ok()) << dev.status();
  std::mt19937_64 rng(7);
  std::vector<uint8_t> model(kLbas * kLba, 0);
  for (int i = 0; i < 300; ++i) {
    const uint64_t blocks = 1 + rng() % 300;
    const uint64_t lba = rng() % (kLbas - blocks);
    std::vector<uint8_t> data(blocks * kLba);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    ASSERT_TRUE((*dev)->Write(lba, data).ok());
    std::memcpy(&model[lba * kLba], data.data(), data.size());
    const uint64_t rb = 1 + rng() % 300;
    const uint64_t rl = rng() % (kLbas - rb);
    std::vector<uint8_t> got(rb * kLba);
    ASSERT_TRUE((*dev)->Read(rl, absl::MakeSpan(got)).ok());
    ASSERT_EQ(0, std::memcmp(got.data(), &model[rl * kLba], got.size())) << "iteration " << i;
  }
  ASSERT_TRUE((*dev)->Flush().ok());
  EXPECT_EQ(FileBytes(path, 0, model.size()), model);
  const ControllerStats s = (*dev)->stats();
  EXPECT_GT(s.writes, 300u);  // split at MDTS
  EXPECT_EQ(s.flushes, 1u);
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_TRUE(s.errors.empty());
  EXPECT_GT(s.prp_sets, s.writes);  // 128 KiB commands need list refills
  EXPECT_GT(s.fetch.fills_pong, 0u);
  std::filesystem::remove(path);
}

TEST(Device, ConcurrentCallersKeepTheirBytes) {
  const std::string path = TempFile("mt", kLbas * kLba, 0);
  DeviceOptions o;
  o.controller.queue_entries = 16;
  auto dev = *Device::Open(path, kLba, kLbas, o);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      const uint64_t region = kLbas / 4 * t;
      for (int i = 0; i < 50; ++i) {
        const uint64_t blocks = 1 + rng() % 64;
        const uint64_t lba = region + rng() % (kLbas / 4 - blocks);
        std::vector<uint8_t> data(blocks * kLba), got(blocks * kLba);
        for (auto& b : data) b = static_cast<uint8_t>(rng());
        if (!dev->Write(lba, data).ok() || !dev->Read(lba, absl::MakeSpan(got)).ok() ||
            got != data) {
          ++bad;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  std::filesystem::remove(path);
}

// An I/O command of `blocks` LBAs at `slba` over the data that `prps` describe.
SubmissionEntry IoCommand(Opcode op, uint64_t slba, uint32_t blocks, const PrpDescriptor& prps) {
  SubmissionEntry e;
  e.opcode = static_cast<uint8_t>(op);
  e.nsid = 1;
  e.slba = slba;
  e.nlb = static_cast<uint16_t>(blocks - 1);
  e.prp1 = prps.prp1;
  e.prp2 = prps.prp2;
  return e;
}

// Page-aligned memory of its own mapping, as the store's stripe buffers are.
class MappedBuffer {
 public:
  explicit MappedBuffer(size_t bytes)
      : bytes_(bytes),
        data_(static_cast<uint8_t*>(
            ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {}
  ~MappedBuffer() { ::munmap(data_, bytes_); }
  uint8_t* data() const { return data_; }

 private:
  size_t bytes_;
  uint8_t* data_;
};

TEST(Device, RegisteredBuffersMoveInPlaceAtAnyPageSize) {
  for (uint32_t page_size : {4096u, 16384u}) {
    SCOPED_TRACE(page_size);
    const std::string path = TempFile("inplace", kLbas * kLba, 0);
    DeviceOptions o;
    o.page_size = page_size;
    o.controller.mdts = 5;  // 128 KiB commands: a 1 MiB call is 8 commands with PRP lists
    o.host_memory_bytes = 1 << 20;
    o.dma_map = std::make_shared<DmaMap>();
    auto dev = *Device::Open(path, kLba, kLbas, o);
    const uint64_t pool_pages = dev->memory().page_count();
    constexpr uint64_t kBuffer = 4 << 20;
    MappedBuffer out(kBuffer), in(kBuffer);
    DmaRegistration out_reg(o.dma_map.get(), out.data(), kBuffer);
    DmaRegistration in_reg(o.dma_map.get(), in.data(), kBuffer);
    ASSERT_TRUE(out_reg.registered() && in_reg.registered());
    std::mt19937_64 rng(page_size);
    std::vector<uint8_t> model(kLbas * kLba, 0);
    for (int i = 0; i < 60; ++i) {
      // Buffers start at any 4 KiB page: with 16 KiB memory pages PRP1 then has an offset.
      const uint64_t blocks = 1 + rng() % 300;
      const uint64_t at = (rng() % (kBuffer / kLba - blocks)) * kLba;
      const uint64_t lba = rng() % (kLbas - blocks);
      for (uint64_t b = 0; b < blocks * kLba; ++b) out.data()[at + b] = static_cast<uint8_t>(rng());
      ASSERT_TRUE(dev->Write(lba, absl::MakeSpan(out.data() + at, blocks * kLba)).ok());
      std::memcpy(&model[lba * kLba], out.data() + at, blocks * kLba);
      ASSERT_TRUE(dev->Read(lba, absl::MakeSpan(in.data() + at, blocks * kLba)).ok());
      ASSERT_EQ(0, std::memcmp(in.data() + at, &model[lba * kLba], blocks * kLba)) << i;
    }
    ASSERT_TRUE(dev->Flush().ok());
    EXPECT_EQ(FileBytes(path, 0, model.size()), model);
    TransferStats t = dev->transfer_stats();
    EXPECT_GE(t.zero_copy_commands, 120u);
    EXPECT_EQ(t.staged_commands, 0u);
    EXPECT_EQ(dev->memory().free_pages(), pool_pages);  // list pages all given back

    // A buffer that is not registered (or not aligned for direct I/O) is staged, with the same
    // bytes.
    std::vector<uint8_t> heap(8 * kLba);
    ASSERT_TRUE(dev->Read(0, absl::MakeSpan(heap)).ok());
    EXPECT_EQ(0, std::memcmp(heap.data(), model.data(), heap.size()));
    ASSERT_TRUE(dev->Read(0, absl::MakeSpan(in.data() + 512, 8 * kLba)).ok());
    EXPECT_EQ(0, std::memcmp(in.data() + 512, model.data(), 8 * kLba));
    t = dev->transfer_stats();
    EXPECT_EQ(t.staged_commands, 2u);
    std::filesystem::remove(path);
  }
}

TEST(Device, FixedRegionsMoveAsFixedBuffersOthersAsPlainIo) {
  const std::string path = TempFile("fixed", kLbas * kLba, 0);
  DeviceOptions o;
  o.dma_map = std::make_shared<DmaMap>();
  constexpr uint64_t kBuffer = 2 << 20;
  MappedBuffer arena(kBuffer), other(kBuffer);
  ASSERT_TRUE(o.dma_map->Register(arena.data(), kBuffer, /*fixed=*/true).ok());
  auto dev = *Device::Open(path, kLba, kLbas, o);  // registers the arena with its ring
  ASSERT_TRUE(dev->stats().fixed_buffers);
  ASSERT_TRUE(o.dma_map->Register(other.data(), kBuffer).ok());  // after open: plain I/O
  std::memset(arena.data(), 0x3C, kBuffer);
  ASSERT_TRUE(dev->Write(8, absl::MakeSpan(arena.data(), kBuffer)).ok());
  ASSERT_TRUE(dev->Read(8, absl::MakeSpan(other.data(), kBuffer)).ok());
  EXPECT_EQ(0, std::memcmp(arena.data(), other.data(), kBuffer));
  const ControllerStats s = dev->stats();
  EXPECT_EQ(s.fixed_io_ops, 2u);  // two 1 MiB commands, each one contiguous run
  EXPECT_EQ(s.plain_io_ops, 2u);
  EXPECT_EQ(dev->transfer_stats().zero_copy_commands, 4u);
  EXPECT_EQ(FileBytes(path, 8 * kLba, kBuffer), std::vector<uint8_t>(kBuffer, 0x3C));
  std::filesystem::remove(path);
}

TEST(Device, InPlaceCommandsAreBoundByMdtsNotByTheSmallestPool) {
  const std::string path = TempFile("smallpool", kLbas * kLba, 0);
  DeviceOptions o;
  o.host_memory_bytes = 16 << 10;  // four pages: staged commands of at most 8 KiB
  o.dma_map = std::make_shared<DmaMap>();
  auto dev = *Device::Open(path, kLba, kLbas, o);
  constexpr uint64_t kBuffer = 2 << 20;
  MappedBuffer registered(kBuffer);
  std::vector<uint8_t> staged(kBuffer, 0x21);
  DmaRegistration reg(o.dma_map.get(), registered.data(), kBuffer);
  std::memset(registered.data(), 0x12, kBuffer);
  ASSERT_TRUE(dev->Write(0, absl::MakeSpan(registered.data(), kBuffer)).ok());
  EXPECT_EQ(dev->stats().writes, 2u);  // two 1 MiB (MDTS) commands, each with one list page
  ASSERT_TRUE(dev->Write(kBuffer / kLba, staged).ok());
  EXPECT_EQ(dev->stats().writes, 2u + kBuffer / (8 << 10));
  EXPECT_EQ(FileBytes(path, 0, kBuffer), std::vector<uint8_t>(kBuffer, 0x12));
  EXPECT_EQ(FileBytes(path, kBuffer, kBuffer), staged);
  EXPECT_EQ(dev->memory().free_pages(), 4u);
  std::filesystem::remove(path);
}

// Raw commands against a controller, to check statuses and that failed commands move nothing.
class RawCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempFile("raw", kLbas * kLba, 0xEE);
    memory_ = *HostMemory::Create(4096, 512);
    ControllerOptions o;
    o.mdts = 6;  // 256 KiB
    o.queue_entries = 8;
    controller_ = *Controller::Create(memory_.get(), path_, kLba, kLbas, o, &dma_);
    driver_ = std::make_unique<Driver>(controller_.get());
  }
  void TearDown() override {
    driver_.reset();
    controller_.reset();
    std::filesystem::remove(path_);
  }
  // A command over `n` pages of host memory filled with `fill`.
  SubmissionEntry Command(Opcode op, uint64_t slba, uint32_t blocks, uint8_t fill) {
    pages_ = *memory_->AllocatePages(blocks);
    for (uint64_t p : pages_) std::memset(memory_->Translate(p, 4096), fill, 4096);
    prps_ = *BuildPrps(*memory_, pages_, 0, uint64_t{blocks} * kLba);
    return IoCommand(op, slba, blocks, prps_);
  }
  bool HostPagesAre(uint8_t fill) {
    for (uint64_t p : pages_) {
      const uint8_t* b = memory_->Translate(p, 4096);
      for (int i = 0; i < 4096; ++i) {
        if (b[i] != fill) return false;
      }
    }
    return true;
  }
  bool FileIs(uint64_t lba, uint32_t blocks, uint8_t fill) {
    for (uint8_t b : FileBytes(path_, lba * kLba, uint64_t{blocks} * kLba)) {
      if (b != fill) return false;
    }
    return true;
  }

  std::string path_;
  std::unique_ptr<HostMemory> memory_;
  DmaMap dma_;  // empty unless a test registers memory
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<Driver> driver_;
  std::vector<uint64_t> pages_;
  PrpDescriptor prps_;
};

TEST_F(RawCommands, WriteThenReadThroughListsAndCoalescing) {
  SubmissionEntry w = Command(Opcode::kWrite, 100, 20, 0x42);  // contiguous pages
  EXPECT_TRUE(driver_->Execute(w).ok());
  EXPECT_TRUE(FileIs(100, 20, 0x42));
  EXPECT_TRUE(FileIs(99, 1, 0xEE));
  EXPECT_TRUE(FileIs(120, 1, 0xEE));
  ControllerStats s = controller_->stats();
  EXPECT_EQ(s.data_segments, 20u);
  EXPECT_EQ(s.io_ops, 1u);  // one contiguous run: one WRITE_FIXED
  EXPECT_EQ(s.bytes_written, 20u * kLba);
  SubmissionEntry r = Command(Opcode::kRead, 100, 20, 0x00);
  EXPECT_TRUE(driver_->Execute(r).ok());
  EXPECT_TRUE(HostPagesAre(0x42));
}

TEST_F(RawCommands, InvalidNamespace) {
  SubmissionEntry w = Command(Opcode::kWrite, 0, 2, 0x11);
  w.nsid = 2;
  EXPECT_EQ(driver_->Execute(w), Failure(kScInvalidNamespace));
  EXPECT_TRUE(FileIs(0, 2, 0xEE));
}

TEST_F(RawCommands, LbaOutOfRange) {
  SubmissionEntry w = Command(Opcode::kWrite, kLbas - 1, 2, 0x11);
  EXPECT_EQ(driver_->Execute(w), Failure(kScLbaOutOfRange));
  EXPECT_TRUE(FileIs(kLbas - 1, 1, 0xEE));
  SubmissionEntry r = Command(Opcode::kRead, kLbas, 1, 0x33);
  EXPECT_EQ(driver_->Execute(r), Failure(kScLbaOutOfRange));
  EXPECT_TRUE(HostPagesAre(0x33));
}

TEST_F(RawCommands, MdtsExceededIsInvalidField) {
  SubmissionEntry w = Command(Opcode::kWrite, 0, 65, 0x11);  // 260 KiB > 256 KiB
  EXPECT_EQ(driver_->Execute(w), Failure(kScInvalidField));
  EXPECT_TRUE(FileIs(0, 65, 0xEE));
  SubmissionEntry ok = Command(Opcode::kWrite, 0, 64, 0x11);
  EXPECT_TRUE(driver_->Execute(ok).ok());
}

TEST_F(RawCommands, InvalidOpcode) {
  SubmissionEntry w = Command(Opcode::kWrite, 0, 1, 0x11);
  w.opcode = 0x7F;
  EXPECT_EQ(driver_->Execute(w), Failure(kScInvalidOpcode));
  EXPECT_TRUE(FileIs(0, 1, 0xEE));
}

TEST_F(RawCommands, PrpOffsetErrorsMoveNoData) {
  SubmissionEntry w = Command(Opcode::kWrite, 10, 8, 0x11);
  w.prp1 += 2;  // bits 1:0
  EXPECT_EQ(driver_->Execute(w), Failure(kScPrpOffsetInvalid));
  // A list entry with an offset, in a later set (the first part would otherwise be fetched).
  SubmissionEntry w2 = Command(Opcode::kWrite, 10, 30, 0x11);
  reinterpret_cast<uint64_t*>(memory_->Translate(w2.prp2, 8))[25] += 0x100;
  EXPECT_EQ(driver_->Execute(w2), Failure(kScPrpOffsetInvalid));
  EXPECT_TRUE(FileIs(10, 30, 0xEE));
  SubmissionEntry r = Command(Opcode::kRead, 10, 2, 0x33);
  r.prp2 += 8;  // second page with an offset
  EXPECT_EQ(driver_->Execute(r), Failure(kScPrpOffsetInvalid));
  EXPECT_TRUE(HostPagesAre(0x33));
}

TEST_F(RawCommands, UnreadableListOrDataIsDataTransferError) {
  SubmissionEntry w = Command(Opcode::kWrite, 10, 8, 0x11);
  w.prp2 = 0x1000;  // a list pointer outside host memory
  EXPECT_EQ(driver_->Execute(w), Failure(kScDataTransferError));
  SubmissionEntry w2 = Command(Opcode::kWrite, 10, 8, 0x11);
  // A data entry (page aligned) that points outside host memory.
  reinterpret_cast<uint64_t*>(memory_->Translate(w2.prp2, 8))[3] =
      memory_->base_address() + memory_->size_bytes();
  EXPECT_EQ(driver_->Execute(w2), Failure(kScDataTransferError));
  EXPECT_TRUE(FileIs(10, 8, 0xEE));
  const ControllerStats s = controller_->stats();
  EXPECT_EQ(s.errors.at(Failure(kScDataTransferError).Field()), 2u);
  EXPECT_EQ(s.io_ops, 0u);
}

TEST_F(RawCommands, RegisteredDataMovesUntilItIsUnregistered) {
  MappedBuffer buffer(16 * kLba);
  std::memset(buffer.data(), 0x6B, 16 * kLba);
  std::vector<uint64_t> data;
  for (int i = 0; i < 16; ++i) data.push_back(reinterpret_cast<uint64_t>(buffer.data()) + i * kLba);
  PrpDescriptor prps = *BuildPrps(*memory_, data, 0, 16 * kLba);  // the list is in the pool
  SubmissionEntry w = IoCommand(Opcode::kWrite, 40, 16, prps);
  EXPECT_EQ(driver_->Execute(w), Failure(kScDataTransferError));  // not registered yet
  EXPECT_TRUE(FileIs(40, 16, 0xEE));
  ASSERT_TRUE(dma_.Register(buffer.data(), 16 * kLba).ok());
  EXPECT_TRUE(driver_->Execute(w).ok());
  EXPECT_TRUE(FileIs(40, 16, 0x6B));
  EXPECT_EQ(controller_->stats().io_ops, 1u);  // contiguous: one plain WRITE
  // Half the buffer unregistered: the run crosses its end, and nothing moves.
  ASSERT_TRUE(dma_.Unregister(buffer.data()).ok());
  ASSERT_TRUE(dma_.Register(buffer.data(), 8 * kLba).ok());
  std::memset(buffer.data(), 0x00, 16 * kLba);
  SubmissionEntry r = w;
  r.opcode = static_cast<uint8_t>(Opcode::kRead);
  EXPECT_EQ(driver_->Execute(r), Failure(kScDataTransferError));
  EXPECT_EQ(buffer.data()[0], 0x00);
  w.slba = 60;
  EXPECT_EQ(driver_->Execute(w), Failure(kScDataTransferError));
  EXPECT_TRUE(FileIs(60, 16, 0xEE));
  memory_->FreePages(prps.list_pages);
}

TEST_F(RawCommands, FlushAndStats) {
  SubmissionEntry f;
  f.opcode = static_cast<uint8_t>(Opcode::kFlush);
  f.nsid = 1;
  EXPECT_TRUE(driver_->Execute(f).ok());
  f.nsid = 0xFFFFFFFF;  // all namespaces
  EXPECT_TRUE(driver_->Execute(f).ok());
  f.nsid = 3;
  EXPECT_EQ(driver_->Execute(f), Failure(kScInvalidNamespace));
  EXPECT_EQ(controller_->stats().flushes, 2u);
}

TEST(Controller, ShortReadBecomesDataTransferError) {
  // The file is shorter than the namespace claims: the kernel returns a short read.
  const std::string path = TempFile("short", 8 * kLba, 0x5A);
  auto memory = *HostMemory::Create(4096, 64);
  ControllerOptions o;
  o.direct = false;
  auto controller = *Controller::Create(memory.get(), path, kLba, 64, o);
  Driver driver(controller.get());
  auto pages = *memory->AllocatePages(4);
  auto prps = *BuildPrps(*memory, pages, 0, 4 * kLba);
  SubmissionEntry r = IoCommand(Opcode::kRead, 6, 4, prps);
  EXPECT_EQ(driver.Execute(r), Failure(kScDataTransferError));
  r.slba = 4;
  EXPECT_TRUE(driver.Execute(r).ok());
  EXPECT_EQ(memory->Translate(pages[3], 1)[0], 0x5A);
  std::filesystem::remove(path);
}

TEST(Controller, RejectsBadOptions) {
  auto memory = *HostMemory::Create(4096, 4);
  ControllerOptions o;
  o.queue_entries = 12;
  EXPECT_EQ(Controller::Create(memory.get(), "/nonexistent", 4096, 1, o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.queue_entries = 8;
  EXPECT_EQ(Controller::Create(memory.get(), "/nonexistent/ns", 4096, 1, o).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ecd::nvme
