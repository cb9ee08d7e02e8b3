// FaultNamespace: rule evaluation, the injected faults, the I/O accounting, the spec parser and
// the fault-injecting namespace factory.
#include "lib/fault/fault_namespace.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/nvme/command.h"

namespace ecd::store {
namespace {

using Op = FaultRule::Op;
using Kind = FaultRule::Kind;

bool OpMatches(Op rule, Op op) { return rule == Op::kAny || rule == op; }

absl::Status Injected(uint8_t sc, uint8_t sct, const std::string& context) {
  return nvme::ToAbslStatus(nvme::Failure(sc, sct), absl::StrCat("injected fault: ", context));
}

// splitmix64: decorrelates the per-device seeds derived from one seed.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One rule of a spec being parsed: its 1-based number among the non-empty rules and its text.
struct RuleSource {
  size_t number;
  absl::string_view text;
};

// An InvalidArgument naming the rule, the offending token in it and why the token is wrong.
absl::Status BadToken(const RuleSource& src, absl::string_view token, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("fault spec rule ", src.number, " \"", src.text, "\": \"", token, "\": ", why));
}

// Parses the operation name `op` (read, write, flush or any) into *out.
absl::Status ParseOp(const RuleSource& src, absl::string_view op, Op* out) {
  if (op == "read") {
    *out = Op::kRead;
  } else if (op == "write") {
    *out = Op::kWrite;
  } else if (op == "flush") {
    *out = Op::kFlush;
  } else if (op == "any") {
    *out = Op::kAny;
  } else {
    return BadToken(src, op, "unknown operation (read, write, flush or any)");
  }
  return absl::OkStatus();
}

// Parses the fault name `kind` (eio, short, torn or latency) into *out.
absl::Status ParseKind(const RuleSource& src, absl::string_view kind, Kind* out) {
  if (kind == "eio") {
    *out = Kind::kEio;
  } else if (kind == "short") {
    *out = Kind::kShortWrite;
  } else if (kind == "torn") {
    *out = Kind::kTornWrite;
  } else if (kind == "latency") {
    *out = Kind::kLatency;
  } else {
    return BadToken(src, kind, "unknown fault (eio, short, torn or latency)");
  }
  return absl::OkStatus();
}

// Parses the `value` of token lba=FIRST[+COUNT] into r's LBA range (COUNT defaults to 1).
absl::Status ParseLbaRange(const RuleSource& src, absl::string_view token, absl::string_view value,
                           FaultRule* r) {
  if (r->op == Op::kFlush) return BadToken(src, token, "a flush has no LBA range");
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(value, '+');
  const bool has_count = value.find('+') != absl::string_view::npos;
  if (!absl::SimpleAtoi(parts.first, &r->first_lba) ||
      (has_count && (!absl::SimpleAtoi(parts.second, &r->lba_count) || r->lba_count == 0))) {
    return BadToken(src, token, "expected lba=FIRST or lba=FIRST+COUNT, COUNT > 0");
  }
  if (!has_count) r->lba_count = 1;
  if (r->first_lba + r->lba_count < r->first_lba) return BadToken(src, token, "range overflows");
  return absl::OkStatus();
}

// Parses the `value` of token ms=N or us=N (`key`) into r's latency; *has_delay marks one given.
absl::Status ParseDelay(const RuleSource& src, absl::string_view token, absl::string_view key,
                        absl::string_view value, bool* has_delay, FaultRule* r) {
  if (r->kind != Kind::kLatency) {
    return BadToken(src, token, "only a latency fault takes a delay");
  }
  if (*has_delay) return BadToken(src, token, "give one of ms and us");
  *has_delay = true;
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !(v > 0) || v > 3.6e9) {
    return BadToken(src, token, "expected a positive delay");
  }
  r->latency = key == "ms" ? absl::Milliseconds(v) : absl::Microseconds(v);
  return absl::OkStatus();
}

