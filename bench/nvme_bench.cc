// nvme_bench: throughput of ecd's NVMe data path (host PRPs -> controller model -> io_uring)
// beside fio's io_uring engine on the same file, block size, queue depth and direct flag, in the
// same run. Prints MB/s for both and the ratio ecd/fio.
//
//   nvme_bench [--file PATH] [--size BYTES] [--direct 0|1] [--bs 131072,1048576]
//              [--qd 1,8,32] [--fio PATH] [--json]
//
// The ecd side keeps `qd` commands in flight on one queue pair, each over its own pre-built PRP
// list in registered host memory (no copies), sequentially through `size` bytes; fio runs
// rw=write then rw=read with --ioengine=io_uring --fixedbufs --registerfiles on the same file.
#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "lib/nvme/controller.h"
#include "lib/nvme/driver.h"
#include "lib/nvme/host_memory.h"
#include "lib/nvme/prp_builder.h"

namespace {

using ecd::nvme::CompletionEntry;
using ecd::nvme::Controller;
using ecd::nvme::ControllerOptions;
using ecd::nvme::Driver;
using ecd::nvme::HostMemory;
using ecd::nvme::Opcode;
using ecd::nvme::SubmissionEntry;

constexpr uint32_t kLba = 4096;

struct Config {
  std::string file = "/tmp/ecd_nvme_bench.ns";
  uint64_t size = 1ull << 30;
  bool direct = true;
  std::vector<uint64_t> block_sizes = {128 << 10, 1 << 20};
  std::vector<uint32_t> depths = {1, 8, 32};
  std::string fio = "fio";
  bool json = false;
};

// MB/s (10^6 bytes) of writing or reading cfg.size bytes sequentially through ecd's path.
double RunEcd(const Config& cfg, bool write, uint64_t bs, uint32_t qd, bool* direct_used) {
  uint32_t entries = 2;
  while (entries < qd + 1) entries *= 2;
  const uint64_t pages_per_cmd = bs / 4096;
  const uint64_t list_pages = ecd::nvme::ListPageCount(4096, 0, pages_per_cmd - 1);
  auto memory = HostMemory::Create(4096, qd * (pages_per_cmd + list_pages + 1));
  if (!memory.ok()) {
    std::cerr << memory.status() << "\n";
    std::exit(1);
  }
  ControllerOptions o;
  o.queue_entries = entries;
  o.direct = cfg.direct;
  o.mdts = 0;
  while ((4096ull << o.mdts) < bs) ++o.mdts;
  auto controller = Controller::Create(memory->get(), cfg.file, kLba, cfg.size / kLba, o);
  if (!controller.ok()) {
    std::cerr << controller.status() << "\n";
    std::exit(1);
  }
  *direct_used = (*controller)->stats().direct;
  Driver driver(controller->get());
  // One buffer and PRP set per slot, built once.
  std::vector<SubmissionEntry> slots(qd);
  for (uint32_t i = 0; i < qd; ++i) {
    auto pages = *(*memory)->AllocatePages(pages_per_cmd);
    for (uint64_t p : pages) std::memset((*memory)->Translate(p, 4096), 0xA5 ^ i, 4096);
    auto prps = *ecd::nvme::BuildPrps(**memory, pages, 0, bs);
    slots[i].opcode = static_cast<uint8_t>(write ? Opcode::kWrite : Opcode::kRead);
    slots[i].nsid = 1;
    slots[i].prp1 = prps.prp1;
    slots[i].prp2 = prps.prp2;
    slots[i].nlb = static_cast<uint16_t>(bs / kLba - 1);
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint32_t> free_slots;
  for (uint32_t i = 0; i < qd; ++i) free_slots.push_back(i);
  bool failed = false;
  const uint64_t commands = cfg.size / bs;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t c = 0; c < commands; ++c) {
    uint32_t slot;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !free_slots.empty(); });
      slot = free_slots.back();
      free_slots.pop_back();
    }
    SubmissionEntry e = slots[slot];
    e.slba = c * (bs / kLba);
    driver.Submit(e, [&, slot](const CompletionEntry& done) {
      std::lock_guard<std::mutex> lock(mu);
      if (!done.status.ok()) failed = true;
      free_slots.push_back(slot);
      cv.notify_one();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return free_slots.size() == qd; });
  }
  if (write) {
    SubmissionEntry f;
    f.opcode = static_cast<uint8_t>(Opcode::kFlush);
    f.nsid = 1;
    if (!driver.Execute(f).ok()) failed = true;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failed) {
    std::cerr << "nvme_bench: a command failed\n";
    std::exit(1);
  }
  return static_cast<double>(cfg.size) / secs / 1e6;
}

