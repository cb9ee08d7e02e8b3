// Offline catalog rebuild and check from the devices' block records (docs/formats.md).
#include "lib/store/catalog_rebuild.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "lib/devices/extent_allocator.h"
#include "lib/records/device_label.h"
#include "lib/records/record_log.h"

namespace ecd::store {
namespace {

namespace fs = std::filesystem;

struct FoundDevice {
  uint32_t id = 0;
  std::string path;
  std::optional<DeviceLabel> label;
  uint64_t label_lba = 0;
  std::string problem;  // why its records could not be read
  DeviceRecords records;
  uint64_t bad_pages = 0;
};

// Finds the label of a namespace file: at LBA 0, else (a device labelled after it held blocks)
// on the first LBA boundary of its data that holds one. Reads the file directly: it is found
// before its LBA size is known.
absl::Status FindLabel(FoundDevice& d) {
  const int fd = ::open(d.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open: ", std::strerror(errno)));
  std::vector<uint8_t> chunk(1 << 20);
  off_t at = 0;
  while (!d.label) {
    const off_t data = ::lseek(fd, at, SEEK_DATA);
    if (data < 0) break;
    const ssize_t n = ::pread(fd, chunk.data(), chunk.size(), data & ~off_t{511});
    if (n <= 0) break;
    const off_t base = data & ~off_t{511};
    for (ssize_t off = 0; off + static_cast<ssize_t>(kDeviceLabelBytes) <= n; off += 512) {
      absl::StatusOr<DeviceLabel> label =
          DecodeDeviceLabel(absl::MakeConstSpan(chunk.data() + off, static_cast<size_t>(n - off)));
      if (!label.ok() || label->lba_size == 0 || (base + off) % label->lba_size != 0) continue;
      d.label = *label;
      d.label_lba = static_cast<uint64_t>(base + off) / label->lba_size;
      break;
    }
    at = base + n;
  }
  ::close(fd);
  if (!d.label) return absl::NotFoundError("no ecd device label");
  return absl::OkStatus();
}

// Every devices/nvme<N>.ns, labelled, and the store id most of them carry.
absl::StatusOr<std::vector<FoundDevice>> FindDevices(const std::string& data_dir,
                                                     std::string& store_id) {
  std::vector<FoundDevice> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(data_dir) / "devices", ec)) {
    const std::string file = e.path().filename().string();
    absl::string_view name = file;
    uint32_t id = 0;
    if (!absl::ConsumePrefix(&name, "nvme") || !absl::ConsumeSuffix(&name, ".ns") ||
        !absl::SimpleAtoi(name, &id)) {
      continue;
    }
    FoundDevice d;
    d.id = id;
    d.path = e.path().string();
    d.records.device = id;
    if (absl::Status s = FindLabel(d); !s.ok()) d.problem = std::string(s.message());
    found.push_back(std::move(d));
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  std::map<std::string, int> votes;
  for (const FoundDevice& d : found) {
    if (d.label) ++votes[d.label->store_id];
  }
  if (votes.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no namespace under ", data_dir,
                     "/devices carries an ecd device label: there is nothing "
                     "to rebuild the catalog from (is this the right --data-dir?)"));
  }
  auto best = std::max_element(votes.begin(), votes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  store_id = best->first;
  for (FoundDevice& d : found) {
    if (d.label && d.label->store_id != store_id) {
      d.problem = absl::StrCat("its label is store ", d.label->store_id, "'s, not ", store_id);
      d.label.reset();
    } else if (d.label && d.label->device != d.id) {
      d.problem = absl::StrCat("its label says it is device ", d.label->device,
                               ": namespaces were swapped; put each back at its own path");
      d.label.reset();
    }
  }
  return found;
}

// Reads the record log of each labelled device.
void ReadRecords(const CatalogToolOptions& options, const std::string& store_id,
                 std::vector<FoundDevice>& found) {
  NamespaceFactory factory = options.namespace_factory;
  if (!factory) factory = NvmeNamespaceFactory({});
  for (FoundDevice& d : found) {
    if (d.label && d.label->log.empty()) {
      d.problem = "its label names no block-record log (a device from before block records)";
    }
    if (d.label && d.problem.empty()) {
      absl::StatusOr<std::unique_ptr<Namespace>> ns =
          factory(d.path, d.label->size_bytes, d.label->lba_size, /*create=*/false);
      absl::Status s = ns.status();
      if (s.ok()) {
        absl::StatusOr<std::unique_ptr<RecordLog>> log =
            RecordLog::Open(std::move(*ns), d.label->log, store_id, d.id);
        s = log.status();
        if (s.ok()) {
          absl::StatusOr<RecordSet> records =
              (*log)->ReadAll(d.records.committed_through, d.bad_pages);
          s = records.status();
          if (s.ok()) d.records.records = std::move(*records);
        }
      }
      if (!s.ok()) d.problem = absl::StrCat("its block-record log cannot be read: ", s.message());
    }
    std::string line = absl::StrCat("device ", d.id, " (", d.path, "): ");
    if (!d.problem.empty()) {
      absl::StrAppend(&line, "not used, ", d.problem);
    } else {
      absl::StrAppend(&line, d.records.records.objects.size(), " object records, ",
                      d.records.records.blocks.size(), " block records, ",
                      d.records.records.tombstones.size(), " tombstones",
                      d.bad_pages ? absl::StrCat(", ", d.bad_pages, " damaged pages skipped") : "");
    }
    if (options.progress) options.progress(line);
  }
}

std::vector<DeviceRecords> Usable(const std::vector<FoundDevice>& found) {
  std::vector<DeviceRecords> out;
  for (const FoundDevice& d : found) {
    if (d.problem.empty()) out.push_back(d.records);
  }
  return out;
}

std::vector<std::string> DeviceLines(const std::vector<FoundDevice>& found) {
  std::vector<std::string> lines;
  for (const FoundDevice& d : found) {
    lines.push_back(
        d.problem.empty()
            ? absl::StrCat("device ", d.id, ": ", d.records.records.blocks.size(), " block records")
            : absl::StrCat("device ", d.id, ": not used, ", d.problem));
  }
  return lines;
}

// Gives each block without a record an extent on a device outside its stripe, so that the
// repair rebuilds it there. Objects where that is impossible are left out.
void PlaceMissingBlocks(const std::vector<FoundDevice>& found, Resolution& r) {
  std::map<uint32_t, ExtentAllocator> space;
  std::map<uint32_t, uint32_t> lba_size;
  for (const FoundDevice& d : found) {
    if (!d.label || !d.problem.empty()) continue;
    auto& a =
        space.emplace(d.id, ExtentAllocator(d.label->size_bytes / d.label->lba_size)).first->second;
    lba_size[d.id] = d.label->lba_size;
    (void)a.MarkUsed(d.label_lba, 1);
    (void)a.MarkUsed(d.label->log.first_lba, d.label->log.lba_count);
  }
  for (const ResolvedObject& o : r.objects) {
    for (const BlockRecord& b : o.blocks) {
      if (b.device != kNoDevice && space.count(b.device) > 0) {
        (void)space.at(b.device).MarkUsed(b.lba, b.lba_count);
      }
    }
  }
  std::vector<ResolvedObject> kept;
  for (ResolvedObject& o : r.objects) {
    const size_t width = o.object.data_blocks + o.object.parity_blocks;
    bool placed = true;
    for (size_t at = 0; at < o.blocks.size() && placed; ++at) {
      BlockRecord& b = o.blocks[at];
      if (b.device != kNoDevice) continue;
      const size_t first = at - at % width;
      placed = false;
      for (auto& [device, allocator] : space) {
        bool in_stripe = false;
        for (size_t i = first; i < first + width; ++i) in_stripe |= o.blocks[i].device == device;
        if (in_stripe) continue;
        const uint64_t lbas = (o.object.block_size + lba_size[device] - 1) / lba_size[device];
        if (std::optional<uint64_t> lba = allocator.Allocate(lbas)) {
          b.device = device;
          b.lba = *lba;
          b.lba_count = static_cast<uint32_t>(lbas);
          placed = true;
          break;
        }
      }
    }
    if (placed) {
      kept.push_back(std::move(o));
    } else {
      r.not_restored.push_back(absl::StrCat("object ", o.object.id, " \"", o.object.name,
                                            "\": no device has room for a block without a record"));
    }
  }
  r.objects = std::move(kept);
}

// Writes the new catalog at `path` (which must not exist).
absl::Status WriteCatalog(const std::string& path, const std::string& store_id,
                          const std::vector<FoundDevice>& found, const Resolution& r,
                          const CatalogToolOptions& options, uint64_t& blocks) {
  absl::StatusOr<std::unique_ptr<Catalog>> catalog = Catalog::Open(path);
  if (!catalog.ok()) return catalog.status();
  Catalog& c = **catalog;
  if (absl::Status s = c.SetMeta("store_id", store_id); !s.ok()) return s;
  const FoundDevice* model = nullptr;
  for (const FoundDevice& d : found) {
    if (d.label && model == nullptr) model = &d;
  }
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  uint32_t count = found.empty() ? 0 : found.back().id + 1;
  for (uint32_t id = 0; id < count; ++id) {
    auto it = std::find_if(found.begin(), found.end(), [&](const auto& d) { return d.id == id; });
    const FoundDevice* d = it == found.end() ? nullptr : &*it;
    DeviceRecord record;
    record.id = id;
    record.path = absl::StrCat("devices/nvme", id, ".ns");
    record.size_bytes = (d && d->label ? d->label : model->label)->size_bytes;
    record.lba_size = (d && d->label ? d->label : model->label)->lba_size;
    if (absl::Status s = c.AddDevice(record); !s.ok()) return s;
    if (d != nullptr && d->label) {
      if (absl::Status s = c.SetMeta(absl::StrCat("device_label/", id), absl::StrCat(d->label_lba));
          !s.ok()) {
        return s;
      }
    } else {
      const std::string why = d == nullptr
                                  ? "its namespace was missing when the catalog was rebuilt"
                                  : absl::StrCat("when the catalog was rebuilt, ", d->problem);
      if (absl::Status s = c.SetDeviceDown(id, now_ms, why); !s.ok()) return s;
    }
  }
  constexpr size_t kBatch = 1000;
  for (size_t at = 0; at < r.objects.size(); at += kBatch) {
    const size_t n = std::min(kBatch, r.objects.size() - at);
    if (absl::Status s = c.RestoreObjects(absl::MakeConstSpan(r.objects).subspan(at, n)); !s.ok()) {
      return s;
    }
    for (size_t i = at; i < at + n; ++i) blocks += r.objects[i].blocks.size();
    if (options.progress && (at / kBatch) % 100 == 99) {
      options.progress(absl::StrCat("catalog: ", at + n, " of ", r.objects.size(), " objects"));
    }
  }
  if (absl::Status s = c.AdvanceCommitSeq(std::max(r.max_seq, r.committed_through)); !s.ok()) {
    return s;
  }
  if (absl::Status s = c.SetMeta("records/snapshot_all", "1"); !s.ok()) return s;
  return c.SetMeta("catalog/rebuilt_unix_ms", absl::StrCat(now_ms));
}

}  // namespace

