// Tests Store::Update: an update leaves every stored block (data and parity) byte-equal to a fresh
// encode of the patched bytes, for 1-byte, block-crossing, stripe-crossing, whole-object and
// appending updates of Cauchy and Vandermonde shapes; versions; restart; failed updates leave the
// old version and no leaked space; readers never see a mix of two versions; v1 catalogs migrate.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lib/store/store.h"
#include "lib/store/store_admin.h"
#include "lib/store/store_test_util.h"

namespace ecd::store {
namespace {

// A VectorSink that also keeps the id and version Read reports.
class VersionedSink : public VectorSink {
 public:
  void SetObject(const ObjectRecord& object) override {
    id = object.id;
    version = object.version;
  }
  int64_t id = 0;
  uint64_t version = 0;
};

struct Shape {
  uint32_t m;
  uint32_t k;
  ec::MatrixType matrix;
  uint64_t block_size;  // 1536 is not a whole number of 4 KiB LBAs: exercises padded extents.
};

class UpdateTest : public TempStoreTest, public ::testing::WithParamInterface<Shape> {
 protected:
  absl::StatusOr<ObjectRecord> Put(const std::string& name, const std::vector<uint8_t>& data,
                                   const Shape& shape) {
    EncodeParams p;
    p.name = name;
    p.data_blocks = shape.m;
    p.parity_blocks = shape.k;
    p.matrix = shape.matrix;
    p.block_size = shape.block_size;
    VectorSource src(data);
    return store_->Encode(p, src);
  }
  std::vector<uint8_t> Get(const std::string& name) {
    VectorSink sink;
    absl::Status s = store_->Read(name, 0, 0, sink);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(sink.reconstructed, 0u);
    return sink.bytes;
  }
  std::vector<uint8_t> Block(const std::string& name, uint64_t stripe, uint32_t index) {
    VectorSink sink;
    absl::Status s = store_->GetBlock(name, stripe, index, sink);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(sink.reconstructed, 0u) << name << " stripe " << stripe << " block " << index;
    return sink.bytes;
  }
  // Applies an update to the store and to `model`, as the store should.
  absl::StatusOr<UpdateResult> Patch(const std::string& name, uint64_t offset,
                                     const std::vector<uint8_t>& bytes, bool append,
                                     std::vector<uint8_t>& model, size_t chunk = 5000) {
    VectorSource src(bytes, chunk);
    absl::StatusOr<UpdateResult> r = store_->Update(name, offset, src, append);
    if (r.ok()) {
      if (model.size() < offset + bytes.size()) model.resize(offset + bytes.size());
      std::copy(bytes.begin(), bytes.end(), model.begin() + static_cast<long>(offset));
    }
    return r;
  }
  // Every stored block of `name` equals the block of a fresh encode of `model` with its shape.
  void ExpectEqualsFreshEncode(const std::string& name, const std::vector<uint8_t>& model,
                               const Shape& shape) {
    ASSERT_TRUE(Put("reference", model, shape).ok());
    auto a = store_->Stat(name, false, false);
    auto b = store_->Stat("reference", false, false);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->object.size, model.size());
    ASSERT_EQ(a->object.stripe_count, b->object.stripe_count);
    for (uint64_t s = 0; s < a->object.stripe_count; ++s) {
      for (uint32_t i = 0; i < shape.m + shape.k; ++i) {
        ASSERT_EQ(Block(name, s, i), Block("reference", s, i))
            << "stripe " << s << " block " << i << (i >= shape.m ? " (parity)" : " (data)");
      }
    }
    EXPECT_EQ(Get(name), model);
    ASSERT_TRUE(store_->Delete("reference").ok());
  }
  uint64_t Version(const std::string& name) {
    auto s = store_->Stat(name, false, false);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? s->object.version : 0;
  }
};

INSTANTIATE_TEST_SUITE_P(Shapes, UpdateTest,
                         ::testing::Values(Shape{4, 2, ec::MatrixType::kCauchy, 4096},
                                           Shape{3, 2, ec::MatrixType::kVandermonde, 1536}),
                         [](const auto& info) {
                           return info.param.matrix == ec::MatrixType::kCauchy ? "Cauchy4p2"
                                                                               : "Vandermonde3p2";
                         });

TEST_P(UpdateTest, UpdateEqualsFreshEncodeOfThePatchedBytes) {
  const Shape shape = GetParam();
  const uint64_t bs = shape.block_size;
  const uint64_t stripe = bs * shape.m;
  const uint64_t free_before = TotalFree();
  std::vector<uint8_t> model = RandomBytes(3 * stripe + bs + 100, 1);  // A partial last stripe.
  ASSERT_TRUE(Put("obj", model, shape).ok());
  struct Case {
    const char* what;
    uint64_t offset;
    uint64_t length;
  };
  const std::vector<Case> cases = {
      {"first byte", 0, 1},
      {"one byte mid-block", bs + 17, 1},
      {"last byte", model.size() - 1, 1},
      {"whole block", 2 * bs, bs},
      {"block-crossing", bs - 10, 20},
      {"stripe-crossing", stripe - 100, 300},
      {"two stripes and more", stripe / 2, 2 * stripe + 3},
      {"whole object", 0, model.size()},
  };
  uint64_t version = 1;
  uint32_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto r = Patch("obj", c.offset, RandomBytes(c.length, seed++), false, model);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->bytes_written, c.length);
    EXPECT_EQ(r->object.version, ++version);
    EXPECT_EQ(r->object.size, model.size());
    EXPECT_EQ(r->stripes_appended, 0u);
    EXPECT_EQ(Version("obj"), version);
    ExpectEqualsFreshEncode("obj", model, shape);
  }
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    const uint64_t offset = rng() % model.size();
    const uint64_t length = 1 + rng() % std::min<uint64_t>(model.size() - offset, 2 * stripe);
    SCOPED_TRACE(testing::Message() << "random " << offset << "+" << length);
    auto r = Patch("obj", offset, RandomBytes(length, seed++), false, model, 1 + rng() % 9000);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->object.version, ++version);
    ExpectEqualsFreshEncode("obj", model, shape);
  }
  ASSERT_TRUE(store_->Delete("obj").ok());
  EXPECT_EQ(TotalFree(), free_before);  // Every superseded extent was given back.
}

