// Tests the fault-injecting namespace: the spec parser, each fault on a real NVMe namespace file
// (bytes on disk checked), after/max/probability determinism, sticky flush failures and the I/O
// accounting. lib/store/fault_store_test.cc runs a store over it.
#include "lib/fault/fault_namespace.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/fault/fault_test_util.h"

namespace ecd::store {
namespace {

using Op = FaultRule::Op;
using Kind = FaultRule::Kind;

constexpr uint32_t kLba = 4096;
constexpr uint64_t kLbas = 64;

TEST(ParseFaultSpecTest, ParsesEveryParameter) {
  auto r = ParseFaultSpec(
      "write:eio:p=0.1;read:latency:ms=5;write:torn:sector=512:lba=100+50;flush:eio:after=3:max=1;"
      " any:eio:lba=7 ; write:short:us=1x;");
  EXPECT_FALSE(r.ok());  // us= belongs to latency only.
  EXPECT_TRUE(absl::StrContains(r.status().message(), "\"us=1x\"")) << r.status();

  r = ParseFaultSpec(
      "write:eio:p=0.1;read:latency:ms=5;write:torn:sector=512:lba=100+50;flush:eio:after=3:max=1;"
      " any:eio:lba=7 ; write:short;;read:latency:us=250;");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 7u);
  const auto& v = *r;
  EXPECT_EQ(v[0].op, Op::kWrite);
  EXPECT_EQ(v[0].kind, Kind::kEio);
  EXPECT_DOUBLE_EQ(v[0].probability, 0.1);
  EXPECT_EQ(v[0].lba_count, 0u);
  EXPECT_EQ(v[1].op, Op::kRead);
  EXPECT_EQ(v[1].kind, Kind::kLatency);
  EXPECT_EQ(v[1].latency, absl::Milliseconds(5));
  EXPECT_DOUBLE_EQ(v[1].probability, 1.0);
  EXPECT_EQ(v[2].kind, Kind::kTornWrite);
  EXPECT_EQ(v[2].sector_size, 512u);
  EXPECT_EQ(v[2].first_lba, 100u);
  EXPECT_EQ(v[2].lba_count, 50u);
  EXPECT_EQ(v[3].op, Op::kFlush);
  EXPECT_EQ(v[3].after_ops, 3u);
  EXPECT_EQ(v[3].max_hits, 1u);
  EXPECT_EQ(v[4].op, Op::kAny);
  EXPECT_EQ(v[4].first_lba, 7u);
  EXPECT_EQ(v[4].lba_count, 1u);
  EXPECT_EQ(v[5].kind, Kind::kShortWrite);
  EXPECT_EQ(v[6].latency, absl::Microseconds(250));

  auto empty = ParseFaultSpec("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ParseFaultSpecTest, NamesTheBadToken) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"write", "\"write\""},
      {"erase:eio", "\"erase\""},
      {"write:melt", "\"melt\""},
      {"read:torn", "\"torn\""},
      {"flush:short", "\"short\""},
      {"write:eio:p=2", "\"p=2\""},
      {"write:eio:p=-0.1", "\"p=-0.1\""},
      {"write:eio:p", "\"p\""},
      {"write:eio:lba=x", "\"lba=x\""},
      {"write:eio:lba=5+0", "\"lba=5+0\""},
      {"flush:eio:lba=1", "\"lba=1\""},
      {"read:latency", "\"latency\""},
      {"read:latency:ms=0", "\"ms=0\""},
      {"read:latency:ms=1:us=5", "\"us=5\""},
      {"write:eio:ms=5", "\"ms=5\""},
      {"write:torn:sector=500", "\"sector=500\""},
      {"write:eio:sector=512", "\"sector=512\""},
      {"write:eio:after=-1", "\"after=-1\""},
      {"write:eio:max=many", "\"max=many\""},
      {"write:eio:p=0.5:p=0.5", "given twice"},
      {"write:eio:color=red", "\"color=red\""},
      {"read:eio;write:eio:after=x", "rule 2"},
  };
  for (const auto& [spec, needle] : bad) {
    auto r = ParseFaultSpec(spec);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_TRUE(absl::StrContains(r.status().message(), needle))
        << spec << " -> " << r.status().message();
  }
}

