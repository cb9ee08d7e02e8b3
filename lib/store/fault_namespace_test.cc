// Tests the fault-injecting namespace: the spec parser, each fault on a real NVMe namespace file
// (bytes on disk checked), after/max/probability determinism, sticky flush failures, the I/O
// accounting, and a store whose devices misbehave.
#include "lib/store/fault_namespace.h"

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
#include "lib/repair/scrubber.h"
#include "lib/store/catalog_rebuild.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

using Op = FaultRule::Op;
using Kind = FaultRule::Kind;

constexpr uint32_t kLba = 4096;
constexpr uint64_t kLbas = 64;

std::vector<FaultRule> Rules(const std::string& spec) {
  absl::StatusOr<std::vector<FaultRule>> r = ParseFaultSpec(spec);
  EXPECT_TRUE(r.ok()) << spec << ": " << r.status();
  return r.ok() ? *r : std::vector<FaultRule>();
}

uint64_t CounterOf(const Namespace& ns, const std::string& name) {
  for (const auto& [n, v] : ns.Counters()) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

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

// A store of 8 devices (TempStoreTest) whose namespaces go through FaultInjectingFactory.
class FaultStoreTest : public TempStoreTest {
 protected:
  void OpenWithFaults(std::map<uint32_t, std::vector<FaultRule>> rules) {
    Open(FaultInjectingFactory(NvmeNamespaceFactory({}), std::move(rules), 99, &registry_));
  }
  // Encode fails cleanly: an error, no object, no space used; then works without the fault.
  void ExpectEncodeFailsCleanly(uint32_t device, absl::StatusCode code) {
    const uint64_t free_before = TotalFree();
    const auto data = RandomBytes(100000, 5);  // 7 stripes of 6 blocks: every device is used.
    auto o = Put("doomed", data);
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), code) << o.status();
    EXPECT_EQ(store_->Stat("doomed", false, false).status().code(), absl::StatusCode::kNotFound);
    auto listed = store_->List();
    ASSERT_TRUE(listed.ok());
    EXPECT_TRUE(listed->empty());
    EXPECT_EQ(TotalFree(), free_before);

    registry_->SetRules(device, {});
    auto ok = Put("doomed", data);
    ASSERT_TRUE(ok.ok()) << ok.status();
    VectorSink sink;
    ASSERT_TRUE(store_->Read("doomed", 0, 0, sink).ok());
    EXPECT_EQ(sink.bytes, data);
    EXPECT_LT(TotalFree(), free_before);
  }

  std::shared_ptr<FaultRegistry> registry_;
};

TEST_F(FaultStoreTest, ReadsAreDegradedButExactWhenADeviceFailsEveryRead) {
  OpenWithFaults({});
  std::vector<std::vector<uint8_t>> objects;
  for (uint32_t i = 0; i < 4; ++i) {
    objects.push_back(RandomBytes(50000 + 777 * i, 100 + i));
    ASSERT_TRUE(Put(absl::StrCat("o", i), objects.back()).ok());
  }
  // Every read fails from now on. (At an open, the label would not read: the device is down.)
  registry_->Get(2)->SetRules(Rules("read:eio"));
  uint32_t reconstructed = 0;
  for (uint32_t i = 0; i < objects.size(); ++i) {
    VectorSink sink;
    absl::Status s = store_->Read(absl::StrCat("o", i), 0, 0, sink);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(sink.bytes, objects[i]);
    reconstructed += sink.reconstructed;
  }
  EXPECT_GT(reconstructed, 0u);
  ASSERT_NE(registry_->Get(2), nullptr);
  EXPECT_GT(CounterOf(*registry_->Get(2), "fault_injected_eio"), 0u);
  EXPECT_EQ(CounterOf(*registry_->Get(3), "fault_injected_eio"), 0u);
  // The counters reach `ecctl device ls` through ListDevices.
  auto devices = store_->ListDevices();
  ASSERT_TRUE(devices.ok());
  bool exported = false;
  for (const auto& [name, v] : (*devices)[2].counters) exported |= name == "fault_injected_eio";
  EXPECT_TRUE(exported);
}

