// The catalog's queries: devices, meta, objects, blocks and the stripes the repair pages through,
// with the decoders that check every row before the store acts on it.
#include <sqlite3.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "lib/catalog/catalog.h"
#include "lib/catalog/sqlite_statement.h"

namespace ecd::store {

using catalog_internal::Statement;

namespace {

// Reads the columns of one row into a record's fields, checking that each value fits its field:
// an INTEGER in the field's range, TEXT, or a name the store knows. The first one that does not
// (a NULL, a real, a blob, a negative size, an unknown state) makes status() DataLoss naming the
// row and the column. Such a row was not written by ecd: the store must not act on it (a zero
// block size would divide by zero, an unknown matrix would decode with the wrong one). The row is
// named by its `key` columns, read only on failure: reading a column as text converts it, after
// which its type is no longer reliable.
class RowDecoder {
 public:
  RowDecoder(const Statement& s, const char* table,
             std::initializer_list<std::pair<const char*, int>> key)
      : s_(s), table_(table), key_(key) {}

  int64_t Int(int col, const char* name, int64_t min = INT64_MIN, int64_t max = INT64_MAX) {
    if (!status_.ok()) return 0;
    if (s_.Type(col) != SQLITE_INTEGER) {
      Fail(name, absl::StrCat("holds ", Describe(col), ", not an integer"));
      return 0;
    }
    const int64_t v = s_.Int(col);
    if (v < min || v > max) {
      Fail(name, absl::StrCat("holds ", v, ", outside ", min, "..", max));
      return 0;
    }
    return v;
  }
  std::string Text(int col, const char* name) {
    if (!status_.ok()) return "";
    if (s_.Type(col) != SQLITE_TEXT) {
      Fail(name, absl::StrCat("holds ", Describe(col), ", not text"));
      return "";
    }
    return s_.Text(col);
  }
  void Fail(const char* name, absl::string_view why) {
    if (!status_.ok()) return;
    std::string row = table_;
    for (const auto& [column, index] : key_)
      absl::StrAppend(&row, " ", column, "=", s_.Text(index));
    status_ = absl::DataLossError(
        absl::StrCat("catalog row ", row, ": ", name, " ", why,
                     "; the catalog was changed outside ecd or is damaged (docs/catalog.md)"));
  }
  const absl::Status& status() const { return status_; }

 private:
  std::string Describe(int col) const {
    switch (s_.Type(col)) {
      case SQLITE_NULL:
        return "NULL";
      case SQLITE_FLOAT:
        return absl::StrCat("the real ", s_.Text(col));
      case SQLITE_BLOB:
        return "a blob";
      case SQLITE_TEXT:
        return absl::StrCat("the text \"", s_.Text(col), "\"");
      default:
        return s_.Text(col);
    }
  }

