// Registry: the metric families of a process and their Prometheus text exposition.
//
//   metrics::Registry registry;
//   auto& requests = registry.AddCounter("ecd_rpc_requests_total", "RPCs finished.",
//                                        {"method", "code"});
//   requests.WithLabels({"Objects/Encode", "OK"}).Increment();
//   registry.AddCallback(metrics::MetricType::kGauge, "ecd_objects", "Objects stored.", {},
//                        [&] { return std::vector<metrics::Sample>{{{}, store.Count()}}; });
//   std::string page = registry.Expose();  // text format 0.0.4
//
// Concepts follow prometheus-cpp (not packaged for Debian 12): a family is one metric name
// with a fixed list of label names; each distinct list of label values is one series.
// WithLabels takes a lock to find or create its series: on hot paths, look the series up once
// and keep the reference (series live as long as the registry). Values that already exist
// elsewhere (store state, device counters) are read at scrape time by callbacks instead, so
// they cost nothing between scrapes.
#ifndef ECD_LIB_METRICS_REGISTRY_H_
#define ECD_LIB_METRICS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "lib/metrics/metric.h"

namespace ecd::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// One series of a callback family: label values in the order of the family's label names.
struct Sample {
  std::vector<std::string> label_values;
  double value = 0;
};

// Shared by the families of every type; renders its HELP, TYPE and series lines.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  void Render(std::string& out) const;

 protected:
  // Appends the series lines (no HELP/TYPE).
  virtual void RenderSeries(std::string& out) const = 0;
  // `name{a="x",b="y"} value\n`, with `extra` (e.g. le="0.5") as the last label when non-empty.
  void AppendLine(std::string& out, absl::string_view suffix,
                  const std::vector<std::string>& label_values, absl::string_view extra,
                  double value) const;
  void CheckArity(const std::vector<std::string>& label_values) const;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

// A family of Counter, Gauge or Histogram series.
// Thread safety: all methods may be called concurrently.
template <typename T>
class Family : public FamilyBase {
 public:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> labels,
         std::function<std::unique_ptr<T>()> make)
      : FamilyBase(std::move(name), std::move(help), type, std::move(labels)),
        make_(std::move(make)) {}

  // The series with these label values, created (at zero) on first use. The reference stays
  // valid as long as the registry. REQUIRES: one value per label name (aborts otherwise).
  T& WithLabels(const std::vector<std::string>& label_values) {
    CheckArity(label_values);
    std::lock_guard lock(mu_);
    std::unique_ptr<T>& slot = series_[label_values];
    if (slot == nullptr) slot = make_();
    return *slot;
  }
  // The series of a family without labels.
  T& Get() { return WithLabels({}); }

 protected:
  void RenderSeries(std::string& out) const override;

 private:
  const std::function<std::unique_ptr<T>()> make_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> series_;  // guarded by mu_
};

// Defined in registry.cc for the three series types.
template <>
void Family<Counter>::RenderSeries(std::string& out) const;
template <>
void Family<Gauge>::RenderSeries(std::string& out) const;
template <>
void Family<Histogram>::RenderSeries(std::string& out) const;

// Thread safety: all methods may be called concurrently. Registering a family with an invalid
// or already used name, or invalid or duplicate label names, is a programming error: it aborts
// with a message (as prometheus-cpp throws).
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names = {});
  // REQUIRES: `bounds` strictly increasing; no label is called "le".
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names, std::vector<double> bounds);
  // A counter or gauge family whose series are computed by `collect` at every scrape. It runs
  // on the scraping thread without registry locks held, and must not register metrics.
  void AddCallback(MetricType type, const std::string& name, const std::string& help,
                   std::vector<std::string> label_names,
                   std::function<std::vector<Sample>()> collect);

  // Every family in registration order, in the text exposition format 0.0.4.
  std::string Expose() const;

 private:
  void CheckNames(const std::string& name, const std::vector<std::string>& label_names,
                  MetricType type) const;  // REQUIRES: mu_ held
  template <typename F>
  F& Keep(std::unique_ptr<F> family);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;  // guarded by mu_; never shrinks
};

}  // namespace ecd::metrics

#endif  // ECD_LIB_METRICS_REGISTRY_H_
