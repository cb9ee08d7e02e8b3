// Fuzzes the PG329-style PRP fetch manager (lib/nvme/prp_fetch.h) through its whole API, in any
// order an application could call it: Begin, Fetch with exact or tampered headers, Consumed,
// Release, Entries and Header on any index and buffer, plus the 128-bit PRP fetch information
// and 16-bit fill descriptor codecs on raw bits.
//
// Input: page size, C_NUM_PRPS_PER_INDX, the number of buffer indexes (1..4), the qwords of a
// 64 KiB host memory model (each stored as base + value), then operations until the input ends.
//
// Properties checked beyond "no crash":
// - every call answers as prp_fetch.h documents, checked against a model of each index's state:
//   Begin takes the lowest free index (ResourceExhausted when none is free, InvalidArgument for an
//   empty or too long list), Fetch refuses a bad index, an SGL request, an index not allocated,
//   one with a PRP error, a finished walk, a stale or tampered header (InvalidArgument /
//   FailedPrecondition) and a refill of an unconsumed buffer, and otherwise fills the other buffer
//   than the last one;
// - every set's header is consistent: Check() passes, valid_entries <= B, error_code is 0, 0x04 or
//   0x13, data_size_rem is what the fetched entries leave of the list, no_of_desc_rem ==
//   ceil(data_size_rem / page), host_addr is 0 exactly when nothing remains;
// - the entries of the sets, in order, are the list read by a reference reader one slot at a
//   time (chain pointers followed), and a set with an error comes only where the reference list
//   itself is bad;
// - each filled set reaches the event sink once, and the stats count what the model counted;
// - codecs: Unpack(Pack(h)) == h for every header the manager produced; for raw bytes Unpack
//   refuses exactly a set bit 93, and Pack(Unpack(b)) == b; FillDescriptor likewise with bits
//   15:13.
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "lib/nvme/prp_fetch.h"
#include "tests/fuzz/fuzz_util.h"

namespace ecd::nvme {
namespace {

constexpr uint64_t kBase = uint64_t{0x7f12} << 32;  // where the 64 KiB host memory model sits
constexpr uint64_t kMemBytes = 64 << 10;

struct Memory {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(kMemBytes, 0);
  bool Read(uint64_t addr, void* dst, size_t len) const {
    if (addr < kBase || len > kMemBytes || addr - kBase > kMemBytes - len) return false;
    std::memcpy(dst, bytes.data() + (addr - kBase), len);
    return true;
  }
};

// The list a command's PRP2 points at, read one slot at a time: its good entries in order, and
// whether all `n` could be read.
struct ReferenceList {
  std::vector<uint64_t> entries;
  bool complete = false;
};

ReferenceList ReadList(const Memory& mem, uint64_t page, uint64_t addr, uint64_t n) {
  ReferenceList r;
  const uint64_t mask = page - 1;
  if ((addr & 7) != 0) return r;
  while (r.entries.size() < n) {
    uint64_t v = 0;
    if (!mem.Read(addr, &v, 8) || (v & mask) != 0) return r;
    if ((page - (addr & mask)) / 8 == 1 && n - r.entries.size() > 1) {
      addr = v;
      continue;
    }
    r.entries.push_back(v);
    addr += 8;
  }
  r.complete = true;
  return r;
}

struct IndexModel {
  bool in_use = false;
  bool failed = false;
  int last_filled = -1;
  std::array<bool, 2> unconsumed{};
  PrpFetchInfo last;                             // the most recent set's header
  uint64_t list_bytes = 0;                       // what Begin was given
  uint64_t fetched = 0;                          // entries delivered so far
  ReferenceList reference;                       // the list as the reference reader sees it
  std::array<std::vector<uint64_t>, 2> entries;  // what each buffer holds
  std::array<PrpFetchInfo, 2> header{};
};

struct Harness {
  uint64_t page = 4096;
  uint64_t per_set = 14;
  uint32_t num_indexes = 1;
  Memory mem;
  std::unique_ptr<PrpFetchManager> fm;
  std::vector<IndexModel> idx;
  std::vector<PrpFetchEvent> events;
  uint64_t begins = 0, fills[2] = {0, 0}, refills = 0, error_sets = 0;

