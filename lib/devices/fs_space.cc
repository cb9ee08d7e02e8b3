// FsSpace: claims against the free space of the file systems under the data dir, and the
// namespace wrapper that ends a claim when its write completes.
#include "lib/devices/fs_space.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "lib/util/size.h"

namespace ecd::store {
namespace {

constexpr char kFileSystemFullPayload[] = "type.ecd/store.FileSystemFull";

std::string DirectoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

// Forwards every call; a write's completion ends the claims on its LBAs.
class ClaimReleasingNamespace final : public Namespace {
 public:
  ClaimReleasingNamespace(std::unique_ptr<Namespace> inner, std::shared_ptr<FsSpace> space,
                          uint32_t device)
      : inner_(std::move(inner)), space_(std::move(space)), device_(device) {}

  uint32_t lba_size() const override { return inner_->lba_size(); }
  uint64_t lba_count() const override { return inner_->lba_count(); }
  absl::Status Read(uint64_t lba, absl::Span<uint8_t> out) override {
    return inner_->Read(lba, out);
  }
  void ReadAsync(uint64_t lba, absl::Span<uint8_t> out, Done done) override {
    inner_->ReadAsync(lba, out, std::move(done));
  }
  absl::Status Write(uint64_t lba, absl::Span<const uint8_t> data) override {
    absl::Status s = inner_->Write(lba, data);
    space_->Release(device_, lba, data.size() / inner_->lba_size());
    return s;
  }
  void WriteAsync(uint64_t lba, absl::Span<const uint8_t> data, Done done) override {
    const uint64_t count = data.size() / inner_->lba_size();
    inner_->WriteAsync(lba, data,
                       [space = space_, device = device_, lba, count,
                        done = std::move(done)](absl::Status s) mutable {
                         space->Release(device, lba, count);
                         done(std::move(s));
                       });
  }
  absl::Status Flush() override { return inner_->Flush(); }
  void Deallocate(uint64_t lba, uint64_t count) override { inner_->Deallocate(lba, count); }
  absl::Status Reserve(uint64_t lba, uint64_t count) override {
    return inner_->Reserve(lba, count);
  }
  std::vector<LbaRange> AllocatedRanges() const override { return inner_->AllocatedRanges(); }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override {
    return inner_->Counters();
  }

 private:
  const std::unique_ptr<Namespace> inner_;
  const std::shared_ptr<FsSpace> space_;
  const uint32_t device_;
};

}  // namespace

absl::StatusOr<FsStat> StatFileSystem(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("statvfs of ", path, ": ", std::strerror(errno)));
  }
  const uint64_t unit = st.f_frsize != 0 ? st.f_frsize : st.f_bsize;
  return FsStat{.size_bytes = static_cast<uint64_t>(st.f_blocks) * unit,
                .free_bytes = static_cast<uint64_t>(st.f_bavail) * unit};
}

absl::Status FileSystemFullError(const std::string& message) {
  absl::Status s = absl::ResourceExhaustedError(message);
  s.SetPayload(kFileSystemFullPayload, absl::Cord("1"));
  return s;
}

bool IsFileSystemFull(const absl::Status& status) {
  return absl::IsResourceExhausted(status) && status.GetPayload(kFileSystemFullPayload).has_value();
}

FsSpace::FsSpace(uint64_t reserve_bytes,
                 std::function<absl::StatusOr<FsStat>(const std::string&)> stat)
    : reserve_bytes_(reserve_bytes), stat_(std::move(stat)) {}

int FsSpace::FsIndexLocked(dev_t dev, const std::string& path) {
  for (size_t i = 0; i < fs_.size(); ++i) {
    if (fs_[i].dev == dev) return static_cast<int>(i);
  }
  fs_.push_back(Fs{.dev = dev, .path = path});
  return static_cast<int>(fs_.size() - 1);
}

absl::Status FsSpace::SetCatalog(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("stat ", path, ": ", std::strerror(errno)));
  }
  MutexLock lock(mu_);
  const int i = FsIndexLocked(st.st_dev, DirectoryOf(path));
  fs_[i].catalog = true;
  fs_[i].path = DirectoryOf(path);  // The data dir names the file system that holds it.
  return absl::OkStatus();
}

void FsSpace::SetDevice(uint32_t id, const std::string& path) {
  struct stat st {};
  const bool on_fs = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  MutexLock lock(mu_);
  auto it = claims_.find(id);
  if (it != claims_.end()) {
    const int old = device_fs_.count(id) ? device_fs_[id] : -1;
    for (const auto& [lba, c] : it->second) {
      if (old >= 0) fs_[old].claimed -= c.bytes;
    }
    claims_.erase(it);
  }
  device_fs_[id] = on_fs ? FsIndexLocked(st.st_dev, DirectoryOf(path)) : -1;
}

