// cxl_bench: how fast ecd understands and acts on CXL events.
//
//   cxl_bench [--records N] [--runs R]
//
// 1. Decode rate: N 128-byte records (General Media, DRAM, Memory Module and generic, with
//    random contents) through DecodeRecord, and through DecodeRecord + RecordToJson, in
//    records per second.
// 2. Inject to first rebuilt block: an in-process store (8 devices, 4 KiB blocks, one 4 MiB
//    object) with the repair planner, the policy and the CXL monitor. A record is inserted
//    into a device's log; the clock stops when the rebuild job reports its first moved block.
//    Measured R times for a General Media error at a block's DPA, and once for a Memory Module
//    "replacement needed" record (evacuation).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lib/cxl/event_record.h"
#include "lib/repair/cxl_monitor.h"
#include "lib/repair/event_policy.h"
#include "lib/repair/repair_planner.h"
#include "lib/store/store.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::array<uint8_t, 128>> MakeRecords(size_t n) {
  std::mt19937_64 rng(1);
  const ecd::cxl::Uuid kinds[] = {ecd::cxl::kGeneralMediaUuid, ecd::cxl::kDramUuid,
                                  ecd::cxl::kMemoryModuleUuid, ecd::cxl::kPhysicalSwitchUuid};
  std::vector<std::array<uint8_t, 128>> out(n);
  for (size_t i = 0; i < n; ++i) {
    for (auto& b : out[i]) b = static_cast<uint8_t>(rng());
    std::memcpy(out[i].data(), kinds[i % 4].bytes.data(), 16);
    out[i][0x10] = 0x80;
  }
  return out;
}

class Source : public ecd::store::ByteSource {
 public:
  explicit Source(size_t n) : left_(n) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override {
    const size_t n = std::min(buffer.size(), left_);
    for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<uint8_t>(rng_());
    left_ -= n;
    return n;
  }

 private:
  size_t left_;
  std::mt19937 rng_{7};
};

double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Inserts `record` into device `dev`'s Failure log and waits for the first moved block of the
// job it causes; returns milliseconds.
double InjectToFirstBlock(ecd::repair::CxlMonitor& monitor, ecd::repair::RepairPlanner& planner,
                          uint32_t dev, const ecd::cxl::EventRecord& record) {
  const size_t jobs_before = planner.List().size();
  const auto start = Clock::now();
  (void)monitor.device(dev)->InsertRecord(ecd::cxl::EventLog::kFailure,
                                          ecd::cxl::EncodeRecord(record));
  while (Clock::now() - start < std::chrono::seconds(30)) {
    std::vector<ecd::repair::RebuildJob> jobs = planner.List();
    if (jobs.size() > jobs_before) {
      for (const auto& j : jobs) {
        if (j.id > jobs_before && j.blocks_moved > 0) {  // ids count up from 1
          return Millis(Clock::now() - start);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return -1;
}

// Milliseconds from inject to the first rebuilt block: per General Media run (sorted), and for
// the Memory Module record.
struct Reactions {
  std::vector<double> general_media;
  double memory_module = -1;
};

// Runs the planner, the policy and the CXL monitor over `store` (which holds the object "bench")
// and measures their reactions; all three are gone when it returns, before the store. nullopt
// when they cannot be set up.
std::optional<Reactions> MeasureReactions(ecd::store::Store* store, int runs) {
  ecd::repair::RepairPlanner planner(store, {});
  ecd::repair::EventPolicy policy(store, &planner, {});
  auto monitor = ecd::repair::CxlMonitor::Create(&policy, 8, {});
  if (!monitor.ok()) return std::nullopt;
  auto st = store->Stat("bench", true, false);
  if (!st.ok() || st->stripes.empty()) return std::nullopt;
  Reactions out;
  for (int r = 0; r < runs; ++r) {
    const auto& b = st->stripes[static_cast<size_t>(r) * 7 % st->stripes.size()].blocks[0].record;
    ecd::cxl::GeneralMediaRecord g;
    g.header.set_severity(ecd::cxl::Severity::kFailure);
    g.physical_address = b.lba * 4096;
    g.descriptor = ecd::cxl::kDescriptorUncorrectable;
    out.general_media.push_back(InjectToFirstBlock(**monitor, planner, b.device, g));
    planner.WaitIdle(absl::Seconds(30));
  }
  std::sort(out.general_media.begin(), out.general_media.end());
  ecd::cxl::MemoryModuleRecord m;
  m.header.set_severity(ecd::cxl::Severity::kFailure);
  m.health.health_status = ecd::cxl::kHealthReplacementNeeded;
  out.memory_module = InjectToFirstBlock(**monitor, planner, 3, m);
  planner.WaitIdle(absl::Seconds(60));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  size_t records = 200000;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--records") records = std::stoul(argv[i + 1]);
    if (std::string(argv[i]) == "--runs") runs = std::stoi(argv[i + 1]);
  }
  // 1. Decode rate.
  const auto images = MakeRecords(records);
  size_t ok = 0;
  auto t0 = Clock::now();
  for (const auto& r : images) ok += ecd::cxl::DecodeRecord(r).ok();
  const double decode_s = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t json_bytes = 0;
  t0 = Clock::now();
  for (const auto& r : images) {
    auto rec = ecd::cxl::DecodeRecord(r);
    if (rec.ok()) json_bytes += ecd::cxl::RecordToJson(*rec, "Failure").size();
  }
  const double json_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "decode: %zu records (%zu ok), %.0f records/s; decode + JSON: %.0f records/s "
      "(%.0f bytes of JSON per record)\n",
      records, ok, records / decode_s, records / json_s, static_cast<double>(json_bytes) / records);

  // 2. Inject to first rebuilt block.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cxl_bench_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ecd::store::StoreOptions o;
  o.data_dir = dir.string();
  o.device_count = 8;
  o.device_size = 64 << 20;
  o.default_block_size = 4096;
  auto store = ecd::store::Store::Open(o);
  if (!store.ok()) {
    std::fprintf(stderr, "cxl_bench: %s\n", store.status().ToString().c_str());
    return 1;
  }
  ecd::store::EncodeParams p;
  p.name = "bench";
  Source src(4 << 20);
  if (!(*store)->Encode(p, src).ok()) return 1;
  const std::optional<Reactions> times = MeasureReactions(store->get(), runs);
  store->reset();
  std::filesystem::remove_all(dir);
  if (!times || times->general_media.empty()) return 1;
  const std::vector<double>& gm = times->general_media;
  const double mm = times->memory_module;
  std::printf(
      "inject -> first rebuilt block: general media (one block) median %.2f ms, min %.2f "
      "ms, max %.2f ms over %d runs; memory module (evacuation) %.2f ms\n",
      gm[gm.size() / 2], gm.front(), gm.back(), runs, mm);
  return 0;
}