  void CheckCodec(const PrpFetchInfo& h) {
    FUZZ_CHECK(h.Check().ok());
    const std::array<uint8_t, 16> packed = h.Pack();
    absl::StatusOr<PrpFetchInfo> back = PrpFetchInfo::Unpack(packed);
    FUZZ_CHECK(back.ok() && *back == h);
  }

  // Checks a freshly filled set of index `i` in `buffer` and records it in the model.
  void CheckSet(uint16_t i, int buffer, const PrpFetchInfo& h, PrpFetchEvent::Kind kind) {
    IndexModel& m = idx[i];
    CheckCodec(h);
    FUZZ_CHECK(h.prp_index == i && h.ping_or_pong == buffer && !h.sgl_or_prp);
    FUZZ_CHECK(h.valid_entries <= per_set);
    FUZZ_CHECK(h.error_code == kScSuccess || h.error_code == kScDataTransferError ||
               h.error_code == kScPrpOffsetInvalid);
    const absl::Span<const uint64_t> got = fm->Entries(i, buffer);
    FUZZ_CHECK(got.size() == h.valid_entries);
    // The entries continue the reference list.
    FUZZ_CHECK(m.fetched + got.size() <= m.reference.entries.size());
    for (size_t k = 0; k < got.size(); ++k) {
      FUZZ_CHECK(got[k] == m.reference.entries[m.fetched + k]);
      FUZZ_CHECK((got[k] & (page - 1)) == 0);
    }
    m.fetched += got.size();
    const uint64_t total = (m.list_bytes + page - 1) / page;
    const uint64_t covered = m.fetched * page;
    FUZZ_CHECK(h.data_size_rem == (m.list_bytes > covered ? m.list_bytes - covered : 0));
    if (h.error_code != kScSuccess) {
      FUZZ_CHECK(!m.reference.complete);
      FUZZ_CHECK(h.no_of_desc_rem == std::min<uint64_t>(total - m.fetched, 1023));
      m.failed = true;
      ++error_sets;
    } else {
      FUZZ_CHECK(h.no_of_desc_rem == total - m.fetched);
      FUZZ_CHECK(h.no_of_desc_rem == (h.data_size_rem + page - 1) / page);
      FUZZ_CHECK((h.host_addr == 0) == (h.no_of_desc_rem == 0));
      FUZZ_CHECK(got.size() == std::min<uint64_t>(per_set, total - (m.fetched - got.size())));
    }
    FUZZ_CHECK(fm->Header(i, buffer) == h);
    m.entries[buffer].assign(got.begin(), got.end());
    m.header[buffer] = h;
    m.last = h;
    m.last_filled = buffer;
    m.unconsumed[buffer] = true;
    ++fills[buffer];
    FUZZ_CHECK(!events.empty());
    const PrpFetchEvent& e = events.back();
    FUZZ_CHECK(e.kind == kind && e.prp_index == i && e.buffer == buffer && e.header == h);
  }

  void Begin(fuzz::Reader& in) {
    const uint8_t how = in.U8();
    uint64_t list_addr = kBase + in.U16();
    if ((how & 1) == 0) list_addr &= ~uint64_t{7};
    if ((how & 2) != 0) list_addr = in.U64();
    uint64_t list_bytes = 1 + in.U16() % (64 * page);
    if ((how & 4) != 0) list_bytes = in.U64() % (2000 * page);  // may be 0 or too long
    const size_t events_before = events.size();
    absl::StatusOr<PrpFetchInfo> h = fm->Begin(list_addr, list_bytes);
    const uint64_t needed = (list_bytes + page - 1) / page;
    if (list_bytes == 0 || needed > 1023 + per_set) {
      FUZZ_CHECK(h.status().code() == absl::StatusCode::kInvalidArgument);
      FUZZ_CHECK(events.size() == events_before);
      return;
    }
    int lowest = -1;
    for (uint32_t i = 0; i < num_indexes && lowest < 0; ++i) {
      if (!idx[i].in_use) lowest = static_cast<int>(i);
    }
    if (lowest < 0) {
      FUZZ_CHECK(h.status().code() == absl::StatusCode::kResourceExhausted);
      FUZZ_CHECK(events.size() == events_before);
      return;
    }
    FUZZ_CHECK(h.ok() && h->prp_index == lowest);
    FUZZ_CHECK(events.size() == events_before + 1);
    ++begins;
    IndexModel& m = idx[lowest];
    m = IndexModel{};
    m.in_use = true;
    m.list_bytes = list_bytes;
    m.reference = ReadList(mem, page, list_addr, needed);
    CheckSet(static_cast<uint16_t>(lowest), kPing, *h,
             h->error_code != kScSuccess ? PrpFetchEvent::kError : PrpFetchEvent::kBegin);
  }