TEST_P(UpdateTest, AppendGrowsTheObject) {
  const Shape shape = GetParam();
  const uint64_t bs = shape.block_size;
  const uint64_t stripe = bs * shape.m;
  const uint64_t free_before = TotalFree();
  std::vector<uint8_t> model = RandomBytes(bs + 5, 2);  // Stripe 0 is mostly zero padding.
  ASSERT_TRUE(Put("obj", model, shape).ok());
  uint32_t seed = 200;
  // Into the padding of the last stripe only (delta path over zero padding).
  auto r = Patch("obj", model.size(), RandomBytes(bs, seed++), true, model);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->object.size, 2 * bs + 5);
  EXPECT_EQ(r->object.stripe_count, 1u);
  EXPECT_EQ(r->stripes_appended, 0u);
  ExpectEqualsFreshEncode("obj", model, shape);
  // Overlapping the end and growing across new stripes.
  r = Patch("obj", model.size() - 50, RandomBytes(2 * stripe + 7, seed++), true, model);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->object.size, model.size());
  EXPECT_EQ(r->object.stripe_count, (model.size() + stripe - 1) / stripe);
  EXPECT_EQ(r->stripes_updated, 1u);
  EXPECT_EQ(r->stripes_appended, 2u);
  EXPECT_EQ(r->object.version, 3u);
  ExpectEqualsFreshEncode("obj", model, shape);
  // Fill up to an exact stripe boundary, then append a whole new stripe from there.
  r = Patch("obj", model.size(), RandomBytes(stripe - model.size() % stripe, seed++), true, model);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(model.size() % stripe, 0u);
  ExpectEqualsFreshEncode("obj", model, shape);
  r = Patch("obj", model.size(), RandomBytes(stripe, seed++), true, model);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stripes_updated, 0u);
  EXPECT_EQ(r->stripes_appended, 1u);
  ExpectEqualsFreshEncode("obj", model, shape);
  // Append to the middle: just an overwrite that may grow.
  r = Patch("obj", 3, RandomBytes(10, seed++), true, model);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectEqualsFreshEncode("obj", model, shape);
  EXPECT_EQ(Version("obj"), 6u);  // Encoded at 1, five updates.
  ASSERT_TRUE(store_->Delete("obj").ok());
  EXPECT_EQ(TotalFree(), free_before);
}