  const Statement& s_;
  const char* const table_;
  const std::vector<std::pair<const char*, int>> key_;
  absl::Status status_;
};

constexpr int64_t kU32Max = UINT32_MAX;

absl::StatusOr<ObjectRecord> ReadObject(const Statement& s) {
  RowDecoder r(s, "objects", {{"id", 0}});
  ObjectRecord o;
  o.id = r.Int(0, "id");
  o.name = r.Text(1, "name");
  o.size = static_cast<uint64_t>(r.Int(2, "size", 0));
  o.data_blocks = static_cast<uint32_t>(r.Int(3, "data_blocks", 0, kU32Max));
  o.parity_blocks = static_cast<uint32_t>(r.Int(4, "parity_blocks", 0, kU32Max));
  const std::string matrix = r.Text(5, "matrix");
  o.block_size = static_cast<uint64_t>(r.Int(6, "block_size", 0));
  o.stripe_count = static_cast<uint64_t>(r.Int(7, "stripe_count", 0));
  o.created_unix_ms = r.Int(8, "created_unix_ms");
  o.version = static_cast<uint64_t>(r.Int(9, "version", 0));
  if (!r.status().ok()) return r.status();
  if (matrix == "vandermonde") {
    o.matrix = ec::MatrixType::kVandermonde;
  } else if (matrix == "cauchy") {
    o.matrix = ec::MatrixType::kCauchy;
  } else {
    r.Fail("matrix", absl::StrCat("is \"", matrix, "\", not cauchy or vandermonde"));
  }
  if (absl::Status v =
          ec::ValidateShape(static_cast<int>(std::min<uint32_t>(o.data_blocks, INT_MAX)),
                            static_cast<int>(std::min<uint32_t>(o.parity_blocks, INT_MAX)));
      !v.ok()) {
    r.Fail("data_blocks/parity_blocks", absl::StrCat("are not a shape ecd writes: ", v.message()));
  }
  if (absl::Status v = ec::ValidateBlockSize(o.block_size); !v.ok()) {
    r.Fail("block_size", absl::StrCat("is not one ecd writes: ", v.message()));
  }
  if (!r.status().ok()) return r.status();
  return o;
}

constexpr const char* kObjectColumns =
    "id, name, size, data_blocks, parity_blocks, matrix, block_size, stripe_count, "
    "created_unix_ms, version";

// Reads kBlockColumns starting at column `at`.
absl::StatusOr<BlockRecord> ReadBlock(const Statement& s, int at = 0) {
  RowDecoder r(s, "blocks", {{"object_id", at + 7}, {"stripe", at}, {"idx", at + 1}});
  BlockRecord b;
  b.stripe = static_cast<uint64_t>(r.Int(at, "stripe", 0));
  b.index = static_cast<uint32_t>(r.Int(at + 1, "idx", 0, kU32Max));
  b.device = static_cast<uint32_t>(r.Int(at + 2, "device_id", 0, kU32Max));
  b.lba = static_cast<uint64_t>(r.Int(at + 3, "lba", 0));
  b.lba_count = static_cast<uint32_t>(r.Int(at + 4, "lba_count", 0, kU32Max));
  b.crc32c = static_cast<uint32_t>(r.Int(at + 5, "crc32c", 0, kU32Max));
  b.corrupt = r.Int(at + 6, "corrupt") != 0;
  if (!r.status().ok()) return r.status();
  return b;
}

// object_id last: only ReadBlock's error message reads it.
constexpr const char* kBlockColumns =
    "stripe, idx, device_id, lba, lba_count, crc32c, corrupt, object_id";

}  // namespace
absl::StatusOr<std::vector<DeviceRecord>> Catalog::ListDevices() {
  MutexLock lock(mu_);
  Statement s(db_, "SELECT id, path, size_bytes, lba_size, state FROM devices ORDER BY id");
  std::vector<DeviceRecord> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    RowDecoder r(s, "devices", {{"id", 0}});
    DeviceRecord d;
    d.id = static_cast<uint32_t>(r.Int(0, "id", 0, kU32Max));
    d.path = r.Text(1, "path");
    d.size_bytes = static_cast<uint64_t>(r.Int(2, "size_bytes", 0));
    d.lba_size = static_cast<uint32_t>(r.Int(3, "lba_size", 0, kU32Max));
    const std::string state = r.Text(4, "state");
    if (r.status().ok() && state != "online" && state != "failed") {
      r.Fail("state", absl::StrCat("is \"", state, "\", not online or failed"));
    }
    if (!r.status().ok()) return r.status();
    d.state = state == "failed" ? DeviceState::kFailed : DeviceState::kOnline;
    out.push_back(std::move(d));
  }
  Statement failing(db_, "SELECT key FROM meta WHERE key LIKE 'device_failing/%'");
  for (;;) {
    absl::StatusOr<bool> row = failing.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    uint32_t id = 0;
    if (absl::SimpleAtoi(failing.Text(0).substr(strlen("device_failing/")), &id)) {
      for (DeviceRecord& d : out) {
        if (d.id == id && d.state == DeviceState::kOnline) d.state = DeviceState::kFailing;
      }
    }
  }
  // "device_down/<id>" = "<unix ms> <reason>".
  Statement down(db_, "SELECT key, value FROM meta WHERE key LIKE 'device_down/%'");
  for (;;) {
    absl::StatusOr<bool> row = down.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    uint32_t id = 0;
    const std::string value = down.Text(1);
    const size_t space = value.find(' ');
    int64_t since = 0;
    if (!absl::SimpleAtoi(down.Text(0).substr(strlen("device_down/")), &id) ||
        !absl::SimpleAtoi(value.substr(0, space), &since)) {
      continue;
    }
    for (DeviceRecord& d : out) {
      if (d.id != id || d.state == DeviceState::kFailed) continue;
      d.state = DeviceState::kDown;
      d.down_since_unix_ms = since;
      d.down_reason = space == std::string::npos ? "" : value.substr(space + 1);
    }
  }
  return out;
}

absl::StatusOr<std::optional<std::string>> Catalog::GetMeta(absl::string_view key) {
  MutexLock lock(mu_);
  Statement s(db_, "SELECT value FROM meta WHERE key = ?");
  s.Bind(1, key);
  absl::StatusOr<bool> row = s.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(s.Text(0));
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Catalog::MetaWithPrefix(
    absl::string_view prefix) {
  MutexLock lock(mu_);
  Statement s(db_, "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ? ORDER BY key");
  s.Bind(1, static_cast<int64_t>(prefix.size())).Bind(2, prefix);
  std::vector<std::pair<std::string, std::string>> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.emplace_back(s.Text(0), s.Text(1));
  }
  return out;
}