absl::StatusOr<RebuildReport> RebuildCatalog(const CatalogToolOptions& options) {
  std::string store_id;
  absl::StatusOr<std::vector<FoundDevice>> found = FindDevices(options.data_dir, store_id);
  if (!found.ok()) return found.status();
  ReadRecords(options, store_id, *found);
  RebuildReport report;
  report.devices = DeviceLines(*found);
  report.resolution = Resolve(Usable(*found));
  PlaceMissingBlocks(*found, report.resolution);

  const fs::path dir(options.data_dir);
  const std::string fresh = (dir / "catalog.db.rebuilding").string();
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(fresh + suffix, ec);
  if (absl::Status s =
          WriteCatalog(fresh, store_id, *found, report.resolution, options, report.blocks);
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("writing the new catalog ", fresh, ": ", s.message(),
                                               "; the old catalog was not touched"));
  }
  const std::string current = (dir / "catalog.db").string();
  const std::string aside = absl::StrCat(current, ".replaced-", absl::ToUnixMillis(absl::Now()));
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (!fs::exists(current + suffix, ec)) continue;
    fs::rename(current + suffix, aside + suffix, ec);
    if (ec)
      return absl::InternalError(absl::StrCat("move ", current, suffix, " aside: ", ec.message()));
    if (report.kept_aside.empty()) report.kept_aside = aside;
  }
  fs::rename(fresh, current, ec);
  if (ec) return absl::InternalError(absl::StrCat("rename ", fresh, ": ", ec.message()));
  if (absl::Status s = SyncParentDir(current); !s.ok()) return s;
  if (options.progress) {
    options.progress(absl::StrCat("catalog: wrote ", report.resolution.objects.size(), " objects, ",
                                  report.blocks, " blocks to ", current));
  }
  return report;
}