// A read names its bytes by id and version: an update keeps the id and adds 1 to the version;
// the name deleted and encoded again is at version 1 again, under a new id.
TEST_P(UpdateTest, ReadsNameTheObjectByIdAndVersion) {
  const Shape shape = GetParam();
  const std::vector<uint8_t> first = RandomBytes(2 * shape.block_size + 3, 11);
  absl::StatusOr<ObjectRecord> put = Put("obj", first, shape);
  ASSERT_TRUE(put.ok()) << put.status();
  VersionedSink sink;
  ASSERT_TRUE(store_->Read("obj", 0, 0, sink).ok());
  EXPECT_EQ(sink.id, put->id);
  EXPECT_GT(sink.id, 0);
  EXPECT_EQ(sink.version, 1u);
  std::vector<uint8_t> model = first;
  ASSERT_TRUE(Patch("obj", 1, RandomBytes(5, 12), false, model).ok());
  VersionedSink updated;
  ASSERT_TRUE(store_->Read("obj", 1, 5, updated).ok());
  EXPECT_EQ(updated.id, put->id);
  EXPECT_EQ(updated.version, 2u);
  EXPECT_EQ(updated.bytes, std::vector<uint8_t>(model.begin() + 1, model.begin() + 6));

  ASSERT_TRUE(store_->Delete("obj").ok());
  absl::StatusOr<ObjectRecord> again = Put("obj", first, shape);
  ASSERT_TRUE(again.ok()) << again.status();
  VersionedSink reencoded;
  ASSERT_TRUE(store_->Read("obj", 0, 0, reencoded).ok());
  EXPECT_EQ(reencoded.version, 1u);
  EXPECT_EQ(reencoded.bytes, first);
  EXPECT_NE(reencoded.id, put->id);
  // Even when the newest object is deleted first, its id is not given again.
  ASSERT_TRUE(store_->Delete("obj").ok());
  absl::StatusOr<ObjectRecord> third = Put("obj", first, shape);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_GT(third->id, again->id);
}

TEST_P(UpdateTest, RefusalsChangeNothing) {
  const Shape shape = GetParam();
  std::vector<uint8_t> model = RandomBytes(3 * shape.block_size, 3);
  ASSERT_TRUE(Put("obj", model, shape).ok());
  const uint64_t free_before = TotalFree();
  std::vector<uint8_t> scratch = model;
  auto r = Patch("nope", 0, RandomBytes(10, 1), false, scratch);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  r = Patch("obj", model.size() + 1, RandomBytes(10, 1), true, scratch);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange) << r.status();
  // Runs past the end without append; the bytes before the end are not applied either.
  r = Patch("obj", model.size() - 5, RandomBytes(10, 1), false, scratch);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange) << r.status();
  EXPECT_NE(r.status().message().find("append"), std::string::npos);
  r = Patch("obj", 0, RandomBytes(model.size() + 1, 1), false, scratch);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange) << r.status();
  // No bytes: nothing changes, not even the version.
  r = Patch("obj", 5, {}, false, scratch);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->object.version, 1u);
  EXPECT_EQ(Version("obj"), 1u);
  EXPECT_EQ(TotalFree(), free_before);
  ExpectEqualsFreshEncode("obj", model, shape);
}

TEST_P(UpdateTest, AFailedSourceLeavesTheOldVersionAndNoLeakedSpace) {
  const Shape shape = GetParam();
  const uint64_t stripe = shape.block_size * shape.m;
  std::vector<uint8_t> model = RandomBytes(4 * stripe, 4);
  ASSERT_TRUE(Put("obj", model, shape).ok());
  const uint64_t free_before = TotalFree();
  for (bool append : {false, true}) {
    // Fails after more than two stripes were written to new extents.
    std::vector<uint8_t> bytes = RandomBytes(3 * stripe, 5);
    const uint64_t offset = append ? model.size() - stripe / 2 : 10;
    VectorSource src(bytes, 1000, static_cast<size_t>(2 * stripe + 1500));
    auto r = store_->Update("obj", offset, src, append);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    EXPECT_EQ(TotalFree(), free_before);
    EXPECT_EQ(Version("obj"), 1u);
    EXPECT_EQ(Get("obj"), model);
  }
  Open();  // And nothing is left behind for the next start either.
  EXPECT_EQ(TotalFree(), free_before);
  ExpectEqualsFreshEncode("obj", model, shape);
}

TEST_P(UpdateTest, RestartKeepsTheNewVersion) {
  const Shape shape = GetParam();
  std::vector<uint8_t> model = RandomBytes(5 * shape.block_size + 3, 6);
  ASSERT_TRUE(Put("obj", model, shape).ok());
  ASSERT_TRUE(Patch("obj", 100, RandomBytes(2 * shape.block_size, 7), false, model).ok());
  ASSERT_TRUE(Patch("obj", model.size(), RandomBytes(shape.block_size * 4, 8), true, model).ok());
  const uint64_t free_after = TotalFree();
  Open();
  EXPECT_EQ(Version("obj"), 3u);
  EXPECT_EQ(TotalFree(), free_after);  // Free space derived from the catalog matches.
  ExpectEqualsFreshEncode("obj", model, shape);
  VectorSink sink;
  ASSERT_TRUE(store_->Read("obj", 0, 1, sink).ok());
  EXPECT_EQ(sink.size_, model.size());
}

