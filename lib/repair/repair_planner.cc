// RepairPlanner: plans the repair from the catalog, most at-risk stripes first, and works the
// plan a batch of stripes at a time through Store::Recover. Its jobs: repair_jobs.cc.
#include "lib/repair/repair_planner.h"

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/devices/fs_space.h"
#include "lib/repair/repair_plan.h"
#include "lib/store/store_admin.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

using store::BlockRecord;
using store::DeviceRange;
using store::DeviceRecord;
using store::DeviceState;
using store::RecoverOptions;
using store::RecoverProgress;
using store::StripeCursor;
using store::StripePage;
using store::StripeRows;

namespace {

constexpr char kPausedKey[] = "repair/paused";
constexpr char kRateKey[] = "repair/rate_bytes_per_sec";
// Stripes fetched from the catalog per page while planning.
constexpr size_t kPlanPage = 4096;

bool InRange(const BlockRecord& b, const DeviceRange& r) {
  return b.device == r.device && (r.lba_count == 0 || (b.lba < r.first_lba + r.lba_count &&
                                                       b.lba + b.lba_count > r.first_lba));
}

}  // namespace

RepairPlanner::RepairPlanner(store::Store* store, const RepairPlannerOptions& options)
    : store_(store), options_(options), rate_(options.rate_bytes_per_sec) {
  absl::StatusOr<std::optional<std::string>> paused = store_->admin().GetMeta(kPausedKey);
  if (paused.ok() && paused->has_value()) paused_ = **paused == "1";
  absl::StatusOr<std::optional<std::string>> rate = store_->admin().GetMeta(kRateKey);
  uint64_t value = 0;
  if (rate.ok() && rate->has_value() && absl::SimpleAtoi(**rate, &value)) rate_ = value;
  status_.delay = options_.repair_delay;
  ResumeMediaRanges();
  if (paused_) Log(LogLevel::kWarning, "repair is paused (`ecctl repair resume` resumes it)");
  store_->admin().SetRepairListener([this] { Changed(); });
  worker_ = std::thread([this] { Loop(); });
}

RepairPlanner::~RepairPlanner() {
  store_->admin().SetRepairListener(nullptr);
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  changed_.NotifyAll();
  worker_.join();
}

void RepairPlanner::Changed() {
  {
    MutexLock lock(mu_);
    dirty_ = true;
    ClearSkippedLocked();  // a change (a device back, replaced or added) may give room
  }
  changed_.NotifyAll();
}

absl::Status RepairPlanner::SetPaused(bool paused) {
  if (absl::Status s = store_->admin().SetMeta(kPausedKey, paused ? "1" : "0"); !s.ok()) return s;
  {
    MutexLock lock(mu_);
    paused_ = paused;
  }
  Log(LogLevel::kInfo, "repair %s", paused ? "paused" : "resumed");
  changed_.NotifyAll();
  return absl::OkStatus();
}

absl::Status RepairPlanner::SetRate(uint64_t bytes_per_sec) {
  if (absl::Status s = store_->admin().SetMeta(kRateKey, absl::StrCat(bytes_per_sec)); !s.ok())
    return s;
  {
    MutexLock lock(mu_);
    rate_ = bytes_per_sec;
    paced_bytes_ = 0;
    pace_start_ = absl::Now();
  }
  changed_.NotifyAll();
  return absl::OkStatus();
}

RepairStatus RepairPlanner::Status() const {
  // Objects stored and deleted since the last plan count at once: the store keeps the totals.
  const std::map<uint32_t, uint64_t> totals = store_->Stats().stripes_by_parity;
  MutexLock lock(mu_);
  census_totals_ = totals;
  RecountLocked();
  RepairStatus out = status_;
  out.paused = paused_;
  out.rate_bytes_per_sec = rate_;
  out.stripes_queued = queue_.size() + in_batch_;
  out.eta = EtaLocked();
  const absl::Duration active = absl::Now() - activity_start_;
  if (activity_bytes_ > 0 && active > absl::ZeroDuration()) {
    out.bytes_per_sec = static_cast<double>(activity_bytes_) / absl::ToDoubleSeconds(active);
  }
  return out;
}

