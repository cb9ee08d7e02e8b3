// update_bench: latency of partial overwrites (Store::Update, parity delta, copy-on-write
// blocks, flush, one catalog commit) beside rewriting the same whole stripe, in one run.
//
//   update_bench [--shape 4+2] [--block-size 1048576] [--stripes 8] [--iterations 100]
//                [--json] [--dir DIR]
//
// An in-process store (M+K+2 devices on simulated NVMe namespaces, io_uring, files under DIR
// or the temp directory) holds one object of `stripes` stripes. Each row runs `iterations`
// operations at random places, interleaved row by row so that machine noise hits every row
// alike, and reports the median and p99 latency:
//   update 4 KiB         4 KiB inside one data block (rewrites that block and the K parity)
//   update 64 KiB        64 KiB inside one data block (or across two when blocks are smaller)
//   update whole stripe  M x block size bytes over one stripe through Update (delta of all M)
//   encode one stripe    a new one-stripe object through Encode (full encode, no reads), then
//                        deleted outside the clock: the cost of rewriting a stripe from scratch
// At the end the object is read back and compared byte for byte with a model of every write,
// and every stripe's parity is checked against its data (Recover with verify_parity, no
// repair); the exit status is 1 if either check fails, so the smoke test proves correctness.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "lib/store/store.h"

namespace {

using Clock = std::chrono::steady_clock;

// The bytes of one span, once.
class SpanSource : public ecd::store::ByteSource {
 public:
  explicit SpanSource(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> buffer) override {
    const size_t n = std::min(buffer.size(), bytes_.size());
    std::memcpy(buffer.data(), bytes_.data(), n);
    bytes_.remove_prefix(n);
    return n;
  }

 private:
  absl::Span<const uint8_t> bytes_;
};

class VectorSink : public ecd::store::ByteSink {
 public:
  absl::Status Start(uint64_t size) override {
    bytes.reserve(size);
    return absl::OkStatus();
  }
  absl::Status Write(absl::Span<const uint8_t> data, uint32_t) override {
    bytes.insert(bytes.end(), data.begin(), data.end());
    return absl::OkStatus();
  }
  std::vector<uint8_t> bytes;
};

struct Row {
  std::string name;
  std::vector<double> ms;  // One latency per operation.
  double Quantile(double q) const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    const size_t i = std::min(s.size() - 1, static_cast<size_t>(q * static_cast<double>(s.size())));
    return s[i];
  }
};