TEST(ParseFaultSpecTest, DeviceSpecs) {
  auto d = ParseDeviceFaultSpecs("2=write:eio:p=0.5, 5=read:latency:ms=1;flush:eio");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 2u);
  ASSERT_EQ(d->at(2).size(), 1u);
  EXPECT_DOUBLE_EQ(d->at(2)[0].probability, 0.5);
  ASSERT_EQ(d->at(5).size(), 2u);
  EXPECT_EQ(d->at(5)[1].op, Op::kFlush);
  for (const char* bad : {"x=read:eio", "read:eio", "1=read:eio,1=write:eio", "3=read:nope"}) {
    auto r = ParseDeviceFaultSpecs(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(
      absl::StrContains(ParseDeviceFaultSpecs("3=read:nope").status().message(), "device 3"));
}

// A real NVMe namespace file of 64 4-KiB LBAs, filled with 0xAA, in a temporary directory.
class FaultNamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ecd_fault_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "nvme0.ns").string();
    auto ns = OpenNvmeNamespace(path_, kLbas * kLba, kLba, /*create=*/true);
    ASSERT_TRUE(ns.ok()) << ns.status();
    const std::vector<uint8_t> old(kLbas * kLba, 0xAA);
    ASSERT_TRUE((*ns)->Write(0, old).ok());
    ASSERT_TRUE((*ns)->Flush().ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<FaultNamespace> Wrap(const std::string& spec, uint64_t seed = 1,
                                       size_t trace = 0) {
    auto ns = OpenNvmeNamespace(path_, kLbas * kLba, kLba, /*create=*/false);
    EXPECT_TRUE(ns.ok()) << ns.status();
    return std::make_unique<FaultNamespace>(*std::move(ns), Rules(spec),
                                            FaultNamespaceOptions{seed, trace});
  }
  // The file's bytes, read past the namespace.
  std::vector<uint8_t> OnDisk(uint64_t lba, uint64_t count) {
    std::vector<uint8_t> bytes(count * kLba);
    int fd = ::open(path_.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(lba * kLba)),
              static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    return bytes;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(FaultNamespaceTest, ReadEioLooksLikeAnUnreadableBlock) {
  auto ns = Wrap("read:eio:lba=10+2");
  std::vector<uint8_t> out(kLba, 0x77);
  absl::Status s = ns->Read(10, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "Unrecovered Read Error")) << s;
  EXPECT_EQ(out, std::vector<uint8_t>(kLba, 0x77));  // Nothing was read.
  std::vector<uint8_t> three(3 * kLba);
  EXPECT_EQ(ns->Read(8, absl::MakeSpan(three)).code(), absl::StatusCode::kDataLoss);  // Overlaps.
  ASSERT_TRUE(ns->Read(12, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out, std::vector<uint8_t>(kLba, 0xAA));
  ASSERT_TRUE(ns->Read(7, absl::MakeSpan(three)).ok());  // [7, 10) does not overlap.
  EXPECT_EQ(CounterOf(*ns, "fault_injected_eio"), 2u);
  EXPECT_GT(CounterOf(*ns, "nvme_read_commands"), 0u);  // The inner namespace's counters.
  // Writes are not affected by a read rule.
  const std::vector<uint8_t> nu(kLba, 0x55);
  ASSERT_TRUE(ns->Write(10, nu).ok());
  ASSERT_TRUE(ns->Flush().ok());
  EXPECT_EQ(OnDisk(10, 1), nu);
}

TEST_F(FaultNamespaceTest, WriteEioLeavesDataUnchanged) {
  auto ns = Wrap("write:eio");
  const std::vector<uint8_t> nu(8 * kLba, 0x55);
  absl::Status s = ns->Write(4, nu);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "Write Fault")) << s;
  ASSERT_TRUE(ns->Flush().ok());
  EXPECT_EQ(OnDisk(0, kLbas), std::vector<uint8_t>(kLbas * kLba, 0xAA));
}

TEST_F(FaultNamespaceTest, ShortWriteWritesAWholeLbaPrefix) {
  std::set<uint64_t> cuts;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SetUp();
    auto ns = Wrap("write:short", seed);
    const std::vector<uint8_t> nu(8 * kLba, 0x55);
    absl::Status s = ns->Write(20, nu);
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "Data Transfer Error")) << s;
    ASSERT_TRUE(ns->Flush().ok());
    const std::vector<uint8_t> disk = OnDisk(0, kLbas);
    size_t k = 0;  // LBAs of the new bytes.
    while (k < 8 && disk[(20 + k) * kLba] == 0x55) ++k;
    ASSERT_LT(k, 8u);
    EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("transferred ", k, " of 8 LBAs"))) << s;
    for (size_t i = 0; i < disk.size(); ++i) {
      const bool fresh = i >= 20 * kLba && i < (20 + k) * kLba;
      ASSERT_EQ(disk[i], fresh ? 0x55 : 0xAA) << "byte " << i << " seed " << seed;
    }
    EXPECT_EQ(CounterOf(*ns, "fault_injected_short_writes"), 1u);
    cuts.insert(k);
  }
  EXPECT_GE(cuts.size(), 3u);  // The cut varies with the seed.
}

