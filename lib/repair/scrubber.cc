// Scrubber: scrub passes on request and in the background, paced and accounted.
#include "lib/repair/scrubber.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lib/repair/pacer.h"
#include "lib/store/store_admin.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::repair {

using store::ListQuery;
using store::ObjectListing;
using store::ObjectStatus;
using store::RecoverOptions;
using store::RecoverProgress;
using store::Store;
namespace {

// Catalog meta key: when the last background pass finished, in Unix milliseconds.
constexpr char kLastFinishedKey[] = "scrub/last_finished_unix_ms";
// Names a scrub of every object takes from the listing at a time.
constexpr size_t kScrubPage = 1000;

// Every count of a RecoverProgress.
constexpr uint64_t RecoverProgress::*kCounts[] = {
    &RecoverProgress::stripes_total,     &RecoverProgress::stripes_done,
    &RecoverProgress::blocks_checked,    &RecoverProgress::bytes_checked,
    &RecoverProgress::blocks_unreadable, &RecoverProgress::blocks_corrupt,
    &RecoverProgress::parity_mismatches, &RecoverProgress::lost_stripes,
    &RecoverProgress::blocks_rebuilt,    &RecoverProgress::bytes_rebuilt,
    &RecoverProgress::blocks_relocated};

void Add(RecoverProgress& into, const RecoverProgress& p) {
  for (auto count : kCounts) into.*count += p.*count;
}

// into += now - before, count by count (now >= before).
void AddSince(RecoverProgress& into, const RecoverProgress& now, const RecoverProgress& before) {
  for (auto count : kCounts) into.*count += now.*count - before.*count;
}

}  // namespace

Scrubber::Scrubber(Store* store, const ScrubberOptions& options)
    : store_(store), options_(options) {
  status_.background = options_.interval > absl::ZeroDuration();
  if (status_.background) worker_ = std::thread([this] { Loop(); });
}

Scrubber::~Scrubber() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.NotifyAll();
  if (worker_.joinable()) worker_.join();
}

bool Scrubber::Wait(absl::Duration d) {
  MutexLock lock(mu_);
  if (d > absl::ZeroDuration()) {
    wake_.WaitFor(mu_, absl::ToChronoMilliseconds(d),
                  [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; });
  }
  return !stop_;
}

void Scrubber::Account(const ScrubReport& report, ScrubReport& accounted) {
  MutexLock lock(mu_);
  AddSince(status_.found_total, report.found, accounted.found);
  status_.objects_failed_total += report.objects_failed - accounted.objects_failed;
  status_.objects_scrubbed_total += report.objects_done - accounted.objects_done;
  accounted.found = report.found;
  accounted.objects_failed = report.objects_failed;
  accounted.objects_done = report.objects_done;
}

absl::StatusOr<ScrubReport> Scrubber::ScrubNow(
    const std::vector<std::string>& names, const ScrubOptions& options,
    const std::function<void(const ScrubReport&)>& progress,
    const std::function<bool()>& cancelled) {
  const bool all = names.empty();
  // Every object is walked a page of names at a time, so memory stays one page whatever the
  // number of objects; objects encoded behind the walk wait for the next pass.
  ListQuery query;
  query.page_size = kScrubPage;
  std::vector<std::string> list = names;
  const auto next_page = [&]() -> absl::Status {
    list.clear();
    absl::StatusOr<ObjectListing> page = store_->List(query, /*with_health=*/false);
    if (!page.ok()) return page.status();
    for (const ObjectStatus& o : page->objects) list.push_back(o.object.name);
    query.page_token = std::move(page->next_page_token);
    return absl::OkStatus();
  };
  if (all) {
    if (absl::Status s = next_page(); !s.ok()) return s;
  }
  auto stopping = [&] {
    {
      MutexLock lock(mu_);
      if (stop_) return true;
    }
    return cancelled && cancelled();
  };
  ScrubReport report;
  ScrubReport accounted;  // What of `report` is in status_ already: totals move as work is done.
  report.objects_total = all ? store_->Totals().objects : list.size();
  const Pacer pacer(options.rate_bytes_per_sec);
  RecoverOptions recover;
  recover.verify_parity = true;
  recover.repair = options.repair;
  recover.cancelled = stopping;
  absl::Status stopped;
  for (size_t at = 0;; ++at) {
    if (at == list.size()) {
      if (!all || query.page_token.empty()) break;
      if (absl::Status s = next_page(); !s.ok()) return s;
      at = 0;
      if (list.empty()) break;
    }
    const std::string& name = list[at];
    if (stopping()) {
      stopped = absl::CancelledError(absl::StrCat("the scrub stopped after ", report.objects_done,
                                                  " of ", report.objects_total, " objects"));
      break;
    }
    report.current = name;
    const RecoverProgress before = report.found;
    absl::StatusOr<RecoverProgress> done = store_->Recover(
        name,
        [&](const RecoverProgress& now) {
          report.found = before;
          Add(report.found, now);
          Account(report, accounted);
          if (progress) progress(report);
          (void)Wait(pacer.Delay(report.found.bytes_checked));  // A stop is seen by Recover.
        },
        recover);
    if (done.ok()) {
      report.found = before;
      Add(report.found, *done);
    } else if (absl::IsNotFound(done.status()) && all) {
      // Deleted since the list was taken: nothing to check.
    } else if (absl::IsNotFound(done.status()) || absl::IsCancelled(done.status())) {
      stopped = done.status();
      break;
    } else {
      ++report.objects_failed;
      if (report.errors.size() < kMaxScrubErrors) {
        report.errors.push_back(absl::StrCat(name, ": ", done.status().message()));
      }
      Log(LogLevel::kError, "scrub of %s: %s", name, done.status().message());
    }
    ++report.objects_done;
    // Objects encoded ahead of the walk after it started are scrubbed too.
    report.objects_total = std::max(report.objects_total, report.objects_done);
    Account(report, accounted);
  }
  report.current.clear();
  Account(report, accounted);
  if (!stopped.ok()) return stopped;
  if (progress) progress(report);
  return report;
}