int Usage(const char* why) {
  std::fprintf(stderr,
               "update_bench: %s\nusage: update_bench [--shape M+K] [--block-size BYTES] "
               "[--stripes N] [--iterations N] [--json] [--dir DIR]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t m = 4, k = 2, stripes = 8, iterations = 100;
  uint64_t block_size = 1 << 20;
  bool json = false;
  std::string base_dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      json = true;
      continue;
    }
    if (i + 1 >= argc) return Usage(("missing value for " + arg).c_str());
    const std::string value = argv[++i];
    bool ok = true;
    if (arg == "--shape") {
      std::vector<std::string> parts = absl::StrSplit(value, '+');
      ok = parts.size() == 2 && absl::SimpleAtoi(parts[0], &m) && absl::SimpleAtoi(parts[1], &k);
    } else if (arg == "--block-size") {
      ok = absl::SimpleAtoi(value, &block_size);
    } else if (arg == "--stripes") {
      ok = absl::SimpleAtoi(value, &stripes) && stripes > 0;
    } else if (arg == "--iterations") {
      ok = absl::SimpleAtoi(value, &iterations) && iterations > 0;
    } else if (arg == "--dir") {
      base_dir = value;
    } else {
      return Usage(("unknown flag " + arg).c_str());
    }
    if (!ok) return Usage(("bad value for " + arg + ": " + value).c_str());
  }
  if (block_size < 4096 || block_size % 4096 != 0) {
    return Usage("--block-size must be a multiple of 4096 (updates are 4 KiB aligned)");
  }

  const std::filesystem::path dir =
      std::filesystem::path(base_dir) / ("update_bench_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ecd::store::StoreOptions o;
  o.data_dir = dir.string();
  o.device_count = static_cast<int>(m + k + 2);
  o.default_data_blocks = m;
  o.default_parity_blocks = k;
  o.default_block_size = block_size;
  // Room for the object, copy-on-write copies in flight and the one-stripe encodes.
  const uint64_t per_device = block_size * (stripes + 8);
  o.device_size = (per_device + (1 << 20)) / (1 << 20) * (1 << 20) + (4 << 20);
  auto opened = ecd::store::Store::Open(o);
  if (!opened.ok()) {
    std::fprintf(stderr, "update_bench: %s\n", opened.status().ToString().c_str());
    return 1;
  }
  ecd::store::Store& store = **opened;

  const uint64_t stripe_bytes = block_size * m;
  std::mt19937_64 rng(42);
  std::vector<uint8_t> model(stripe_bytes * stripes);
  for (auto& b : model) b = static_cast<uint8_t>(rng());
  ecd::store::EncodeParams p;
  p.name = "bench";
  {
    SpanSource src(model);
    auto st = store.Encode(p, src);
    if (!st.ok()) {
      std::fprintf(stderr, "update_bench: encode: %s\n", st.status().ToString().c_str());
      return 1;
    }
  }

  Row rows[4] = {{"update 4 KiB", {}},
                 {"update 64 KiB", {}},
                 {"update whole stripe", {}},
                 {"encode one stripe", {}}};
  std::vector<uint8_t> patch(stripe_bytes);
  auto update = [&](Row& row, uint64_t offset, uint64_t length) -> bool {
    for (uint64_t i = 0; i < length; ++i) patch[i] = static_cast<uint8_t>(rng());
    SpanSource src(absl::MakeConstSpan(patch.data(), length));
    const auto t0 = Clock::now();
    auto r = store.Update("bench", offset, src, false);
    row.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!r.ok()) {
      std::fprintf(stderr, "update_bench: %s: %s\n", row.name.c_str(),
                   r.status().ToString().c_str());
      return false;
    }
    std::memcpy(model.data() + offset, patch.data(), length);
    return true;
  };
  const uint64_t blocks = static_cast<uint64_t>(stripes) * m;
  for (uint32_t it = 0; it < iterations; ++it) {
    // 4 KiB, aligned, inside one block.
    {
      const uint64_t block = rng() % blocks;
      const uint64_t off = block * block_size + (rng() % (block_size / 4096)) * 4096;
      if (!update(rows[0], off, 4096)) return 1;
    }
    // 64 KiB inside one block when it fits.
    {
      const uint64_t len = std::min<uint64_t>(64 << 10, stripe_bytes);
      const uint64_t block = rng() % blocks;
      uint64_t off = block * block_size;
      if (block_size > len) off += (rng() % ((block_size - len) / 4096 + 1)) * 4096;
      off = std::min(off, model.size() - len);
      if (!update(rows[1], off, len)) return 1;
    }
    // The whole of one stripe.
    if (!update(rows[2], (rng() % stripes) * stripe_bytes, stripe_bytes)) return 1;
    // A fresh one-stripe object.
    {
      for (uint64_t i = 0; i < stripe_bytes; ++i) patch[i] = static_cast<uint8_t>(rng());
      ecd::store::EncodeParams one;
      one.name = "one";
      SpanSource src(patch);
      const auto t0 = Clock::now();
      auto r = store.Encode(one, src);
      rows[3].ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (!r.ok() || !store.Delete("one").ok()) {
        std::fprintf(stderr, "update_bench: encode one stripe: %s\n",
                     r.status().ToString().c_str());
        return 1;
      }
    }
  }

  // Correctness: bytes and parity.
  VectorSink sink;
  absl::Status read = store.Read("bench", 0, 0, sink);
  const bool bytes_ok = read.ok() && sink.bytes == model;
  ecd::store::RecoverOptions check;
  check.verify_parity = true;
  check.repair = false;
  auto scrub = store.Recover("bench", {}, check);
  const bool parity_ok = scrub.ok() && scrub->parity_mismatches == 0 &&
                         scrub->blocks_corrupt == 0 && scrub->blocks_unreadable == 0;

  const double full = rows[2].Quantile(0.5);
  if (json) {
    std::printf(
        "{\"shape\":\"%u+%u\",\"block_size\":%lu,\"stripes\":%u,\"iterations\":%u,\"rows\":[", m, k,
        static_cast<unsigned long>(block_size), stripes, iterations);
    for (int r = 0; r < 4; ++r) {
      std::printf("%s{\"name\":\"%s\",\"median_ms\":%.4f,\"p99_ms\":%.4f,\"vs_whole_stripe\":%.4f}",
                  r ? "," : "", rows[r].name.c_str(), rows[r].Quantile(0.5), rows[r].Quantile(0.99),
                  rows[r].Quantile(0.5) / full);
    }
    std::printf("],\"bytes_ok\":%s,\"parity_ok\":%s}\n", bytes_ok ? "true" : "false",
                parity_ok ? "true" : "false");
  } else {
    std::printf("shape %u+%u, block %lu B, %u stripes, %u operations per row\n", m, k,
                static_cast<unsigned long>(block_size), stripes, iterations);
    std::printf("| operation | median ms | p99 ms | median / whole-stripe update |\n");
    std::printf("|---|---|---|---|\n");
    for (const Row& row : rows) {
      std::printf("| %s | %.3f | %.3f | %.2f |\n", row.name.c_str(), row.Quantile(0.5),
                  row.Quantile(0.99), row.Quantile(0.5) / full);
    }
    std::printf("read back byte-exact: %s; parity matches data: %s\n", bytes_ok ? "yes" : "NO",
                parity_ok ? "yes" : "NO");
  }
  opened->reset();
  std::filesystem::remove_all(dir);
  if (!bytes_ok || !parity_ok) {
    std::fprintf(stderr, "update_bench: %s\n",
                 !read.ok()    ? read.ToString().c_str()
                 : !bytes_ok   ? "the object does not read back as written"
                 : !scrub.ok() ? scrub.status().ToString().c_str()
                               : "a stripe's parity does not match its data");
    return 1;
  }
  return 0;
}
