// Power cuts at the namespace seam: the undo journal's format, the journaling namespace and the
// cut that replays a journal.
#include "lib/fault/power_cut.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/util/crc32c.h"

namespace ecd::store {
namespace {

constexpr char kHeaderMagic[8] = {'E', 'C', 'D', 'U', 'N', 'D', 'O', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kRecordMagic = 0x4f444e55;  // "UNDO"
constexpr uint32_t kOldBytesZero = 1;
constexpr size_t kRecordHead = 4 + 4 + 8 + 4;  // magic, flags, LBA, LBA count
constexpr char kJournalSuffix[] = ".undo";

void Put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void Put64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, absl::Span<const uint8_t> bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("power-cut journal: append to", path);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

std::vector<uint8_t> Header(uint32_t lba_size, const std::string& namespace_path) {
  std::vector<uint8_t> out(std::begin(kHeaderMagic), std::end(kHeaderMagic));
  Put32(out, kVersion);
  Put32(out, lba_size);
  Put32(out, static_cast<uint32_t>(namespace_path.size()));
  out.insert(out.end(), namespace_path.begin(), namespace_path.end());
  return out;
}

// splitmix64, and FNV-1a of a name: a journal's seed from the cut's seed and its file name.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t NameHash(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Sectors already settled by a newer write that survived there: disjoint [first, end) runs.
class SettledSectors {
 public:
  bool Contains(uint64_t sector) const {
    auto it = runs_.upper_bound(sector);
    if (it == runs_.begin()) return false;
    --it;
    return sector < it->second;
  }
  void Add(uint64_t first, uint64_t end) {
    auto it = runs_.upper_bound(first);
    if (it != runs_.begin() && std::prev(it)->second >= first) {
      --it;
      first = it->first;
      end = std::max(end, it->second);
      it = runs_.erase(it);
    }
    while (it != runs_.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = runs_.erase(it);
    }
    runs_.emplace(first, end);
  }

 private:
  std::map<uint64_t, uint64_t> runs_;
};

}  // namespace

absl::StatusOr<UndoJournal> ReadUndoJournal(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no journal ", path));
    return Errno("open", path);
  }
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status s = Errno("read", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  ::close(fd);
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a power-cut journal: ", why));
  };
  if (bytes.size() < 20 ||
      !std::equal(std::begin(kHeaderMagic), std::end(kHeaderMagic), bytes.begin())) {
    return bad("no ECDUNDO1 header");
  }
  UndoJournal j;
  if (Get32(&bytes[8]) != kVersion) return bad(absl::StrCat("version ", Get32(&bytes[8])));
  j.lba_size = Get32(&bytes[12]);
  const uint32_t path_length = Get32(&bytes[16]);
  if (j.lba_size < 512 || (j.lba_size & (j.lba_size - 1)) != 0) {
    return bad(absl::StrCat("LBA size ", j.lba_size));
  }
  if (bytes.size() < 20 + static_cast<size_t>(path_length)) return bad("short header");
  j.namespace_path.assign(bytes.begin() + 20, bytes.begin() + 20 + path_length);
  size_t at = 20 + path_length;
  while (at < bytes.size()) {
    // A record that runs past the end, or whose CRC fails, can only be the last one: the
    // process died while appending it, before its write was issued.
    const size_t left = bytes.size() - at;
    if (left < kRecordHead + 4 || Get32(&bytes[at]) != kRecordMagic) {
      if (left < kRecordHead + 4) {
        j.partial_tail = true;
        break;
      }
      return bad(absl::StrCat("no record at byte ", at));
    }
    UndoRecord r;
    const uint32_t flags = Get32(&bytes[at + 4]);
    r.lba = Get64(&bytes[at + 8]);
    r.lba_count = Get32(&bytes[at + 16]);
    const uint64_t payload =
        (flags & kOldBytesZero) ? 0 : static_cast<uint64_t>(r.lba_count) * j.lba_size;
    if (left < kRecordHead + payload + 4) {
      j.partial_tail = true;
      break;
    }
    const uint32_t crc = Get32(&bytes[at + kRecordHead + payload]);
    if (crc != Crc32c(absl::MakeConstSpan(&bytes[at], kRecordHead + payload))) {
      if (at + kRecordHead + payload + 4 == bytes.size()) {
        j.partial_tail = true;
        break;
      }
      return bad(absl::StrCat("the record at byte ", at, " fails its CRC32C"));
    }
    if (payload > 0) {
      r.old.assign(bytes.begin() + static_cast<long>(at + kRecordHead),
                   bytes.begin() + static_cast<long>(at + kRecordHead + payload));
    }
    j.records.push_back(std::move(r));
    at += kRecordHead + payload + 4;
  }
  return j;
}

PowerCutReport CutWrites(
    const std::vector<UndoRecord>& records, uint32_t lba_size, const PowerCutOptions& options,
    const std::function<void(uint64_t offset, absl::Span<const uint8_t>)>& restore) {
  PowerCutReport report;
  report.writes = records.size();
  const uint64_t sector = options.sector_size;
  const uint64_t per_lba = lba_size / sector;
  std::mt19937_64 rng(options.seed);
  // Every fate is drawn oldest first (so that a record's fate does not depend on how many
  // records follow it), then applied newest first.
  enum class Fate { kVanish, kSurvive, kTornPrefix, kTornMix };
  std::vector<Fate> fates;
  std::vector<uint64_t> draws;  // kTornPrefix: the cut; kTornMix: the seed of the mix
  for (const UndoRecord& r : records) {
    const uint64_t n = r.lba_count * per_lba;
    Fate f = static_cast<Fate>(std::uniform_int_distribution<int>(0, 3)(rng));
    if (n < 2 && (f == Fate::kTornPrefix || f == Fate::kTornMix)) f = Fate::kVanish;
    fates.push_back(f);
    draws.push_back(f == Fate::kTornPrefix ? std::uniform_int_distribution<uint64_t>(1, n - 1)(rng)
                                           : rng());
  }
  const std::vector<uint8_t> zeros(lba_size, 0);
  SettledSectors settled;
  for (size_t i = records.size(); i-- > 0;) {
    const UndoRecord& r = records[i];
    const uint64_t first = r.lba * per_lba;
    const uint64_t n = r.lba_count * per_lba;
    // Which of its sectors keep the new bytes.
    std::vector<bool> keep(n, fates[i] == Fate::kSurvive);
    if (fates[i] == Fate::kTornPrefix) {
      std::fill(keep.begin(), keep.begin() + static_cast<long>(draws[i]), true);
    } else if (fates[i] == Fate::kTornMix) {
      std::mt19937_64 mix(draws[i]);
      size_t kept = 0;
      for (uint64_t s = 0; s < n; ++s) kept += keep[s] = (mix() & 1) != 0;
      if (kept == 0) keep[0] = true;  // Torn means some of each.
      if (kept == n) keep[n - 1] = false;
    }
    switch (fates[i]) {
      case Fate::kVanish:
        ++report.vanished;
        break;
      case Fate::kSurvive:
        ++report.survived;
        break;
      default:
        ++report.torn;
    }
    // Restore runs of unsettled sectors that lose their new bytes; settle the kept ones.
    uint64_t s = 0;
    while (s < n) {
      const bool restoring = !keep[s];
      uint64_t e = s;
      while (e < n && keep[e] == keep[s] && !settled.Contains(first + e)) ++e;
      if (e == s) {  // Settled by a newer write: nothing to do here.
        ++s;
        continue;
      }
      if (restoring) {
        for (uint64_t from = s; from < e;) {  // In pieces of at most one LBA of zeros.
          const uint64_t bytes = std::min<uint64_t>((e - from) * sector, lba_size);
          const uint64_t offset = (first + from) * sector;
          restore(offset, r.old.empty() ? absl::MakeConstSpan(zeros.data(), bytes)
                                        : absl::MakeConstSpan(&r.old[from * sector], bytes));
          report.bytes_restored += bytes;
          from += bytes / sector;
        }
      } else {
        settled.Add(first + s, first + e);
      }
      s = e;
    }
  }
  return report;
}

absl::StatusOr<PowerCutReport> ApplyPowerCut(const std::string& journal_path,
                                             const PowerCutOptions& options) {
  absl::StatusOr<UndoJournal> j = ReadUndoJournal(journal_path);
  if (!j.ok()) return j.status();
  const uint32_t sector = options.sector_size;
  if (sector < 512 || (sector & (sector - 1)) != 0 || sector > j->lba_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sector size ", sector, " must be a power of two from 512 to the LBA size ", j->lba_size));
  }
  int fd = ::open(j->namespace_path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Errno("open namespace", j->namespace_path);
  absl::Status io;
  PowerCutReport report = CutWrites(
      j->records, j->lba_size, options, [&](uint64_t offset, absl::Span<const uint8_t> bytes) {
        if (!io.ok()) return;
        if (::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)) !=
            static_cast<ssize_t>(bytes.size())) {
          io = Errno("write namespace", j->namespace_path);
        }
      });
  if (io.ok() && ::fsync(fd) != 0) io = Errno("fsync namespace", j->namespace_path);
  ::close(fd);
  if (!io.ok()) return io;
  report.partial_tail = j->partial_tail;
  // The cut is done: empty the journal, keeping its header.
  const uint64_t header = 20 + j->namespace_path.size();
  if (::truncate(journal_path.c_str(), static_cast<off_t>(header)) != 0) {
    return Errno("truncate", journal_path);
  }
  return report;
}

