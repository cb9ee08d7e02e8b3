// Tests power cuts at the namespace seam: the fates of unflushed writes (vanished, survived,
// torn) byte for byte, overlapping writes, the undo journal's format and torn tail, flushes that
// empty the journal, and a store killed (SIGKILL, in a child process) in the middle of encodes,
// updates and deletes, its namespaces cut, reopened with no operator action: every
// acknowledged object intact, nothing degraded, no extent leaked.
#include "lib/fault/power_cut.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

constexpr uint32_t kLba = 4096;
constexpr uint64_t kLbas = 64;

// CutWrites over an in-memory "file": which bytes each write leaves.
class CutWritesTest : public ::testing::Test {
 protected:
  // Applies `records` to `disk` as writes of `news`, then cuts with `seed`.
  PowerCutReport Cut(std::vector<uint8_t>& disk, const std::vector<UndoRecord>& records,
                     uint64_t seed, uint32_t sector = 512) {
    return CutWrites(records, kLba, PowerCutOptions{seed, sector},
                     [&](uint64_t offset, absl::Span<const uint8_t> bytes) {
                       ASSERT_LE(offset + bytes.size(), disk.size());
                       std::copy(bytes.begin(), bytes.end(), disk.begin() + offset);
                     });
  }
};

TEST_F(CutWritesTest, EachWriteVanishesSurvivesOrIsTornAtSectors) {
  std::map<std::string, int> outcomes;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    // Old bytes 0xAA (recorded) in LBAs 0..3, 0 (a hole) in LBAs 8..9; the writes put 0x55.
    std::vector<uint8_t> disk(16 * kLba, 0);
    std::vector<UndoRecord> records(2);
    records[0] = {0, 4, std::vector<uint8_t>(4 * kLba, 0xAA)};
    records[1] = {8, 2, {}};
    std::fill(disk.begin(), disk.begin() + 4 * kLba, 0x55);
    std::fill(disk.begin() + 8 * kLba, disk.begin() + 10 * kLba, 0x55);
    const PowerCutReport r = Cut(disk, records, seed);
    EXPECT_EQ(r.writes, 2u);
    EXPECT_EQ(r.vanished + r.survived + r.torn, 2u);
    uint64_t restored = 0;
    for (const auto& [first, n, old] : {std::tuple<uint64_t, uint64_t, uint8_t>{0, 4, 0xAA},
                                        std::tuple<uint64_t, uint64_t, uint8_t>{8, 2, 0}}) {
      // Per 512-byte sector: all new or all old, never a mix inside a sector.
      std::string pattern;
      for (uint64_t s = first * 8; s < (first + n) * 8; ++s) {
        const uint8_t b = disk[s * 512];
        ASSERT_TRUE(b == 0x55 || b == old) << seed;
        ASSERT_TRUE(std::all_of(disk.begin() + s * 512, disk.begin() + (s + 1) * 512,
                                [b](uint8_t x) { return x == b; }))
            << "sector " << s << " seed " << seed;
        pattern += b == 0x55 ? 'N' : 'O';
        restored += b == 0x55 ? 0 : 512;
      }
      const bool all_new = pattern.find('O') == std::string::npos;
      const bool all_old = pattern.find('N') == std::string::npos;
      const bool prefix = !all_new && !all_old && pattern.find("ON") == std::string::npos;
      ++outcomes[all_new ? "survived" : all_old ? "vanished" : prefix ? "torn prefix" : "mixed"];
    }
    EXPECT_EQ(r.bytes_restored, restored) << seed;
    // Nothing outside the writes is touched.
    EXPECT_TRUE(std::all_of(disk.begin() + 4 * kLba, disk.begin() + 8 * kLba,
                            [](uint8_t x) { return x == 0; }));
    // The same seed, the same cut.
    std::vector<uint8_t> again(16 * kLba, 0);
    std::fill(again.begin(), again.begin() + 4 * kLba, 0x55);
    std::fill(again.begin() + 8 * kLba, again.begin() + 10 * kLba, 0x55);
    Cut(again, records, seed);
    EXPECT_EQ(again, disk) << seed;
  }
  for (const char* fate : {"survived", "vanished", "torn prefix", "mixed"}) {
    EXPECT_GE(outcomes[fate], 5) << fate;
  }
}