// Parses the `value` of token sector=N (a power of two up to 1M) into r's torn-write sector size.
absl::Status ParseSectorSize(const RuleSource& src, absl::string_view token,
                             absl::string_view value, FaultRule* r) {
  if (r->kind != Kind::kTornWrite) {
    return BadToken(src, token, "only a torn fault takes a sector size");
  }
  if (!absl::SimpleAtoi(value, &r->sector_size) || r->sector_size == 0 ||
      r->sector_size > (1u << 20) || (r->sector_size & (r->sector_size - 1)) != 0) {
    return BadToken(src, token, "sector must be a power of two up to 1M");
  }
  return absl::OkStatus();
}

// Applies one stripped KEY=VALUE `token` to r, whose op and kind are set; *seen and *has_delay
// carry the keys and delay given so far in the rule.
absl::Status ParseParam(const RuleSource& src, absl::string_view token,
                        std::set<absl::string_view>* seen, bool* has_delay, FaultRule* r) {
  const size_t eq = token.find('=');
  if (eq == absl::string_view::npos) return BadToken(src, token, "expected KEY=VALUE");
  const absl::string_view key = token.substr(0, eq);
  const absl::string_view value = token.substr(eq + 1);
  if (!seen->insert(key).second) return BadToken(src, token, "given twice");
  if (key == "p") {
    if (!absl::SimpleAtod(value, &r->probability) || !(r->probability >= 0.0) ||
        r->probability > 1.0) {
      return BadToken(src, token, "probability must be a number in [0, 1]");
    }
  } else if (key == "lba") {
    return ParseLbaRange(src, token, value, r);
  } else if (key == "after") {
    if (!absl::SimpleAtoi(value, &r->after_ops)) return BadToken(src, token, "expected a count");
  } else if (key == "max") {
    if (!absl::SimpleAtoi(value, &r->max_hits)) return BadToken(src, token, "expected a count");
  } else if (key == "ms" || key == "us") {
    return ParseDelay(src, token, key, value, has_delay, r);
  } else if (key == "sector") {
    return ParseSectorSize(src, token, value, r);
  } else {
    return BadToken(src, token, "unknown parameter (p, lba, after, max, ms, us or sector)");
  }
  return absl::OkStatus();
}

// Parses the stripped, non-empty rule text OP:KIND[:PARAM...] of `src` into a FaultRule.
absl::StatusOr<FaultRule> ParseRule(const RuleSource& src) {
  std::vector<absl::string_view> tokens = absl::StrSplit(src.text, ':');
  if (tokens.size() < 2) return BadToken(src, src.text, "expected OP:KIND[:PARAM...]");
  FaultRule r;
  if (absl::Status s = ParseOp(src, absl::StripAsciiWhitespace(tokens[0]), &r.op); !s.ok()) {
    return s;
  }
  const absl::string_view kind = absl::StripAsciiWhitespace(tokens[1]);
  if (absl::Status s = ParseKind(src, kind, &r.kind); !s.ok()) return s;
  if ((r.kind == Kind::kShortWrite || r.kind == Kind::kTornWrite) && r.op != Op::kWrite) {
    return BadToken(src, kind, "short and torn faults apply to write only");
  }
  std::set<absl::string_view> seen;
  bool has_delay = false;
  for (size_t i = 2; i < tokens.size(); ++i) {
    const absl::string_view token = absl::StripAsciiWhitespace(tokens[i]);
    if (absl::Status s = ParseParam(src, token, &seen, &has_delay, &r); !s.ok()) return s;
  }
  if (r.kind == Kind::kLatency && !has_delay) {
    return BadToken(src, kind, "a latency fault needs ms=N or us=N");
  }
  return r;
}

}  // namespace

absl::StatusOr<std::vector<FaultRule>> ParseFaultSpec(absl::string_view spec) {
  std::vector<FaultRule> rules;
  size_t number = 0;
  for (absl::string_view text : absl::StrSplit(spec, ';')) {
    text = absl::StripAsciiWhitespace(text);
    if (text.empty()) continue;
    absl::StatusOr<FaultRule> rule = ParseRule(RuleSource{++number, text});
    if (!rule.ok()) return rule.status();
    rules.push_back(*rule);
  }
  return rules;
}