void Scrubber::StartPass() {
  {
    MutexLock lock(mu_);
    start_now_ = true;
  }
  wake_.NotifyAll();
}

ScrubberStatus Scrubber::Status() const {
  MutexLock lock(mu_);
  return status_;
}

void Scrubber::Loop() {
  absl::Time last = absl::InfinitePast();
  if (absl::StatusOr<std::optional<std::string>> v = store_->admin().GetMeta(kLastFinishedKey);
      v.ok() && v->has_value()) {
    int64_t ms = 0;
    if (absl::SimpleAtoi(**v, &ms)) last = absl::FromUnixMillis(ms);
  }
  UniqueMutexLock lock(mu_);
  status_.last_finished = last;
  while (true) {
    // Never scrubbed (a new store, or every pass so far was cut short): start now.
    const absl::Time next = last == absl::InfinitePast() ? absl::Now() : last + options_.interval;
    status_.next_start = next;
    while (!stop_ && !start_now_ && absl::Now() < next) {
      wake_.WaitFor(mu_,
                    absl::ToChronoMilliseconds(std::min(next - absl::Now(), absl::Seconds(60))));
    }
    if (stop_) return;
    start_now_ = false;
    status_.running = true;
    status_.current = ScrubReport();
    lock.Unlock();
    const absl::Time started = absl::Now();
    absl::StatusOr<ScrubReport> report = ScrubNow(
        {},
        ScrubOptions{.repair = options_.repair, .rate_bytes_per_sec = options_.rate_bytes_per_sec},
        [this](const ScrubReport& now) {
          MutexLock inner(mu_);
          status_.current = now;
        },
        nullptr);
    const absl::Time finished = absl::Now();
    if (report.ok()) {
      (void)store_->admin().SetMeta(kLastFinishedKey, absl::StrCat(absl::ToUnixMillis(finished)));
      const RecoverProgress& f = report->found;
      Log(LogLevel::kInfo,
          "scrub pass done in %s: %d objects, %d bytes checked, %d corrupt, %d unreadable, %d "
          "parity mismatches, %d blocks repaired, %d stripes lost, %d objects failed",
          absl::FormatDuration(absl::Trunc(finished - started, absl::Milliseconds(1))),
          report->objects_done, f.bytes_checked, f.blocks_corrupt, f.blocks_unreadable,
          f.parity_mismatches, f.blocks_rebuilt, f.lost_stripes, report->objects_failed);
    } else if (!absl::IsCancelled(report.status())) {
      Log(LogLevel::kError, "scrub pass failed: %s; the next one starts in %s",
          report.status().message(), absl::FormatDuration(options_.interval));
    }
    lock.Lock();
    status_.running = false;
    if (stop_) return;
    // A failed pass waits a whole interval too, so that a broken catalog is not hammered.
    last = finished;
    if (report.ok()) {
      status_.last = *std::move(report);
      status_.last_finished = finished;
      ++status_.passes;
    }
  }
}

}  // namespace ecd::repair
