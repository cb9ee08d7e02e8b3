// Fuzzes the catalog's row decoders (lib/catalog/catalog_queries.cc) through the public Catalog
// API: a SQLite catalog file is written with raw sqlite3 (as a hand edit, a bug or a corrupt
// restore could leave it), with fuzzed values in every column of devices, objects, blocks and meta
// (NULLs, reals, blobs, negative and huge integers, unknown enum strings, long text), then
// opened with Catalog::Open and read with every query the store uses.
//
// Input: the schema flavour (the real schema with CHECKs ignored, the same tables without
// constraints, or tables without column types), the schema_version row (2, 1 so that the
// migration runs, raw text, or none), then rows until the input ends: a table byte, then one
// tagged value per column (NULL, integer, real, text, blob, or one of a list of typical values).
//
// Properties checked beyond "no crash" (ASan and UBSan run in sqlite's callers, not in sqlite):
// - Catalog::Open either succeeds or returns a status;
// - every list query (ListDevices, ListObjects, GetBlocks, ForEachBlock, ForEachBlockOf,
//   BlockCountsByDevice) and GetObject either returns exactly the rows a reference decoder reads
//   from the file, value for value, or, when one of those rows holds a value its record cannot
//   represent, DataLoss: a NULL, a value of the wrong type, a negative value or one too large for
//   an unsigned field, a state or matrix name the store does not know, or an object shape or
//   block size the store would divide by or could not allocate (ec::ValidateShape,
//   ec::ValidateBlockSize). So the store never sees a record it cannot use;
// - ObjectsOnDevice, GetMeta and the write calls (SetDeviceState, DeleteObject, SetMeta,
//   SetBlockCorrupt, DropPendingObjects) return values or a status on any such file.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/catalog/catalog.h"
#include "lib/ec/matrix.h"
#include "tests/fuzz/fuzz_util.h"

namespace ecd::store {
namespace {

// ------------------------------------------------------------------------------------------------
// Writing the file.

struct Value {
  int type = SQLITE_NULL;
  int64_t i = 0;
  double d = 0;
  std::string s;  // text or blob
};

Value IntValue(int64_t i) {
  Value v;
  v.type = SQLITE_INTEGER;
  v.i = i;
  return v;
}
Value TextValue(std::string s) {
  Value v;
  v.type = SQLITE_TEXT;
  v.s = std::move(s);
  return v;
}
Value RealValue(double d) {
  Value v;
  v.type = SQLITE_FLOAT;
  v.d = d;
  return v;
}

// Values that real rows hold, and their near misses.
Value Typical(uint8_t k) {
  static const Value kValues[] = {
      IntValue(0),
      IntValue(1),
      IntValue(2),
      IntValue(4),
      IntValue(64),
      IntValue(4096),
      IntValue(1 << 20),
      IntValue(int64_t{1} << 30),
      IntValue(int64_t{1} << 32),
      IntValue(-1),
      IntValue(INT64_MAX),
      IntValue(INT64_MIN),
      IntValue(0xDEADBEEF),
      IntValue(129),
      IntValue(33),
      IntValue(100),
      TextValue("online"),
      TextValue("failed"),
      TextValue("failing"),
      TextValue("pending"),
      TextValue("committed"),
      TextValue("cauchy"),
      TextValue("vandermonde"),
      TextValue("Cauchy"),
      TextValue(""),
      TextValue("devices/nvme0.ns"),
      TextValue("a"),
      TextValue("device_failing/0"),
      TextValue("device_failing/1"),
      TextValue("schema_version"),
      TextValue("12"),
      RealValue(1.5),
  };
  return kValues[k % (sizeof(kValues) / sizeof(kValues[0]))];
}

Value ReadValue(fuzz::Reader& in) {
  const uint8_t tag = in.U8();
  Value v;
  switch (tag % 8) {
    case 0:
      break;  // NULL
    case 1:
      v.type = SQLITE_INTEGER;
      v.i = static_cast<int8_t>(in.U8());
      break;
    case 2:
      v.type = SQLITE_INTEGER;
      v.i = static_cast<int64_t>(in.U64());
      break;
    case 3: {
      v.type = SQLITE_FLOAT;
      const uint64_t bits = in.U64();
      std::memcpy(&v.d, &bits, 8);
      break;
    }
    case 4:
      v.type = SQLITE_TEXT;
      v.s = in.ShortString();
      break;
    case 5:
      v.type = SQLITE_BLOB;
      v.s = in.ShortString();
      break;
    case 6:
      v.type = SQLITE_INTEGER;
      v.i = in.U8();
      break;
    default:
      v = Typical(in.U8());
      break;
  }
  return v;
}

void Bind(sqlite3_stmt* st, int col, const Value& v) {
  switch (v.type) {
    case SQLITE_INTEGER:
      sqlite3_bind_int64(st, col, v.i);
      break;
    case SQLITE_FLOAT:
      sqlite3_bind_double(st, col, v.d);
      break;
    case SQLITE_TEXT:
      sqlite3_bind_text(st, col, v.s.data(), static_cast<int>(v.s.size()), SQLITE_TRANSIENT);
      break;
    case SQLITE_BLOB:
      sqlite3_bind_blob(st, col, v.s.data(), static_cast<int>(v.s.size()), SQLITE_TRANSIENT);
      break;
    default:
      sqlite3_bind_null(st, col);
      break;
  }
}

constexpr const char* kRealSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE devices(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,
  size_bytes INTEGER NOT NULL, lba_size INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('online', 'failed')));
CREATE TABLE objects(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
  state TEXT NOT NULL CHECK (state IN ('pending', 'committed')), size INTEGER NOT NULL,
  data_blocks INTEGER NOT NULL, parity_blocks INTEGER NOT NULL,
  matrix TEXT NOT NULL CHECK (matrix IN ('cauchy', 'vandermonde')), block_size INTEGER NOT NULL,
  stripe_count INTEGER NOT NULL, created_unix_ms INTEGER NOT NULL%s);
CREATE TABLE blocks(object_id INTEGER NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
  stripe INTEGER NOT NULL, idx INTEGER NOT NULL, device_id INTEGER NOT NULL REFERENCES devices(id),
  lba INTEGER NOT NULL, lba_count INTEGER NOT NULL, crc32c INTEGER NOT NULL,
  corrupt INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (object_id, stripe, idx)) WITHOUT ROWID;
)sql";