absl::StatusOr<ObjectRecord> Catalog::GetObject(absl::string_view name) {
  MutexLock lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kObjectColumns,
                                " FROM objects WHERE name = ? AND state = 'committed'")
                       .c_str());
  s.Bind(1, name);
  absl::StatusOr<bool> row = s.Step();
  if (!row.ok()) return row.status();
  if (!*row) {
    return absl::NotFoundError(
        absl::StrCat("object \"", name, "\" not found; `ecctl ls` lists the stored objects"));
  }
  return ReadObject(s);
}

absl::StatusOr<std::vector<ObjectRecord>> Catalog::ListObjects() {
  MutexLock lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kObjectColumns,
                                " FROM objects WHERE state = 'committed' ORDER BY name")
                       .c_str());
  std::vector<ObjectRecord> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    absl::StatusOr<ObjectRecord> o = ReadObject(s);
    if (!o.ok()) return o.status();
    out.push_back(*std::move(o));
  }
  return out;
}

absl::StatusOr<std::vector<ObjectRecord>> Catalog::ListObjectsFrom(absl::string_view from,
                                                                   bool after,
                                                                   absl::string_view before,
                                                                   size_t limit) {
  MutexLock lock(mu_);
  // Two forms rather than "(?2 = '' OR name < ?2)": the index on name then bounds the scan at
  // both ends, so an empty range costs one seek.
  const std::string sql = absl::StrCat(
      "SELECT ", kObjectColumns, " FROM objects WHERE name ", after ? ">" : ">=", " ?1",
      before.empty() ? "" : " AND name < ?3", " AND state = 'committed' ORDER BY name LIMIT ?2");
  Statement s(db_, sql.c_str());
  s.Bind(1, from).Bind(2, static_cast<int64_t>(limit));
  if (!before.empty()) s.Bind(3, before);
  std::vector<ObjectRecord> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    absl::StatusOr<ObjectRecord> o = ReadObject(s);
    if (!o.ok()) return o.status();
    out.push_back(*std::move(o));
  }
}

absl::StatusOr<DamageTotals> Catalog::CountDamage(absl::Span<const uint32_t> unhealthy_devices) {
  MutexLock lock(mu_);
  // The bad blocks come from the partial index of corrupt blocks and, per unhealthy device, from
  // the extent index; a stripe is lost when more of its blocks are bad than it has parity.
  std::string on_devices;
  if (!unhealthy_devices.empty()) {
    on_devices = " UNION SELECT object_id, stripe, idx FROM blocks WHERE device_id IN (";
    for (size_t i = 0; i < unhealthy_devices.size(); ++i) {
      absl::StrAppend(&on_devices, i == 0 ? "?" : ", ?", i + 1);
    }
    on_devices += ")";
  }
  const std::string sql = absl::StrCat(
      "WITH bad(object_id, stripe, idx) AS (SELECT object_id, stripe, idx FROM blocks WHERE "
      "corrupt = 1",
      on_devices,
      "), per_stripe AS (SELECT object_id, stripe, COUNT(*) AS n FROM bad GROUP BY object_id, "
      "stripe) SELECT COUNT(*), COALESCE(SUM(p.n > o.parity_blocks), 0), "
      "COUNT(DISTINCT p.object_id) FROM per_stripe p JOIN objects o ON o.id = p.object_id "
      "WHERE o.state = 'committed'");
  Statement s(db_, sql.c_str());
  for (size_t i = 0; i < unhealthy_devices.size(); ++i) {
    s.Bind(static_cast<int>(i + 1), static_cast<int64_t>(unhealthy_devices[i]));
  }
  absl::StatusOr<bool> row = s.Step();
  if (!row.ok()) return row.status();
  DamageTotals d;
  d.degraded_stripes = static_cast<uint64_t>(s.Int(0));
  d.lost_stripes = static_cast<uint64_t>(s.Int(1));
  d.degraded_objects = static_cast<uint64_t>(s.Int(2));
  return d;
}

