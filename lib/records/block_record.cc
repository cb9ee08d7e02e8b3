// Block records: encoding and decoding of record pages and checkpoints (docs/formats.md).
#include "lib/records/block_record.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/util/crc32c.h"

namespace ecd::store {
namespace {

constexpr char kPageMagic[8] = {'E', 'C', 'D', 'R', 'E', 'C', 'S', '1'};
constexpr char kCheckpointMagic[8] = {'E', 'C', 'D', 'R', 'C', 'K', 'P', 'T'};

enum RecordType : uint8_t {
  kEndOfPage = 0,
  kObject = 1,
  kBlock = 2,
  kEnd = 3,
  kTomb = 4,
  kAbort = 5
};
constexpr size_t kBlockBytes = 35;
constexpr size_t kEndBytes = 17;
constexpr size_t kTombBytes = 17;
constexpr size_t kAbortBytes = 9;
static_assert(kObjectRecordFixedBytes == 64);

// Page header offsets.
constexpr size_t kStoreAt = 8, kDeviceAt = 24, kFlagsAt = 28, kGenerationAt = 32, kIndexAt = 40,
                 kLengthAt = 44, kCommittedAt = 48, kPageCrcAt = 56;
constexpr uint32_t kSnapshotFlag = 1;
// Checkpoint offsets.
constexpr size_t kHalfAt = 28, kCounterAt = 32, kCkGenerationAt = 40, kSnapshotPagesAt = 48,
                 kNextPageAt = 52, kCleanAt = 56, kCkCommittedAt = 60, kMaxSeqAt = 68,
                 kCkCrcAt = 76;

void Put(uint8_t* out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t Get(const uint8_t* in, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(in[i]) << (8 * i);
  return v;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return 0;
}

void PutStoreId(uint8_t* out, const std::string& id) {
  for (size_t i = 0; i < 16 && 2 * i + 1 < id.size(); ++i) {
    out[i] = static_cast<uint8_t>(HexDigit(id[2 * i]) << 4 | HexDigit(id[2 * i + 1]));
  }
}

std::string GetStoreId(const uint8_t* in) {
  std::string id;
  for (size_t i = 0; i < 16; ++i) absl::StrAppendFormat(&id, "%02x", in[i]);
  return id;
}

// Appends little-endian fields to a byte vector.
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  Writer& U(uint64_t v, size_t n) {
    const size_t at = out_.size();
    out_.resize(at + n);
    Put(out_.data() + at, v, n);
    return *this;
  }
  Writer& Bytes(const std::string& s) {
    out_.insert(out_.end(), s.begin(), s.end());
    return *this;
  }

 private:
  std::vector<uint8_t>& out_;
};

// Reads fields of one payload, failing (rather than reading past it) on a short one.
class Reader {
 public:
  explicit Reader(absl::Span<const uint8_t> in) : in_(in) {}
  bool done() const { return at_ >= in_.size(); }
  bool Has(size_t n) const { return in_.size() - at_ >= n; }
  uint64_t U(size_t n) {
    const uint64_t v = Get(in_.data() + at_, n);
    at_ += n;
    return v;
  }
  std::string Bytes(size_t n) {
    std::string s(reinterpret_cast<const char*>(in_.data() + at_), n);
    at_ += n;
    return s;
  }