// The writes of rebuilt blocks are asynchronous; one that fails must still fail the recover,
// commit nothing of its batch and leak no space, whichever stripe it belonged to.
TEST_F(FaultStoreTest, ARecoverWhoseRebuiltBlockWriteFailsCommitsNothing) {
  OpenWithFaults({});
  const auto data = RandomBytes(40 * 16384, 31);
  ASSERT_TRUE(Put("r", data).ok());
  ASSERT_TRUE(store_->SetDeviceState(1, DeviceState::kFailed).ok());
  auto on_device_1 = [&] {
    auto st = store_->Stat("r", true, false);
    EXPECT_TRUE(st.ok());
    uint64_t n = 0;
    for (const auto& s : st->stripes) {
      for (const auto& b : s.blocks) n += b.record.device == 1;
    }
    return n;
  };
  const uint64_t lost = on_device_1();
  ASSERT_GT(lost, 4u);
  const uint64_t free_before = TotalFree();
  for (bool missing_only : {true, false}) {
    // Every device takes the first writes, then fails them: some stripes' writes land, a
    // later one's do not.
    for (uint32_t d = 0; d < 8; ++d) {
      if (d != 1) registry_->SetRules(d, Rules("write:eio:after=1"));
    }
    RecoverOptions options;
    options.check_all = !missing_only;
    auto p = store_->Recover("r", nullptr, options);
    EXPECT_TRUE(absl::IsUnavailable(p.status()))
        << "missing_only " << missing_only << ": " << p.status();
    EXPECT_EQ(TotalFree(), free_before) << "missing_only " << missing_only;
    EXPECT_EQ(on_device_1(), lost) << "missing_only " << missing_only;
  }
  for (uint32_t d = 0; d < 8; ++d) registry_->SetRules(d, {});
  RecoverOptions options;
  options.check_all = false;
  auto p = store_->Recover("r", nullptr, options);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->blocks_rebuilt, lost);
  EXPECT_EQ(on_device_1(), 0u);
  VectorSink sink;
  ASSERT_TRUE(store_->Read("r", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data);
  EXPECT_EQ(sink.reconstructed, 0u);
}

TEST_F(FaultStoreTest, WriteEioFailsTheEncodeCleanly) {
  OpenWithFaults({});
  registry_->SetRules(3, Rules("write:eio"));
  ExpectEncodeFailsCleanly(3, absl::StatusCode::kDataLoss);
}

TEST_F(FaultStoreTest, TornWriteFailsTheEncodeCleanly) {
  OpenWithFaults({});
  registry_->SetRules(5, Rules("write:torn:sector=512"));
  ExpectEncodeFailsCleanly(5, absl::StatusCode::kDataLoss);
}

// A device that cannot write its block records at a start does not stop the start: it is
// failing (it takes no new blocks), the others serve, and bringing it online again gives it
// its record log back.
TEST_F(FaultStoreTest, ADeviceThatCannotWriteAtAStartIsFailingAndTheOthersServe) {
  OpenWithFaults({{3, Rules("write:eio")}});
  auto devices = store_->ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[3].record.state, DeviceState::kFailing);
  const auto data = RandomBytes(100000, 8);
  auto o = Put("x", data);
  ASSERT_TRUE(o.ok()) << o.status();
  auto st = store_->Stat("x", /*with_blocks=*/true, /*verify=*/true);
  ASSERT_TRUE(st.ok());
  for (const auto& stripe : st->stripes) {
    for (const auto& b : stripe.blocks) EXPECT_NE(b.record.device, 3u);
  }
  registry_->SetRules(3, {});
  auto online = store_->SetDeviceState(3, DeviceState::kOnline);
  ASSERT_TRUE(online.ok()) << online.status();
  VectorSink sink;
  ASSERT_TRUE(store_->Read("x", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data);
  ASSERT_TRUE(Put("y", RandomBytes(100000, 9)).ok());  // 7 stripes of 6: device 3 has blocks.
  store_.reset();
  CatalogToolOptions tool;
  tool.data_dir = dir_.string();
  absl::StatusOr<CheckReport> check = CheckCatalog(tool);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->differences.empty()) << absl::StrJoin(check->differences, "\n");
}