absl::StatusOr<std::vector<std::pair<std::string, PowerCutReport>>> ApplyPowerCutToDir(
    const std::string& journal_dir, const PowerCutOptions& options) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(journal_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::EndsWith(name, kJournalSuffix)) names.push_back(name);
  }
  if (ec) {
    return absl::NotFoundError(absl::StrCat("journal dir ", journal_dir, ": ", ec.message()));
  }
  std::sort(names.begin(), names.end());
  std::vector<std::pair<std::string, PowerCutReport>> out;
  for (const std::string& name : names) {
    PowerCutOptions o = options;
    o.seed = Mix(options.seed ^ Mix(NameHash(name)));
    absl::StatusOr<PowerCutReport> r =
        ApplyPowerCut((std::filesystem::path(journal_dir) / name).string(), o);
    if (!r.ok()) return r.status();
    out.emplace_back(name, *r);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PowerCutNamespace>> PowerCutNamespace::Create(
    std::unique_ptr<Namespace> inner, const std::string& namespace_path,
    const std::string& journal_path) {
  int fd = ::open(journal_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("power-cut journal: create", journal_path);
  const std::string absolute = std::filesystem::absolute(namespace_path).string();
  const std::vector<uint8_t> header = Header(inner->lba_size(), absolute);
  if (absl::Status s = WriteAll(fd, header, journal_path); !s.ok()) {
    ::close(fd);
    return s;
  }
  return std::unique_ptr<PowerCutNamespace>(
      new PowerCutNamespace(std::move(inner), journal_path, fd, header.size()));
}

PowerCutNamespace::PowerCutNamespace(std::unique_ptr<Namespace> inner, std::string journal_path,
                                     int fd, uint64_t header_bytes)
    : inner_(std::move(inner)),
      journal_path_(std::move(journal_path)),
      fd_(fd),
      header_bytes_(header_bytes) {}

PowerCutNamespace::~PowerCutNamespace() { ::close(fd_); }

void PowerCutNamespace::BeginWrite() {
  MutexLock lock(mu_);
  cv_.Wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !flushing_; });
  ++in_flight_;
}

