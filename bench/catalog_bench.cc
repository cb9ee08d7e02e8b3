// The catalog at scale: a store of N small objects (2+1, 4 KiB blocks) on real NVMe namespaces,
// then the time of a clean start, of `--rebuild-catalog` with the catalog deleted, and of the
// first start after it (every record log snapshot, SQLite's integrity check). The rebuilt
// catalog is checked: every object there, a sample read back byte-exact.
// Usage: catalog_bench [--objects 100000] [--threads 4] [--dir /var/tmp]
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/store/catalog_rebuild.h"
#include "lib/store/store.h"

namespace {

using ecd::store::Store;

class Bytes : public ecd::store::ByteSource {
 public:
  explicit Bytes(std::string data) : data_(std::move(data)) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> out) override {
    const size_t n = std::min(out.size(), data_.size() - at_);
    std::memcpy(out.data(), data_.data() + at_, n);
    at_ += n;
    return n;
  }

 private:
  std::string data_;
  size_t at_ = 0;
};

class Collect : public ecd::store::ByteSink {
 public:
  absl::Status Start(uint64_t) override { return absl::OkStatus(); }
  absl::Status Write(absl::Span<const uint8_t> data, uint32_t) override {
    bytes.append(reinterpret_cast<const char*>(data.data()), data.size());
    return absl::OkStatus();
  }
  std::string bytes;
};

std::string Content(int i) {
  std::mt19937 rng(static_cast<uint32_t>(i));
  std::string s(100 + i % 900, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

absl::StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& dir) {
  ecd::store::StoreOptions o;
  o.data_dir = dir;
  o.device_count = 6;
  o.device_size = 1ull << 30;
  o.default_block_size = 4096;
  o.memory_limit = 256ull << 20;
  o.dma_arena_bytes = 64ull << 20;
  return Store::Open(o);
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "catalog_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int objects = 100000, threads = 4;
  std::string base = "/var/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--objects" && absl::SimpleAtoi(argv[i + 1], &objects)) continue;
    if (flag == "--threads" && absl::SimpleAtoi(argv[i + 1], &threads)) continue;
    if (flag == "--dir") {
      base = argv[i + 1];
      continue;
    }
    return Fail(absl::StrCat("unknown flag ", flag, "; flags: --objects N --threads N --dir D"));
  }
  const std::string dir = absl::StrCat(base, "/ecd-catalog-bench.", ::getpid());
  std::filesystem::remove_all(dir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};

  auto t = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(dir);
  if (!store.ok()) return Fail(std::string(store.status().message()));
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < objects && !failed; i = next++) {
        ecd::store::EncodeParams p;
        p.name = absl::StrCat("dir", i % 100, "-object", i);
        p.data_blocks = 2;
        p.parity_blocks = 1;
        Bytes source(Content(i));
        if (absl::StatusOr<ecd::store::ObjectRecord> o = (*store)->Encode(p, source); !o.ok()) {
          if (!failed.exchange(true)) std::fprintf(stderr, "%s\n", o.status().ToString().c_str());
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  if (failed) return Fail("an encode failed");
  const double encode_s = Seconds(t);
  store->reset();

  t = std::chrono::steady_clock::now();
  store = OpenStore(dir);
  if (!store.ok()) return Fail(std::string(store.status().message()));
  const double start_s = Seconds(t);
  store->reset();

  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(absl::StrCat(dir, "/catalog.db", suffix));
  }
  t = std::chrono::steady_clock::now();
  ecd::store::CatalogToolOptions tool;
  tool.data_dir = dir;
  absl::StatusOr<ecd::store::RebuildReport> report = ecd::store::RebuildCatalog(tool);
  if (!report.ok()) return Fail(std::string(report.status().message()));
  const double rebuild_s = Seconds(t);
  if (report->resolution.objects.size() != static_cast<size_t>(objects)) {
    return Fail(absl::StrCat("the rebuild restored ", report->resolution.objects.size(), " of ",
                             objects, " objects"));
  }

  t = std::chrono::steady_clock::now();
  store = OpenStore(dir);
  if (!store.ok()) return Fail(std::string(store.status().message()));
  const double first_start_s = Seconds(t);
  for (int i = 0; i < objects; i += std::max(1, objects / 1000)) {
    Collect sink;
    if (!(*store)->Read(absl::StrCat("dir", i % 100, "-object", i), 0, 0, sink).ok() ||
        sink.bytes != Content(i)) {
      return Fail(absl::StrCat("object ", i, " does not read back after the rebuild"));
    }
  }
  std::printf(
      "| objects | encode (%d threads) | clean start | --rebuild-catalog | first start after it "
      "|\n",
      threads);
  std::printf("|---:|---:|---:|---:|---:|\n");
  std::printf("| %d | %.1f s (%.0f objects/s) | %.2f s | %.2f s (%.0f objects/s) | %.2f s |\n",
              objects, encode_s, objects / encode_s, start_s, rebuild_s, objects / rebuild_s,
              first_start_s);
  return 0;
}
