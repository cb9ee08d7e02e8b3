// MetricRegistry: registration checks over prometheus-cpp, scrape-time collectables and the
// exposition through prometheus::TextSerializer.
#include "daemon/metric_registry.h"

#include <prometheus/check_names.h>
#include <prometheus/client_metric.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {
namespace {

bool IsScrapeType(prometheus::MetricType type) {
  return type == prometheus::MetricType::Counter || type == prometheus::MetricType::Gauge;
}

// A sample's labels by name, sorted by name as prometheus-cpp's own families give them.
std::vector<prometheus::ClientMetric::Label> NamedLabels(const std::string& family,
                                                         const std::vector<std::string>& names,
                                                         const std::vector<std::string>& values) {
  if (values.size() != names.size()) {
    MetricsFail(absl::StrCat(family, ": ", values.size(), " label values for the label names (",
                             absl::StrJoin(names, ","), ")"));
  }
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) out.push_back({names[i], values[i]});
  std::sort(out.begin(), out.end());
  return out;
}

// The counter and gauge families one `collect` computes at each scrape.
class ScrapeCollectable : public prometheus::Collectable {
 public:
  // REQUIRES: `specs` checked, their HELP escaped.
  ScrapeCollectable(std::vector<FamilySpec> specs, std::function<std::vector<Samples>()> collect)
      : specs_(std::move(specs)), collect_(std::move(collect)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const std::vector<Samples> samples = collect_();
    if (samples.size() != specs_.size()) {
      MetricsFail(absl::StrCat("a collectable gave ", samples.size(), " families for ",
                               specs_.size(), " declared (", specs_.front().name, ", ...)"));
    }
    std::vector<prometheus::MetricFamily> out;
    out.reserve(specs_.size());
    for (size_t i = 0; i < specs_.size(); ++i) {
      const FamilySpec& spec = specs_[i];
      prometheus::MetricFamily& f = out.emplace_back();
      f.name = spec.name;
      f.help = spec.help;
      f.type = spec.type;
      for (const Sample& s : samples[i]) {
        prometheus::ClientMetric& m = f.metric.emplace_back();
        m.label = NamedLabels(spec.name, spec.label_names, s.label_values);
        if (spec.type == prometheus::MetricType::Counter) {
          m.counter.value = s.value;
        } else {
          m.gauge.value = s.value;
        }
      }
    }
    return out;
  }

 private:
  const std::vector<FamilySpec> specs_;
  const std::function<std::vector<Samples>()> collect_;
};

// REQUIRES: every series of `f` has exactly the label names of `spec` (aborts otherwise).
void CheckSeriesLabels(const FamilySpec& spec, const prometheus::MetricFamily& f) {
  std::vector<std::string> want = spec.label_names;
  std::sort(want.begin(), want.end());
  for (const prometheus::ClientMetric& m : f.metric) {
    std::vector<std::string> got;
    for (const prometheus::ClientMetric::Label& l : m.label) got.push_back(l.name);
    std::sort(got.begin(), got.end());
    if (got != want) {
      MetricsFail(absl::StrCat(spec.name, ": a series has labels (", absl::StrJoin(got, ","),
                               "), the family (", absl::StrJoin(want, ","), ")"));
    }
  }
}

}  // namespace

std::string EscapeHelp(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void MetricsFail(const std::string& message) {
  std::fprintf(stderr, "metrics: %s\n", message.c_str());
  std::abort();
}

template <typename T>
T& CheckedFamily<T>::WithLabels(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names_.size()) {
    MetricsFail(absl::StrCat(family_->GetName(), ": ", label_values.size(),
                             " label values for the label names (",
                             absl::StrJoin(label_names_, ","), ")"));
  }
  prometheus::Labels labels;
  for (size_t i = 0; i < label_names_.size(); ++i) labels[label_names_[i]] = label_values[i];
  if constexpr (std::is_same_v<T, prometheus::Histogram>) {
    return family_->Add(labels, bounds_);
  } else {
    return family_->Add(labels);
  }
}

template <typename T>
T& CheckedFamily<T>::WithNamedLabels(const prometheus::Labels& labels) {
  std::vector<std::string> values;
  for (const std::string& name : label_names_) {
    auto it = labels.find(name);
    if (it == labels.end()) break;
    values.push_back(it->second);
  }
  if (values.size() != label_names_.size() || labels.size() != label_names_.size()) {
    std::vector<std::string> got;
    for (const auto& [name, value] : labels) got.push_back(name);
    MetricsFail(absl::StrCat(family_->GetName(), ": series labels (", absl::StrJoin(got, ","),
                             ") are not the family's (", absl::StrJoin(label_names_, ","), ")"));
  }
  return WithLabels(values);
}

template class CheckedFamily<prometheus::Counter>;
template class CheckedFamily<prometheus::Gauge>;
template class CheckedFamily<prometheus::Histogram>;

