// DaemonMetrics::AttachRepair and AttachCxl: the repair's, rebuilds', scrubs' and CXL event
// families, from one reading of their sources per scrape.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/metrics.h"

namespace ecd::daemon {
namespace {

using metrics_internal::UnixSecondsOrZero;
using prometheus::MetricType;

// What a scrape reads from the repair planner and the scrubber, each once.
struct RepairData {
  repair::RepairStatus repair;
  repair::RebuildStats rebuild;
  repair::ScrubberStatus scrub;
};

using Family = ScrapedFamily<RepairData>;
using Families = std::vector<Family>;

template <typename F>
Family Value(std::string name, std::string help, MetricType type, F value) {
  return metrics_internal::OneValue<RepairData>(std::move(name), std::move(help), type, value);
}

// A gauge without labels that is absent while `eta` has no value (idle or not known yet).
Family Eta(std::string name, std::string help,
           std::optional<absl::Duration> (*eta)(const RepairData&)) {
  return {{std::move(name), std::move(help), MetricType::Gauge, {}}, [eta](const RepairData& d) {
            const std::optional<absl::Duration> e = eta(d);
            if (!e) return Samples{};
            return Samples{{{}, absl::ToDoubleSeconds(*e)}};
          }};
}

Families RepairFamilies() {
  using D = RepairData;
  return {
      {{"ecd_stripes",
        "Stripes of all objects by redundancy left: the blocks each can still lose before its "
        "data is lost (healthy blocks minus M), 0 up to the largest K stored. Stripes already "
        "lost are in ecd_lost_stripes.",
        MetricType::Gauge,
        {"redundancy_left"}},
       [](const D& d) {
         Samples out;
         const std::vector<uint64_t>& by = d.repair.stripes_by_redundancy;
         for (size_t left = 0; left < by.size(); ++left) {
           out.push_back({{absl::StrCat(left)}, static_cast<double>(by[left])});
         }
         return out;
       }},
      Value("ecd_repair_queue_stripes", "Stripes with a block the repair has to rebuild or move.",
            MetricType::Gauge, [](const D& d) { return d.repair.stripes_queued; }),
      Value("ecd_repair_waiting_stripes",
            "Stripes whose only missing blocks are on down devices still within the repair "
            "delay (--repair-delay).",
            MetricType::Gauge, [](const D& d) { return d.repair.stripes_waiting; }),
      Value("ecd_repair_stripes_total", "Stripes the repair brought back to full redundancy.",
            MetricType::Counter, [](const D& d) { return d.repair.stripes_repaired; }),
      Value("ecd_repair_blocks_total", "Blocks the repair rebuilt or moved.", MetricType::Counter,
            [](const D& d) { return d.repair.blocks_repaired; }),
      Value("ecd_repair_bytes_total", "Bytes the repair rebuilt or moved.", MetricType::Counter,
            [](const D& d) { return d.repair.bytes_repaired; }),
      Value("ecd_repair_lost_stripes",
            "Stripes the repair found with fewer than M good blocks: it cannot rebuild them.",
            MetricType::Gauge, [](const D& d) { return d.repair.stripes_lost; }),
      Eta("ecd_repair_eta_seconds",
          "Estimated seconds until every stripe is back to full redundancy, at the recent repair "
          "rate (absent when idle or not known yet).",
          [](const D& d) { return d.repair.eta; }),
      Value("ecd_repair_paused", "1 while the repair is paused (ecctl repair pause), else 0.",
            MetricType::Gauge, [](const D& d) { return d.repair.paused ? 1 : 0; }),
      Value("ecd_repair_stalled",
            "1 while the repair cannot go on (ecctl repair status says why), else 0.",
            MetricType::Gauge, [](const D& d) { return d.repair.stalled.empty() ? 0 : 1; }),
      Value("ecd_repair_rate_limit_bytes_per_second",
            "The repair's bandwidth limit (ecctl repair rate, --rebuild-rate); 0: none.",
            MetricType::Gauge, [](const D& d) { return d.repair.rate_bytes_per_sec; }),
  };
}

Families RebuildFamilies() {
  using D = RepairData;
  return {
      {{"ecd_rebuild_jobs", "Rebuild jobs waiting or running.", MetricType::Gauge, {"state"}},
       [](const D& d) {
         return Samples{{{"queued"}, static_cast<double>(d.rebuild.queued)},
                        {{"running"}, static_cast<double>(d.rebuild.running)}};
       }},
      {{"ecd_rebuild_jobs_finished_total",
        "Rebuild jobs finished since ecd started, by kind and result (done, failed).",
        MetricType::Counter,
        {"kind", "result"}},
       [](const D& d) {
         Samples out;
         for (repair::RebuildKind k :
              {repair::RebuildKind::kEvacuateDevice, repair::RebuildKind::kMediaRange,
               repair::RebuildKind::kRepairObject}) {
           for (repair::RebuildState st :
                {repair::RebuildState::kDone, repair::RebuildState::kFailed}) {
             auto it = d.rebuild.finished.find({k, st});
             out.push_back(
                 {{repair::RebuildKindName(k), repair::RebuildStateName(st)},
                  it == d.rebuild.finished.end() ? 0.0 : static_cast<double>(it->second)});
           }
         }
         return out;
       }},
      Value("ecd_rebuild_bytes_total",
            "Bytes rebuilt or relocated by rebuild jobs and automatic repairs.",
            MetricType::Counter, [](const D& d) { return d.rebuild.bytes_moved; }),
      Eta("ecd_rebuild_eta_seconds",
          "Estimated seconds until no rebuild job and no repair is left, at the recent rate "
          "(absent when idle or not known yet).",
          [](const D& d) { return d.rebuild.eta; }),
      Value("ecd_rebuild_last_progress_timestamp_seconds",
            "Unix time the repair or a rebuild job last moved bytes or finished a batch (0: "
            "never).",
            MetricType::Gauge,
            [](const D& d) { return UnixSecondsOrZero(d.rebuild.last_progress); }),
  };
}

Families ScrubFamilies() {
  using D = RepairData;
  return {
      Value("ecd_scrub_running", "1 while a background scrub pass runs.", MetricType::Gauge,
            [](const D& d) { return d.scrub.running ? 1 : 0; }),
      Value("ecd_scrub_pass_objects_done", "Objects done of the running background scrub pass.",
            MetricType::Gauge, [](const D& d) { return d.scrub.current.objects_done; }),
      Value("ecd_scrub_pass_objects", "Objects of the running background scrub pass.",
            MetricType::Gauge, [](const D& d) { return d.scrub.current.objects_total; }),
      Value("ecd_scrub_last_finished_timestamp_seconds",
            "Unix time the last background scrub pass finished (0: never).", MetricType::Gauge,
            [](const D& d) { return UnixSecondsOrZero(d.scrub.last_finished); }),
      Value("ecd_scrub_bytes_checked_total",
            "Bytes read back good by scrubs (background and on request).", MetricType::Counter,
            [](const D& d) { return d.scrub.found_total.bytes_checked; }),
      {{"ecd_scrub_findings_total",
        "Damage found by scrubs, by kind: corrupt (failed CRC32C), unreadable, parity_mismatch, "
        "lost_stripe.",
        MetricType::Counter,
        {"kind"}},
       [](const D& d) {
         const store::RecoverProgress& f = d.scrub.found_total;
         return Samples{{{"corrupt"}, static_cast<double>(f.blocks_corrupt)},
                        {{"unreadable"}, static_cast<double>(f.blocks_unreadable)},
                        {{"parity_mismatch"}, static_cast<double>(f.parity_mismatches)},
                        {{"lost_stripe"}, static_cast<double>(f.lost_stripes)}};
       }},
      Value("ecd_scrub_repaired_blocks_total", "Blocks scrubs rewrote (rebuilt or recomputed).",
            MetricType::Counter, [](const D& d) { return d.scrub.found_total.blocks_rebuilt; }),
      Value("ecd_scrub_objects_failed_total",
            "Objects whose scrub ended in an error (data loss, no space).", MetricType::Counter,
            [](const D& d) { return d.scrub.objects_failed_total; }),
  };
}

// What a scrape reads from the CXL monitor and the event policy, each once.
struct CxlData {
  repair::CxlMonitorStats stats;
  std::map<std::string, uint64_t> actions;
};

// One counter per CXL device, labelled device="<index>".
ScrapedFamily<CxlData> PerCxlDevice(std::string name, std::string help,
                                    std::vector<uint64_t> repair::CxlMonitorStats::*field) {
  return {{std::move(name), std::move(help), MetricType::Counter, {"device"}},
          [field](const CxlData& d) {
            Samples out;
            const std::vector<uint64_t>& v = d.stats.*field;
            for (size_t dev = 0; dev < v.size(); ++dev) {
              out.push_back({{absl::StrCat(dev)}, static_cast<double>(v[dev])});
            }
            return out;
          }};
}

std::vector<ScrapedFamily<CxlData>> CxlFamilies() {
  using S = repair::CxlMonitorStats;
  return {
      {{"ecd_cxl_records_total",
        "CXL event records decoded, by device, log, record type and severity.",
        MetricType::Counter,
        {"device", "log", "type", "severity"}},
       [](const CxlData& d) {
         Samples out;
         for (const auto& [key, n] : d.stats.records_by) {
           out.push_back({{absl::StrCat(std::get<0>(key)), std::get<1>(key), std::get<2>(key),
                           std::get<3>(key)},
                          static_cast<double>(n)});
         }
         return out;
       }},
      PerCxlDevice("ecd_cxl_overflows_total",
                   "CXL event log overflows (records the device dropped), by device.",
                   &S::overflows_by_device),
      PerCxlDevice("ecd_cxl_overflowed_records_total",
                   "CXL event records lost to log overflows (the overflow reports' counts), by "
                   "device.",
                   &S::overflowed_records_by_device),
      PerCxlDevice("ecd_cxl_decode_errors_total",
                   "CXL event records that could not be decoded, by device.",
                   &S::decode_errors_by_device),
      {{"ecd_cxl_policy_actions_total",
        "Actions the CXL event policy took, by action.",
        MetricType::Counter,
        {"action"}},
       [](const CxlData& d) {
         Samples out;
         for (const auto& a : repair::kPolicyActions.entries()) {
           const std::string name(a.name);
           auto it = d.actions.find(name);
           out.push_back({{name}, it == d.actions.end() ? 0.0 : static_cast<double>(it->second)});
         }
         return out;
       }},
  };
}

}  // namespace

void DaemonMetrics::AttachRepair(repair::RepairPlanner* planner, repair::Scrubber* scrubber) {
  Families families;
  for (Families part : {RepairFamilies(), RebuildFamilies(), ScrubFamilies()}) {
    for (Family& f : part) families.push_back(std::move(f));
  }
  registry_.AddScraped<RepairData>(
      [planner, scrubber] {
        return RepairData{planner->Status(), planner->Stats(), scrubber->Status()};
      },
      std::move(families));
}

void DaemonMetrics::AttachCxl(repair::CxlMonitor* monitor, repair::EventPolicy* policy) {
  registry_.AddScraped<CxlData>(
      [monitor, policy] {
        return CxlData{monitor->stats(), policy->counters()};
      },
      CxlFamilies());
}

}  // namespace ecd::daemon