TEST_P(UpdateTest, ABadTouchedBlockIsRebuiltFirst) {
  const Shape shape = GetParam();
  std::vector<uint8_t> model = RandomBytes(2 * shape.m * shape.block_size, 9);
  ASSERT_TRUE(Put("obj", model, shape).ok());
  auto st = store_->Stat("obj", true, false);
  ASSERT_TRUE(st.ok());
  // Corrupt data block 1 and parity block M of stripe 0 on disk.
  for (uint32_t index : {1u, shape.m}) {
    const BlockRecord& b = st->stripes[0].blocks[index].record;
    const std::string path = (dir_ / "devices" / ("nvme" + std::to_string(b.device) + ".ns"));
    int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::vector<uint8_t> junk(64, 0xa5);
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(b.lba * 4096 + 3)), 64);
    ::close(fd);
  }
  auto r = Patch("obj", shape.block_size + 7, RandomBytes(20, 10), false, model);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectEqualsFreshEncode("obj", model, shape);  // No block is reconstructed on read now.
}

TEST_P(UpdateTest, ReadersSeeTheOldOrTheNewVersionNeverAMix) {
  const Shape shape = GetParam();
  const std::vector<uint8_t> a = RandomBytes(3 * shape.m * shape.block_size + 11, 11);
  const std::vector<uint8_t> b = RandomBytes(a.size(), 12);
  ASSERT_TRUE(Put("flip", a, shape).ok());
  ASSERT_TRUE(Put("other", b, shape).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        VersionedSink sink;
        absl::Status s = store_->Read("flip", 0, 0, sink);
        // Version 1 (and every odd one) holds a, every even one b: bytes and version agree.
        if (!s.ok() || sink.bytes != (sink.version % 2 == 1 ? a : b)) ++bad;
        ++reads;
      }
    });
  }
  // Another object is updated in parallel (a different lock).
  std::thread other([&] {
    for (int i = 0; i < 20; ++i) {
      std::vector<uint8_t> bytes = RandomBytes(100, 50 + i);
      VectorSource src(bytes);
      if (!store_->Update("other", i * 37, src, false).ok()) ++bad;
    }
  });
  uint64_t expected_version = 1;
  for (int i = 0; i < 30; ++i) {
    const std::vector<uint8_t>& next = i % 2 == 0 ? b : a;
    VectorSource src(next, 3000);
    auto r = store_->Update("flip", 0, src, false);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->object.version, ++expected_version);
  }
  stop = true;
  for (auto& t : readers) t.join();
  other.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(Get("flip"), a);  // An even number of flips: back to a.
  EXPECT_EQ(Version("other"), 21u);
}

TEST_P(UpdateTest, ConcurrentUpdatesOfOneObjectSerialize) {
  const Shape shape = GetParam();
  std::vector<uint8_t> model(2 * shape.m * shape.block_size, 0);
  ASSERT_TRUE(Put("obj", model, shape).ok());
  // Each thread writes its own disjoint range many times; serialized updates lose none.
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::vector<uint8_t> bytes(500, static_cast<uint8_t>(t * 16 + i));
        VectorSource src(bytes);
        if (!store_->Update("obj", static_cast<uint64_t>(t) * 1000, src, false).ok()) ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(Version("obj"), 31u);
  for (int t = 0; t < 3; ++t) {
    std::fill_n(model.begin() + t * 1000, 500, static_cast<uint8_t>(t * 16 + 9));
  }
  ExpectEqualsFreshEncode("obj", model, shape);
}

// Per device, the bytes read and written by its namespace so far.
std::map<uint32_t, std::pair<uint64_t, uint64_t>> DeviceIo(Store& store) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> out;
  auto devices = store.admin().ListDevices();
  EXPECT_TRUE(devices.ok());
  for (const DeviceStatus& d : *devices) {
    for (const auto& [name, value] : d.counters) {
      if (name == "nvme_bytes_read") out[d.record.id].first = value;
      if (name == "nvme_bytes_written") out[d.record.id].second = value;
    }
  }
  return out;
}

