// MetricRegistry: ecd's thin registration layer over prometheus-cpp's core (prometheus::Registry,
// Counter, Gauge, Histogram, Collectable, TextSerializer), and the text exposition it serves.
//
//   MetricRegistry registry;
//   CheckedFamily<prometheus::Counter>& requests = registry.AddCounter(
//       "ecd_rpc_requests_total", "RPCs finished.", {"method", "code"});
//   prometheus::Counter& ok = requests.WithLabels({"Objects/Encode", "OK"});  // look up once
//   ok.Increment();
//   registry.AddScraped<Counts>([&] { return store.Counts(); },  // read once per scrape
//       {{{"ecd_objects", "Objects stored.", prometheus::MetricType::Gauge, {}},
//         [](const Counts& c) { return Samples{{{}, double(c.objects)}}; }}});
//   std::string page = registry.Expose();  // text format 0.0.4
//
// What it adds to prometheus-cpp 1.0.1:
//  - HELP text has its backslashes and line feeds escaped (TextSerializer prints HELP raw,
//    which promtool refuses).
//  - A family has one fixed list of label names: registering a name again with other label
//    names, another type or other buckets, or giving a series other label names, is a
//    programming error and aborts with a message (prometheus-cpp would accept series with any
//    label names in one family).
//  - Every registered family is exposed with its HELP and TYPE lines even while it has no
//    series (prometheus-cpp leaves an empty family out entirely).
//  - Scrape-time families (AddScraped) are one prometheus::Collectable per source: it reads the
//    source once per scrape and derives all of its families from that one reading.
//  - Families are exposed in registration order.
#ifndef ECD_DAEMON_METRIC_REGISTRY_H_
#define ECD_DAEMON_METRIC_REGISTRY_H_

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/labels.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {

// The Content-Type of a text exposition (format 0.0.4).
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// HELP text as the text format wants it: backslash and line feed escaped.
std::string EscapeHelp(absl::string_view text);

// Aborts the process with "metrics: <message>" on stderr: a misregistered metric is a bug.
[[noreturn]] void MetricsFail(const std::string& message);

// A prometheus-cpp family with its fixed label names (and, for histograms, its buckets).
// Thread safety: all methods may be called concurrently.
template <typename T>
class CheckedFamily {
 public:
  CheckedFamily(prometheus::Family<T>* family, std::vector<std::string> label_names,
                std::vector<double> bounds)
      : family_(family), label_names_(std::move(label_names)), bounds_(std::move(bounds)) {}

  // The series with these label values, in the order of the family's label names, created at
  // zero on first use; valid as long as the registry. Takes prometheus-cpp's family lock: on
  // hot paths look the series up once and keep the reference.
  // REQUIRES: one value per label name (aborts otherwise).
  T& WithLabels(const std::vector<std::string>& label_values);
  // The same with the labels by name. REQUIRES: exactly the family's label names.
  T& WithNamedLabels(const prometheus::Labels& labels);
  // The series of a family without labels.
  T& Get() { return WithLabels(std::vector<std::string>{}); }

  const std::vector<std::string>& label_names() const { return label_names_; }
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  prometheus::Family<T>* const family_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;  // histograms only
};

// What a family is, apart from its series.
struct FamilySpec {
  std::string name;
  std::string help;  // unescaped
  prometheus::MetricType type = prometheus::MetricType::Gauge;
  std::vector<std::string> label_names;
};

// One series of a scrape-time family: label values in the order of its label names.
struct Sample {
  std::vector<std::string> label_values;
  double value = 0;
};
using Samples = std::vector<Sample>;

// A scrape-time family derived from one reading of its source (of type Data).
template <typename Data>
struct ScrapedFamily {
  FamilySpec spec;  // type Counter or Gauge
  std::function<Samples(const Data&)> samples;
};

// Thread safety: all methods may be called concurrently; registration usually happens before
// serving.
class MetricRegistry {
 public:
  MetricRegistry() = default;
  MetricRegistry(const MetricRegistry&) = delete;
  MetricRegistry& operator=(const MetricRegistry&) = delete;

  // Registers a family, or returns the one registered under `name` before if it has the same
  // type, label names (and buckets). Aborts on an invalid metric or label name, a duplicate
  // label name, "le" as a histogram's label, or a name already registered otherwise.
  CheckedFamily<prometheus::Counter>& AddCounter(const std::string& name, const std::string& help,
                                                 std::vector<std::string> label_names = {});
  CheckedFamily<prometheus::Gauge>& AddGauge(const std::string& name, const std::string& help,
                                             std::vector<std::string> label_names = {});
  // REQUIRES: `bounds` finite and strictly increasing (the +Inf bucket is implicit).
  CheckedFamily<prometheus::Histogram>& AddHistogram(const std::string& name,
                                                     const std::string& help,
                                                     std::vector<std::string> label_names,
                                                     std::vector<double> bounds);

  // Registers counter or gauge families whose series one prometheus::Collectable computes at
  // each scrape: `collect` runs once per Expose and returns the samples of each family of
  // `specs`, in that order. It runs on the scraping thread without registry locks held and
  // must not register metrics. Aborts like AddCounter on a bad or already used name (scrape-time
  // families cannot be merged), and at scrape time on a result of the wrong size or a sample
  // with the wrong number of label values.
  void AddCollectable(std::vector<FamilySpec> specs, std::function<std::vector<Samples>()> collect);

  // AddCollectable over one source: `read` runs once per scrape, each family's `samples` then
  // derives its series from that one reading.
  template <typename Data>
  void AddScraped(std::function<Data()> read, std::vector<ScrapedFamily<Data>> families) {
    std::vector<FamilySpec> specs;
    std::vector<std::function<Samples(const Data&)>> derive;
    for (ScrapedFamily<Data>& f : families) {
      specs.push_back(std::move(f.spec));
      derive.push_back(std::move(f.samples));
    }
    AddCollectable(std::move(specs), [read = std::move(read), derive = std::move(derive)] {
      const Data data = read();
      std::vector<Samples> out;
      out.reserve(derive.size());
      for (const auto& d : derive) out.push_back(d(data));
      return out;
    });
  }

  // Every family in registration order, in the text exposition format 0.0.4, through
  // prometheus::TextSerializer. Families without series have their HELP and TYPE lines only.
  // Each call collects anew: concurrent calls each run every collectable once.
  std::string Expose() const;

 private:
  struct Declared {
    FamilySpec spec;  // help escaped
    std::vector<double> bounds;
    std::shared_ptr<void> family;  // the CheckedFamily<T>, null for scrape-time families
  };
  // Checks `spec` against the rules above and the families declared so far. Returns the family
  // already declared with the same spec and bounds (when `mergeable`), else null.
  // REQUIRES: mu_ held.
  const Declared* Check(const FamilySpec& spec, const std::vector<double>& bounds,
                        bool mergeable) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  template <typename T>
  CheckedFamily<T>& Add(const std::string& name, const std::string& help,
                        std::vector<std::string> label_names, std::vector<double> bounds,
                        prometheus::MetricType type);

  mutable Mutex mu_;
  prometheus::Registry registry_;
  std::vector<Declared> declared_ ABSL_GUARDED_BY(mu_);                      // Never shrinks
  std::map<std::string, size_t, std::less<>> by_name_ ABSL_GUARDED_BY(mu_);  // Into declared_
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_METRIC_REGISTRY_H_
