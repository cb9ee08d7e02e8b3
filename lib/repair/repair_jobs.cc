// RepairPlanner's jobs (evacuations, media ranges, whole-object repairs): queued, credited with
// progress and ended; a media range stays in the catalog's meta table until moved.
#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/repair/repair_plan.h"
#include "lib/repair/repair_planner.h"
#include "lib/store/store_admin.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

using store::DeviceRange;
using store::DeviceRecord;
using store::DeviceState;
using store::RecoverOptions;
using store::RecoverProgress;

namespace {

constexpr char kMediaPrefix[] = "repair/media_range/";

// The meta key of a media range still to move: repair/media_range/<device>/<first>/<count>.
std::string MediaKey(const DeviceRange& r) {
  return absl::StrCat(kMediaPrefix, r.device, "/", r.first_lba, "/", r.lba_count);
}

bool SameWork(const RebuildSpec& a, const RebuildSpec& b) {
  return a.kind == b.kind && a.device == b.device && a.first_lba == b.first_lba &&
         a.lba_count == b.lba_count && a.object == b.object;
}

}  // namespace

const char* RebuildKindName(RebuildKind kind) {
  switch (kind) {
    case RebuildKind::kEvacuateDevice:
      return "evacuate-device";
    case RebuildKind::kMediaRange:
      return "media-range";
    case RebuildKind::kRepairObject:
      return "repair-object";
  }
  return "unknown";
}

const char* RebuildStateName(RebuildState state) {
  switch (state) {
    case RebuildState::kQueued:
      return "queued";
    case RebuildState::kRunning:
      return "running";
    case RebuildState::kDone:
      return "done";
    case RebuildState::kFailed:
      return "failed";
  }
  return "unknown";
}

int RebuildPriority(RebuildKind kind) {
  switch (kind) {
    case RebuildKind::kEvacuateDevice:
      return 0;
    case RebuildKind::kMediaRange:
      return 1;
    case RebuildKind::kRepairObject:
      return 2;
  }
  return 3;
}

void RepairPlanner::ResumeMediaRanges() {
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> found =
      store_->admin().MetaWithPrefix(kMediaPrefix);
  if (!found.ok()) return;
  for (const auto& [key, reason] : *found) {
    std::vector<std::string> parts = absl::StrSplit(key.substr(strlen(kMediaPrefix)), '/');
    RebuildSpec spec;
    spec.kind = RebuildKind::kMediaRange;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &spec.device) ||
        !absl::SimpleAtoi(parts[1], &spec.first_lba) ||
        !absl::SimpleAtoi(parts[2], &spec.lba_count)) {
      continue;
    }
    spec.reason = absl::StrCat(reason, " (resumed after a restart)");
    const uint64_t id = next_id_++;
    RebuildJob job;
    job.id = id;
    job.priority = RebuildPriority(spec.kind);
    job.spec = spec;
    job.created = job.started = absl::Now();
    job.state = RebuildState::kRunning;
    jobs_.emplace(id, std::move(job));
    ranges_.push_back({spec.device, spec.first_lba, spec.lba_count});
  }
}

uint64_t RepairPlanner::Submit(const RebuildSpec& spec) {
  {
    MutexLock lock(mu_);
    for (const auto& [existing, job] : jobs_) {
      if ((job.state == RebuildState::kQueued || job.state == RebuildState::kRunning) &&
          SameWork(job.spec, spec)) {
        return existing;
      }
    }
  }
  // An evacuation marks its device failing before the job exists, so that no plan sees the job
  // with its device still online (which ends it: the device was brought back).
  std::string error;
  if (spec.kind == RebuildKind::kEvacuateDevice) error = StartEvacuation(spec.device);
  if (spec.kind == RebuildKind::kMediaRange) {
    // Kept in the catalog until moved, so that a restart resumes it.
    if (absl::Status s = store_->admin().SetMeta(
            MediaKey({spec.device, spec.first_lba, spec.lba_count}), spec.reason);
        !s.ok()) {
      Log(LogLevel::kError, "media range of device %d not recorded (%s): a restart forgets it",
          spec.device, s.message());
    }
  }
  uint64_t id;
  {
    MutexLock lock(mu_);
    id = next_id_++;
    RebuildJob job;
    job.id = id;
    job.priority = RebuildPriority(spec.kind);
    job.spec = spec;
    job.created = absl::Now();
    Log(LogLevel::kInfo, "rebuild job %d queued: %s (%s)", id, RebuildKindName(spec.kind),
        spec.reason);
    if (spec.kind == RebuildKind::kMediaRange) {
      ranges_.push_back({spec.device, spec.first_lba, spec.lba_count});
    }
    if (spec.kind != RebuildKind::kRepairObject) {
      job.state = RebuildState::kRunning;
      job.started = job.created;
    }
    jobs_.emplace(id, std::move(job));
    if (!error.empty()) FinishLocked(id, error);
    dirty_ = true;
  }
  changed_.NotifyAll();
  return id;
}

