// PrpFetchManager and the PRP fetch information / fill descriptor encodings. See prp_fetch.h.
#include "lib/nvme/prp_fetch.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {
namespace {

// A field of the 128-bit header: its lowest bit and its width.
struct Field {
  int lsb;
  int width;
};
constexpr Field kDataSizeRem{0, 32};
constexpr Field kHostAddr{32, 61};  // host address bits 63:3
constexpr Field kReserved93{93, 1};
constexpr Field kSglOrPrp{94, 1};
constexpr Field kPrpIndex{95, 12};
constexpr Field kPingOrPong{107, 1};
constexpr Field kNoOfDescRem{108, 10};
constexpr Field kErrorCode{118, 6};
constexpr Field kValidEntries{124, 4};

constexpr uint64_t Mask(int width) {
  return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}

// The 128-bit value as two words: w[0] holds bits 63:0, w[1] bits 127:64.
using Words = std::array<uint64_t, 2>;

void PutField(Words& w, Field f, uint64_t value) {
  value &= Mask(f.width);
  if (f.lsb >= 64) {
    w[1] |= value << (f.lsb - 64);
    return;
  }
  w[0] |= value << f.lsb;
  if (f.lsb + f.width > 64) w[1] |= value >> (64 - f.lsb);
}

uint64_t GetField(const Words& w, Field f) {
  uint64_t value;
  if (f.lsb >= 64) {
    value = w[1] >> (f.lsb - 64);
  } else {
    value = w[0] >> f.lsb;
    if (f.lsb + f.width > 64) value |= w[1] << (64 - f.lsb);
  }
  return value & Mask(f.width);
}

uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

absl::Status CheckWidth(const char* name, uint64_t value, int width) {
  if (value > Mask(width)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s = %#x does not fit in %d bits", name, value, width));
  }
  return absl::OkStatus();
}

// Entries of list_bytes of data at `page_size` bytes per entry.
uint64_t EntriesFor(uint64_t bytes, uint64_t page_size) {
  return bytes / page_size + (bytes % page_size != 0 ? 1 : 0);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// PrpFetchInfo and FillDescriptor.

absl::Status PrpFetchInfo::Check() const {
  if ((host_addr & 7) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("host_addr %#x is not qword aligned (bits 2:0 must be 0)", host_addr));
  }
  for (absl::Status s : {CheckWidth("prp_index", prp_index, kPrpIndex.width),
                         CheckWidth("ping_or_pong", ping_or_pong, kPingOrPong.width),
                         CheckWidth("no_of_desc_rem", no_of_desc_rem, kNoOfDescRem.width),
                         CheckWidth("error_code", error_code, kErrorCode.width),
                         CheckWidth("valid_entries", valid_entries, kValidEntries.width)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::array<uint8_t, 16> PrpFetchInfo::Pack() const {
  Words w{};
  PutField(w, kDataSizeRem, data_size_rem);
  PutField(w, kHostAddr, host_addr >> 3);
  PutField(w, kSglOrPrp, sgl_or_prp ? 1 : 0);
  PutField(w, kPrpIndex, prp_index);
  PutField(w, kPingOrPong, ping_or_pong);
  PutField(w, kNoOfDescRem, no_of_desc_rem);
  PutField(w, kErrorCode, error_code);
  PutField(w, kValidEntries, valid_entries);
  std::array<uint8_t, 16> out{};
  for (int i = 0; i < 16; ++i) out[i] = static_cast<uint8_t>(w[i / 8] >> (8 * (i % 8)));
  return out;
}

absl::StatusOr<PrpFetchInfo> PrpFetchInfo::Unpack(absl::Span<const uint8_t> bytes) {
  if (bytes.size() != 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("PRP fetch information is 16 bytes, got ", bytes.size()));
  }
  Words w{};
  for (int i = 15; i >= 0; --i) w[i / 8] = (w[i / 8] << 8) | bytes[i];
  if (GetField(w, kReserved93) != 0) {
    return absl::InvalidArgumentError("PRP fetch information: reserved bit 93 is set");
  }
  PrpFetchInfo info;
  info.data_size_rem = static_cast<uint32_t>(GetField(w, kDataSizeRem));
  info.host_addr = GetField(w, kHostAddr) << 3;
  info.sgl_or_prp = GetField(w, kSglOrPrp) != 0;
  info.prp_index = static_cast<uint16_t>(GetField(w, kPrpIndex));
  info.ping_or_pong = static_cast<uint8_t>(GetField(w, kPingOrPong));
  info.no_of_desc_rem = static_cast<uint16_t>(GetField(w, kNoOfDescRem));
  info.error_code = static_cast<uint8_t>(GetField(w, kErrorCode));
  info.valid_entries = static_cast<uint8_t>(GetField(w, kValidEntries));
  return info;
}

absl::Status FillDescriptor::Check() const {
  absl::Status s = CheckWidth("prp_index", prp_index, 12);
  if (!s.ok()) return s;
  return CheckWidth("ping_or_pong", ping_or_pong, 1);
}

uint16_t FillDescriptor::Pack() const {
  return static_cast<uint16_t>((prp_index & 0xFFFu) | ((ping_or_pong & 1u) << 12));
}

absl::StatusOr<FillDescriptor> FillDescriptor::Unpack(uint16_t bits) {
  if ((bits & 0xE000u) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("fill descriptor %#06x has reserved bits 15:13 set", bits));
  }
  FillDescriptor d;
  d.prp_index = static_cast<uint16_t>(bits & 0xFFFu);
  d.ping_or_pong = static_cast<uint8_t>((bits >> 12) & 1u);
  return d;
}

// ------------------------------------------------------------------------------------------------
// PrpFetchManager.

// The walk state of one prp_index. The walk resumes at next_addr; desc_rem entries (describing
// bytes_rem bytes) are still to be fetched.
struct PrpFetchManager::IndexState {
  bool in_use = false;
  bool failed = false;  // a set carried a PRP error; no further Fetch
  uint64_t next_addr = 0;
  uint64_t bytes_rem = 0;
  uint32_t desc_rem = 0;
  int last_filled = -1;  // kPing, kPong, or -1 before the first set
  std::array<bool, 2> unconsumed{};
  std::array<PrpFetchInfo, 2> header{};
  std::array<std::vector<uint64_t>, 2> entries;  // each sized B once, in the constructor
};

absl::StatusOr<std::unique_ptr<PrpFetchManager>> PrpFetchManager::Create(
    const PrpFetchOptions& options, HostReader reader) {
  const uint32_t p = options.page_size;
  if (p < 4096 || p > 65536 || (p & (p - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size must be a power of two in 4096..65536, got ", p));
  }
  if (options.prps_per_index < 2 || options.prps_per_index > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("prps_per_index must be in 2..8, got ", options.prps_per_index));
  }
  if (options.num_indexes < 1 || options.num_indexes > 4095) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_indexes must be in 1..4095, got ", options.num_indexes));
  }
  if (!reader) return absl::InvalidArgumentError("a HostReader is required");
  return std::unique_ptr<PrpFetchManager>(new PrpFetchManager(options, std::move(reader)));
}

PrpFetchManager::PrpFetchManager(const PrpFetchOptions& options, HostReader reader)
    : options_(options),
      entries_per_buffer_(2 * (static_cast<int>(options.prps_per_index) - 1)),
      reader_(std::move(reader)),
      indexes_(options.num_indexes),
      read_buf_(size_t{8} * (entries_per_buffer_ + 1)) {
  for (uint32_t i = 0; i < options.num_indexes; ++i) {
    free_.insert(static_cast<uint16_t>(i));
    for (auto& e : indexes_[i].entries) e.assign(entries_per_buffer_, 0);
  }
}

PrpFetchManager::~PrpFetchManager() = default;

PrpFetchInfo PrpFetchManager::FillSet(IndexState& s, uint16_t prp_index, int buffer) {
  const uint64_t page = options_.page_size;
  const uint64_t offset_mask = page - 1;
  std::vector<uint64_t>& out = s.entries[buffer];
  const uint64_t want = std::min<uint64_t>(entries_per_buffer_, s.desc_rem);
  uint64_t got = 0;
  uint8_t error = kScSuccess;
  uint64_t error_addr = 0;
  uint64_t addr = s.next_addr;

  if ((addr & 7) != 0) {  // only the list pointer from Begin can be misaligned here
    error = kScPrpOffsetInvalid;
    error_addr = addr & ~uint64_t{7};
  }
  while (error == kScSuccess && got < want) {
    // The list page holding `addr` has `slots` slots left. Its last slot is a chain pointer only
    // if more than one entry is still needed when the walk reaches it.
    const uint64_t slots = (page - (addr & offset_mask)) / 8;
    const bool chain = s.desc_rem > slots;
    const uint64_t data_slots = chain ? slots - 1 : s.desc_rem;
    const uint64_t take = std::min(want - got, data_slots);
    // Read the chain slot in the same run only if this set continues past it; otherwise the
    // next set starts at the chain slot.
    const bool read_chain = chain && want - got > data_slots;
    const uint64_t run = take + (read_chain ? 1 : 0);

    ++stats_.host_reads;
    if (!reader_(addr, read_buf_.data(), run * 8)) {
      error = kScDataTransferError;
      error_addr = addr;
      break;
    }
    for (uint64_t i = 0; i < take; ++i) {
      const uint64_t entry = LoadLe64(&read_buf_[8 * i]);
      if ((entry & offset_mask) != 0) {
        error = kScPrpOffsetInvalid;
        error_addr = addr + 8 * i;
        break;
      }
      out[got++] = entry;
      --s.desc_rem;
      s.bytes_rem = s.bytes_rem > page ? s.bytes_rem - page : 0;
    }
    if (error != kScSuccess) break;
    addr += 8 * take;
    if (read_chain) {
      const uint64_t next_list = LoadLe64(&read_buf_[8 * take]);
      if ((next_list & offset_mask) != 0) {
        error = kScPrpOffsetInvalid;
        error_addr = addr;
        break;
      }
      addr = next_list;
    }
  }
  s.next_addr = addr;

  PrpFetchInfo h;
  h.data_size_rem = static_cast<uint32_t>(s.bytes_rem);
  if (error != kScSuccess) {
    h.host_addr = error_addr;
  } else if (s.desc_rem > 0) {
    h.host_addr = addr;
  }
  h.prp_index = prp_index;
  h.ping_or_pong = static_cast<uint8_t>(buffer);
  // Only an error set can have more than the 10-bit field holds left (Begin admits at most
  // 1023 + B entries, so a clean first set leaves at most 1023): it carries the field's maximum.
  h.no_of_desc_rem =
      static_cast<uint16_t>(std::min<uint64_t>(s.desc_rem, Mask(kNoOfDescRem.width)));
  h.error_code = error;
  h.valid_entries = static_cast<uint8_t>(got);

  s.header[buffer] = h;
  s.unconsumed[buffer] = true;
  s.last_filled = buffer;
  ++(buffer == kPing ? stats_.fills_ping : stats_.fills_pong);
  if (error != kScSuccess) {
    s.failed = true;
    ++stats_.errors_by_code[error];
  }
  return h;
}

absl::StatusOr<PrpFetchInfo> PrpFetchManager::Begin(uint64_t list_addr, uint64_t list_bytes) {
  if (list_bytes == 0) return absl::InvalidArgumentError("list_bytes must be > 0");
  if (list_bytes > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("list_bytes ", list_bytes, " does not fit the 32-bit data_size_rem"));
  }
  const uint64_t needed = EntriesFor(list_bytes, options_.page_size);
  const uint64_t max_entries = Mask(kNoOfDescRem.width) + entries_per_buffer_;
  if (needed > max_entries) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the list needs ", needed, " entries; the 10-bit no_of_desc_rem allows at most ",
        max_entries, " at ", options_.page_size, "-byte pages"));
  }

  PrpFetchInfo h;
  std::function<void(const PrpFetchEvent&)> sink;
  {
    MutexLock lock(mu_);
    if (free_.empty()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("all ", options_.num_indexes, " PRP buffer indexes are in use"));
    }
    const uint16_t index = *free_.begin();
    free_.erase(free_.begin());
    IndexState& s = indexes_[index];
    s.in_use = true;
    s.failed = false;
    s.next_addr = list_addr;
    s.bytes_rem = list_bytes;
    s.desc_rem = static_cast<uint32_t>(needed);
    s.last_filled = -1;
    s.unconsumed = {false, false};
    s.header = {};
    ++stats_.begins;
    h = FillSet(s, index, kPing);
    sink = sink_;
  }
  if (sink) {
    sink(PrpFetchEvent{h.error_code != kScSuccess ? PrpFetchEvent::kError : PrpFetchEvent::kBegin,
                       h.prp_index, kPing, h});
  }
  return h;
}