const MetricRegistry::Declared* MetricRegistry::Check(const FamilySpec& spec,
                                                      const std::vector<double>& bounds,
                                                      bool mergeable) const {
  if (!prometheus::CheckMetricName(spec.name)) {
    MetricsFail(absl::StrCat("invalid metric name \"", spec.name, "\""));
  }
  std::set<std::string> seen;
  for (const std::string& l : spec.label_names) {
    if (!prometheus::CheckLabelName(l) || l.rfind("__", 0) == 0) {
      MetricsFail(absl::StrCat(spec.name, ": invalid label name \"", l, "\""));
    }
    if (!seen.insert(l).second) MetricsFail(absl::StrCat(spec.name, ": label \"", l, "\" twice"));
    if (spec.type == prometheus::MetricType::Histogram && l == "le") {
      MetricsFail(absl::StrCat(spec.name, ": a histogram cannot have a label called \"le\""));
    }
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
      MetricsFail(absl::StrCat(spec.name, ": bucket bounds must be finite and increasing"));
    }
  }
  auto it = by_name_.find(spec.name);
  if (it == by_name_.end()) return nullptr;
  const Declared& d = declared_[it->second];
  if (!mergeable || d.family == nullptr) {
    MetricsFail(absl::StrCat("metric \"", spec.name, "\" registered twice (scrape-time)"));
  }
  if (d.spec.type != spec.type || d.spec.label_names != spec.label_names || d.bounds != bounds) {
    MetricsFail(absl::StrCat("metric \"", spec.name, "\" registered twice, with labels (",
                             absl::StrJoin(d.spec.label_names, ","), ") then (",
                             absl::StrJoin(spec.label_names, ","),
                             ") (or another type or other buckets)"));
  }
  return &d;
}

template <typename T>
CheckedFamily<T>& MetricRegistry::Add(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names,
                                      std::vector<double> bounds, prometheus::MetricType type) {
  MutexLock lock(mu_);
  FamilySpec spec{name, EscapeHelp(help), type, std::move(label_names)};
  if (const Declared* d = Check(spec, bounds, /*mergeable=*/true)) {
    return *static_cast<CheckedFamily<T>*>(d->family.get());
  }
  prometheus::Family<T>* family = nullptr;
  if constexpr (std::is_same_v<T, prometheus::Counter>) {
    family = &prometheus::BuildCounter().Name(name).Help(spec.help).Register(registry_);
  } else if constexpr (std::is_same_v<T, prometheus::Gauge>) {
    family = &prometheus::BuildGauge().Name(name).Help(spec.help).Register(registry_);
  } else {
    family = &prometheus::BuildHistogram().Name(name).Help(spec.help).Register(registry_);
  }
  auto checked = std::make_shared<CheckedFamily<T>>(family, spec.label_names, bounds);
  by_name_[name] = declared_.size();
  declared_.push_back({std::move(spec), std::move(bounds), checked});
  return *checked;
}

CheckedFamily<prometheus::Counter>& MetricRegistry::AddCounter(
    const std::string& name, const std::string& help, std::vector<std::string> label_names) {
  return Add<prometheus::Counter>(name, help, std::move(label_names), {},
                                  prometheus::MetricType::Counter);
}

CheckedFamily<prometheus::Gauge>& MetricRegistry::AddGauge(const std::string& name,
                                                           const std::string& help,
                                                           std::vector<std::string> label_names) {
  return Add<prometheus::Gauge>(name, help, std::move(label_names), {},
                                prometheus::MetricType::Gauge);
}

CheckedFamily<prometheus::Histogram>& MetricRegistry::AddHistogram(
    const std::string& name, const std::string& help, std::vector<std::string> label_names,
    std::vector<double> bounds) {
  return Add<prometheus::Histogram>(name, help, std::move(label_names), std::move(bounds),
                                    prometheus::MetricType::Histogram);
}

void MetricRegistry::AddCollectable(std::vector<FamilySpec> specs,
                                    std::function<std::vector<Samples>()> collect) {
  if (specs.empty()) MetricsFail("a collectable without families");
  MutexLock lock(mu_);
  std::set<std::string> names;
  for (FamilySpec& spec : specs) {
    if (!IsScrapeType(spec.type)) {
      MetricsFail(absl::StrCat(spec.name, ": scrape-time families are counters or gauges"));
    }
    Check(spec, {}, /*mergeable=*/false);
    if (!names.insert(spec.name).second) {
      MetricsFail(absl::StrCat("metric \"", spec.name, "\" registered twice (scrape-time)"));
    }
    spec.help = EscapeHelp(spec.help);
  }
  for (const FamilySpec& spec : specs) {
    by_name_[spec.name] = declared_.size();
    declared_.push_back({spec, {}, nullptr});
  }
  collectables_.push_back(
      std::make_shared<ScrapeCollectable>(std::move(specs), std::move(collect)));
}

std::string MetricRegistry::Expose() const {
  std::vector<FamilySpec> specs;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables;
  {
    MutexLock lock(mu_);
    specs.reserve(declared_.size());
    for (const Declared& d : declared_) specs.push_back(d.spec);
    collectables = collectables_;
  }
  std::vector<prometheus::MetricFamily> collected = registry_.Collect();
  for (const auto& c : collectables) {
    std::vector<prometheus::MetricFamily> more = c->Collect();
    std::move(more.begin(), more.end(), std::back_inserter(collected));
  }
  std::map<std::string, prometheus::MetricFamily*> by_name;  // keys copied: the families move
  for (prometheus::MetricFamily& f : collected) by_name[f.name] = &f;

  std::vector<prometheus::MetricFamily> out;
  out.reserve(specs.size());
  for (FamilySpec& spec : specs) {
    auto it = by_name.find(spec.name);
    if (it != by_name.end()) {
      CheckSeriesLabels(spec, *it->second);
      out.push_back(std::move(*it->second));
    } else {  // prometheus-cpp leaves a family without series out: keep its HELP and TYPE.
      prometheus::MetricFamily& f = out.emplace_back();
      f.name = std::move(spec.name);
      f.help = std::move(spec.help);
      f.type = spec.type;
    }
  }
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, out);
  return text.str();
}

}  // namespace ecd::daemon