constexpr const char* kLenientSchema = R"sql(
CREATE TABLE meta(key TEXT, value TEXT);
CREATE TABLE devices(id INTEGER PRIMARY KEY, path TEXT, size_bytes INTEGER, lba_size INTEGER,
  state TEXT);
CREATE TABLE objects(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, state TEXT, size INTEGER,
  data_blocks INTEGER, parity_blocks INTEGER, matrix TEXT, block_size INTEGER,
  stripe_count INTEGER, created_unix_ms INTEGER%s);
CREATE TABLE blocks(object_id INTEGER, stripe INTEGER, idx INTEGER, device_id INTEGER,
  lba INTEGER, lba_count INTEGER, crc32c INTEGER, corrupt INTEGER);
)sql";

constexpr const char* kTypelessSchema = R"sql(
CREATE TABLE meta(key, value);
CREATE TABLE devices(id, path, size_bytes, lba_size, state);
CREATE TABLE objects(id, name, state, size, data_blocks, parity_blocks, matrix, block_size,
  stripe_count, created_unix_ms%s);
CREATE TABLE blocks(object_id, stripe, idx, device_id, lba, lba_count, crc32c, corrupt);
)sql";

struct Table {
  const char* name;
  int columns;  // without objects.version
};
constexpr Table kTables[] = {{"devices", 5}, {"objects", 10}, {"blocks", 8}, {"meta", 2}};

void RemoveDbDir();

// The catalog file of this process, in a directory of its own that is removed at exit.
const std::string& DbPath() {
  static const std::string path = [] {
    std::filesystem::path dir = std::filesystem::exists("/dev/shm")
                                    ? std::filesystem::path("/dev/shm")
                                    : std::filesystem::temp_directory_path();
    dir /= absl::StrCat("ecd_catalog_fuzz_", ::getpid());
    std::filesystem::create_directories(dir);
    return (dir / "catalog.db").string();
  }();
  static const bool cleaned_at_exit = std::atexit(RemoveDbDir) == 0;
  (void)cleaned_at_exit;
  return path;
}