absl::StatusOr<std::map<uint32_t, std::vector<FaultRule>>> ParseDeviceFaultSpecs(
    absl::string_view specs) {
  std::map<uint32_t, std::vector<FaultRule>> out;
  for (absl::string_view item : absl::StrSplit(specs, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    uint32_t device = 0;
    if (eq == absl::string_view::npos ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(item.substr(0, eq)), &device)) {
      return absl::InvalidArgumentError(
          absl::StrCat("fault injection \"", item, "\": expected DEVICE=SPEC, e.g. 2=write:eio"));
    }
    absl::StatusOr<std::vector<FaultRule>> rules = ParseFaultSpec(item.substr(eq + 1));
    if (!rules.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", device, ": ", rules.status().message()));
    }
    if (!out.emplace(device, *std::move(rules)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("fault injection: device ", device, " is given twice"));
    }
  }
  return out;
}

FaultNamespace::FaultNamespace(std::unique_ptr<Namespace> inner, std::vector<FaultRule> rules,
                               FaultNamespaceOptions options)
    : inner_(std::move(inner)), trace_capacity_(options.trace_capacity), rng_(options.seed) {
  SetRules(std::move(rules));
}

FaultNamespace::~FaultNamespace() {
  if (on_destroy_) on_destroy_(this);
}

void FaultNamespace::SetRules(std::vector<FaultRule> rules) {
  MutexLock lock(mu_);
  rules_.clear();
  for (FaultRule& r : rules) rules_.push_back(RuleState{r});
}

std::vector<IoRecord> FaultNamespace::TakeTrace() {
  MutexLock lock(mu_);
  std::vector<IoRecord> out(trace_.begin(), trace_.end());
  trace_.clear();
  return out;
}

FaultNamespace::Decision FaultNamespace::Decide(Op op, uint64_t lba, uint64_t count) {
  Decision d;
  if (op == Op::kRead) {
    ++reads_;
    read_lbas_ += count;
  } else if (op == Op::kWrite) {
    ++writes_;
    write_lbas_ += count;
  } else {
    ++flushes_;
  }
  if (op != Op::kFlush && trace_capacity_ > 0) {
    trace_.push_back(IoRecord{op, lba, count});
    if (trace_.size() > trace_capacity_) {
      trace_.pop_front();
      ++trace_dropped_;
    }
  }
  // In order: every latency rule that fires adds its delay; the first failing rule that fires
  // decides the outcome and ends the evaluation.
  for (RuleState& r : rules_) {
    const FaultRule& rule = r.rule;
    if (!OpMatches(rule.op, op)) continue;
    if (op == Op::kFlush && (rule.kind == Kind::kShortWrite || rule.kind == Kind::kTornWrite)) {
      continue;
    }
    if (op != Op::kFlush && rule.lba_count != 0 &&
        (lba >= rule.first_lba + rule.lba_count || lba + count <= rule.first_lba)) {
      continue;
    }
    if (++r.matched <= rule.after_ops) continue;
    if (rule.max_hits != 0 && r.hits >= rule.max_hits) continue;
    if (rule.probability < 1.0 &&
        std::uniform_real_distribution<double>(0, 1)(rng_) >= rule.probability) {
      continue;
    }
    ++r.hits;
    if (rule.kind == Kind::kLatency) {
      d.delay += rule.latency;
      ++latency_;
      continue;
    }
    d.fail = true;
    d.kind = rule.kind;
    if (rule.kind == Kind::kEio) {
      ++eio_;
    } else if (rule.kind == Kind::kShortWrite) {
      ++short_writes_;
      d.cut = count <= 1 ? 0 : std::uniform_int_distribution<uint64_t>(0, count - 1)(rng_);
    } else {
      ++torn_writes_;
      const uint64_t total = count * inner_->lba_size();
      const uint64_t cuts = (total - 1) / rule.sector_size;  // Sector boundaries inside.
      d.cut =
          cuts == 0 ? 0 : rule.sector_size * std::uniform_int_distribution<uint64_t>(1, cuts)(rng_);
    }
    break;
  }
  return d;
}