TEST_F(CutWritesTest, OverlappingWritesLeaveAStateOfTheirHistory) {
  // LBA 0 went A -> B -> C (three writes), LBA 1 only A -> B. After any cut, each sector holds
  // the value after some prefix of its writes: C only if the last write to it survived.
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    std::vector<uint8_t> disk(2 * kLba, 'C');
    std::fill(disk.begin() + kLba, disk.end(), 'B');
    std::vector<UndoRecord> records = {
        {0, 2, std::vector<uint8_t>(2 * kLba, 'A')},  // wrote B over A in LBAs 0..1
        {0, 1, std::vector<uint8_t>(kLba, 'B')},      // wrote C over B in LBA 0
    };
    Cut(disk, records, seed, kLba);  // whole-LBA sectors
    const std::string state{static_cast<char>(disk[0]), static_cast<char>(disk[kLba])};
    // LBA 1 is A or B; LBA 0 is A, B or C; and LBA 0 is C whenever the second write survived,
    // whatever the first did.
    ASSERT_TRUE(state[1] == 'A' || state[1] == 'B') << state;
    ASSERT_TRUE(state[0] == 'A' || state[0] == 'B' || state[0] == 'C') << state;
    seen.insert(state);
  }
  // Every combination is reachable: the first write's fate and the second's are independent.
  EXPECT_EQ(seen, (std::set<std::string>{"AA", "AB", "BA", "BB", "CA", "CB"}));
}

// A PowerCutNamespace over a real NVMe namespace file of 64 LBAs filled with 0xAA.
class PowerCutNamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ecd_power_cut_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "nvme0.ns").string();
    journal_ = (dir_ / "nvme0.ns.undo").string();
    auto ns = OpenNvmeNamespace(path_, kLbas * kLba, kLba, /*create=*/true);
    ASSERT_TRUE(ns.ok()) << ns.status();
    ASSERT_TRUE((*ns)->Write(0, std::vector<uint8_t>(kLbas * kLba, 0xAA)).ok());
    ASSERT_TRUE((*ns)->Flush().ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<PowerCutNamespace> Open() {
    auto inner = OpenNvmeNamespace(path_, kLbas * kLba, kLba, /*create=*/false);
    EXPECT_TRUE(inner.ok()) << inner.status();
    auto ns = PowerCutNamespace::Create(*std::move(inner), path_, journal_);
    EXPECT_TRUE(ns.ok()) << ns.status();
    return *std::move(ns);
  }
  std::vector<uint8_t> OnDisk(uint64_t lba, uint64_t count) {
    std::vector<uint8_t> bytes(count * kLba);
    int fd = ::open(path_.c_str(), O_RDONLY);
    EXPECT_EQ(::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(lba * kLba)),
              static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    return bytes;
  }
  uint64_t JournalBytes() { return std::filesystem::file_size(journal_); }

  std::filesystem::path dir_;
  std::string path_, journal_;
};

TEST_F(PowerCutNamespaceTest, AFlushedWriteSurvivesEveryCutAndUnflushedOnesMayNot) {
  std::map<std::string, int> fates;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    SetUp();
    auto ns = Open();
    const uint64_t empty = JournalBytes();
    ASSERT_TRUE(ns->Write(0, std::vector<uint8_t>(2 * kLba, 0x11)).ok());
    ASSERT_TRUE(ns->Flush().ok());
    EXPECT_EQ(JournalBytes(), empty);  // a flush empties the journal
    EXPECT_EQ(ns->unflushed_writes(), 0u);
    ASSERT_TRUE(ns->Write(10, std::vector<uint8_t>(2 * kLba, 0x22)).ok());
    const std::vector<uint8_t> async(3 * kLba, 0x33);
    std::promise<absl::Status> done;
    ns->WriteAsync(20, async, [&done](absl::Status s) { done.set_value(std::move(s)); });
    ASSERT_TRUE(done.get_future().get().ok());
    EXPECT_EQ(ns->unflushed_writes(), 2u);
    EXPECT_GT(JournalBytes(), empty + 5 * kLba);  // the old bytes (0xAA) are in it
    absl::StatusOr<PowerCutReport> r = ns->PowerCut({.seed = seed});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->writes, 2u);
    EXPECT_EQ(JournalBytes(), empty);
    EXPECT_EQ(ns->unflushed_writes(), 0u);
    EXPECT_EQ(OnDisk(0, 2), std::vector<uint8_t>(2 * kLba, 0x11)) << seed;
    for (const auto& [lba, n, fresh] : {std::tuple<uint64_t, uint64_t, uint8_t>{10, 2, 0x22},
                                        std::tuple<uint64_t, uint64_t, uint8_t>{20, 3, 0x33}}) {
      const std::vector<uint8_t> got = OnDisk(lba, n);
      const auto news = std::count(got.begin(), got.end(), fresh);
      const auto olds = std::count(got.begin(), got.end(), 0xAA);
      ASSERT_EQ(static_cast<size_t>(news + olds), got.size()) << seed;
      fates[news == 0 ? "vanished" : olds == 0 ? "survived" : "torn"]++;
    }
    // Elsewhere nothing changed.
    EXPECT_EQ(OnDisk(2, 8), std::vector<uint8_t>(8 * kLba, 0xAA));
    EXPECT_EQ(OnDisk(30, 34), std::vector<uint8_t>(34 * kLba, 0xAA));
    // The namespace goes on from the cut: a write after it is journaled and flushed as before.
    ASSERT_TRUE(ns->Write(40, std::vector<uint8_t>(kLba, 0x44)).ok());
    ASSERT_TRUE(ns->Flush().ok());
    EXPECT_EQ(OnDisk(40, 1), std::vector<uint8_t>(kLba, 0x44));
  }
  EXPECT_GE(fates["vanished"], 3);
  EXPECT_GE(fates["survived"], 3);
  EXPECT_GE(fates["torn"], 3);
}

