// RebuildScheduler: priority queue, one worker, progress, rate limit, history.
#include "lib/store/rebuild_scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/store/pacer.h"
#include "lib/util/log.h"

namespace ecd::store {

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

namespace {

bool SameWork(const RebuildSpec& a, const RebuildSpec& b) {
  return a.kind == b.kind && a.device == b.device && a.first_lba == b.first_lba &&
         a.lba_count == b.lba_count && a.object == b.object;
}

}  // namespace

RebuildScheduler::RebuildScheduler(Store* store, const RebuildSchedulerOptions& options)
    : store_(store), options_(options) {
  worker_ = std::thread([this] { Loop(); });
}

RebuildScheduler::~RebuildScheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

uint64_t RebuildScheduler::Submit(RebuildSpec spec) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [existing, job] : jobs_) {
      if (job.state == RebuildState::kQueued && SameWork(job.spec, spec)) return existing;
    }
    id = next_id_++;
    RebuildJob job;
    job.id = id;
    job.priority = RebuildPriority(spec.kind);
    job.spec = std::move(spec);
    job.created = absl::Now();
    Log(LogLevel::kInfo, "rebuild job %d queued: %s (%s)", id, RebuildKindName(job.spec.kind),
        job.spec.reason);
    jobs_.emplace(id, std::move(job));
  }
  changed_.notify_all();
  return id;
}

void RebuildScheduler::ResumeEvacuations() {
  absl::StatusOr<std::vector<DeviceStatus>> devices = store_->ListDevices();
  if (!devices.ok()) return;
  for (const DeviceStatus& d : *devices) {
    if (d.record.state != DeviceState::kFailing) continue;
    RebuildSpec spec;
    spec.kind = RebuildKind::kEvacuateDevice;
    spec.device = d.record.id;
    spec.reason = "device was failing when ecd stopped; resuming its evacuation";
    Submit(std::move(spec));
  }
}

std::vector<RebuildJob> RebuildScheduler::List() const {
  std::lock_guard<std::mutex> lock(mu_);
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

std::optional<RebuildJob> RebuildScheduler::Get(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

bool RebuildScheduler::WaitIdle(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, absl::ToChronoMilliseconds(timeout), [&] {
    if (running_) return false;
    for (const auto& [id, job] : jobs_) {
      if (job.state == RebuildState::kQueued) return false;
    }
    return true;
  });
}

void RebuildScheduler::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    RebuildJob* next = nullptr;
    changed_.wait(lock, [&] {
      if (stop_) return true;
      for (auto& [id, job] : jobs_) {
        if (job.state != RebuildState::kQueued) continue;
        if (next == nullptr || job.priority < next->priority) next = &job;
      }
      return next != nullptr;
    });
    if (stop_) return;
    next->state = RebuildState::kRunning;
    next->started = last_progress_ = absl::Now();
    current_fraction_ = 0;
    running_ = next->id;
    RebuildJob work = *next;
    lock.unlock();
    Run(work);
    lock.lock();
    work.finished = last_progress_ = absl::Now();
    jobs_[work.id] = work;
    running_.reset();
    ++finished_counts_[{work.spec.kind, work.state}];
    finished_bytes_ += work.bytes_moved;
    finished_.push_back(work.id);
    while (finished_.size() > options_.history) {
      jobs_.erase(finished_.front());
      finished_.pop_front();
    }
    changed_.notify_all();
  }
}

RebuildStats RebuildScheduler::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildStats out;
  out.finished = finished_counts_;
  out.bytes_moved = finished_bytes_;
  out.last_progress = last_progress_;
  for (const auto& [id, job] : jobs_) {
    if (job.state == RebuildState::kQueued) ++out.queued;
    if (job.state != RebuildState::kRunning) continue;
    ++out.running;
    out.bytes_moved += job.bytes_moved;
    const double done = static_cast<double>(job.objects_done) + current_fraction_;
    if (job.objects_total > 0 && done > 0) {
      const double left = static_cast<double>(job.objects_total) - done;
      out.eta = (absl::Now() - job.started) * (std::max(left, 0.0) / done);
    }
  }
  return out;
}