std::optional<absl::Duration> RepairPlanner::EtaLocked() const {
  const uint64_t left = queue_.size() + in_batch_;
  if (left == 0 || activity_stripes_ == 0) return std::nullopt;
  const absl::Duration per_stripe = (absl::Now() - activity_start_) / activity_stripes_;
  return per_stripe * static_cast<double>(left);
}

bool RepairPlanner::WaitIdle(absl::Duration timeout) {
  MutexLock lock(mu_);
  return changed_.WaitFor(
      mu_, absl::ToChronoMilliseconds(timeout), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (dirty_ || planning_ || !queue_.empty() || in_batch_ > 0) return false;
        for (const auto& [id, job] : jobs_) {
          if (job.state == RebuildState::kQueued || job.state == RebuildState::kRunning)
            return false;
        }
        return true;
      });
}

void RepairPlanner::Loop() {
  UniqueMutexLock lock(mu_);
  while (!stop_) {
    const absl::Time now = absl::Now();
    if (!skipped_.empty() && now >= retry_at_) {
      ClearSkippedLocked();
      dirty_ = true;
    }
    const bool plan = dirty_ && now >= plan_retry_at_;
    const bool runnable = !paused_ && (!queue_.empty() || NextObjectJobLocked() != 0);
    const absl::Time wake = NextDeadlineLocked(now);
    if (!plan && !runnable && now < wake) {
      changed_.WaitFor(mu_, absl::ToChronoMilliseconds(std::min(wake - now, absl::Seconds(60))));
      continue;
    }
    const bool paused = paused_;
    lock.Unlock();
    // Paused is Ceph's noout: down devices stay down however long the pause lasts.
    const size_t failed = paused ? 0 : FailDownDevices();
    if (failed + store_->admin().DownDevicesWithFailingWrites().size() > 0) {
      lock.Lock();
      dirty_ = true;
      lock.Unlock();
    }
    lock.Lock();
    if (dirty_ && absl::Now() >= plan_retry_at_) {
      dirty_ = false;
      planning_ = true;
      lock.Unlock();
      Plan();
      lock.Lock();
      planning_ = false;
      changed_.NotifyAll();
      continue;
    }
    if (paused_) continue;
    if (!queue_.empty()) {
      lock.Unlock();
      RunBatch();
      YieldToClients();
      lock.Lock();
    } else if (const uint64_t id = NextObjectJobLocked(); id != 0) {
      lock.Unlock();
      RunObjectJob(id);
      lock.Lock();
    }
    changed_.NotifyAll();
  }
}

void RepairPlanner::ClearSkippedLocked() {
  skipped_.clear();
  status_.stalled.clear();
}

absl::Time RepairPlanner::NextDeadlineLocked(absl::Time now) const {
  absl::Time wake = absl::InfiniteFuture();
  if (dirty_) wake = std::min(wake, plan_retry_at_);
  if (!skipped_.empty()) wake = std::min(wake, retry_at_);
  if (!paused_) {
    for (const DeviceRecord& d : down_) {
      wake = std::min(wake, absl::FromUnixMillis(d.down_since_unix_ms) + options_.repair_delay);
    }
  }
  return wake;
}

size_t RepairPlanner::FailDownDevices() {
  size_t failed = 0;
  const absl::Time now = absl::Now();
  for (const DeviceRecord& d : store_->admin().DeviceRecords()) {
    if (d.state != DeviceState::kDown) continue;
    const absl::Time since = absl::FromUnixMillis(d.down_since_unix_ms);
    if (now - since < options_.repair_delay) continue;
    Log(LogLevel::kError,
        "device %d has been down since %s (%s): failing it; its blocks are "
        "rebuilt on the other devices",
        d.id, absl::FormatTime(since), d.down_reason);
    // Only if it is still down: an operator may have brought it back meanwhile.
    absl::StatusOr<store::DeviceStatus> s =
        store_->admin().SetDeviceState(d.id, DeviceState::kFailed, DeviceState::kDown);
    if (s.ok()) ++failed;
  }
  return failed;
}