  void Fetch(fuzz::Reader& in) {
    const uint8_t how = in.U8();
    const uint16_t i = static_cast<uint16_t>(in.U8() % (num_indexes + 1));  // may be out of range
    PrpFetchInfo req = i < num_indexes ? idx[i].last : PrpFetchInfo{};
    req.prp_index = i;
    if ((how & 0x01) != 0) req.host_addr += 8 * (1 + in.U8() % 4);
    if ((how & 0x02) != 0) req.data_size_rem ^= 1u << (in.U8() % 32);
    if ((how & 0x04) != 0) req.no_of_desc_rem = static_cast<uint16_t>(req.no_of_desc_rem + 1);
    if ((how & 0x08) != 0) req.sgl_or_prp = true;
    req.ping_or_pong ^= (how >> 4) & 1;                      // ignored by Fetch
    req.valid_entries = static_cast<uint8_t>(in.U8() % 16);  // ignored by Fetch
    const size_t events_before = events.size();
    absl::StatusOr<FillDescriptor> d = fm->Fetch(req);
    const bool tampered = (how & 0x07) != 0;
    if (i >= num_indexes || req.sgl_or_prp || !idx[i].in_use) {
      FUZZ_CHECK(d.status().code() == absl::StatusCode::kInvalidArgument);
    } else if (idx[i].failed) {
      FUZZ_CHECK(d.status().code() == absl::StatusCode::kFailedPrecondition);
    } else if (idx[i].last.no_of_desc_rem == 0) {
      FUZZ_CHECK(d.status().code() == absl::StatusCode::kInvalidArgument);
    } else if (tampered) {
      FUZZ_CHECK(d.status().code() == absl::StatusCode::kInvalidArgument);
    } else if (idx[i].unconsumed[1 - idx[i].last_filled]) {
      FUZZ_CHECK(d.status().code() == absl::StatusCode::kFailedPrecondition);
    } else {
      const int target = 1 - idx[i].last_filled;
      FUZZ_CHECK(d.ok() && d->prp_index == i && d->ping_or_pong == target);
      FUZZ_CHECK(d->Check().ok());
      absl::StatusOr<FillDescriptor> back = FillDescriptor::Unpack(d->Pack());
      FUZZ_CHECK(back.ok() && *back == *d);
      FUZZ_CHECK(events.size() == events_before + 1);
      const PrpFetchInfo h = fm->Header(i, target);
      if (h.error_code == kScSuccess) ++refills;
      CheckSet(i, target, h,
               h.error_code != kScSuccess ? PrpFetchEvent::kError : PrpFetchEvent::kFill);
      return;
    }
    FUZZ_CHECK(events.size() == events_before);
  }