// MB/s reported by fio for the same job.
double RunFio(const Config& cfg, bool write, uint64_t bs, uint32_t qd) {
  const std::string out_path = cfg.file + ".fio.json";
  const std::string cmd = absl::StrFormat(
      "%s --name=ecd --filename=%s --size=%u --rw=%s --bs=%u --iodepth=%u --direct=%d "
      "--ioengine=io_uring --fixedbufs --registerfiles --end_fsync=%d --output-format=json "
      "--output=%s >/dev/null 2>&1",
      cfg.fio, cfg.file, cfg.size, write ? "write" : "read", bs, qd, cfg.direct ? 1 : 0,
      write ? 1 : 0, out_path);
  if (std::system(cmd.c_str()) != 0) {
    std::cerr << "nvme_bench: fio failed: " << cmd << "\n";
    std::exit(1);
  }
  FILE* f = std::fopen(out_path.c_str(), "r");
  std::string text;
  char buf[65536];
  size_t n;
  while (f && (n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  if (f) std::fclose(f);
  std::remove(out_path.c_str());
  // fio may print notes before the JSON document.
  text = text.substr(std::min(text.find('{'), text.size()));
  google::protobuf::Struct doc;
  if (!google::protobuf::util::JsonStringToMessage(text, &doc).ok()) {
    std::cerr << "nvme_bench: cannot parse fio output\n";
    std::exit(1);
  }
  const auto& job = doc.fields().at("jobs").list_value().values(0).struct_value();
  const auto& side = job.fields().at(write ? "write" : "read").struct_value();
  return side.fields().at("bw_bytes").number_value() / 1e6;
}

template <typename T>
std::vector<T> ParseList(const std::string& s) {
  std::vector<T> out;
  for (absl::string_view p : absl::StrSplit(s, ',')) {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(p, &v)) {
      std::cerr << "nvme_bench: bad number " << p << "\n";
      std::exit(2);
    }
    out.push_back(static_cast<T>(v));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "nvme_bench: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--file")
      cfg.file = next();
    else if (a == "--size")
      cfg.size = ParseList<uint64_t>(next())[0];
    else if (a == "--direct")
      cfg.direct = next() != "0";
    else if (a == "--bs")
      cfg.block_sizes = ParseList<uint64_t>(next());
    else if (a == "--qd")
      cfg.depths = ParseList<uint32_t>(next());
    else if (a == "--fio")
      cfg.fio = next();
    else if (a == "--json")
      cfg.json = true;
    else {
      std::cerr << "nvme_bench: unknown flag " << a << " (see the header of bench/nvme_bench.cc)\n";
      return 2;
    }
  }
  {
    // Preallocate the file fully so neither side measures block allocation on its first pass.
    int fd = ::open(cfg.file.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ::posix_fallocate(fd, 0, static_cast<off_t>(cfg.size)) != 0) {
      std::cerr << "nvme_bench: cannot create " << cfg.file << "\n";
      return 1;
    }
    std::vector<uint8_t> zero(1 << 20, 0x3C);
    for (uint64_t off = 0; off < cfg.size; off += zero.size()) {
      if (::pwrite(fd, zero.data(), zero.size(), static_cast<off_t>(off)) < 0) return 1;
    }
    ::fsync(fd);
    ::close(fd);
  }
  if (!cfg.json) {
    std::printf("%-6s %-8s %-4s %-6s %10s %10s %7s\n", "op", "bs", "qd", "direct", "ecd MB/s",
                "fio MB/s", "ratio");
  }
  for (uint64_t bs : cfg.block_sizes) {
    for (uint32_t qd : cfg.depths) {
      for (bool write : {true, false}) {
        bool direct_used = false;
        // Alternate the order so drift on a shared machine does not favour one side.
        double fio = 0, ecd = 0;
        if (qd % 2 == 0) {
          fio = RunFio(cfg, write, bs, qd);
          ecd = RunEcd(cfg, write, bs, qd, &direct_used);
        } else {
          ecd = RunEcd(cfg, write, bs, qd, &direct_used);
          fio = RunFio(cfg, write, bs, qd);
        }
        const char* op = write ? "write" : "read";
        if (cfg.json) {
          std::printf(
              "{\"op\":\"%s\",\"bs\":%lu,\"qd\":%u,\"direct\":%s,\"ecd_mbps\":%.1f,"
              "\"fio_mbps\":%.1f,\"ratio\":%.3f}\n",
              op, static_cast<unsigned long>(bs), qd, direct_used ? "true" : "false", ecd, fio,
              ecd / fio);
        } else {
          std::printf("%-6s %-8s %-4u %-6s %10.1f %10.1f %7.3f\n", op,
                      absl::StrFormat("%uK", bs >> 10).c_str(), qd, direct_used ? "yes" : "no", ecd,
                      fio, ecd / fio);
        }
        std::fflush(stdout);
      }
    }
  }
  std::remove(cfg.file.c_str());
  return 0;
}