TEST_F(FaultNamespaceTest, TornWriteCutsAtASectorBoundary) {
  bool inside_an_lba = false;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SetUp();
    auto ns = Wrap("write:torn:sector=512", seed);
    const std::vector<uint8_t> nu(2 * kLba, 0x55);
    absl::Status s = ns->Write(30, nu);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    ASSERT_TRUE(ns->Flush().ok());
    const std::vector<uint8_t> disk = OnDisk(0, kLbas);
    size_t t = 0;  // Bytes of the new data.
    while (t < nu.size() && disk[30 * kLba + t] == 0x55) ++t;
    ASSERT_GT(t, 0u) << seed;
    ASSERT_LT(t, nu.size()) << seed;
    EXPECT_EQ(t % 512, 0u) << t;
    EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("torn after ", t, " of 8192 bytes")))
        << s;
    for (size_t i = 0; i < disk.size(); ++i) {
      const bool fresh = i >= 30 * kLba && i < 30 * kLba + t;
      ASSERT_EQ(disk[i], fresh ? 0x55 : 0xAA) << "byte " << i << " seed " << seed;
    }
    if (t % kLba != 0) inside_an_lba = true;
  }
  EXPECT_TRUE(inside_an_lba);  // Some cut splits an LBA: partially new bytes in it.
}

TEST_F(FaultNamespaceTest, LatencyDelaysThenForwards) {
  auto ns = Wrap("read:latency:ms=40:lba=3");
  std::vector<uint8_t> out(kLba);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ns->Read(3, absl::MakeSpan(out)).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(40));
  EXPECT_EQ(out, std::vector<uint8_t>(kLba, 0xAA));
  ASSERT_TRUE(ns->Read(4, absl::MakeSpan(out)).ok());
  EXPECT_EQ(CounterOf(*ns, "fault_injected_latency"), 1u);
}

TEST_F(FaultNamespaceTest, AfterAndMaxCountMatchingOps) {
  auto ns = Wrap("write:eio:after=3:max=2:lba=0+4");
  const std::vector<uint8_t> nu(kLba, 0x55);
  std::vector<bool> failed;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(ns->Write(10, nu).ok());  // Outside the rule's range: not counted.
    failed.push_back(!ns->Write(1, nu).ok());
  }
  EXPECT_EQ(failed, std::vector<bool>({false, false, false, true, true, false, false, false}));
  EXPECT_EQ(CounterOf(*ns, "fault_injected_eio"), 2u);
  ns->SetRules({});
  ASSERT_TRUE(ns->Write(1, nu).ok());
}

TEST_F(FaultNamespaceTest, ProbabilityIsDeterministicPerSeed) {
  auto pattern = [&](uint64_t seed, const std::string& spec) {
    auto ns = Wrap(spec, seed);
    std::vector<uint8_t> out(kLba);
    std::vector<bool> failed;
    for (int i = 0; i < 200; ++i) failed.push_back(!ns->Read(i % kLbas, absl::MakeSpan(out)).ok());
    return failed;
  };
  const std::vector<bool> a = pattern(42, "read:eio:p=0.5");
  EXPECT_EQ(a, pattern(42, "read:eio:p=0.5"));
  EXPECT_NE(a, pattern(43, "read:eio:p=0.5"));
  const auto n = std::count(a.begin(), a.end(), true);
  EXPECT_GT(n, 60);
  EXPECT_LT(n, 140);
  EXPECT_EQ(pattern(42, "read:eio:p=0"), std::vector<bool>(200, false));
}