void RepairPlanner::Plan() {
  std::vector<DeviceRange> media;
  std::map<std::pair<int64_t, uint64_t>, bool> skipped;
  uint64_t first_unseen_job;  // jobs from here on were queued after the devices were read
  {
    MutexLock lock(mu_);
    first_unseen_job = next_id_;
    media = ranges_;
    skipped = skipped_;
  }
  const std::vector<DeviceRecord> devices = store_->admin().DeviceRecords();
  Findings f;
  f.blocks_on.assign(devices.size(), 0);
  f.lost_on.assign(devices.size(), 0);
  f.stripes_in_range.assign(media.size(), 0);
  absl::Status read = ReadRisks(devices, media, skipped, f);
  if (!read.ok()) {
    Log(LogLevel::kError, "repair: cannot plan: %s; trying again in 5 s", read.message());
    MutexLock lock(mu_);
    dirty_ = true;
    plan_retry_at_ = absl::Now() + absl::Seconds(5);
    return;
  }
  std::sort(f.queue.begin(), f.queue.end(), [](const Work& a, const Work& b) {
    return std::tie(a.redundancy, a.move_only, a.object_id, a.stripe) <
           std::tie(b.redundancy, b.move_only, b.object_id, b.stripe);
  });
  // Evacuations that have nothing left to move end with the device failed.
  for (const DeviceRecord& d : devices) {
    if (d.state != DeviceState::kFailing || f.blocks_on[d.id] > 0 || f.lost_on[d.id] > 0) continue;
    Log(LogLevel::kInfo, "device %d holds no more blocks: evacuated, now failed", d.id);
    (void)store_->admin().SetDeviceState(d.id, DeviceState::kFailed, DeviceState::kFailing);
  }
  std::vector<DeviceRecord> down;
  for (const DeviceRecord& d : devices) {
    if (d.state == DeviceState::kDown) down.push_back(d);
  }
  const std::map<uint32_t, uint64_t> totals = store_->Stats().stripes_by_parity;
  std::vector<std::string> finished_media;
  {
    MutexLock lock(mu_);
    queue_ = std::move(f.queue);
    down_ = std::move(down);
    status_.stripes_waiting = f.waiting;
    status_.stripes_lost = f.lost;
    census_totals_ = totals;
    census_degraded_ = std::move(f.degraded);
    census_lost_ = std::move(f.lost_by_parity);
    RecountLocked();
    UpdateJobsLocked(devices, media, f, first_unseen_job, finished_media);
    if (!queue_.empty() && activity_stripes_ == 0) activity_start_ = absl::Now();
    if (queue_.empty()) {
      activity_stripes_ = 0;
      activity_bytes_ = 0;
    }
  }
  for (const std::string& key : finished_media) (void)store_->admin().DeleteMeta(key);
}

absl::Status RepairPlanner::ReadRisks(const std::vector<DeviceRecord>& devices,
                                      const std::vector<DeviceRange>& media,
                                      const std::map<std::pair<int64_t, uint64_t>, bool>& skipped,
                                      Findings& f) {
  std::set<std::pair<int64_t, uint64_t>> seen;
  auto take = [&](const StripePage& page) {
    for (const StripeRows& r : page.stripes) {
      if (seen.insert({r.object.id, r.stripe}).second) Assess(r, devices, media, skipped, f);
    }
  };
  for (store::StripeCursor at;;) {
    absl::StatusOr<StripePage> page = store_->admin().StripesWithCorruptBlocks(at, kPlanPage);
    if (!page.ok()) return page.status();
    take(*page);
    if (!page->more) break;
    at = page->next;
  }
  std::vector<DeviceRange> ranges = media;
  for (const DeviceRecord& d : devices) {
    if (d.state != DeviceState::kOnline) ranges.push_back({d.id, 0, 0});
  }
  for (const DeviceRange& range : ranges) {
    for (store::StripeCursor at;;) {
      absl::StatusOr<StripePage> page = store_->admin().StripesOnDevice(range, at, kPlanPage);
      if (!page.ok()) return page.status();
      take(*page);
      if (!page->more) break;
      at = page->next;
    }
  }
  return absl::OkStatus();
}

