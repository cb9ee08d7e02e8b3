// Controller tests: random data through PRPs, the controller and io_uring round-trips byte-exact
// at random LBAs across many queue wraparounds; every invalid command fails with its NVMe
// status and moves no data; contiguous pages coalesce into one I/O; short transfers and
// unreadable memory become statuses.
#include "lib/nvme/controller.h"

#include <fcntl.h>
#include <gtest/gtest.h>
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

// Raw commands against a controller, to check statuses and that failed commands move nothing.
class RawCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempFile("raw", kLbas * kLba, 0xEE);
    memory_ = *HostMemory::Create(4096, 512);
    ControllerOptions o;
    o.mdts = 6;  // 256 KiB
    o.queue_entries = 8;
    controller_ = *Controller::Create(memory_.get(), path_, kLba, kLbas, o);
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
    SubmissionEntry e;
    e.opcode = static_cast<uint8_t>(op);
    e.nsid = 1;
    e.slba = slba;
    e.nlb = static_cast<uint16_t>(blocks - 1);
    e.prp1 = prps_.prp1;
    e.prp2 = prps_.prp2;
    return e;
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
  SubmissionEntry r;
  r.opcode = static_cast<uint8_t>(Opcode::kRead);
  r.nsid = 1;
  r.slba = 6;
  r.nlb = 3;
  r.prp1 = prps.prp1;
  r.prp2 = prps.prp2;
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