void PowerCutNamespace::EndWrite() {
  MutexLock lock(mu_);
  if (--in_flight_ == 0) cv_.NotifyAll();
}

absl::Status PowerCutNamespace::Journal(uint64_t lba, size_t bytes) {
  const uint32_t lbs = inner_->lba_size();
  std::vector<uint8_t> old(bytes);
  if (absl::Status s = inner_->Read(lba, absl::MakeSpan(old)); !s.ok()) {
    if (!absl::IsInternal(s) && !absl::IsDataLoss(s)) return s;  // e.g. out of range
    return absl::InternalError(absl::StrCat("power-cut journal: reading the old bytes of LBAs [",
                                            lba, ", ", lba + bytes / lbs, "): ", s.message()));
  }
  const bool zero = std::all_of(old.begin(), old.end(), [](uint8_t b) { return b == 0; });
  std::vector<uint8_t> record;
  record.reserve(kRecordHead + (zero ? 0 : bytes) + 4);
  Put32(record, kRecordMagic);
  Put32(record, zero ? kOldBytesZero : 0);
  Put64(record, lba);
  Put32(record, static_cast<uint32_t>(bytes / lbs));
  if (!zero) record.insert(record.end(), old.begin(), old.end());
  Put32(record, Crc32c(record));
  if (absl::Status s = WriteAll(fd_, record, journal_path_); !s.ok()) return s;
  MutexLock lock(mu_);
  ++unflushed_;
  ++journaled_;
  return absl::OkStatus();
}