void RepairPlanner::Assess(const StripeRows& r, const std::vector<DeviceRecord>& devices,
                           const std::vector<DeviceRange>& media,
                           const std::map<std::pair<int64_t, uint64_t>, bool>& skipped,
                           Findings& f) {
  const uint32_t m = r.object.data_blocks;
  const uint32_t k = r.object.parity_blocks;
  uint32_t healthy = 0;
  bool repair = r.blocks.size() < m + k;  // a row missing: rebuild it
  std::vector<uint32_t> failing;          // devices it has a block to move off
  std::vector<size_t> in_ranges;
  for (const BlockRecord& b : r.blocks) {
    const DeviceState st =
        b.device < devices.size() ? devices[b.device].state : DeviceState::kFailed;
    if ((st == DeviceState::kOnline || st == DeviceState::kFailing) && !b.corrupt) ++healthy;
    if (b.corrupt || st == DeviceState::kFailed) repair = true;
    if (st == DeviceState::kFailing) failing.push_back(b.device);
    for (size_t i = 0; i < media.size(); ++i) {
      if (InRange(b, media[i])) in_ranges.push_back(i);
    }
  }
  const auto skip = skipped.find({r.object.id, r.stripe});
  if (healthy < m || (skip != skipped.end() && skip->second)) {  // lost: nothing to rebuild from
    ++f.lost;
    ++f.lost_by_parity[k];
    for (uint32_t d : failing) ++f.lost_on[d];
    return;
  }
  const uint32_t redundancy = healthy - m;
  if (redundancy < k) ++f.degraded[k][redundancy];
  const bool move = !failing.empty() || !in_ranges.empty();
  for (uint32_t d : failing) ++f.blocks_on[d];
  for (size_t i : in_ranges) ++f.stripes_in_range[i];
  if (!repair && !move) {
    if (redundancy < k) ++f.waiting;  // only down devices: within their delay
    return;
  }
  if (skip != skipped.end()) return;  // set aside until a device change or the retry
  const int64_t move_device =
      !failing.empty()
          ? failing.front()
          : (!in_ranges.empty() ? static_cast<int64_t>(media[in_ranges.front()].device) : -1);
  const uint64_t moves = m + k - healthy + (move ? 1 : 0);
  f.queue.push_back({r.object.id, r.object.name, r.stripe, redundancy, !repair, k, move_device,
                     moves * r.object.block_size});
}

void RepairPlanner::RecountLocked() const {
  uint32_t max_k = 0;
  for (const auto& [k, n] : census_totals_) max_k = std::max(max_k, k);
  std::vector<uint64_t> levels(census_totals_.empty() ? 0 : max_k + 1, 0);
  for (const auto& [k, n] : census_totals_) {
    uint64_t below = 0;
    auto it = census_degraded_.find(k);
    if (it != census_degraded_.end()) {
      for (const auto& [r, count] : it->second) {
        if (r < levels.size()) levels[r] += count;
        below += count;
      }
    }
    auto lost = census_lost_.find(k);
    if (lost != census_lost_.end()) below += lost->second;  // in no level: nothing left to lose
    levels[k] += n > below ? n - below : 0;
  }
  status_.stripes_by_redundancy = std::move(levels);
}

void RepairPlanner::RunBatch() {
  std::vector<Work> batch;
  std::vector<DeviceRange> media;
  {
    MutexLock lock(mu_);
    const Work& head = queue_.front();
    // Under a rate limit a batch is at most about a quarter second of work, so that the
    // limiter spreads the work rather than letting whole batches through.
    const uint64_t most_bytes = rate_ == 0 ? UINT64_MAX : std::max<uint64_t>(rate_ / 4, 1);
    size_t n = 0;
    uint64_t bytes = 0;
    while (n < queue_.size() && n < options_.batch_stripes &&
           queue_[n].object_id == head.object_id && queue_[n].redundancy == head.redundancy &&
           queue_[n].move_only == head.move_only &&
           (n == 0 || bytes + queue_[n].bytes <= most_bytes)) {
      bytes += queue_[n].bytes;
      ++n;
    }
    batch.assign(queue_.begin(), queue_.begin() + static_cast<long>(n));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<long>(n));
    in_batch_ = n;
    media = ranges_;
  }
  std::vector<bool> failing;
  for (const DeviceRecord& d : store_->admin().DeviceRecords()) {
    failing.push_back(d.state == DeviceState::kFailing);
  }
  RecoverOptions options;
  options.check_all = false;
  options.rebuild_down = false;
  for (const Work& w : batch) options.stripes.push_back(w.stripe);
  std::sort(options.stripes.begin(), options.stripes.end());
  options.evict = [failing, media](const BlockRecord& b) {
    if (b.device < failing.size() && failing[b.device]) return true;
    for (const DeviceRange& r : media) {
      if (InRange(b, r)) return true;
    }
    return false;
  };
  Finished(batch, RecoverPaced(batch.front().object, options, nullptr));
}