absl::Status FaultNamespace::Read(uint64_t lba, absl::Span<uint8_t> out) {
  const uint32_t lbs = inner_->lba_size();
  const uint64_t count = out.size() / lbs;
  if (out.size() % lbs != 0 || lba > lba_count() || count > lba_count() - lba) {
    return inner_->Read(lba, out);  // Refused there, without faults.
  }
  Decision d;
  {
    MutexLock lock(mu_);
    d = Decide(Op::kRead, lba, count);
  }
  if (d.delay > absl::ZeroDuration()) absl::SleepFor(d.delay);
  if (d.fail) {
    return Injected(nvme::kScUnrecoveredReadError, nvme::kSctMedia,
                    absl::StrCat("read of LBAs [", lba, ", ", lba + count, ")"));
  }
  return inner_->Read(lba, out);
}

absl::Status FaultNamespace::Write(uint64_t lba, absl::Span<const uint8_t> data) {
  const uint32_t lbs = inner_->lba_size();
  const uint64_t count = data.size() / lbs;
  if (data.size() % lbs != 0 || lba > lba_count() || count > lba_count() - lba) {
    return inner_->Write(lba, data);  // Refused there, without faults.
  }
  Decision d;
  {
    MutexLock lock(mu_);
    d = Decide(Op::kWrite, lba, count);
  }
  if (d.delay > absl::ZeroDuration()) absl::SleepFor(d.delay);
  if (!d.fail) return inner_->Write(lba, data);
  const std::string range = absl::StrCat("write of LBAs [", lba, ", ", lba + count, ")");
  switch (d.kind) {
    case Kind::kEio:
      return Injected(nvme::kScWriteFault, nvme::kSctMedia, range);
    case Kind::kShortWrite:
      if (d.cut > 0) {
        if (absl::Status s = inner_->Write(lba, data.first(d.cut * lbs)); !s.ok()) return s;
      }
      return Injected(nvme::kScDataTransferError, nvme::kSctGeneric,
                      absl::StrCat(range, " transferred ", d.cut, " of ", count, " LBAs"));
    case Kind::kTornWrite: {
      const uint64_t full = d.cut / lbs;
      const uint64_t partial = d.cut % lbs;
      if (full > 0) {
        if (absl::Status s = inner_->Write(lba, data.first(full * lbs)); !s.ok()) return s;
      }
      if (partial > 0) {  // New bytes up to the cut, the LBA's old bytes after it.
        std::vector<uint8_t> block(lbs);
        if (absl::Status s = inner_->Read(lba + full, absl::MakeSpan(block)); !s.ok()) return s;
        std::memcpy(block.data(), data.data() + full * lbs, partial);
        if (absl::Status s = inner_->Write(lba + full, block); !s.ok()) return s;
      }
      return Injected(nvme::kScWriteFault, nvme::kSctMedia,
                      absl::StrCat(range, " torn after ", d.cut, " of ", data.size(), " bytes"));
    }
    case Kind::kLatency:
      break;
  }
  return inner_->Write(lba, data);
}

absl::Status FaultNamespace::Flush() {
  Decision d;
  {
    MutexLock lock(mu_);
    if (flush_failed_) {
      ++flushes_;
      return nvme::ToAbslStatus(nvme::Failure(nvme::kScWriteFault, nvme::kSctMedia),
                                "an earlier flush failed; its writes may be lost: fail the device");
    }
    d = Decide(Op::kFlush, 0, 0);
  }
  if (d.delay > absl::ZeroDuration()) absl::SleepFor(d.delay);
  absl::Status s =
      d.fail ? Injected(nvme::kScWriteFault, nvme::kSctMedia, "flush") : inner_->Flush();
  if (!s.ok()) {
    MutexLock lock(mu_);
    flush_failed_ = true;
  }
  return s;
}