  void CheckUntouched() {
    // Entries and Header of every index and buffer, including out-of-range ones.
    for (uint32_t i = 0; i <= num_indexes; ++i) {
      for (int b = -1; b <= 2; ++b) {
        const auto index = static_cast<uint16_t>(i);
        const bool valid = i < num_indexes && (b == kPing || b == kPong) && idx[i].in_use;
        const absl::Span<const uint64_t> e = fm->Entries(index, b);
        const PrpFetchInfo h = fm->Header(index, b);
        if (!valid) {
          FUZZ_CHECK(e.empty() && h == PrpFetchInfo{});
          continue;
        }
        FUZZ_CHECK(h == idx[i].header[b]);
        FUZZ_CHECK(std::vector<uint64_t>(e.begin(), e.end()) == idx[i].entries[b]);
      }
    }
    const PrpFetchManager::Stats s = fm->stats();
    FUZZ_CHECK(s.begins == begins && s.fills_ping == fills[0] && s.fills_pong == fills[1]);
    FUZZ_CHECK(s.refills == refills);
    uint64_t errors = 0;
    for (uint64_t n : s.errors_by_code) errors += n;
    FUZZ_CHECK(errors == error_sets);
  }
};

void CheckRawCodecs(fuzz::Reader& in) {
  const std::vector<uint8_t> raw = in.Bytes(16);
  std::array<uint8_t, 16> b{};
  std::copy(raw.begin(), raw.end(), b.begin());
  absl::StatusOr<PrpFetchInfo> h = PrpFetchInfo::Unpack(b);
  const bool bit93 = (b[11] >> 5) & 1;
  FUZZ_CHECK(h.ok() == !bit93);
  if (h.ok()) {
    FUZZ_CHECK(h->Check().ok());
    FUZZ_CHECK(h->Pack() == b);
  }
  FUZZ_CHECK(!PrpFetchInfo::Unpack(absl::MakeConstSpan(b.data(), raw.size() % 16)).ok());
  const uint16_t bits = in.U16();
  absl::StatusOr<FillDescriptor> d = FillDescriptor::Unpack(bits);
  FUZZ_CHECK(d.ok() == ((bits & 0xE000) == 0));
  if (d.ok()) FUZZ_CHECK(d->Pack() == bits);
}

}  // namespace
}  // namespace ecd::nvme

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ecd::nvme;
  ecd::fuzz::Reader in(data, size);
  Harness t;
  t.page = 4096u << (in.U8() % 5);
  PrpFetchOptions o;
  o.page_size = static_cast<uint32_t>(t.page);
  o.prps_per_index = 2 + in.U8() % 7;
  o.num_indexes = t.num_indexes = 1 + in.U8() % 4;
  const size_t qwords = std::min<size_t>(in.U16(), kMemBytes / 8);
  for (size_t q = 0; q < qwords && in.remaining() >= 8; ++q) {
    const uint64_t v = kBase + in.U64();
    std::memcpy(&t.mem.bytes[8 * q], &v, 8);
  }
  absl::StatusOr<std::unique_ptr<PrpFetchManager>> fm = PrpFetchManager::Create(
      o, [&t](uint64_t addr, void* dst, size_t len) { return t.mem.Read(addr, dst, len); });
  FUZZ_CHECK(fm.ok());
  t.fm = std::move(*fm);
  t.per_set = t.fm->entries_per_buffer();
  FUZZ_CHECK(t.per_set == 2 * (o.prps_per_index - 1));
  t.idx.resize(t.num_indexes);
  t.fm->set_event_sink([&t](const PrpFetchEvent& e) { t.events.push_back(e); });

  for (int ops = 0; !in.empty() && ops < 512; ++ops) {
    const uint8_t op = in.U8();
    switch (op % 6) {
      case 0:
        t.Begin(in);
        break;
      case 1:
      case 2:
        t.Fetch(in);
        break;
      case 3: {
        const auto i = static_cast<uint16_t>(in.U8() % (t.num_indexes + 1));
        const int b = static_cast<int>(in.U8() % 4) - 1;
        t.fm->Consumed(i, b);
        if (i < t.num_indexes && t.idx[i].in_use && (b == kPing || b == kPong)) {
          t.idx[i].unconsumed[b] = false;
        }
        break;
      }
      case 4: {
        const auto i = static_cast<uint16_t>(in.U8() % (t.num_indexes + 1));
        t.fm->Release(i);
        if (i < t.num_indexes) t.idx[i] = IndexModel{};
        break;
      }
      default:
        CheckRawCodecs(in);
        break;
    }
    t.CheckUntouched();
  }
  return 0;
}