TEST_F(PowerCutNamespaceTest, JournalFormatAndItsTornTail) {
  {
    auto ns = Open();
    ASSERT_TRUE(ns->Write(5, std::vector<uint8_t>(kLba, 0x55)).ok());
    ASSERT_TRUE(ns->Write(6, std::vector<uint8_t>(kLba, 0x66)).ok());
  }  // killed: the journal stays
  absl::StatusOr<UndoJournal> j = ReadUndoJournal(journal_);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->namespace_path, std::filesystem::absolute(path_).string());
  EXPECT_EQ(j->lba_size, kLba);
  ASSERT_EQ(j->records.size(), 2u);
  EXPECT_EQ(j->records[0].lba, 5u);
  EXPECT_EQ(j->records[0].lba_count, 1u);
  EXPECT_EQ(j->records[0].old, std::vector<uint8_t>(kLba, 0xAA));
  EXPECT_FALSE(j->partial_tail);
  // A record cut short (the process died appending it) is left out: its write never happened.
  const uint64_t full = std::filesystem::file_size(journal_);
  std::filesystem::resize_file(journal_, full - 100);
  j = ReadUndoJournal(journal_);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->records.size(), 1u);
  EXPECT_TRUE(j->partial_tail);
  // A damaged record before the last one is not a torn tail: the journal is refused.
  std::filesystem::resize_file(journal_, full);
  {
    int fd = ::open(journal_.c_str(), O_WRONLY);
    const uint8_t junk = 0xFF;
    ASSERT_EQ(::pwrite(fd, &junk, 1, static_cast<off_t>(full / 2 - 500)), 1);
    ::close(fd);
  }
  j = ReadUndoJournal(journal_);
  EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument) << j.status();
  EXPECT_EQ(ReadUndoJournal((dir_ / "none.undo").string()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ApplyPowerCut(journal_, {.seed = 1, .sector_size = 100}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- A store, killed and cut.

// What the child reports through its pipe, one record per step.
struct Step {
  enum Kind : uint8_t { kEncode, kUpdate, kDelete };
  uint8_t kind = kEncode;
  uint8_t done = 0;  // 0: about to start; 1: acknowledged
  uint32_t object = 0;
  uint32_t seed = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

StoreOptions CutStoreOptions(const std::filesystem::path& dir) {
  StoreOptions o;
  o.data_dir = dir.string();
  o.device_count = 8;
  o.device_size = 16 << 20;
  o.default_block_size = 4096;
  o.memory_limit = 8 * o.nvme.host_memory_bytes + (32 << 20);
  o.flush_bytes = 48 << 10;  // encodes and updates flush on the way, too
  o.fs_reserve_bytes = 16 << 20;
  return o;
}

std::string ObjectName(uint32_t object) { return absl::StrCat("o", object); }

// The child: encodes, updates and deletes objects with content from seeds, forever, telling
// the parent each step before it starts and once it is acknowledged.
[[noreturn]] void RunUntilKilled(const std::filesystem::path& dir, const std::string& journals,
                                 uint32_t round, int out,
                                 std::map<uint32_t, std::vector<uint8_t>> model) {
  StoreOptions o = CutStoreOptions(dir);
  o.namespace_factory = PowerCutJournalFactory(NvmeNamespaceFactory(o.nvme), journals);
  auto store = Store::Open(o);
  if (!store.ok()) {
    std::fprintf(stderr, "child: the store did not open: %s\n",
                 std::string(store.status().ToString()).c_str());
    ::_exit(3);
  }
  std::mt19937 rng(round * 7919);
  uint32_t next = round * 1000;
  for (int i = 0; i < 100000; ++i) {
    Step step;
    step.seed = rng();
    const int dice = static_cast<int>(rng() % 10);
    if (model.empty() || (dice < 4 && model.size() < 40)) {
      step.kind = Step::kEncode;
      step.object = next++;
      step.length = 1 + rng() % 400000;
    } else {
      auto it = model.begin();
      std::advance(it, rng() % model.size());
      step.object = it->first;
      if (dice < 8 || model.size() < 6) {
        step.kind = Step::kUpdate;
        step.offset = rng() % it->second.size();
        step.length = 1 + rng() % 30000;  // may append
      } else {
        step.kind = Step::kDelete;
      }
    }
    if (::write(out, &step, sizeof(step)) != sizeof(step)) ::_exit(4);
    const std::vector<uint8_t> bytes = RandomBytes(step.length, step.seed);
    bool ok = false;
    if (step.kind == Step::kEncode) {
      EncodeParams p;
      p.name = ObjectName(step.object);
      VectorSource src(bytes);
      ok = (*store)->Encode(p, src).ok();
      if (ok) model[step.object] = bytes;
    } else if (step.kind == Step::kUpdate) {
      VectorSource src(bytes);
      ok = (*store)->Update(ObjectName(step.object), step.offset, src, /*append=*/true).ok();
      if (ok) {
        std::vector<uint8_t>& m = model[step.object];
        m.resize(std::max<size_t>(m.size(), step.offset + step.length));
        std::copy(bytes.begin(), bytes.end(), m.begin() + static_cast<long>(step.offset));
      }
    } else {
      ok = (*store)->Delete(ObjectName(step.object)).ok();
      if (ok) model.erase(step.object);
    }
    if (!ok) ::_exit(5);  // Nothing fails here unless something is wrong; the parent sees it.
    step.done = 1;
    if (::write(out, &step, sizeof(step)) != sizeof(step)) ::_exit(4);
  }
  ::_exit(0);
}

class PowerCutStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ecd_power_cut_store_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    journals_ = (dir_ / "journal").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Whether some journal holds a record (is longer than its header).
  bool Unflushed() const {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(journals_, ec)) {
      const uint64_t header = 20 + (dir_ / "data" / "devices" / "nvme0.ns").string().size();
      if (e.is_regular_file(ec) && e.file_size(ec) > header) return true;
    }
    return false;
  }

  std::filesystem::path dir_;
  std::string journals_;
};

TEST_F(PowerCutStoreTest, EveryAcknowledgedObjectSurvivesKillAndCut) {
  std::map<uint32_t, std::vector<uint8_t>> model;
  std::mt19937 rng(2024);
  PowerCutReport total;
  int rounds_with_unflushed_writes = 0;
  for (uint32_t round = 1; round <= 20; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    // No thread of this process runs now (the last round's store is gone): fork is safe.
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      RunUntilKilled(dir_ / "data", journals_, round, pipe_fds[1], model);
    }
    ::close(pipe_fds[1]);
    // Once it is at work (its first step told), let it run a while, then kill it.
    std::vector<Step> steps;
    Step step;
    if (::read(pipe_fds[0], &step, sizeof(step)) == sizeof(step)) steps.push_back(step);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 300));
    // Most rounds cut while writes are unflushed (a journal holds a record; it was checked
    // just before, so a flush may still empty it); every fourth at whatever moment it is.
    for (int poll = 0; round % 4 != 0 && poll < 5000 && !Unflushed(); ++poll) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "the child exited early with " << WEXITSTATUS(wstatus);
    // What it acknowledged, and the step it was in.
    while (::read(pipe_fds[0], &step, sizeof(step)) == sizeof(step)) steps.push_back(step);
    ::close(pipe_fds[0]);
    std::optional<Step> pending;
    for (const Step& s : steps) {
      if (s.done == 0) {
        pending = s;
        continue;
      }
      pending.reset();
      const std::vector<uint8_t> bytes = RandomBytes(s.length, s.seed);
      if (s.kind == Step::kEncode) {
        model[s.object] = bytes;
      } else if (s.kind == Step::kUpdate) {
        std::vector<uint8_t>& m = model[s.object];
        m.resize(std::max<size_t>(m.size(), s.offset + s.length));
        std::copy(bytes.begin(), bytes.end(), m.begin() + static_cast<long>(s.offset));
      } else {
        model.erase(s.object);
      }
    }
    // The power cut: every write not covered by a flush vanishes, survives or is torn.
    auto cut = ApplyPowerCutToDir(journals_, {.seed = round * 31 + 1});
    ASSERT_TRUE(cut.ok()) << cut.status();
    uint64_t unflushed = 0;
    for (const auto& [name, r] : *cut) {
      unflushed += r.writes;
      total.vanished += r.vanished;
      total.survived += r.survived;
      total.torn += r.torn;
    }
    rounds_with_unflushed_writes += unflushed > 0;
    std::printf("round %u: %zu steps told, %llu unflushed writes cut\n", round, steps.size(),
                static_cast<unsigned long long>(unflushed));
    // Restart on the cut namespaces, with no operator action.
    StoreOptions o = CutStoreOptions(dir_ / "data");
    auto store = Store::Open(o);
    ASSERT_TRUE(store.ok()) << store.status();
    auto read = [&](uint32_t object) -> absl::StatusOr<std::vector<uint8_t>> {
      VectorSink sink;
      absl::Status s = (*store)->Read(ObjectName(object), 0, 0, sink);
      if (!s.ok()) return s;
      return sink.bytes;
    };
    if (pending) {  // Its acknowledgement may be all that was lost: old or new.
      const Step& s = *pending;
      absl::StatusOr<std::vector<uint8_t>> got = read(s.object);
      const std::vector<uint8_t> bytes = RandomBytes(s.length, s.seed);
      if (s.kind == Step::kEncode) {
        if (got.ok()) {
          ASSERT_EQ(*got, bytes) << "an unacknowledged encode committed other bytes";
          model[s.object] = bytes;
        } else {
          ASSERT_TRUE(absl::IsNotFound(got.status())) << got.status();
        }
      } else if (s.kind == Step::kUpdate) {
        ASSERT_TRUE(got.ok()) << got.status();
        std::vector<uint8_t> updated = model[s.object];
        updated.resize(std::max<size_t>(updated.size(), s.offset + s.length));
        std::copy(bytes.begin(), bytes.end(), updated.begin() + static_cast<long>(s.offset));
        if (*got == updated) {
          model[s.object] = updated;
        } else {
          ASSERT_EQ(*got, model[s.object]) << "neither the old nor the new version";
        }
      } else if (!got.ok()) {
        ASSERT_TRUE(absl::IsNotFound(got.status())) << got.status();
        model.erase(s.object);
      }
    }
    auto listed = ListAll(**store);
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), model.size());
    uint64_t blocks = 0;
    for (const ObjectStatus& st : *listed) {
      uint32_t object = 0;
      ASSERT_TRUE(absl::SimpleAtoi(st.object.name.substr(1), &object)) << st.object.name;
      ASSERT_TRUE(model.count(object)) << st.object.name;
      EXPECT_EQ(st.degraded_stripes, 0u) << st.object.name;
      // Every block, data and parity, passes its CRC32C: nothing needed a rebuild.
      auto verified = (*store)->Stat(st.object.name, false, /*verify=*/true);
      ASSERT_TRUE(verified.ok()) << verified.status();
      EXPECT_EQ(verified->degraded_stripes, 0u) << st.object.name;
      absl::StatusOr<std::vector<uint8_t>> got = read(object);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, model[object]) << st.object.name;
      blocks += st.object.stripe_count * (st.object.data_blocks + st.object.parity_blocks);
    }
    // No extent leaked: the devices' used space is the blocks plus their metadata (the label
    // and the block-record log).
    auto devices = (*store)->admin().ListDevices();
    ASSERT_TRUE(devices.ok());
    uint64_t used = 0;
    for (const DeviceStatus& d : *devices) {
      EXPECT_EQ(d.record.state, DeviceState::kOnline);
      used += d.used_bytes - d.metadata_bytes;
    }
    EXPECT_EQ(used, blocks * 4096);
    store->reset();  // Joins its threads before the next fork.
  }
  // The cuts had unflushed writes to work on, and every fate happened.
  EXPECT_GE(rounds_with_unflushed_writes, 10);
  EXPECT_GT(total.vanished, 0u);
  EXPECT_GT(total.survived, 0u);
  EXPECT_GT(total.torn, 0u);
  EXPECT_GT(model.size(), 5u);
}

}  // namespace
}  // namespace ecd::store