TEST_F(FaultStoreTest, FlushFailureFailsTheEncodeAndMakesTheDeviceSuspect) {
  OpenWithFaults({});
  registry_->SetRules(1, Rules("flush:eio"));
  std::vector<std::pair<uint32_t, std::string>> suspects;
  store_->SetSuspectListener(
      [&](uint32_t device, const std::string& reason) { suspects.emplace_back(device, reason); });
  const uint64_t free_before = TotalFree();
  const auto data = RandomBytes(100000, 6);
  auto o = Put("x", data);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kUnavailable) << o.status();
  EXPECT_TRUE(absl::StrContains(o.status().message(), "device 1")) << o.status();
  EXPECT_EQ(TotalFree(), free_before);
  EXPECT_EQ(store_->Stat("x", false, false).status().code(), absl::StatusCode::kNotFound);
  // The device is suspect: failing (persisted), told to the listener once, and given no new
  // blocks, so the failed flush is never retried into a success on it.
  ASSERT_EQ(suspects.size(), 1u);
  EXPECT_EQ(suspects[0].first, 1u);
  EXPECT_TRUE(absl::StrContains(suspects[0].second, "flush failed")) << suspects[0].second;
  auto devices = store_->ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[1].record.state, DeviceState::kFailing);
  auto ok = Put("x", data);  // The retry goes to the 7 other devices.
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto st = store_->Stat("x", /*with_blocks=*/true, /*verify=*/true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->degraded_stripes, 0u);
  for (const auto& stripe : st->stripes) {
    for (const auto& b : stripe.blocks) EXPECT_NE(b.record.device, 1u);
  }
  VectorSink sink;
  ASSERT_TRUE(store_->Read("x", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data);
  EXPECT_EQ(suspects.size(), 1u);
  // A restart keeps it failing; failing and reopening the device (a replacement) brings a
  // fresh namespace that flushes again.
  Open();
  devices = store_->ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[1].record.state, DeviceState::kFailing);
  ASSERT_TRUE(store_->SetDeviceState(1, DeviceState::kFailed).ok());
  registry_->SetRules(1, {});
  ASSERT_TRUE(store_->SetDeviceState(1, DeviceState::kOnline).ok());
  ASSERT_TRUE(Put("y", data).ok());
}

// With StoreOptions::flush_bytes, a flush that fails on the way fails the encode there, as the
// last one would: nothing stored, no space held, the device suspect.
TEST_F(FaultStoreTest, AFlushOnTheWayThatFailsFailsTheEncode) {
  tweak_ = [](StoreOptions& o) { o.flush_bytes = 2 * 6 * 4096; };  // Every 2 stripes of 4 + 2.
  OpenWithFaults({{1, Rules("flush:eio:after=1")}});               // Its second flush fails.
  const uint64_t free_before = TotalFree();
  const auto data = RandomBytes(40 * 16384, 23);  // 40 stripes: 240 block writes in all.
  const auto writes = [&] { return CounterSum(*store_->ListDevices(), "nvme_write_commands"); };
  const uint64_t writes_before = writes();
  auto o = Put("x", data);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kUnavailable) << o.status();
  EXPECT_TRUE(absl::StrContains(o.status().message(), "device 1")) << o.status();
  // It stopped on the way: well before the 240 writes of the whole object.
  EXPECT_LT(writes() - writes_before, 120u);
  EXPECT_EQ(TotalFree(), free_before);
  EXPECT_EQ(store_->Stat("x", false, false).status().code(), absl::StatusCode::kNotFound);
  auto devices = store_->ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[1].record.state, DeviceState::kFailing);
}

// The same for an update: it fails on the way and leaves the old version whole, no space held.
TEST_F(FaultStoreTest, AFlushOnTheWayThatFailsFailsTheUpdateAndKeepsTheOldVersion) {
  tweak_ = [](StoreOptions& o) { o.flush_bytes = 2 * 6 * 4096; };  // Every 2 stripes of 4 + 2.
  OpenWithFaults({});
  const auto data = RandomBytes(40 * 16384, 24);
  ASSERT_TRUE(Put("x", data).ok());
  const uint64_t free_before = TotalFree();
  registry_->SetRules(1, Rules("flush:eio:after=1"));  // Its second flush from now on fails.
  const auto writes = [&] { return CounterSum(*store_->ListDevices(), "nvme_write_commands"); };
  const uint64_t writes_before = writes();
  const auto patch = RandomBytes(data.size(), 25);  // Every stripe, whole: 240 block writes.
  VectorSource source(patch);
  auto r = store_->Update("x", 0, source, false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "device 1")) << r.status();
  EXPECT_LT(writes() - writes_before, 120u);  // It stopped on the way.
  EXPECT_EQ(TotalFree(), free_before);
  auto st = store_->Stat("x", false, false);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->object.version, 1u);
  VectorSink sink;
  ASSERT_TRUE(store_->Read("x", 0, 0, sink).ok());
  EXPECT_EQ(sink.bytes, data);
}