std::string RepairPlanner::StartEvacuation(uint32_t device) {
  std::vector<DeviceRecord> devices = store_->admin().DeviceRecords();
  if (device >= devices.size()) return absl::StrCat("device ", device, " does not exist");
  if (devices[device].state != DeviceState::kOnline) return "";  // failing already, or gone
  absl::StatusOr<store::DeviceStatus> marked =
      store_->admin().SetDeviceState(device, DeviceState::kFailing);
  return marked.ok() ? "" : std::string(marked.status().message());
}

void RepairPlanner::FinishLocked(uint64_t id, const std::string& error) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.state == RebuildState::kDone ||
      it->second.state == RebuildState::kFailed) {
    return;
  }
  RebuildJob& job = it->second;
  job.state = error.empty() ? RebuildState::kDone : RebuildState::kFailed;
  job.error = error;
  job.finished = absl::Now();
  if (error.empty()) {
    Log(LogLevel::kInfo, "rebuild job %d (%s) done", id, RebuildKindName(job.spec.kind));
  } else {
    Log(LogLevel::kError, "rebuild job %d (%s) failed: %s", id, RebuildKindName(job.spec.kind),
        error);
  }
  ++finished_counts_[{job.spec.kind, job.state}];
  finished_.push_back(id);
  while (finished_.size() > options_.history) {
    jobs_.erase(finished_.front());
    finished_.pop_front();
  }
  changed_.NotifyAll();
}

std::vector<RebuildJob> RepairPlanner::List() const {
  MutexLock lock(mu_);
  std::vector<RebuildJob> out;
  for (const auto& [id, job] : jobs_) out.push_back(job);
  std::sort(out.begin(), out.end(), [](const RebuildJob& a, const RebuildJob& b) {
    auto rank = [](const RebuildJob& j) {
      return j.state == RebuildState::kRunning ? 0 : j.state == RebuildState::kQueued ? 1 : 2;
    };
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (rank(a) == 1 && a.priority != b.priority) return a.priority < b.priority;
    return rank(a) == 2 ? a.id > b.id : a.id < b.id;
  });
  return out;
}