void RebuildScheduler::Run(RebuildJob& job) {
  const RebuildSpec& spec = job.spec;
  auto fail = [&](const std::string& why) {
    job.state = RebuildState::kFailed;
    job.error = why;
    Log(LogLevel::kError, "rebuild job %d (%s) failed: %s", job.id, RebuildKindName(spec.kind),
        why);
  };
  RecoverOptions options;
  std::vector<std::string> objects;
  if (spec.kind == RebuildKind::kRepairObject) {
    objects.push_back(spec.object);
  } else {
    // Moving blocks off a device (or a range of it) reads only the stripes that have a block
    // there, and of those only what the move takes. The scrubber checks the rest.
    options.check_all = false;
    if (spec.kind == RebuildKind::kEvacuateDevice) {
      absl::StatusOr<std::vector<DeviceStatus>> devices = store_->ListDevices();
      if (!devices.ok()) return fail(std::string(devices.status().message()));
      if (spec.device >= devices->size()) {
        return fail(absl::StrCat("device ", spec.device, " does not exist"));
      }
      if ((*devices)[spec.device].record.state == DeviceState::kOnline) {
        absl::StatusOr<DeviceStatus> s = store_->SetDeviceState(spec.device, DeviceState::kFailing);
        if (!s.ok()) return fail(std::string(s.status().message()));
      }
      const uint32_t device = spec.device;
      options.evict = [device](const BlockRecord& b) { return b.device == device; };
    } else {
      const uint32_t device = spec.device;
      const uint64_t first = spec.first_lba;
      const uint64_t end = spec.first_lba + spec.lba_count;
      options.evict = [device, first, end](const BlockRecord& b) {
        return b.device == device && b.lba < end && b.lba + b.lba_count > first;
      };
    }
    absl::StatusOr<std::vector<std::string>> found = store_->ObjectsOnDevice(
        spec.device, spec.kind == RebuildKind::kMediaRange ? spec.first_lba : 0,
        spec.kind == RebuildKind::kMediaRange ? spec.lba_count : 0);
    if (!found.ok()) return fail(std::string(found.status().message()));
    objects = *std::move(found);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[job.id].objects_total = job.objects_total = objects.size();
  }
  const Pacer pacer(options_.rate_bytes_per_sec);
  std::vector<std::string> errors;
  for (const std::string& name : objects) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return fail("ecd stopped before the job finished; it is not resumed");
    }
    const RebuildJob before = job;
    absl::StatusOr<RecoverProgress> p = store_->Recover(
        name,
        [&](const RecoverProgress& now) {
          uint64_t moved;
          {
            std::lock_guard<std::mutex> lock(mu_);
            RebuildJob& live = jobs_[job.id];
            // Progress: bytes moved, or blocks checked (a scan that finds nothing to move).
            if (before.bytes_moved + now.bytes_rebuilt != live.bytes_moved ||
                before.blocks_checked + now.blocks_checked != live.blocks_checked) {
              last_progress_ = absl::Now();
            }
            live.blocks_checked = before.blocks_checked + now.blocks_checked;
            live.blocks_moved = before.blocks_moved + now.blocks_rebuilt;
            live.bytes_moved = before.bytes_moved + now.bytes_rebuilt;
            if (now.stripes_total > 0) {
              current_fraction_ =
                  static_cast<double>(now.stripes_done) / static_cast<double>(now.stripes_total);
            }
            moved = live.bytes_moved;
          }
          absl::SleepFor(pacer.Delay(moved));  // outside the lock
        },
        options);
    std::lock_guard<std::mutex> lock(mu_);
    RebuildJob& live = jobs_[job.id];
    if (!p.ok()) {
      if (absl::IsNotFound(p.status())) {
        // Deleted meanwhile: nothing left to move.
      } else {
        errors.push_back(absl::StrCat(name, ": ", p.status().message()));
      }
    } else {
      live.blocks_checked = before.blocks_checked + p->blocks_checked;
      live.blocks_moved = before.blocks_moved + p->blocks_rebuilt;
      live.bytes_moved = before.bytes_moved + p->bytes_rebuilt;
    }
    live.objects_done = ++job.objects_done;
    last_progress_ = absl::Now();
    current_fraction_ = 0;
    job.blocks_checked = live.blocks_checked;
    job.blocks_moved = live.blocks_moved;
    job.bytes_moved = live.bytes_moved;
  }
  if (!errors.empty()) return fail(absl::StrJoin(errors, "; "));
  if (spec.kind == RebuildKind::kEvacuateDevice) {
    absl::StatusOr<std::vector<std::string>> left = store_->ObjectsOnDevice(spec.device, 0, 0);
    if (!left.ok()) return fail(std::string(left.status().message()));
    if (!left->empty()) {
      return fail(absl::StrCat(left->size(), " objects still have blocks on device ", spec.device,
                               " (first: ", left->front(),
                               "); free space or add devices, then run the job again"));
    }
    absl::StatusOr<DeviceStatus> s = store_->SetDeviceState(spec.device, DeviceState::kFailed);
    if (!s.ok()) return fail(std::string(s.status().message()));
  }
  job.state = RebuildState::kDone;
  Log(LogLevel::kInfo, "rebuild job %d (%s) done: %d objects, %d blocks moved", job.id,
      RebuildKindName(spec.kind), job.objects_done, job.blocks_moved);
}

}  // namespace ecd::store