// Updates (the store's riskiest write) under faults on one device: each fails cleanly, leaving
// the old version whole and no space held, or completes (degraded); nothing acknowledged is lost.
TEST_F(FaultStoreTest, UpdateWithATornOrFailedWriteLeavesTheOldVersionWhole) {
  OpenWithFaults({});
  const auto data = RandomBytes(6 * 4 * 4096, 11);  // 6 stripes of 4+2: every device is used
  ASSERT_TRUE(Put("o", data).ok());
  const uint64_t free_before = TotalFree();
  for (const char* spec : {"write:torn:sector=512", "write:eio", "write:short"}) {
    SCOPED_TRACE(spec);
    for (uint32_t d = 0; d < 8; ++d) registry_->SetRules(d, Rules(spec));
    const std::vector<uint8_t> patch(3 * 4096 + 100, 0xab);
    VectorSource src(patch);
    auto r = store_->Update("o", 5000, src, /*append=*/false);
    ASSERT_FALSE(r.ok());
    for (uint32_t d = 0; d < 8; ++d) registry_->SetRules(d, {});
    auto st = store_->Stat("o", false, /*verify=*/true);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->object.version, 1u);
    EXPECT_EQ(st->degraded_stripes, 0u);
    EXPECT_EQ(Get("o").value(), data);
    EXPECT_EQ(TotalFree(), free_before);
  }
}

TEST_F(FaultStoreTest, RandomFaultsNeverLoseAnAcknowledgedUpdate) {
  // Device 2 fails a third of its reads, device 5 a fifth of its writes (torn or EIO).
  OpenWithFaults({});
  std::vector<uint8_t> model = RandomBytes(8 * 4 * 4096 + 777, 12);
  ASSERT_TRUE(Put("o", model).ok());
  registry_->SetRules(2, Rules("read:eio:p=0.33"));
  registry_->SetRules(5, Rules("write:eio:p=0.1;write:torn:sector=512:p=0.1"));
  std::mt19937 rng(13);
  int acknowledged = 0, refused = 0;
  uint64_t version = 1;
  for (int i = 0; i < 60; ++i) {
    const size_t offset = rng() % model.size();
    const size_t n = 1 + rng() % std::min<size_t>(model.size() - offset, 20000);
    const std::vector<uint8_t> patch = RandomBytes(n, 100 + i);
    VectorSource src(patch);
    auto r = store_->Update("o", offset, src, /*append=*/false);
    if (r.ok()) {
      ++acknowledged;
      std::copy(patch.begin(), patch.end(), model.begin() + static_cast<long>(offset));
      EXPECT_EQ(r->object.version, ++version);
    } else {
      ++refused;
    }
    VectorSink sink;  // Every read, degraded or not, is the last acknowledged version.
    ASSERT_TRUE(store_->Read("o", 0, 0, sink).ok());
    ASSERT_EQ(sink.bytes, model) << "after update " << i;
  }
  EXPECT_GT(acknowledged, 10);
  EXPECT_GT(refused, 0);
  registry_->SetRules(2, {});
  registry_->SetRules(5, {});
  // Without the faults: byte-exact, and every stripe's parity matches its data.
  EXPECT_EQ(Get("o").value(), model);
  repair::Scrubber scrubber(store_.get(),
                            repair::ScrubberOptions{.interval = absl::ZeroDuration()});
  auto report = scrubber.ScrubNow({"o"}, repair::ScrubOptions{.repair = false}, nullptr, nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->found.parity_mismatches, 0u);
  EXPECT_EQ(report->found.blocks_corrupt, 0u);
  EXPECT_EQ(report->found.lost_stripes, 0u);
}

}  // namespace
}  // namespace ecd::store