absl::Status PowerCutNamespace::Write(uint64_t lba, absl::Span<const uint8_t> data) {
  BeginWrite();
  absl::Status s = Journal(lba, data.size());
  if (s.ok()) s = inner_->Write(lba, data);
  EndWrite();
  return s;
}

void PowerCutNamespace::WriteAsync(uint64_t lba, absl::Span<const uint8_t> data, Done done) {
  BeginWrite();
  if (absl::Status s = Journal(lba, data.size()); !s.ok()) {
    EndWrite();
    return done(std::move(s));
  }
  inner_->WriteAsync(lba, data, [this, done = std::move(done)](absl::Status s) {
    EndWrite();
    done(std::move(s));
  });
}

absl::Status PowerCutNamespace::Flush() {
  MutexLock one(flush_mu_);
  {
    MutexLock lock(mu_);
    flushing_ = true;
    cv_.Wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; });
  }
  absl::Status s = inner_->Flush();
  if (s.ok() && ::ftruncate(fd_, static_cast<off_t>(header_bytes_)) != 0) {
    s = Errno("power-cut journal: truncate", journal_path_);
  }
  MutexLock lock(mu_);
  if (s.ok()) unflushed_ = 0;
  flushing_ = false;
  cv_.NotifyAll();
  return s;
}

std::vector<std::pair<std::string, uint64_t>> PowerCutNamespace::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> c = inner_->Counters();
  MutexLock lock(mu_);
  c.emplace_back("power_cut_unflushed_writes", unflushed_);
  c.emplace_back("power_cut_journaled_writes", journaled_);
  return c;
}

absl::StatusOr<PowerCutReport> PowerCutNamespace::PowerCut(const PowerCutOptions& options) {
  absl::StatusOr<PowerCutReport> r = ApplyPowerCut(journal_path_, options);
  if (r.ok()) {
    MutexLock lock(mu_);
    unflushed_ = 0;
  }
  return r;
}

uint64_t PowerCutNamespace::unflushed_writes() const {
  MutexLock lock(mu_);
  return unflushed_;
}

NamespaceFactory PowerCutJournalFactory(NamespaceFactory inner, std::string journal_dir) {
  return [inner = std::move(inner), journal_dir = std::move(journal_dir)](
             const std::string& path, uint64_t size_bytes, uint32_t lba_size,
             bool create) -> absl::StatusOr<std::unique_ptr<Namespace>> {
    std::error_code ec;
    std::filesystem::create_directories(journal_dir, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("power-cut journal dir ", journal_dir, ": ", ec.message()));
    }
    absl::StatusOr<std::unique_ptr<Namespace>> ns = inner(path, size_bytes, lba_size, create);
    if (!ns.ok()) return ns.status();
    const std::string journal = (std::filesystem::path(journal_dir) /
                                 (std::filesystem::path(path).filename().string() + kJournalSuffix))
                                    .string();
    absl::StatusOr<std::unique_ptr<PowerCutNamespace>> cut =
        PowerCutNamespace::Create(*std::move(ns), path, journal);
    if (!cut.ok()) return cut.status();
    return std::unique_ptr<Namespace>(*std::move(cut));
  };
}

}  // namespace ecd::store