absl::StatusOr<std::vector<BlockRecord>> Catalog::GetBlocks(int64_t object_id,
                                                            uint64_t first_stripe,
                                                            uint64_t stripe_count) {
  MutexLock lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kBlockColumns,
                                " FROM blocks WHERE object_id = ? AND stripe >= ? AND stripe < ? "
                                "ORDER BY stripe, idx")
                       .c_str());
  s.Bind(1, object_id).Bind(2, static_cast<int64_t>(first_stripe));
  s.Bind(3, static_cast<int64_t>(first_stripe + stripe_count));
  std::vector<BlockRecord> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    absl::StatusOr<BlockRecord> b = ReadBlock(s);
    if (!b.ok()) return b.status();
    out.push_back(*b);
  }
  return out;
}

absl::Status Catalog::ForEachBlock(const std::function<void(const BlockRecord&)>& fn) {
  MutexLock lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kBlockColumns, " FROM blocks").c_str());
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    absl::StatusOr<BlockRecord> b = ReadBlock(s);
    if (!b.ok()) return b.status();
    fn(*b);
  }
}

absl::Status Catalog::ForEachBlockOf(int64_t object_id,
                                     const std::function<void(const BlockRecord&)>& fn) {
  MutexLock lock(mu_);
  Statement s(db_,
              absl::StrCat("SELECT ", kBlockColumns, " FROM blocks WHERE object_id = ?").c_str());
  s.Bind(1, object_id);
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    absl::StatusOr<BlockRecord> b = ReadBlock(s);
    if (!b.ok()) return b.status();
    fn(*b);
  }
}

absl::StatusOr<std::vector<std::string>> Catalog::ObjectsOnDevice(uint32_t device,
                                                                  uint64_t first_lba,
                                                                  uint64_t lba_count) {
  MutexLock lock(mu_);
  const int64_t end = lba_count == 0 ? INT64_MAX : static_cast<int64_t>(first_lba + lba_count);
  Statement s(db_,
              "SELECT DISTINCT o.name FROM blocks b JOIN objects o ON o.id = b.object_id "
              "WHERE o.state = 'committed' AND b.device_id = ? AND b.lba < ? "
              "AND b.lba + b.lba_count > ? ORDER BY o.name");
  s.Bind(1, device).Bind(2, end).Bind(3, static_cast<int64_t>(first_lba));
  std::vector<std::string> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    out.push_back(s.Text(0));
  }
}

absl::StatusOr<StripePage> Catalog::StripesWithCorruptBlocks(const StripeCursor& after,
                                                             size_t max_stripes) {
  // Served by the partial index blocks_corrupt.
  return StripesOf(
      "SELECT DISTINCT object_id, stripe, 0 AS at FROM blocks WHERE corrupt = 1 AND "
      "(object_id, stripe) > (?1, ?2) ORDER BY object_id, stripe LIMIT ?3",
      {after.object, static_cast<int64_t>(after.stripe)}, max_stripes);
}

absl::StatusOr<StripePage> Catalog::StripesOnDevice(const DeviceRange& range,
                                                    const StripeCursor& after, size_t max_stripes) {
  // Served by blocks_by_extent (device_id, lba); a stripe has at most one block on a device.
  std::string hits =
      "SELECT object_id, stripe, lba AS at FROM blocks WHERE device_id = ?1 AND lba > ?2";
  if (range.lba_count > 0) {
    absl::StrAppend(&hits, " AND lba < ", range.first_lba + range.lba_count,
                    " AND lba + lba_count > ", range.first_lba);
  }
  absl::StrAppend(&hits, " ORDER BY lba LIMIT ?3");
  return StripesOf(hits, {range.device, after.lba}, max_stripes);
}

absl::StatusOr<StripePage> Catalog::StripesOf(const std::string& hits,
                                              std::pair<int64_t, int64_t> args,
                                              size_t max_stripes) {
  // kBlockColumns names columns of blocks; USING makes object_id and stripe unambiguous.
  const std::string sql =
      absl::StrCat("WITH hit(object_id, stripe, at) AS (", hits, ") SELECT ", kBlockColumns,
                   ", hit.at FROM hit JOIN blocks b USING (object_id, stripe) "
                   "ORDER BY hit.at, object_id, stripe, idx");
  MutexLock lock(mu_);
  Statement s(db_, sql.c_str());
  s.Bind(1, args.first).Bind(2, args.second).Bind(3, static_cast<int64_t>(max_stripes));
  std::vector<StripeRows> out;
  StripePage page;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    absl::StatusOr<BlockRecord> b = ReadBlock(s);
    if (!b.ok()) return b.status();
    const int64_t object_id = s.Int(7);
    if (out.empty() || out.back().object.id != object_id || out.back().stripe != b->stripe) {
      out.emplace_back();
      out.back().object.id = object_id;
      out.back().stripe = b->stripe;
      page.next = {object_id, b->stripe, s.Int(8)};
    }
    out.back().blocks.push_back(*b);
  }
  page.more = out.size() == max_stripes;
  // The objects' records; stripes of objects not committed (an encode in progress) are left out.
  std::map<int64_t, ObjectRecord> objects;
  for (StripeRows& r : out) {
    auto it = objects.find(r.object.id);
    if (it == objects.end()) {
      Statement o(db_, absl::StrCat("SELECT ", kObjectColumns,
                                    " FROM objects WHERE id = ? AND state = 'committed'")
                           .c_str());
      o.Bind(1, r.object.id);
      absl::StatusOr<bool> found = o.Step();
      if (!found.ok()) return found.status();
      ObjectRecord record;  // id 0: not committed
      if (*found) {
        absl::StatusOr<ObjectRecord> read = ReadObject(o);
        if (!read.ok()) return read.status();
        record = *std::move(read);
      }
      it = objects.emplace(r.object.id, std::move(record)).first;
    }
    if (it->second.id == 0) continue;
    r.object = it->second;
    page.stripes.push_back(std::move(r));
  }
  return page;
}