TEST_F(FaultNamespaceTest, FlushFailureIsSticky) {
  auto ns = Wrap("flush:eio:after=1:max=1");
  const std::vector<uint8_t> nu(kLba, 0x55);
  ASSERT_TRUE(ns->Write(0, nu).ok());
  ASSERT_TRUE(ns->Flush().ok());
  absl::Status first = ns->Flush();
  EXPECT_EQ(first.code(), absl::StatusCode::kDataLoss) << first;
  EXPECT_TRUE(absl::StrContains(first.message(), "Write Fault")) << first;
  // max=1 is used up, yet the device never flushes again: earlier writes may be lost.
  for (int i = 0; i < 3; ++i) {
    absl::Status again = ns->Flush();
    EXPECT_FALSE(again.ok());
    EXPECT_TRUE(absl::StrContains(again.message(), "an earlier flush")) << again;
  }
  ns->SetRules({});
  EXPECT_FALSE(ns->Flush().ok());
  EXPECT_EQ(CounterOf(*ns, "fault_flush_failed"), 1u);
  EXPECT_EQ(CounterOf(*ns, "fault_injected_eio"), 1u);
  EXPECT_EQ(CounterOf(*ns, "io_flushes"), 6u);
}

TEST_F(FaultNamespaceTest, AccountsEveryReadAndWrite) {
  auto ns = Wrap("read:eio:lba=40", 1, /*trace=*/3);
  std::vector<uint8_t> two(2 * kLba), one(kLba);
  const std::vector<uint8_t> three(3 * kLba, 0x55);
  ASSERT_TRUE(ns->Read(5, absl::MakeSpan(two)).ok());
  ASSERT_TRUE(ns->Write(7, one).ok());
  EXPECT_EQ(ns->TakeTrace(), (std::vector<IoRecord>{{Op::kRead, 5, 2}, {Op::kWrite, 7, 1}}));
  EXPECT_TRUE(ns->TakeTrace().empty());
  ASSERT_FALSE(ns->Read(40, absl::MakeSpan(one)).ok());  // Failed I/O is accounted too.
  ASSERT_TRUE(ns->Write(9, three).ok());
  ASSERT_TRUE(ns->Flush().ok());
  ASSERT_TRUE(ns->Read(0, absl::MakeSpan(one)).ok());
  ASSERT_TRUE(ns->Write(60, one).ok());
  // Capacity 3: the oldest record of the four was dropped.
  EXPECT_EQ(ns->TakeTrace(),
            (std::vector<IoRecord>{{Op::kWrite, 9, 3}, {Op::kRead, 0, 1}, {Op::kWrite, 60, 1}}));
  EXPECT_EQ(CounterOf(*ns, "io_reads"), 3u);
  EXPECT_EQ(CounterOf(*ns, "io_read_lbas"), 4u);
  EXPECT_EQ(CounterOf(*ns, "io_writes"), 3u);
  EXPECT_EQ(CounterOf(*ns, "io_write_lbas"), 5u);
  EXPECT_EQ(CounterOf(*ns, "io_flushes"), 1u);
  EXPECT_EQ(CounterOf(*ns, "fault_trace_dropped"), 1u);
  // A request the namespace refuses is passed through, neither faulted nor counted.
  EXPECT_EQ(ns->Read(kLbas, absl::MakeSpan(one)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CounterOf(*ns, "io_reads"), 3u);
}

TEST_F(FaultNamespaceTest, FactoryWrapsByDeviceIndexAndRegistryTracksOpens) {
  std::shared_ptr<FaultRegistry> registry;
  NamespaceFactory factory =
      FaultInjectingFactory(NvmeNamespaceFactory({}), {{0, Rules("read:eio")}}, 7, &registry);
  ASSERT_NE(registry, nullptr);
  EXPECT_EQ(registry->Get(0), nullptr);
  auto opened = factory(path_, kLbas * kLba, kLba, false);
  ASSERT_TRUE(opened.ok()) << opened.status();
  FaultNamespace* fault = registry->Get(0);
  ASSERT_EQ(fault, opened->get());
  std::vector<uint8_t> out(kLba);
  EXPECT_EQ((*opened)->Read(0, absl::MakeSpan(out)).code(), absl::StatusCode::kDataLoss);
  registry->SetRules(0, {});
  EXPECT_TRUE((*opened)->Read(0, absl::MakeSpan(out)).ok());
  opened->reset();
  EXPECT_EQ(registry->Get(0), nullptr);  // Unregistered when destroyed.
  auto again = factory(path_, kLbas * kLba, kLba, false);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->Read(0, absl::MakeSpan(out)).ok());  // SetRules holds for reopens.
}

}  // namespace
}  // namespace ecd::store