absl::StatusOr<RecoverProgress> RepairPlanner::RecoverPaced(
    const std::string& name, RecoverOptions options,
    const std::function<void(const RecoverProgress&)>& progress) {
  options.cancelled = [this] {
    MutexLock lock(mu_);
    return stop_;
  };
  uint64_t reported = 0;
  return store_->Recover(
      name,
      [&](const RecoverProgress& now) {
        Pace(now.bytes_rebuilt - reported);
        reported = now.bytes_rebuilt;
        if (progress) progress(now);
      },
      options);
}

void RepairPlanner::Pace(uint64_t bytes) {
  absl::Duration delay;
  {
    MutexLock lock(mu_);
    paced_bytes_ += bytes;
    if (rate_ == 0) return;
    const absl::Time now = absl::Now();
    const absl::Duration due = absl::Seconds(static_cast<double>(paced_bytes_) / rate_);
    // Time spent idle earns at most a quarter second of credit.
    const absl::Duration credit = absl::Milliseconds(250);
    if (now - pace_start_ > due + credit) pace_start_ = now - due - credit;
    delay = std::min(due - (now - pace_start_), absl::Seconds(5));
  }
  if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
}

void RepairPlanner::Finished(const std::vector<Work>& batch,
                             const absl::StatusOr<RecoverProgress>& p) {
  MutexLock lock(mu_);
  in_batch_ = 0;
  const Work& head = batch.front();
  if (!p.ok()) {
    if (absl::IsNotFound(p.status()) || absl::IsCancelled(p.status())) return;
    SetAsideLocked(batch, p.status());
    return;
  }
  const uint64_t n = batch.size();
  ++batches_;
  RepairStatus::Level& level = status_.repaired_by_redundancy[head.redundancy];
  if (level.stripes == 0) level.first_batch = batches_;
  level.last_batch = batches_;
  level.stripes += n;
  status_.stripes_repaired += n;
  status_.blocks_repaired += p->blocks_rebuilt;
  status_.bytes_repaired += p->bytes_rebuilt;
  CreditJobsLocked(head.move_device, *p);
  status_.last_progress = absl::Now();
  activity_stripes_ += n;
  activity_bytes_ += p->bytes_rebuilt;
  // The census: these stripes are whole again (the next plan confirms it).
  auto it = census_degraded_.find(head.parity);
  if (it != census_degraded_.end() && !head.move_only) {
    uint64_t& at = it->second[head.redundancy];
    at = at > n ? at - n : 0;
    RecountLocked();
  }
  if (queue_.empty()) dirty_ = true;  // confirm from the catalog, finish jobs
}

void RepairPlanner::SetAsideLocked(const std::vector<Work>& batch, const absl::Status& status) {
  const Work& head = batch.front();
  const bool lost = absl::IsDataLoss(status);
  Log(LogLevel::kError, "repair of %d stripes of %s: %s; %s", batch.size(), head.object,
      status.message(),
      lost ? "those that could not be rebuilt are counted lost"
           : "set aside until a device changes or the next retry");
  if (store::IsFileSystemFull(status)) {
    status_.stalled = std::string(status.message());  // Names the file system and what to do.
  } else if (absl::IsResourceExhausted(status)) {
    status_.stalled = absl::StrCat(
        "no online device outside a stripe of \"", head.object,
        "\" has room for a rebuilt block: add devices, replace failed ones (`ecctl device "
        "replace N`) or delete objects. The repair goes on by itself after any device change "
        "and tries again every ",
        absl::FormatDuration(options_.stall_retry));
  } else if (!lost) {
    status_.stalled = std::string(status.message());
  }
  // The stripes of the batch that were repaired are committed; the others wait, so that the
  // rest of the queue goes on. A device change, or the retry, brings them back.
  if (skipped_.empty()) retry_at_ = absl::Now() + options_.stall_retry;
  for (const Work& w : batch) skipped_[{w.object_id, w.stripe}] = lost;
  dirty_ = true;
}

void RepairPlanner::YieldToClients() {
  const absl::Time until = absl::Now() + options_.yield_to_clients;
  while (store_->admin().RequestsWaitingForMemory() > 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(2));
  }
}

}  // namespace ecd::repair
