// Registry and families: registration checks and the text exposition.
#include "lib/metrics/registry.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "lib/metrics/text_format.h"

namespace ecd::metrics {
namespace {

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "metrics: %s\n", message.c_str());
  std::abort();
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// A family whose series come from a callback at scrape time.
class CallbackFamily : public FamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, MetricType type,
                 std::vector<std::string> labels, std::function<std::vector<Sample>()> collect)
      : FamilyBase(std::move(name), std::move(help), type, std::move(labels)),
        collect_(std::move(collect)) {}

 protected:
  void RenderSeries(std::string& out) const override {
    for (const Sample& s : collect_()) {
      CheckArity(s.label_values);
      AppendLine(out, "", s.label_values, "", s.value);
    }
  }

 private:
  const std::function<std::vector<Sample>()> collect_;
};

}  // namespace

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {}

void FamilyBase::Render(std::string& out) const {
  absl::StrAppend(&out, "# HELP ", name_, " ", EscapeHelp(help_), "\n# TYPE ", name_, " ",
                  TypeName(type_), "\n");
  RenderSeries(out);
}

void FamilyBase::AppendLine(std::string& out, absl::string_view suffix,
                            const std::vector<std::string>& label_values, absl::string_view extra,
                            double value) const {
  absl::StrAppend(&out, name_, suffix);
  if (!label_values.empty() || !extra.empty()) {
    out += '{';
    for (size_t i = 0; i < label_values.size(); ++i) {
      absl::StrAppend(&out, i ? "," : "", label_names_[i], "=\"", EscapeLabelValue(label_values[i]),
                      "\"");
    }
    absl::StrAppend(&out, !label_values.empty() && !extra.empty() ? "," : "", extra, "}");
  }
  absl::StrAppend(&out, " ", FormatValue(value), "\n");
}

void FamilyBase::CheckArity(const std::vector<std::string>& label_values) const {
  if (label_values.size() != label_names_.size()) {
    Fail(absl::StrCat(name_, ": ", label_values.size(), " label values for ", label_names_.size(),
                      " label names"));
  }
}

template <>
void Family<Counter>::RenderSeries(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [labels, c] : series_) {
    AppendLine(out, "", labels, "", static_cast<double>(c->value()));
  }
}

template <>
void Family<Gauge>::RenderSeries(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [labels, g] : series_) AppendLine(out, "", labels, "", g->value());
}

template <>
void Family<Histogram>::RenderSeries(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [labels, h] : series_) {
    const Histogram::Snapshot s = h->Read();
    for (size_t i = 0; i < s.bounds.size(); ++i) {
      AppendLine(out, "_bucket", labels, absl::StrCat("le=\"", FormatValue(s.bounds[i]), "\""),
                 static_cast<double>(s.cumulative[i]));
    }
    AppendLine(out, "_bucket", labels, "le=\"+Inf\"", static_cast<double>(s.count));
    AppendLine(out, "_sum", labels, "", s.sum);
    AppendLine(out, "_count", labels, "", static_cast<double>(s.count));
  }
}

void Registry::CheckNames(const std::string& name, const std::vector<std::string>& label_names,
                          MetricType type) const {
  if (!IsValidMetricName(name)) Fail(absl::StrCat("invalid metric name \"", name, "\""));
  for (const auto& f : families_) {
    if (f->name() == name) Fail(absl::StrCat("metric \"", name, "\" registered twice"));
  }
  std::set<std::string> seen;
  for (const std::string& l : label_names) {
    if (!IsValidLabelName(l)) Fail(absl::StrCat(name, ": invalid label name \"", l, "\""));
    if (!seen.insert(l).second) Fail(absl::StrCat(name, ": label \"", l, "\" given twice"));
    if (type == MetricType::kHistogram && l == "le") {
      Fail(absl::StrCat(name, ": a histogram cannot have a label called \"le\""));
    }
  }
}

template <typename F>
F& Registry::Keep(std::unique_ptr<F> family) {
  F& ref = *family;
  families_.push_back(std::move(family));
  return ref;
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names) {
  std::lock_guard lock(mu_);
  CheckNames(name, label_names, MetricType::kCounter);
  return Keep(std::make_unique<Family<Counter>>(name, help, MetricType::kCounter,
                                                std::move(label_names),
                                                [] { return std::make_unique<Counter>(); }));
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names) {
  std::lock_guard lock(mu_);
  CheckNames(name, label_names, MetricType::kGauge);
  return Keep(std::make_unique<Family<Gauge>>(name, help, MetricType::kGauge,
                                              std::move(label_names),
                                              [] { return std::make_unique<Gauge>(); }));
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<std::string> label_names,
                                          std::vector<double> bounds) {
  std::lock_guard lock(mu_);
  CheckNames(name, label_names, MetricType::kHistogram);
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
      Fail(absl::StrCat(name, ": bucket bounds must be finite and strictly increasing"));
    }
  }
  return Keep(std::make_unique<Family<Histogram>>(
      name, help, MetricType::kHistogram, std::move(label_names),
      [bounds = std::move(bounds)] { return std::make_unique<Histogram>(bounds); }));
}

void Registry::AddCallback(MetricType type, const std::string& name, const std::string& help,
                           std::vector<std::string> label_names,
                           std::function<std::vector<Sample>()> collect) {
  std::lock_guard lock(mu_);
  if (type == MetricType::kHistogram)
    Fail(absl::StrCat(name, ": callbacks give counters or gauges"));
  CheckNames(name, label_names, type);
  Keep(std::make_unique<CallbackFamily>(name, help, type, std::move(label_names),
                                        std::move(collect)));
}

std::string Registry::Expose() const {
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard lock(mu_);
    for (const auto& f : families_) families.push_back(f.get());
  }
  std::string out;
  for (const FamilyBase* f : families) f->Render(out);
  return out;
}

}  // namespace ecd::metrics