absl::StatusOr<FillDescriptor> PrpFetchManager::Fetch(const PrpFetchInfo& request) {
  const uint16_t index = request.prp_index;
  if (index >= options_.num_indexes) {
    return absl::InvalidArgumentError(
        absl::StrCat("prp_index ", index, " is out of range (", options_.num_indexes, " indexes)"));
  }
  if (request.sgl_or_prp) {
    return absl::InvalidArgumentError("sgl_or_prp is set; this model supports only PRPs");
  }
  PrpFetchInfo h;
  int target;
  std::function<void(const PrpFetchEvent&)> sink;
  {
    MutexLock lock(mu_);
    IndexState& s = indexes_[index];
    if (!s.in_use) {
      return absl::InvalidArgumentError(absl::StrCat("prp_index ", index, " is not allocated"));
    }
    if (s.failed) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "prp_index %d had PRP error %#04x; fail the command and release the index", index,
          s.header[s.last_filled].error_code));
    }
    if (s.desc_rem == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("prp_index ", index, ": no PRP entries remain to fetch"));
    }
    if (request.host_addr != s.next_addr || request.data_size_rem != s.bytes_rem ||
        request.no_of_desc_rem != s.desc_rem) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "prp_index %d: request (host_addr %#x, data_size_rem %u, no_of_desc_rem %u) is not the "
          "header of the most recent set (%#x, %u, %u)",
          index, request.host_addr, request.data_size_rem, request.no_of_desc_rem, s.next_addr,
          s.bytes_rem, s.desc_rem));
    }
    target = 1 - s.last_filled;
    if (s.unconsumed[target]) {
      return absl::FailedPreconditionError(
          absl::StrCat("prp_index ", index, ": the ", target == kPing ? "ping" : "pong",
                       " buffer still holds an unconsumed set; call Consumed first"));
    }
    h = FillSet(s, index, target);
    if (h.error_code == kScSuccess) ++stats_.refills;
    sink = sink_;
  }
  if (sink) {
    sink(PrpFetchEvent{h.error_code != kScSuccess ? PrpFetchEvent::kError : PrpFetchEvent::kFill,
                       index, target, h});
  }
  return FillDescriptor{index, static_cast<uint8_t>(target)};
}

