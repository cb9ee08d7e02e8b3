// Writes the seed corpus of every fuzz target: fuzz_make_corpus OUT_DIR creates
// OUT_DIR/<target>/<seed> files (tests/fuzz/corpus/ in the repository is its output; scripts/
// fuzz.sh --make-corpus regenerates it). Seeds are real encodings made by the codecs under test:
// CXL records of every type, real mailbox payloads, PRP setups from docs/nvme.md, the ingest
// lines of tests/integration/cxl_test.sh, and catalogs with the schema ecd writes, each laid out
// the way the target's fuzz_util.h Reader consumes it.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lib/cxl/event_record.h"
#include "lib/cxl/mailbox.h"
#include "tests/fuzz/fuzz_util.h"

namespace ecd::fuzz {
namespace {

std::filesystem::path g_out;

void Emit(const std::string& target, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::filesystem::path dir = g_out / target;
  std::filesystem::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) {
    std::fprintf(stderr, "make_corpus: cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

void Emit(const std::string& target, const std::string& name, const Writer& w) {
  Emit(target, name, w.bytes());
}

std::vector<uint8_t> Image(const cxl::EventRecord& r) {
  const auto img = cxl::EncodeRecord(r);
  return std::vector<uint8_t>(img.begin(), img.end());
}

// ------------------------------------------------------------------------------------------------
// Real CXL records.

struct NamedRecord {
  std::string name;
  cxl::EventRecord record;
};

std::vector<NamedRecord> Records() {
  using namespace cxl;
  std::vector<NamedRecord> out;
  {
    GeneralMediaRecord g;  // `ecctl cxl inject --type general-media --dpa 0x340040 --descriptor 1`
    g.header.flags = static_cast<uint32_t>(Severity::kFailure) | kFlagPermanentCondition;
    g.header.handle = 3;
    g.header.timestamp = 1700000000000000000ull;
    g.physical_address = 0x340040 | kDpaVolatile;
    g.descriptor = kDescriptorUncorrectable;
    g.type = GmerEventType::kEccError;
    g.transaction_type = TransactionType::kHostRead;
    g.validity_flags =
        kGmerValidChannel | kGmerValidRank | kGmerValidComponent | kGmerValidComponentIdFormat;
    g.channel = 1;
    g.rank = 2;
    g.device = 0x123456;
    g.component_id = {0x03, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    out.push_back({"gmer_uncorrectable", g});
    GeneralMediaRecord t = g;
    t.descriptor = kDescriptorThreshold;
    t.type = GmerEventType::kScrubMediaEccError;
    t.cme_threshold_ev_flags = kCmeThresholdExceeded;
    t.cme_count = 1000;
    t.sub_type = MemEventSubType::kMediaLinkCrcError;
    t.header.flags = static_cast<uint32_t>(Severity::kWarning);
    out.push_back({"gmer_threshold", t});
    GeneralMediaRecord r = g;
    r.type = static_cast<GmerEventType>(0x7F);
    r.transaction_type = static_cast<TransactionType>(0x42);
    r.header.flags |= 0x800000;
    r.physical_address = ~uint64_t{0};
    out.push_back({"gmer_reserved_values", r});
  }
  {
    DramRecord d;
    d.header.flags = static_cast<uint32_t>(Severity::kFailure) | kFlagMaintenanceNeeded;
    d.header.handle = 9;
    d.physical_address = 0x7000000040;
    d.descriptor = kDescriptorUncorrectable | kDescriptorThreshold;
    d.type = DramEventType::kScrubMediaEccError;
    d.transaction_type = TransactionType::kInternalMediaScrub;
    d.validity_flags = 0x7FF;
    d.channel = 3;
    d.rank = 1;
    d.nibble_mask = 0xABCDEF;
    d.bank_group = 2;
    d.bank = 5;
    d.row = 0x1234;
    d.column = 0x56;
    d.correction_mask[0] = 0xFF;
    d.sub_channel = 1;
    d.cvme_count = 7;
    out.push_back({"dram", d});
  }
  {
    MemoryModuleRecord m;  // `ecctl cxl inject --type memory-module --health-status 4`
    m.header.flags = static_cast<uint32_t>(Severity::kFailure) | kFlagHardwareReplacementNeeded;
    m.header.handle = 1;
    m.event_type = MemModuleEventType::kHealthStatusChange;
    m.health.health_status = kHealthReplacementNeeded;
    m.health.media_status = MediaStatus::kNormal;
    m.health.life_used = 42;
    m.health.device_temp = 37;
    m.health.dirty_shutdown_count = 2;
    out.push_back({"memory_module_replace", m});
    MemoryModuleRecord hot = m;
    hot.event_type = MemModuleEventType::kTemperatureChange;
    hot.health.health_status = 0;
    hot.health.additional_status = 0x2 << 2;  // temperature critical
    hot.health.device_temp = -40;
    hot.health.media_status = MediaStatus::kAllDataLossImminent;
    hot.header.flags = static_cast<uint32_t>(Severity::kFatal);
    out.push_back({"memory_module_critical", hot});
  }
  const std::pair<const char*, Uuid> generic[] = {
      {"memory_sparing", kMemorySparingUuid},
      {"dynamic_capacity", kDynamicCapacityUuid},
      {"physical_switch", kPhysicalSwitchUuid},
      {"virtual_switch", kVirtualSwitchUuid},
      {"mld_port", kMldPortUuid},
      {"unknown_uuid", Uuid{{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}},
  };
  for (const auto& [name, uuid] : generic) {
    GenericRecord g;
    g.uuid = uuid;
    g.header.flags = static_cast<uint32_t>(Severity::kInformational);
    g.header.handle = 0x1234;
    for (size_t i = 0; i < g.data.size(); ++i) g.data[i] = static_cast<uint8_t>(i * 7);
    out.push_back({name, g});
  }
  return out;
}

void CxlRecordSeeds() {
  for (const NamedRecord& r : Records()) Emit("cxl_record", r.name, Image(r.record));
  std::vector<uint8_t> named = Image(Records()[0].record);
  for (char c : std::string("Failure")) named.push_back(static_cast<uint8_t>(c));
  Emit("cxl_record", "gmer_log_failure", named);
  std::vector<uint8_t> odd = Image(Records()[3].record);
  for (char c : std::string("a \"quoted\"\\log\n\x01\t\x7f\xc3\xa9")) {
    odd.push_back(static_cast<uint8_t>(c));
  }
  Emit("cxl_record", "dram_log_escapes", odd);
  std::vector<uint8_t> bad_length = Image(Records()[0].record);
  bad_length[cxl::kHeaderLengthOffset] = 0x40;
  Emit("cxl_record", "bad_length_byte", bad_length);
  const std::string uuid = "FBCD0A77-c260-417f-85a9-088b1621eba6";
  Emit("cxl_record", "uuid_text", std::vector<uint8_t>(uuid.begin(), uuid.end()));
}

// ------------------------------------------------------------------------------------------------
// Mailbox payloads.

void CxlMailboxSeeds() {
  using namespace cxl;
  auto emit = [](const std::string& name, uint8_t which, const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> b = {which};
    b.insert(b.end(), payload.begin(), payload.end());
    Emit("cxl_mailbox", name, b);
  };
  for (uint8_t log = 0; log < 5; ++log) {
    emit("get_input_log" + std::to_string(log), 0, GetEventRecordsInput{EventLog(log)}.Encode());
  }
  GetEventRecordsOutput empty;
  emit("get_output_empty", 1, empty.Encode());
  GetEventRecordsOutput some;
  for (int i = 0; i < 3; ++i) some.records.push_back(cxl::EncodeRecord(Records()[i].record));
  some.more_records = true;
  emit("get_output_three_more", 1, some.Encode());
  GetEventRecordsOutput over;
  over.overflow = true;
  over.overflow_count = 17;
  over.first_overflow_ts = 1000;
  over.last_overflow_ts = 2000;
  over.records.push_back(cxl::EncodeRecord(Records()[5].record));
  std::vector<uint8_t> padded = over.Encode();
  padded.resize(1024, 0xEE);  // a host passes its whole payload buffer
  emit("get_output_overflow_padded", 1, padded);
  ClearEventRecordsInput clear;
  clear.log = EventLog::kFailure;
  clear.handles = {3, 4, 5};
  emit("clear_handles", 2, clear.Encode());
  ClearEventRecordsInput all;
  all.log = EventLog::kWarning;
  all.clear_all = true;
  emit("clear_all", 2, all.Encode());
  EventInterruptPolicy linux_host;  // what a Linux host sets: MSI on every log
  for (auto& s : linux_host.logs) s = {InterruptMode::kMsi, 0};
  emit("policy_msi", 3, linux_host.Encode());
  EventInterruptPolicy mixed = linux_host;
  mixed.logs[1] = {InterruptMode::kFwInterrupt, 5};
  mixed.logs[2] = {InterruptMode::kNone, 0};
  mixed.dynamic_capacity = InterruptSetting{InterruptMode::kMsi, 15};
  emit("policy_dcd", 3, mixed.Encode());
  emit("policy_reserved_mode", 3, {0x01, 0x03, 0x01, 0x01});
  emit("settings", 4, {0x00, 0x01, 0x02, 0x03, 0xF1, 0x0D, 0x52});
}

// ------------------------------------------------------------------------------------------------
// Device command sequences (cxl_device_fuzz.cc's operation bytes).

Writer DeviceHeader(uint8_t capacity, uint8_t payload_shift, uint8_t mode) {
  Writer w;
  for (int i = 0; i < 4; ++i) w.U8(capacity - 1);
  w.U8(payload_shift);
  for (int i = 0; i < 4; ++i) w.U8(mode);
  return w;
}

void Insert(Writer& w, uint8_t log, const cxl::EventRecord& r) {
  const std::vector<uint8_t> img = Image(r);
  w.U8(0).U8(log).U8(static_cast<uint8_t>(img.size())).Raw(img);
}
void Get(Writer& w, uint8_t log) { w.U8(1).U8(0).U8(log); }
void ClearOldest(Writer& w, uint8_t log, uint8_t n) { w.U8(1).U8(1).U8(log).U8(n); }
void ClearAll(Writer& w, uint8_t log) { w.U8(1).U8(1 | 0x10).U8(log).U8(0); }

void CxlDeviceSeeds() {
  const auto recs = Records();
  {
    Writer w = DeviceHeader(8, 2, 1);  // MSI everywhere, 1 KiB payloads
    for (int i = 0; i < 3; ++i) Insert(w, 2, recs[i].record);
    Get(w, 2);
    ClearOldest(w, 2, 2);
    Get(w, 2);
    ClearOldest(w, 2, 1);
    w.U8(3);
    Emit("cxl_device", "drain_failure_log", w);
  }
  {
    Writer w = DeviceHeader(1, 0, 0);  // capacity 1: overflow
    for (int i = 0; i < 3; ++i) Insert(w, 3, recs[i].record);
    Get(w, 3);
    ClearAll(w, 3);
    Get(w, 3);
    Emit("cxl_device", "overflow_clear_all", w);
  }
  {
    Writer w = DeviceHeader(4, 1, 0);
    w.U8(1).U8(3).U8(0).U8(0x01).U8(0x12).U8(0x20).U8(0x01);  // Set policy
    w.U8(1).U8(2).U8(0);                                      // Get policy
    Insert(w, 0, recs[4].record);
    w.U8(2).U8(1).U8(5);               // raw Get Event Records, bad log
    w.U8(2 | 0x80).U16(0x0200).U8(0);  // an unsupported opcode
    w.U8(2 | 0x40).U8(0);              // a payload past the mailbox size
    w.U8(2 | (1 << 2)).U8(8).Raw(std::vector<uint8_t>{0, 0, 1, 0, 0, 0, 1, 0});  // raw Clear
    Emit("cxl_device", "policy_and_raw", w);
  }
}

// ------------------------------------------------------------------------------------------------
// PRP setups (prp_walk_fuzz.cc's layout; addresses are offsets from the host memory base).

Writer Walk(uint8_t shift, uint32_t length, uint64_t prp1, uint64_t prp2, bool long_mode = false) {
  Writer w;
  w.U8(shift).U8(6).U8(long_mode ? 1 : 0).U32(length - 1).U64(prp1).U64(prp2).U8(3).U8(7);
  return w;
}

void PrpWalkSeeds() {
  Emit("prp_walk", "one_page", Walk(0, 4096, 0x1000, 0));
  Emit("prp_walk", "one_page_offset", Walk(0, 512, 0x1e00, 0));
  Emit("prp_walk", "two_pages", Walk(0, 8192, 0x1800, 0x5000));
  {
    // Three entries in a list at offset 0.
    Writer w = Walk(0, 3 * 4096 + 100, 0x10000, 0);
    w.U64(0x11000).U64(0x12000).U64(0x13000);
    Emit("prp_walk", "list_three", w);
  }
  {
    // docs/nvme.md's example: a 20 KiB transfer whose list starts two slots before a page end and
    // chains to the next page.
    Writer w = Walk(0, 40 * 512, 0x10000, 0xff0);
    for (int i = 0; i < 0xff0 / 8; ++i) w.U64(0);
    w.U64(0x20000).U64(0x1000);  // entry, then the chain pointer at the page's last slot
    w.U64(0x21000).U64(0x22000).U64(0x23000);
    Emit("prp_walk", "chained_list", w);
  }
  {
    // A long list (1 MiB of 4 KiB pages, MDTS 8) over one list page.
    Writer w = Walk(0, 1 << 20, 0x3000, 0x4000, true);
    for (int i = 0; i < 0x4000 / 8; ++i) w.U64(0);
    for (int i = 0; i < 255; ++i) w.U64(0x8000 + 0x1000 * static_cast<uint64_t>(i % 32));
    Emit("prp_walk", "mdts_list", w);
  }
  {
    Writer w = Walk(4, 3 * 65536, 0, 0x30000);  // 64 KiB pages
    for (int i = 0; i < 0x30000 / 8 && i < 8; ++i) w.U64(0);
    Emit("prp_walk", "page64k_zero_entries", w);
  }
  Emit("prp_walk", "prp1_misaligned", Walk(0, 100, 0x1002, 0));
  Emit("prp_walk", "prp2_offset", Walk(0, 6000, 0x1000, 0x2008));
  Emit("prp_walk", "list_outside_memory", Walk(0, 4 * 4096, 0x1000, 0x7fff0000));
  {
    Writer w = Walk(0, 1100 * 4096, 0, 0, true);  // longer than the 10-bit count allows
    Emit("prp_walk", "too_long", w);
  }
}

// ------------------------------------------------------------------------------------------------
// Fetch manager API sequences (prp_fetch_fuzz.cc's operations).

void PrpFetchSeeds() {
  {
    Writer w;
    w.U8(0).U8(6).U8(1);  // 4 KiB, 8 PRPs per index (B = 14), two indexes
    w.U16(40);
    for (int i = 0; i < 40; ++i) w.U64(0x1000 * static_cast<uint64_t>(1 + i));
    // Begin a 30-entry list at offset 0, then walk it with look-ahead as the walker does.
    w.U8(0).U8(0).U16(0).U16(30 * 4096 - 1);
    w.U8(1).U8(0).U8(0).U8(0);  // Fetch set 2 into pong
    w.U8(3).U8(0).U8(1);        // ping consumed
    w.U8(1).U8(0).U8(0).U8(0);  // Fetch set 3 into ping
    w.U8(3).U8(0).U8(2);        // pong consumed
    w.U8(3).U8(0).U8(1);        // ping consumed
    w.U8(1).U8(0).U8(0).U8(0);  // nothing left: refused
    w.U8(4).U8(0);              // Release
    Emit("prp_fetch", "walk_three_sets", w);
  }
  {
    Writer w;
    w.U8(1).U8(2).U8(0);               // 8 KiB, 4 PRPs per index, one index
    w.U16(2).U64(0x2000).U64(0x2001);  // the second entry is misaligned
    w.U8(0).U8(0).U16(0).U16(2 * 8192 - 1);
    w.U8(0).U8(0).U16(8).U16(100);  // no free index
    w.U8(1).U8(0).U8(0).U8(0);      // Fetch after an error
    w.U8(4).U8(0);
    Emit("prp_fetch", "bad_entry_no_index", w);
  }
  {
    Writer w;
    w.U8(0).U8(0).U8(3).U16(0);
    w.U8(5).Raw(std::vector<uint8_t>(16, 0xA5)).U16(0x1234);
    w.U8(5).Raw(std::vector<uint8_t>(16, 0x00)).U16(0xE000);
    w.U8(2).U8(0x0F).U8(9).U8(1).U8(2).U8(3);  // a tampered Fetch on an unallocated index
    Emit("prp_fetch", "codecs", w);
  }
}

// ------------------------------------------------------------------------------------------------
// Ingest lines.

void CxlIngestSeeds() {
  auto line = [](const std::string& name, const std::string& text) {
    std::vector<uint8_t> b = {0};
    b.insert(b.end(), text.begin(), text.end());
    Emit("cxl_ingest", name, b);
  };
  // tests/integration/cxl_test.sh
  line("agent_memory_module",
       R"({"system":"cxl","memdev":"mem5","event":"cxl_memory_module","log":"Failure",)"
       R"("hdr_flags":2,"health_status":4,"media_status":0})");
  line("not_cxl", R"({"event":"not-cxl"})");
  line("numbers_as_strings",
       R"({"event":"cxl_general_media","log":"2","dpa":"3407936","descriptor":"1"})");
  line("huge_numbers",
       R"({"event":"cxl_dram","log":1e300,"hdr_flags":-5,"dpa":1.8446744073709552e19,)"
       R"("device_temp":-99999,"life_used":300})");
  line("generic", R"({"event":"cxl_generic_event","memdev":"mem4294967296","log":"Fatal"})");
  line("not_an_object", "[1,2,3]");
  for (const NamedRecord& r : Records()) {
    line("json_" + r.name, cxl::RecordToJson(r.record, "Failure"));
    Writer w;
    w.U8(3).Raw(Image(r.record)).U8(2).U32(5);  // round trip, with memdev
    Emit("cxl_ingest", "roundtrip_" + r.name, w);
  }
}

// ------------------------------------------------------------------------------------------------
// Catalogs (catalog_fuzz.cc's rows).

Writer& Int(Writer& w, int64_t v) { return w.U8(2).U64(static_cast<uint64_t>(v)); }
Writer& Text(Writer& w, const std::string& s) { return w.U8(4).ShortString(s); }
Writer& Null(Writer& w) { return w.U8(0); }

void Device(Writer& w, int64_t id, const std::string& state) {
  w.U8(0);
  Int(w, id);
  Text(w, "devices/nvme" + std::to_string(id) + ".ns");
  Int(w, 1 << 30);
  Int(w, 4096);
  Text(w, state);
}

void Object(Writer& w, int64_t id, const std::string& name, const std::string& state,
            int64_t block_size, const std::string& matrix, bool with_version) {
  w.U8(1);
  Int(w, id);
  Text(w, name);
  Text(w, state);
  Int(w, 3 * block_size - 100);  // size
  Int(w, 2);                     // M
  Int(w, 1);                     // K
  Text(w, matrix);
  Int(w, block_size);
  Int(w, 2);  // stripes
  Int(w, 1700000000000);
  if (with_version) Int(w, 3);
}

void Block(Writer& w, int64_t object, int64_t stripe, int64_t idx, int64_t dev, int64_t lba) {
  w.U8(2);
  Int(w, object);
  Int(w, stripe);
  Int(w, idx);
  Int(w, dev);
  Int(w, lba);
  Int(w, 1);
  Int(w, 0xDEADBEEF);
  Int(w, 0);
}

void Meta(Writer& w, const std::string& key, const std::string& value) {
  w.U8(3);
  Text(w, key);
  Text(w, value);
}

Writer Catalog(uint8_t flavour, uint8_t version, int64_t block_size, const std::string& matrix,
               const std::string& device_state) {
  Writer w;
  w.U8(flavour).U8(version).ShortString("obj").U8(1);
  const bool with_version = version != 1;
  for (int d = 0; d < 3; ++d) Device(w, d, d == 2 ? device_state : "online");
  Object(w, 1, "obj", "committed", block_size, matrix, with_version);
  Object(w, 2, "pending-one", "pending", 4096, "cauchy", with_version);
  for (int s = 0; s < 2; ++s) {
    for (int i = 0; i < 3; ++i) Block(w, 1, s, i, i, s);
  }
  Block(w, 2, 0, 0, 0, 100);
  Meta(w, "device_failing/1", "1");
  Meta(w, "scrub/last_finished_unix_ms", "1700000000000");
  return w;
}

void CatalogSeeds() {
  Emit("catalog", "real_v2", Catalog(0, 0, 4096, "cauchy", "online"));
  Emit("catalog", "real_v1_migrates", Catalog(0, 1, 4096, "vandermonde", "failed"));
  Emit("catalog", "lenient_block_size_zero", Catalog(1, 0, 0, "cauchy", "online"));
  Emit("catalog", "lenient_bad_matrix", Catalog(1, 0, 4096, "bogus", "online"));
  Emit("catalog", "real_bad_device_state", Catalog(0, 0, 4096, "cauchy", "weird"));
  Emit("catalog", "typeless", Catalog(2, 0, 1 << 20, "cauchy", "online"));
  {
    Writer w;
    w.U8(2).U8(0).ShortString("n").U8(7);
    w.U8(1);  // an object row of NULLs, reals and blobs
    Int(w, 7);
    Text(w, "n");
    Text(w, "committed");
    w.U8(3).U64(0x7FF8000000000000ull);  // NaN size
    Null(w);
    w.U8(5).ShortString("\x01\x02");
    Text(w, "cauchy");
    Int(w, -4096);
    Int(w, INT64_MIN);
    w.U8(7).U8(31);  // 1.5
    Int(w, 1);
    w.U8(2);  // a block row with a negative lba and a 33-bit crc
    Int(w, 7);
    Int(w, 0);
    Int(w, 0);
    Int(w, int64_t{1} << 32);
    Int(w, -1);
    Int(w, 1);
    Int(w, int64_t{1} << 33);
    Int(w, 2);
    Emit("catalog", "typeless_nonsense", w);
  }
  {
    Writer w;
    w.U8(0).U8(2).ShortString("99").ShortString("").U8(0);  // schema version 99: refused
    Emit("catalog", "future_schema", w);
  }
}

}  // namespace
}  // namespace ecd::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  ecd::fuzz::g_out = argv[1];
  ecd::fuzz::CxlRecordSeeds();
  ecd::fuzz::CxlMailboxSeeds();
  ecd::fuzz::CxlDeviceSeeds();
  ecd::fuzz::PrpWalkSeeds();
  ecd::fuzz::PrpFetchSeeds();
  ecd::fuzz::CxlIngestSeeds();
  ecd::fuzz::CatalogSeeds();
  return 0;
}