std::optional<RebuildJob> RepairPlanner::Get(uint64_t id) const {
  MutexLock lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

RebuildStats RepairPlanner::Stats() const {
  MutexLock lock(mu_);
  RebuildStats out;
  out.finished = finished_counts_;
  out.bytes_moved = status_.bytes_repaired;
  out.last_progress = status_.last_progress;
  for (const auto& [id, job] : jobs_) {
    if (job.state == RebuildState::kQueued) ++out.queued;
    if (job.state == RebuildState::kRunning) ++out.running;
  }
  out.eta = EtaLocked();
  return out;
}

uint64_t RepairPlanner::NextObjectJobLocked() const {
  for (const auto& [id, job] : jobs_) {
    if (job.state == RebuildState::kQueued && job.spec.kind == RebuildKind::kRepairObject) {
      return id;
    }
  }
  return 0;
}

void RepairPlanner::UpdateJobsLocked(const std::vector<DeviceRecord>& devices,
                                     const std::vector<DeviceRange>& media, const Findings& f,
                                     uint64_t first_unseen_job,
                                     std::vector<std::string>& finished_media) {
  std::vector<std::pair<uint64_t, std::string>> ended;  // job, error ("" done)
  for (auto& [id, job] : jobs_) {
    if (job.state != RebuildState::kRunning || id >= first_unseen_job) continue;
    const uint32_t d = job.spec.device;
    if (job.spec.kind == RebuildKind::kEvacuateDevice && d < devices.size()) {
      const uint64_t left = f.blocks_on[d];
      job.objects_total = std::max(job.objects_total, left);
      job.objects_done = job.objects_total - left;
      if (devices[d].state == DeviceState::kOnline) {
        ended.emplace_back(
            id, absl::StrCat("device ", d, " was brought online again; its evacuation stopped"));
      } else if (left == 0 && f.lost_on[d] > 0) {
        ended.emplace_back(
            id, absl::StrCat(f.lost_on[d], " stripes with a block on device ", d,
                             " have fewer than M good blocks: their blocks stay on the device, "
                             "which stays failing. Bring failed devices back online if their "
                             "data is intact, or restore those objects from a backup"));
      } else if (left == 0) {
        ended.emplace_back(id, "");
      }
    } else if (job.spec.kind == RebuildKind::kMediaRange) {
      for (size_t i = 0; i < media.size(); ++i) {
        if (media[i].device != d || media[i].first_lba != job.spec.first_lba ||
            media[i].lba_count != job.spec.lba_count) {
          continue;
        }
        job.objects_total = std::max(job.objects_total, f.stripes_in_range[i]);
        job.objects_done = job.objects_total - f.stripes_in_range[i];
        if (f.stripes_in_range[i] == 0) ended.emplace_back(id, "");
      }
    }
  }
  for (const auto& [id, error] : ended) {
    const RebuildSpec spec = jobs_[id].spec;
    if (spec.kind == RebuildKind::kMediaRange) {
      const DeviceRange range{spec.device, spec.first_lba, spec.lba_count};
      finished_media.push_back(MediaKey(range));
      ranges_.erase(std::remove_if(ranges_.begin(), ranges_.end(),
                                   [&](const DeviceRange& r) {
                                     return r.device == range.device &&
                                            r.first_lba == range.first_lba &&
                                            r.lba_count == range.lba_count;
                                   }),
                    ranges_.end());
    }
    FinishLocked(id, error);
  }
}

void RepairPlanner::CreditJobsLocked(int64_t device, const RecoverProgress& p) {
  if (device < 0) return;
  for (auto& [id, job] : jobs_) {
    if (job.state != RebuildState::kRunning || job.spec.kind == RebuildKind::kRepairObject ||
        job.spec.device != static_cast<uint32_t>(device)) {
      continue;
    }
    job.blocks_checked += p.blocks_checked;
    job.blocks_moved += p.blocks_rebuilt;
    job.bytes_moved += p.bytes_rebuilt;
    return;  // once: the oldest job on that device
  }
}

void RepairPlanner::RunObjectJob(uint64_t id) {
  std::string name;
  {
    MutexLock lock(mu_);
    RebuildJob& job = jobs_[id];
    job.state = RebuildState::kRunning;
    job.started = absl::Now();
    job.objects_total = 1;
    name = job.spec.object;
  }
  absl::StatusOr<RecoverProgress> p =
      RecoverPaced(name, RecoverOptions{}, [&](const RecoverProgress& now) {
        MutexLock lock(mu_);
        RebuildJob& job = jobs_[id];
        job.blocks_checked = now.blocks_checked;
        job.blocks_moved = now.blocks_rebuilt;
        job.bytes_moved = now.bytes_rebuilt;
        status_.last_progress = absl::Now();
      });
  MutexLock lock(mu_);
  RebuildJob& job = jobs_[id];
  job.objects_done = 1;
  if (p.ok()) {
    job.blocks_checked = p->blocks_checked;
    job.blocks_moved = p->blocks_rebuilt;
    job.bytes_moved = p->bytes_rebuilt;
    status_.blocks_repaired += p->blocks_rebuilt;
    status_.bytes_repaired += p->bytes_rebuilt;
  }
  FinishLocked(id, p.ok() || absl::IsNotFound(p.status())
                       ? ""
                       : absl::StrCat(name, ": ", p.status().message()));
}

}  // namespace ecd::repair