std::string FsSpace::FullMessage(const Fs& fs, const FsStat& stat, uint64_t reserve,
                                 uint64_t needed, SpaceUse use) const {
  std::string where = fs.catalog ? "the data dir " + fs.path : fs.path;
  std::string claimed = fs.claimed == 0 ? ""
                                        : absl::StrCat(" (", FormatSize(fs.claimed),
                                                       " of it promised to writes in progress)");
  std::string kept =
      use == SpaceUse::kNewData
          ? absl::StrCat("ecd keeps ", FormatSize(reserve),
                         " of it free (--fs-reserve) for the catalog and for deletes")
          : absl::StrCat("even a repair leaves ", FormatSize(reserve),
                         " free (half of --fs-reserve) for the catalog and for deletes");
  std::string more =
      needed == 0 ? ""
                  : absl::StrCat(", so another ", FormatSize(needed), " of blocks does not fit");
  return absl::StrCat("the file system under ", where, " is nearly full: it has ",
                      FormatSize(stat.free_bytes), " free", claimed, " and ", kept, more,
                      ". Delete objects (`ecctl rm NAME`), free space on that file system, or "
                      "move the data dir to a larger one");
}

absl::Status FsSpace::Claim(absl::Span<const ClaimedExtent> extents, SpaceUse use) {
  const uint64_t reserve = use == SpaceUse::kNewData ? reserve_bytes_ : reserve_bytes_ / 2;
  MutexLock lock(mu_);
  // The bytes each file system is asked for; the catalog's must hold its reserve in any case.
  std::map<int, uint64_t> needed;
  for (size_t i = 0; i < fs_.size(); ++i) {
    if (fs_[i].catalog) needed[static_cast<int>(i)] = 0;
  }
  for (const ClaimedExtent& e : extents) {
    auto it = device_fs_.find(e.device);
    if (it != device_fs_.end() && it->second >= 0) needed[it->second] += e.bytes;
  }
  for (const auto& [i, bytes] : needed) {
    const Fs& fs = fs_[i];
    absl::StatusOr<FsStat> stat = stat_(fs.path);
    if (!stat.ok()) return stat.status();
    const uint64_t want = fs.claimed + reserve + bytes;
    if (stat->free_bytes < want) {
      return FileSystemFullError(FullMessage(fs, *stat, reserve, bytes, use));
    }
  }
  for (const ClaimedExtent& e : extents) {
    auto it = device_fs_.find(e.device);
    if (it == device_fs_.end() || it->second < 0) continue;
    fs_[it->second].claimed += e.bytes;
    claims_[e.device][e.lba] = Claimed{e.lba_count, e.bytes};
  }
  return absl::OkStatus();
}

void FsSpace::Release(uint32_t device, uint64_t lba, uint64_t lba_count) {
  MutexLock lock(mu_);
  auto dev = claims_.find(device);
  if (dev == claims_.end() || lba_count == 0) return;
  std::map<uint64_t, Claimed>& claims = dev->second;
  auto fs = device_fs_.find(device);
  const int index = fs == device_fs_.end() ? -1 : fs->second;
  // The first claim that may overlap starts at or before `lba`.
  auto it = claims.upper_bound(lba);
  if (it != claims.begin()) --it;
  while (it != claims.end() && it->first < lba + lba_count) {
    if (it->first + it->second.lba_count <= lba) {
      ++it;
      continue;
    }
    if (index >= 0) fs_[index].claimed -= it->second.bytes;
    it = claims.erase(it);
  }
  if (claims.empty()) claims_.erase(dev);
}

std::vector<FileSystemUsage> FsSpace::Usage() const {
  std::vector<FileSystemUsage> out;
  MutexLock lock(mu_);
  for (size_t i = 0; i < fs_.size(); ++i) {
    FileSystemUsage u;
    u.path = fs_[i].path;
    u.catalog = fs_[i].catalog;
    u.reserve_bytes = reserve_bytes_;
    u.claimed_bytes = fs_[i].claimed;
    if (absl::StatusOr<FsStat> st = stat_(fs_[i].path); st.ok()) {
      u.size_bytes = st->size_bytes;
      u.free_bytes = st->free_bytes;
    }
    for (const auto& [id, fs] : device_fs_) {
      if (fs == static_cast<int>(i)) u.devices.push_back(id);
    }
    out.push_back(std::move(u));
  }
  std::stable_partition(out.begin(), out.end(), [](const FileSystemUsage& u) { return u.catalog; });
  return out;
}

std::unique_ptr<Namespace> ReleaseClaimsOnWrite(std::unique_ptr<Namespace> inner,
                                                std::shared_ptr<FsSpace> space, uint32_t device) {
  return std::make_unique<ClaimReleasingNamespace>(std::move(inner), std::move(space), device);
}

}  // namespace ecd::store