 private:
  absl::Span<const uint8_t> in_;
  size_t at_ = 0;
};

absl::Status Bad(const std::string& what) {
  return absl::DataLossError(absl::StrCat("record page: ", what));
}

// Decodes the records of a payload into `out`; the page's header gives blocks their object.
absl::Status DecodeRecords(absl::Span<const uint8_t> payload, RecordSet& out) {
  Reader r(payload);
  const ObjectHeader* current = nullptr;
  while (!r.done()) {
    const uint8_t type = static_cast<uint8_t>(r.U(1));
    switch (type) {
      case kEndOfPage:
        return absl::OkStatus();
      case kObject: {
        if (!r.Has(kObjectRecordFixedBytes - 1)) return Bad("short object record");
        ObjectHeader h;
        h.seq = r.U(8);
        h.object.id = static_cast<int64_t>(r.U(8));
        h.object.version = r.U(8);
        h.object.size = r.U(8);
        h.object.stripe_count = r.U(8);
        h.object.block_size = r.U(8);
        h.object.created_unix_ms = static_cast<int64_t>(r.U(8));
        h.object.data_blocks = static_cast<uint32_t>(r.U(2));
        h.object.parity_blocks = static_cast<uint32_t>(r.U(2));
        const uint64_t matrix = r.U(1);
        if (matrix > static_cast<uint64_t>(ec::MatrixType::kVandermonde)) {
          return Bad(absl::StrCat("unknown matrix ", matrix));
        }
        h.object.matrix = static_cast<ec::MatrixType>(matrix);
        const size_t name_length = r.U(2);
        if (!r.Has(name_length)) return Bad("short object name");
        h.object.name = r.Bytes(name_length);
        out.objects.push_back(std::move(h));
        current = &out.objects.back();
        break;
      }
      case kBlock: {
        if (current == nullptr) return Bad("a block entry before any object record");
        if (!r.Has(kBlockBytes - 1)) return Bad("short block entry");
        BlockEntry b;
        b.seq = current->seq;
        b.object_id = current->object.id;
        b.stripe = r.U(8);
        b.index = static_cast<uint32_t>(r.U(2));
        b.lba = r.U(8);
        b.lba_count = static_cast<uint32_t>(r.U(4));
        b.crc32c = static_cast<uint32_t>(r.U(4));
        b.block_size = r.U(8);
        out.blocks.push_back(b);
        break;
      }
      case kEnd:
        if (!r.Has(kEndBytes - 1)) return Bad("short operation end");
        out.ends.push_back({r.U(8), r.U(8)});
        break;
      case kTomb: {
        if (!r.Has(kTombBytes - 1)) return Bad("short tombstone");
        Tombstone t;
        t.seq = r.U(8);
        t.object_id = static_cast<int64_t>(r.U(8));
        out.tombstones.push_back(t);
        break;
      }
      case kAbort:
        if (!r.Has(kAbortBytes - 1)) return Bad("short abort record");
        out.aborted.push_back(r.U(8));
        break;
      default:
        return Bad(absl::StrCat("unknown record type ", type));
    }
  }
  return absl::OkStatus();
}

}  // namespace

size_t RecordPageBytes(uint32_t lba_size, size_t max_name_length) {
  const size_t need =
      kRecordPageHeaderBytes + kObjectRecordFixedBytes + max_name_length + kBlockBytes + kEndBytes;
  size_t bytes = std::max<size_t>(kMinRecordPageBytes, lba_size);
  while (bytes < need) bytes += lba_size;
  return bytes;
}

PageBuilder::PageBuilder(size_t page_bytes) : page_bytes_(page_bytes) {
  payload_.reserve(page_bytes - kRecordPageHeaderBytes);
}

bool PageBuilder::Room(size_t bytes) const {
  return kRecordPageHeaderBytes + payload_.size() + bytes <= page_bytes_;
}

bool PageBuilder::AddObject(const ObjectHeader& h) {
  if (!Room(kObjectRecordFixedBytes + h.object.name.size())) return false;
  Writer(payload_)
      .U(kObject, 1)
      .U(h.seq, 8)
      .U(static_cast<uint64_t>(h.object.id), 8)
      .U(h.object.version, 8)
      .U(h.object.size, 8)
      .U(h.object.stripe_count, 8)
      .U(h.object.block_size, 8)
      .U(static_cast<uint64_t>(h.object.created_unix_ms), 8)
      .U(h.object.data_blocks, 2)
      .U(h.object.parity_blocks, 2)
      .U(static_cast<uint64_t>(h.object.matrix), 1)
      .U(h.object.name.size(), 2)
      .Bytes(h.object.name);
  used_ = payload_.size();
  return true;
}

bool PageBuilder::AddBlock(const BlockEntry& b) {
  if (!Room(kBlockBytes)) return false;
  Writer(payload_)
      .U(kBlock, 1)
      .U(b.stripe, 8)
      .U(b.index, 2)
      .U(b.lba, 8)
      .U(b.lba_count, 4)
      .U(b.crc32c, 4)
      .U(b.block_size, 8);
  used_ = payload_.size();
  return true;
}

bool PageBuilder::AddEnd(const OperationEnd& end) {
  if (!Room(kEndBytes)) return false;
  Writer(payload_).U(kEnd, 1).U(end.seq, 8).U(end.blocks, 8);
  used_ = payload_.size();
  return true;
}

bool PageBuilder::AddTombstone(const Tombstone& t) {
  if (!Room(kTombBytes)) return false;
  Writer(payload_).U(kTomb, 1).U(t.seq, 8).U(static_cast<uint64_t>(t.object_id), 8);
  used_ = payload_.size();
  return true;
}

bool PageBuilder::AddAbort(uint64_t seq) {
  if (!Room(kAbortBytes)) return false;
  Writer(payload_).U(kAbort, 1).U(seq, 8);
  used_ = payload_.size();
  return true;
}

std::vector<uint8_t> PageBuilder::Finish(const PageHeader& header) {
  std::vector<uint8_t> page(page_bytes_, 0);
  uint8_t* p = page.data();
  std::memcpy(p, kPageMagic, sizeof(kPageMagic));
  PutStoreId(p + kStoreAt, header.store_id);
  Put(p + kDeviceAt, header.device, 4);
  Put(p + kFlagsAt, header.snapshot ? kSnapshotFlag : 0, 4);
  Put(p + kGenerationAt, header.generation, 8);
  Put(p + kIndexAt, header.index, 4);
  Put(p + kLengthAt, payload_.size(), 4);
  Put(p + kCommittedAt, header.committed_through, 8);
  std::copy(payload_.begin(), payload_.end(), p + kRecordPageHeaderBytes);
  // Over the header (its CRC field zero) and the payload.
  Put(p + kPageCrcAt, Crc32c(absl::MakeConstSpan(p, kRecordPageHeaderBytes + payload_.size())), 4);
  payload_.clear();
  used_ = 0;
  return page;
}

absl::StatusOr<PageHeader> DecodePage(absl::Span<const uint8_t> page, RecordSet& out) {
  if (page.size() < kRecordPageHeaderBytes ||
      std::memcmp(page.data(), kPageMagic, sizeof(kPageMagic)) != 0) {
    return absl::NotFoundError("no record page");
  }
  const uint8_t* p = page.data();
  const size_t length = Get(p + kLengthAt, 4);
  if (length > page.size() - kRecordPageHeaderBytes) return Bad("payload longer than the page");
  const absl::Span<const uint8_t> payload = page.subspan(kRecordPageHeaderBytes, length);
  std::vector<uint8_t> covered(page.begin(), page.begin() + kRecordPageHeaderBytes + length);
  Put(covered.data() + kPageCrcAt, 0, 4);
  if (Crc32c(covered) != Get(p + kPageCrcAt, 4)) return Bad("CRC32C mismatch");
  PageHeader h;
  h.store_id = GetStoreId(p + kStoreAt);
  h.device = static_cast<uint32_t>(Get(p + kDeviceAt, 4));
  h.snapshot = (Get(p + kFlagsAt, 4) & kSnapshotFlag) != 0;
  h.generation = Get(p + kGenerationAt, 8);
  h.index = static_cast<uint32_t>(Get(p + kIndexAt, 4));
  h.committed_through = Get(p + kCommittedAt, 8);
  RecordSet records;
  if (absl::Status s = DecodeRecords(payload, records); !s.ok()) return s;
  out.Append(records);
  return h;
}

void RecordSet::Append(const RecordSet& other) {
  auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  append(objects, other.objects);
  append(blocks, other.blocks);
  append(ends, other.ends);
  append(tombstones, other.tombstones);
  append(aborted, other.aborted);
}

std::vector<uint8_t> EncodeCheckpoint(const Checkpoint& c, size_t page_bytes) {
  std::vector<uint8_t> page(page_bytes, 0);
  uint8_t* p = page.data();
  std::memcpy(p, kCheckpointMagic, sizeof(kCheckpointMagic));
  PutStoreId(p + kStoreAt, c.store_id);
  Put(p + kDeviceAt, c.device, 4);
  Put(p + kHalfAt, c.half, 4);
  Put(p + kCounterAt, c.counter, 8);
  Put(p + kCkGenerationAt, c.generation, 8);
  Put(p + kSnapshotPagesAt, c.snapshot_pages, 4);
  Put(p + kNextPageAt, c.next_page, 4);
  Put(p + kCleanAt, c.clean ? 1 : 0, 4);
  Put(p + kCkCommittedAt, c.committed_through, 8);
  Put(p + kMaxSeqAt, c.max_seq, 8);
  Put(p + kCkCrcAt, Crc32c(absl::MakeConstSpan(p, kCkCrcAt)), 4);
  return page;
}

absl::StatusOr<Checkpoint> DecodeCheckpoint(absl::Span<const uint8_t> page) {
  if (page.size() < kCkCrcAt + 4 ||
      std::memcmp(page.data(), kCheckpointMagic, sizeof(kCheckpointMagic)) != 0) {
    return absl::NotFoundError("no record-log checkpoint");
  }
  const uint8_t* p = page.data();
  if (Crc32c(page.first(kCkCrcAt)) != Get(p + kCkCrcAt, 4)) {
    return absl::DataLossError("record-log checkpoint fails its CRC32C");
  }
  Checkpoint c;
  c.store_id = GetStoreId(p + kStoreAt);
  c.device = static_cast<uint32_t>(Get(p + kDeviceAt, 4));
  c.half = static_cast<uint32_t>(Get(p + kHalfAt, 4)) & 1;
  c.counter = Get(p + kCounterAt, 8);
  c.generation = Get(p + kCkGenerationAt, 8);
  c.snapshot_pages = static_cast<uint32_t>(Get(p + kSnapshotPagesAt, 4));
  c.next_page = static_cast<uint32_t>(Get(p + kNextPageAt, 4));
  c.clean = Get(p + kCleanAt, 4) != 0;
  c.committed_through = Get(p + kCkCommittedAt, 8);
  c.max_seq = Get(p + kMaxSeqAt, 8);
  return c;
}

}  // namespace ecd::store