// A small update inside one block reads that block and the K parity blocks, nothing else, and
// writes exactly those M' + K blocks (to new extents on the same devices).
TEST_P(UpdateTest, ASmallUpdateTouchesOnlyItsBlockAndTheParity) {
  const Shape shape = GetParam();
  std::vector<uint8_t> model = RandomBytes(2 * shape.m * shape.block_size, 13);
  ASSERT_TRUE(Put("obj", model, shape).ok());
  auto st = store_->Stat("obj", true, false);
  ASSERT_TRUE(st.ok());
  const uint64_t extent = (shape.block_size + 4095) / 4096 * 4096;
  std::map<uint32_t, uint64_t> expected;  // Device -> bytes read (= bytes written).
  for (const BlockStatus& b : st->stripes[1].blocks) {
    if (b.record.index == 2 || b.record.index >= shape.m) expected[b.record.device] += extent;
  }
  const auto before = DeviceIo(*store_);
  auto r = Patch("obj", shape.m * shape.block_size + 2 * shape.block_size + 9, RandomBytes(100, 14),
                 false, model);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto after = DeviceIo(*store_);
  for (const auto& [device, io] : after) {
    const uint64_t want = expected.count(device) ? expected[device] : 0;
    EXPECT_EQ(io.first - before.at(device).first, want) << "bytes read on device " << device;
    // Each device written also gets one 4 KiB page of the update's block records.
    EXPECT_EQ(io.second - before.at(device).second, want ? want + 4096 : 0)
        << "bytes written on device " << device;
  }
  auto moved = store_->Stat("obj", true, false);
  ASSERT_TRUE(moved.ok());
  for (size_t i = 0; i < moved->stripes[1].blocks.size(); ++i) {
    const BlockRecord& was = st->stripes[1].blocks[i].record;
    const BlockRecord& now = moved->stripes[1].blocks[i].record;
    const bool changed = was.index == 2 || was.index >= shape.m;
    EXPECT_EQ(now.device, was.device);       // Copy-on-write on the same device...
    EXPECT_EQ(now.lba != was.lba, changed);  // ...to a new extent, for changed blocks only.
  }
  ExpectEqualsFreshEncode("obj", model, shape);
}

// A stripe overwritten whole is encoded fresh: nothing is read, and all M+K blocks are written
// once, to new extents (the middle stripe of three, so the neighbours stay as they were).
TEST_P(UpdateTest, AWholeStripeOverwriteReadsNothing) {
  const Shape shape = GetParam();
  const uint64_t stripe_bytes = static_cast<uint64_t>(shape.m) * shape.block_size;
  std::vector<uint8_t> model = RandomBytes(3 * stripe_bytes - 17, 21);
  ASSERT_TRUE(Put("obj", model, shape).ok());
  auto st = store_->Stat("obj", true, false);
  ASSERT_TRUE(st.ok());
  const uint64_t extent = (shape.block_size + 4095) / 4096 * 4096;
  std::map<uint32_t, uint64_t> written;
  for (const BlockStatus& b : st->stripes[1].blocks) written[b.record.device] += extent;
  const auto before = DeviceIo(*store_);
  auto r = Patch("obj", stripe_bytes, RandomBytes(stripe_bytes, 22), false, model);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stripes_updated, 1u);
  const auto after = DeviceIo(*store_);
  for (const auto& [device, io] : after) {
    EXPECT_EQ(io.first, before.at(device).first) << "bytes read on device " << device;
    // Each device written also gets one 4 KiB page of the update's block records.
    EXPECT_EQ(io.second - before.at(device).second,
              written.count(device) ? written[device] + 4096 : 0)
        << "bytes written on device " << device;
  }
  ExpectEqualsFreshEncode("obj", model, shape);
}

// A catalog written by schema version 1 (no version column) opens as version 2, objects at 1.
TEST(CatalogMigrationTest, Version1CatalogGetsObjectVersions) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ecd_migration_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "catalog.db").string();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, R"sql(
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta VALUES ('schema_version', '1');
    CREATE TABLE objects(
      id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
      state TEXT NOT NULL CHECK (state IN ('pending', 'committed')), size INTEGER NOT NULL,
      data_blocks INTEGER NOT NULL, parity_blocks INTEGER NOT NULL,
      matrix TEXT NOT NULL CHECK (matrix IN ('cauchy', 'vandermonde')),
      block_size INTEGER NOT NULL, stripe_count INTEGER NOT NULL,
      created_unix_ms INTEGER NOT NULL);
    INSERT INTO objects(name, state, size, data_blocks, parity_blocks, matrix, block_size,
                        stripe_count, created_unix_ms)
      VALUES ('old', 'committed', 10, 4, 2, 'cauchy', 4096, 1, 0);
  )sql",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  {
    auto catalog = Catalog::Open(path);
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    auto o = (*catalog)->GetObject("old");
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->version, 1u);
    EXPECT_EQ(o->size, 10u);
  }
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &stmt,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "3");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  auto again = Catalog::Open(path);  // Opening a version 2 catalog migrates nothing.
  ASSERT_TRUE(again.ok()) << again.status();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ecd::store