std::vector<std::pair<std::string, uint64_t>> FaultNamespace::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> c = inner_->Counters();
  MutexLock lock(mu_);
  c.insert(c.end(), {
                        {"io_reads", reads_},
                        {"io_writes", writes_},
                        {"io_flushes", flushes_},
                        {"io_read_lbas", read_lbas_},
                        {"io_write_lbas", write_lbas_},
                        {"fault_injected_eio", eio_},
                        {"fault_injected_short_writes", short_writes_},
                        {"fault_injected_torn_writes", torn_writes_},
                        {"fault_injected_latency", latency_},
                        {"fault_flush_failed", flush_failed_ ? 1u : 0u},
                        {"fault_trace_dropped", trace_dropped_},
                    });
  return c;
}

FaultNamespace* FaultRegistry::Get(uint32_t device) const {
  MutexLock lock(mu_);
  auto it = open_.find(device);
  return it == open_.end() ? nullptr : it->second;
}

void FaultRegistry::SetRules(uint32_t device, std::vector<FaultRule> rules) {
  MutexLock lock(mu_);
  rules_[device] = rules;
  auto it = open_.find(device);
  if (it != open_.end()) it->second->SetRules(std::move(rules));
}

std::vector<FaultRule> FaultRegistry::RulesFor(uint32_t device) const {
  MutexLock lock(mu_);
  auto it = rules_.find(device);
  return it == rules_.end() ? std::vector<FaultRule>() : it->second;
}

void FaultRegistry::SetInitialRules(std::map<uint32_t, std::vector<FaultRule>> rules) {
  MutexLock lock(mu_);
  rules_ = std::move(rules);
}

void FaultRegistry::Register(uint32_t device, FaultNamespace* ns,
                             std::shared_ptr<FaultRegistry> self) {
  {
    MutexLock lock(mu_);
    open_[device] = ns;
  }
  ns->set_on_destroy([self = std::move(self), device](FaultNamespace* gone) {
    MutexLock lock(self->mu_);
    auto it = self->open_.find(device);
    if (it != self->open_.end() && it->second == gone) self->open_.erase(it);
  });
}

NamespaceFactory FaultInjectingFactory(NamespaceFactory inner,
                                       std::map<uint32_t, std::vector<FaultRule>> rules,
                                       uint64_t seed, std::shared_ptr<FaultRegistry>* registry,
                                       size_t trace_capacity) {
  auto reg = std::make_shared<FaultRegistry>();
  reg->SetInitialRules(std::move(rules));
  if (registry != nullptr) *registry = reg;
  return [inner = std::move(inner), reg, seed, trace_capacity](
             const std::string& path, uint64_t size_bytes, uint32_t lba_size,
             bool create) -> absl::StatusOr<std::unique_ptr<Namespace>> {
    absl::StatusOr<std::unique_ptr<Namespace>> ns = inner(path, size_bytes, lba_size, create);
    if (!ns.ok()) return ns.status();
    const std::string file = std::filesystem::path(path).filename().string();
    absl::string_view name = file;
    uint32_t device = 0;
    const bool indexed = absl::ConsumePrefix(&name, "nvme") && absl::ConsumeSuffix(&name, ".ns") &&
                         absl::SimpleAtoi(name, &device);
    FaultNamespaceOptions o;
    o.seed = Mix(seed ^ Mix(indexed ? device : ~0ull));
    o.trace_capacity = trace_capacity;
    auto fault = std::make_unique<FaultNamespace>(
        *std::move(ns), indexed ? reg->RulesFor(device) : std::vector<FaultRule>(), o);
    if (indexed) reg->Register(device, fault.get(), reg);
    return std::unique_ptr<Namespace>(std::move(fault));
  };
}

}  // namespace ecd::store