absl::StatusOr<ObjectCensus> Catalog::Census() {
  MutexLock lock(mu_);
  Statement s(db_,
              "SELECT parity_blocks, SUM(stripe_count), COUNT(*), SUM(size) FROM objects "
              "WHERE state = 'committed' GROUP BY parity_blocks");
  ObjectCensus out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.stripes_by_parity[static_cast<uint32_t>(s.Int(0))] = static_cast<uint64_t>(s.Int(1));
    out.totals.objects += static_cast<uint64_t>(s.Int(2));
    out.totals.bytes += static_cast<uint64_t>(s.Int(3));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> Catalog::BlockCountsByDevice() {
  MutexLock lock(mu_);
  Statement s(db_, "SELECT device_id, COUNT(*) FROM blocks GROUP BY device_id");
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return out;
    RowDecoder r(s, "blocks", {{"device_id", 0}});
    const auto device = static_cast<uint32_t>(r.Int(0, "device_id", 0, kU32Max));
    if (!r.status().ok()) return r.status();
    out.emplace_back(device, static_cast<uint64_t>(s.Int(1)));
  }
}

absl::StatusOr<uint64_t> Catalog::CommitSeq() {
  MutexLock lock(mu_);
  Statement s(db_, "SELECT value FROM meta WHERE key = 'commit_seq'");
  absl::StatusOr<bool> row = s.Step();
  if (!row.ok()) return row.status();
  uint64_t seq = 0;
  if (*row && !absl::SimpleAtoi(s.Text(0), &seq)) {
    return absl::DataLossError(absl::StrCat("catalog meta commit_seq is \"", s.Text(0),
                                            "\", not a number: the catalog is damaged"));
  }
  return seq;
}

absl::Status Catalog::ForEachBlockOnDevice(
    uint32_t device,
    const std::function<absl::Status(const ObjectRecord&, const BlockRecord&)>& fn) {
  MutexLock lock(mu_);
  Statement s(db_, absl::StrCat("SELECT o.", absl::StrReplaceAll(kObjectColumns, {{", ", ", o."}}),
                                ", b.", absl::StrReplaceAll(kBlockColumns, {{", ", ", b."}}),
                                " FROM blocks b JOIN objects o ON o.id = b.object_id "
                                "WHERE b.device_id = ? AND o.state = 'committed' "
                                "ORDER BY b.object_id, b.stripe, b.idx")
                       .c_str());
  s.Bind(1, device);
  ObjectRecord object;
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    if (s.Int(0) != object.id) {
      absl::StatusOr<ObjectRecord> o = ReadObject(s);
      if (!o.ok()) return o.status();
      object = *std::move(o);
    }
    absl::StatusOr<BlockRecord> b = ReadBlock(s, 10);
    if (!b.ok()) return b.status();
    if (absl::Status st = fn(object, *b); !st.ok()) return st;
  }
}

absl::Status Catalog::ForEachEmptyObject(
    const std::function<absl::Status(const ObjectRecord&)>& fn) {
  MutexLock lock(mu_);
  Statement s(db_, absl::StrCat("SELECT ", kObjectColumns,
                                " FROM objects WHERE state = 'committed' AND stripe_count = 0 "
                                "ORDER BY id")
                       .c_str());
  for (;;) {
    absl::StatusOr<bool> row = s.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    absl::StatusOr<ObjectRecord> o = ReadObject(s);
    if (!o.ok()) return o.status();
    if (absl::Status st = fn(*o); !st.ok()) return st;
  }
}

}  // namespace ecd::store