void RemoveDb() {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    ::unlink(absl::StrCat(DbPath(), suffix).c_str());
  }
}

void RemoveDbDir() {
  RemoveDb();
  std::error_code error;
  std::filesystem::remove(std::filesystem::path(DbPath()).parent_path(), error);
}

// Writes the catalog file the input describes; returns a name and an object id to probe.
void WriteDb(fuzz::Reader& in, std::string* probe_name, int64_t* probe_id) {
  RemoveDb();
  sqlite3* db = nullptr;
  FUZZ_CHECK(sqlite3_open(DbPath().c_str(), &db) == SQLITE_OK);
  sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF", nullptr, nullptr, nullptr);
  const uint8_t flavour = in.U8() % 3;
  const uint8_t version = in.U8() % 4;
  const bool has_version_column = version != 1;
  const char* schema = flavour == 0 ? kRealSchema : flavour == 1 ? kLenientSchema : kTypelessSchema;
  const char* version_column = !has_version_column ? ""
                               : flavour == 2      ? ", version"
                                                   : ", version INTEGER NOT NULL DEFAULT 1";
  std::string sql(schema);
  sql.replace(sql.find("%s"), 2, version_column);
  // The unique index Catalog::Open would create: with it in place, a duplicate extent is an
  // ignored insert here rather than a failed Open.
  sql += "CREATE UNIQUE INDEX blocks_by_extent ON blocks(device_id, lba);";
  if (flavour == 0) sql += "PRAGMA ignore_check_constraints=ON;";
  FUZZ_CHECK(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  if (version != 3) {
    const std::string v = version == 0 ? "2" : version == 1 ? "1" : in.ShortString();
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO meta(key, value) VALUES ('schema_version', ?)", -1, &st,
                       nullptr);
    sqlite3_bind_text(st, 1, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    sqlite3_step(st);
    sqlite3_finalize(st);
  }
  *probe_name = in.ShortString();
  *probe_id = static_cast<int8_t>(in.U8());
  sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  for (int rows = 0; !in.empty() && rows < 48; ++rows) {
    const Table& t = kTables[in.U8() % 4];
    const int columns = t.columns + (t.name == std::string_view("objects") && has_version_column);
    std::string insert = absl::StrCat("INSERT OR IGNORE INTO ", t.name, " VALUES (?");
    for (int c = 1; c < columns; ++c) insert += ", ?";
    insert += ")";
    sqlite3_stmt* st = nullptr;
    FUZZ_CHECK(sqlite3_prepare_v2(db, insert.c_str(), -1, &st, nullptr) == SQLITE_OK);
    for (int c = 0; c < columns; ++c) Bind(st, c + 1, ReadValue(in));
    sqlite3_step(st);  // a datatype mismatch on a rowid column just loses the row
    sqlite3_finalize(st);
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  FUZZ_CHECK(sqlite3_close(db) == SQLITE_OK);
}

// ------------------------------------------------------------------------------------------------
// The reference decoder: the rows as the file holds them, or nullopt for a row whose record
// cannot hold them.

class RawDb {
 public:
  RawDb() {
    FUZZ_CHECK(sqlite3_open_v2(DbPath().c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db_); }

  // Runs `sql` with int64 bindings and calls row(stmt) for each row.
  template <typename Fn>
  void Query(const std::string& sql, std::vector<Value> binds, Fn row) {
    sqlite3_stmt* st = nullptr;
    FUZZ_CHECK(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
    for (size_t i = 0; i < binds.size(); ++i) Bind(st, static_cast<int>(i) + 1, binds[i]);
    while (sqlite3_step(st) == SQLITE_ROW) row(st);
    sqlite3_finalize(st);
  }

 private:
  sqlite3* db_ = nullptr;
};

std::optional<int64_t> IntIn(sqlite3_stmt* st, int c, int64_t lo, int64_t hi) {
  if (sqlite3_column_type(st, c) != SQLITE_INTEGER) return std::nullopt;
  const int64_t v = sqlite3_column_int64(st, c);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<std::string> TextOf(sqlite3_stmt* st, int c) {
  if (sqlite3_column_type(st, c) != SQLITE_TEXT) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, c)),
                     static_cast<size_t>(sqlite3_column_bytes(st, c)));
}

constexpr int64_t kU32 = UINT32_MAX;

using DeviceKey = std::tuple<uint32_t, std::string, uint64_t, uint32_t, int>;
DeviceKey Key(const DeviceRecord& d) {
  return {d.id, d.path, d.size_bytes, d.lba_size, static_cast<int>(d.state)};
}
using ObjectKey = std::tuple<int64_t, std::string, uint64_t, uint32_t, uint32_t, int, uint64_t,
                             uint64_t, int64_t, uint64_t>;
ObjectKey Key(const ObjectRecord& o) {
  return {o.id,          o.name,          o.size,
          o.data_blocks, o.parity_blocks, static_cast<int>(o.matrix),
          o.block_size,  o.stripe_count,  o.created_unix_ms,
          o.version};
}
using BlockKey = std::tuple<uint64_t, uint32_t, uint32_t, uint64_t, uint32_t, uint32_t, bool>;
BlockKey Key(const BlockRecord& b) {
  return {b.stripe, b.index, b.device, b.lba, b.lba_count, b.crc32c, b.corrupt};
}

std::optional<DeviceRecord> RefDevice(sqlite3_stmt* st) {
  auto id = IntIn(st, 0, 0, kU32);
  auto path = TextOf(st, 1);
  auto size = IntIn(st, 2, 0, INT64_MAX);
  auto lba = IntIn(st, 3, 0, kU32);
  auto state = TextOf(st, 4);
  if (!id || !path || !size || !lba || !state) return std::nullopt;
  if (*state != "online" && *state != "failed") return std::nullopt;
  DeviceRecord d;
  d.id = static_cast<uint32_t>(*id);
  d.path = *path;
  d.size_bytes = static_cast<uint64_t>(*size);
  d.lba_size = static_cast<uint32_t>(*lba);
  d.state = *state == "failed" ? DeviceState::kFailed : DeviceState::kOnline;
  return d;
}

constexpr const char* kObjectColumns =
    "id, name, size, data_blocks, parity_blocks, matrix, block_size, stripe_count, "
    "created_unix_ms, version";

std::optional<ObjectRecord> RefObject(sqlite3_stmt* st) {
  auto id = IntIn(st, 0, INT64_MIN, INT64_MAX);
  auto name = TextOf(st, 1);
  auto size = IntIn(st, 2, 0, INT64_MAX);
  auto m = IntIn(st, 3, 0, kU32);
  auto k = IntIn(st, 4, 0, kU32);
  auto matrix = TextOf(st, 5);
  auto bs = IntIn(st, 6, 0, INT64_MAX);
  auto stripes = IntIn(st, 7, 0, INT64_MAX);
  auto created = IntIn(st, 8, INT64_MIN, INT64_MAX);
  auto version = IntIn(st, 9, 0, INT64_MAX);
  if (!id || !name || !size || !m || !k || !matrix || !bs || !stripes || !created || !version) {
    return std::nullopt;
  }
  if (*matrix != "cauchy" && *matrix != "vandermonde") return std::nullopt;
  if (!ec::ValidateShape(static_cast<int>(std::min<int64_t>(*m, INT_MAX)),
                         static_cast<int>(std::min<int64_t>(*k, INT_MAX)))
           .ok() ||
      !ec::ValidateBlockSize(static_cast<size_t>(*bs)).ok()) {
    return std::nullopt;
  }
  ObjectRecord o;
  o.id = *id;
  o.name = *name;
  o.size = static_cast<uint64_t>(*size);
  o.data_blocks = static_cast<uint32_t>(*m);
  o.parity_blocks = static_cast<uint32_t>(*k);
  o.matrix = *matrix == "vandermonde" ? ec::MatrixType::kVandermonde : ec::MatrixType::kCauchy;
  o.block_size = static_cast<uint64_t>(*bs);
  o.stripe_count = static_cast<uint64_t>(*stripes);
  o.created_unix_ms = *created;
  o.version = static_cast<uint64_t>(*version);
  return o;
}

constexpr const char* kBlockColumns = "stripe, idx, device_id, lba, lba_count, crc32c, corrupt";

std::optional<BlockRecord> RefBlock(sqlite3_stmt* st) {
  auto stripe = IntIn(st, 0, 0, INT64_MAX);
  auto idx = IntIn(st, 1, 0, kU32);
  auto dev = IntIn(st, 2, 0, kU32);
  auto lba = IntIn(st, 3, 0, INT64_MAX);
  auto count = IntIn(st, 4, 0, kU32);
  auto crc = IntIn(st, 5, 0, kU32);
  auto corrupt = IntIn(st, 6, INT64_MIN, INT64_MAX);
  if (!stripe || !idx || !dev || !lba || !count || !crc || !corrupt) return std::nullopt;
  BlockRecord b;
  b.stripe = static_cast<uint64_t>(*stripe);
  b.index = static_cast<uint32_t>(*idx);
  b.device = static_cast<uint32_t>(*dev);
  b.lba = static_cast<uint64_t>(*lba);
  b.lba_count = static_cast<uint32_t>(*count);
  b.crc32c = static_cast<uint32_t>(*crc);
  b.corrupt = *corrupt != 0;
  return b;
}

std::pair<uint32_t, uint64_t> Key(const std::pair<uint32_t, uint64_t>& p) { return p; }

// `got` must be exactly the reference rows (in any order), or DataLoss if one is undecodable.
template <typename R>
void CheckRows(const absl::StatusOr<std::vector<R>>& got,
               const std::vector<std::optional<R>>& want) {
  const bool bad = std::any_of(want.begin(), want.end(), [](const auto& r) { return !r; });
  if (bad) {
    FUZZ_CHECK(!got.ok() && got.status().code() == absl::StatusCode::kDataLoss);
    return;
  }
  FUZZ_CHECK(got.ok());
  std::vector<decltype(Key(std::declval<R>()))> a, b;
  for (const R& r : *got) a.push_back(Key(r));
  for (const auto& r : want) b.push_back(Key(*r));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  FUZZ_CHECK(a == b);
}

template <typename Fn>
absl::StatusOr<std::vector<BlockRecord>> Collect(Fn each) {
  std::vector<BlockRecord> out;
  absl::Status s = each([&out](const BlockRecord& b) { out.push_back(b); });
  if (!s.ok()) return s;
  return out;
}

void CheckCatalog(Catalog& c, const std::string& probe_name, int64_t probe_id) {
  RawDb raw;

  // Devices, with the failing marks from meta.
  std::vector<std::optional<DeviceRecord>> devices;
  raw.Query("SELECT id, path, size_bytes, lba_size, state FROM devices", {},
            [&](sqlite3_stmt* st) { devices.push_back(RefDevice(st)); });
  raw.Query("SELECT key FROM meta WHERE key LIKE 'device_failing/%'", {}, [&](sqlite3_stmt* st) {
    const std::string key(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                          static_cast<size_t>(sqlite3_column_bytes(st, 0)));
    uint32_t id = 0;
    if (!absl::SimpleAtoi(key.substr(strlen("device_failing/")), &id)) return;
    for (auto& d : devices) {
      if (d && d->id == id && d->state == DeviceState::kOnline) d->state = DeviceState::kFailing;
    }
  });
  CheckRows(c.ListDevices(), devices);

  // Committed objects, one by name, and the probe name.
  std::vector<std::optional<ObjectRecord>> objects;
  raw.Query(absl::StrCat("SELECT ", kObjectColumns, " FROM objects WHERE state = 'committed'"), {},
            [&](sqlite3_stmt* st) { objects.push_back(RefObject(st)); });
  absl::StatusOr<std::vector<ObjectRecord>> listed = c.ListObjects();
  CheckRows(listed, objects);
  std::vector<std::string> names = {probe_name};
  if (listed.ok()) {
    for (const ObjectRecord& o : *listed) names.push_back(o.name);
  }
  for (const std::string& name : names) {
    std::vector<std::optional<ObjectRecord>> first;
    raw.Query(absl::StrCat("SELECT ", kObjectColumns,
                           " FROM objects WHERE name = ? AND state = 'committed'"),
              {TextValue(name)}, [&](sqlite3_stmt* st) {
                if (first.empty()) first.push_back(RefObject(st));
              });
    absl::StatusOr<ObjectRecord> got = c.GetObject(name);
    if (first.empty()) {
      FUZZ_CHECK(got.status().code() == absl::StatusCode::kNotFound);
    } else if (!first[0]) {
      FUZZ_CHECK(got.status().code() == absl::StatusCode::kDataLoss);
    } else {
      FUZZ_CHECK(got.ok() && Key(*got) == Key(*first[0]));
    }
  }

  // Blocks: all of them, per object, and stripe ranges.
  std::vector<std::optional<BlockRecord>> all;
  raw.Query(absl::StrCat("SELECT ", kBlockColumns, " FROM blocks"), {},
            [&](sqlite3_stmt* st) { all.push_back(RefBlock(st)); });
  CheckRows(Collect([&](auto fn) { return c.ForEachBlock(fn); }), all);
  std::vector<int64_t> ids = {probe_id};
  raw.Query("SELECT DISTINCT object_id FROM blocks LIMIT 8", {},
            [&](sqlite3_stmt* st) { ids.push_back(sqlite3_column_int64(st, 0)); });
  for (int64_t id : ids) {
    std::vector<std::optional<BlockRecord>> of;
    raw.Query(absl::StrCat("SELECT ", kBlockColumns, " FROM blocks WHERE object_id = ?"),
              {IntValue(id)}, [&](sqlite3_stmt* st) { of.push_back(RefBlock(st)); });
    CheckRows(Collect([&](auto fn) { return c.ForEachBlockOf(id, fn); }), of);
    for (auto [first, count] : {std::pair<uint64_t, uint64_t>{0, INT64_MAX}, {1, 2}}) {
      std::vector<std::optional<BlockRecord>> range;
      raw.Query(absl::StrCat("SELECT ", kBlockColumns,
                             " FROM blocks WHERE object_id = ? AND stripe >= ? AND stripe < ?"),
                {IntValue(id), IntValue(static_cast<int64_t>(first)),
                 IntValue(static_cast<int64_t>(first + count))},
                [&](sqlite3_stmt* st) { range.push_back(RefBlock(st)); });
      CheckRows(c.GetBlocks(id, first, count), range);
    }
  }

  // Block counts by device.
  std::vector<std::optional<std::pair<uint32_t, uint64_t>>> counts;
  raw.Query("SELECT device_id, COUNT(*) FROM blocks GROUP BY device_id", {}, [&](sqlite3_stmt* st) {
    auto dev = IntIn(st, 0, 0, kU32);
    if (!dev) {
      counts.push_back(std::nullopt);
    } else {
      counts.push_back(std::make_pair(static_cast<uint32_t>(*dev),
                                      static_cast<uint64_t>(sqlite3_column_int64(st, 1))));
    }
  });
  CheckRows(c.BlockCountsByDevice(), counts);
}

}  // namespace
}  // namespace ecd::store

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ecd::store;
  ecd::fuzz::Reader in(data, size);
  std::string probe_name;
  int64_t probe_id = 0;
  WriteDb(in, &probe_name, &probe_id);
  {
    absl::StatusOr<std::unique_ptr<Catalog>> opened = Catalog::Open(DbPath());
    if (!opened.ok()) {
      RemoveDb();
      return 0;
    }
    Catalog& c = **opened;
    (void)c.DropPendingObjects();  // as Store::Open does first
    CheckCatalog(c, probe_name, probe_id);
    // Queries and writes on whatever is there: values or a status.
    (void)c.ObjectsOnDevice(0, 0, 0);
    (void)c.ObjectsOnDevice(static_cast<uint32_t>(probe_id), 1, 4);
    (void)c.GetMeta(probe_name);
    (void)c.SetMeta(probe_name, "x");
    (void)c.SetDeviceState(static_cast<uint32_t>(probe_id), DeviceState::kFailing);
    (void)c.SetDeviceState(0, DeviceState::kFailed);
    (void)c.SetBlockCorrupt(probe_id, 0, 0, true);
    (void)c.DeleteObject(probe_id);
    (void)c.ListDevices();
    (void)c.ListObjects();
  }
  RemoveDb();
  return 0;
}