absl::StatusOr<CheckReport> CheckCatalog(const CatalogToolOptions& options) {
  std::string store_id;
  absl::StatusOr<std::vector<FoundDevice>> found = FindDevices(options.data_dir, store_id);
  if (!found.ok()) return found.status();
  ReadRecords(options, store_id, *found);
  CheckReport report;
  report.devices = DeviceLines(*found);
  report.resolution = Resolve(Usable(*found));
  const std::string path = (fs::path(options.data_dir) / "catalog.db").string();
  std::vector<std::string>& diff = report.differences;
  absl::StatusOr<std::unique_ptr<Catalog>> catalog = Catalog::Open(path, /*read_only=*/true);
  if (!catalog.ok()) {
    diff.push_back(absl::StrCat("the catalog cannot be read: ", catalog.status().message()));
    return report;
  }
  Catalog& c = **catalog;
  if (absl::StatusOr<std::optional<std::string>> id = c.GetMeta("store_id");
      id.ok() && *id != store_id) {
    diff.push_back(absl::StrCat("the catalog's store id is ", id->value_or("missing"),
                                ", the devices' ", store_id));
  }
  absl::StatusOr<uint64_t> seq = c.CommitSeq();
  if (seq.ok() && *seq < report.resolution.committed_through) {
    diff.push_back(absl::StrCat("the catalog is behind its devices: committed through ", *seq,
                                ", the devices say ", report.resolution.committed_through));
  }
  absl::StatusOr<std::vector<ObjectRecord>> objects = c.ListObjects();
  if (!objects.ok()) return objects.status();
  report.objects = objects->size();
  std::map<int64_t, const ObjectRecord*> in_catalog;
  for (const ObjectRecord& o : *objects) in_catalog[o.id] = &o;
  for (const ResolvedObject& r : report.resolution.objects) {
    auto it = in_catalog.find(r.object.id);
    const std::string name = absl::StrCat("object ", r.object.id, " \"", r.object.name, "\"");
    if (it == in_catalog.end()) {
      diff.push_back(absl::StrCat(name, ": on the devices (version ", r.object.version,
                                  ") but not in the catalog"));
      continue;
    }
    const ObjectRecord& o = *it->second;
    in_catalog.erase(it);
    if (o.version != r.object.version || o.size != r.object.size || o.name != r.object.name) {
      diff.push_back(absl::StrCat(name, ": the catalog has version ", o.version, " of ", o.size,
                                  " bytes, the devices version ", r.object.version, " of ",
                                  r.object.size));
      continue;
    }
    absl::StatusOr<std::vector<BlockRecord>> blocks = c.GetBlocks(o.id, 0, o.stripe_count);
    if (!blocks.ok()) return blocks.status();
    for (const BlockRecord& want : r.blocks) {
      auto b = std::find_if(blocks->begin(), blocks->end(), [&](const BlockRecord& x) {
        return x.stripe == want.stripe && x.index == want.index;
      });
      if (want.device == kNoDevice) {
        diff.push_back(absl::StrCat(name, " stripe ", want.stripe, " block ", want.index,
                                    ": no device has a record of it"));
      } else if (b == blocks->end() || b->device != want.device || b->lba != want.lba ||
                 b->crc32c != want.crc32c) {
        diff.push_back(absl::StrCat(
            name, " stripe ", want.stripe, " block ", want.index, ": the devices say device ",
            want.device, " LBA ", want.lba, ", the catalog ",
            b == blocks->end() ? std::string("has no row")
                               : absl::StrCat("device ", b->device, " LBA ", b->lba)));
      }
    }
  }
  for (const auto& [id, o] : in_catalog) {
    diff.push_back(absl::StrCat("object ", id, " \"", o->name,
                                "\": in the catalog but in no device's records"));
  }
  for (const std::string& line : report.resolution.not_restored) {
    diff.push_back(absl::StrCat("on the devices, not restorable: ", line));
  }
  return report;
}

}  // namespace ecd::store