void PrpFetchManager::Consumed(uint16_t prp_index, int buffer) {
  if (prp_index >= options_.num_indexes || (buffer != kPing && buffer != kPong)) return;
  MutexLock lock(mu_);
  IndexState& s = indexes_[prp_index];
  if (s.in_use) s.unconsumed[buffer] = false;
}

void PrpFetchManager::Release(uint16_t prp_index) {
  if (prp_index >= options_.num_indexes) return;
  MutexLock lock(mu_);
  IndexState& s = indexes_[prp_index];
  if (!s.in_use) return;
  s.in_use = false;
  s.failed = false;
  s.unconsumed = {false, false};
  s.header = {};
  free_.insert(prp_index);
}

absl::Span<const uint64_t> PrpFetchManager::Entries(uint16_t prp_index, int buffer) const {
  if (prp_index >= options_.num_indexes || (buffer != kPing && buffer != kPong)) return {};
  MutexLock lock(mu_);
  const IndexState& s = indexes_[prp_index];
  if (!s.in_use) return {};
  return absl::MakeConstSpan(s.entries[buffer].data(), s.header[buffer].valid_entries);
}

PrpFetchInfo PrpFetchManager::Header(uint16_t prp_index, int buffer) const {
  if (prp_index >= options_.num_indexes || (buffer != kPing && buffer != kPong)) return {};
  MutexLock lock(mu_);
  const IndexState& s = indexes_[prp_index];
  if (!s.in_use) return {};
  return s.header[buffer];
}

PrpFetchManager::Stats PrpFetchManager::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void PrpFetchManager::set_event_sink(std::function<void(const PrpFetchEvent&)> sink) {
  MutexLock lock(mu_);
  sink_ = std::move(sink);
}

}  // namespace ecd::nvme
