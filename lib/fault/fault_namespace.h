// FaultNamespace: a Namespace that wraps another one, injects device faults (EIO on read, write
// or flush, short writes, torn writes at a sector boundary, latency) by configurable rules, and
// accounts every I/O (counters and an optional bounded trace). For tests and for `ecd
// --fault-inject`; the store cannot tell it from a misbehaving device.
#ifndef ECD_LIB_STORE_FAULT_NAMESPACE_H_
#define ECD_LIB_STORE_FAULT_NAMESPACE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "lib/devices/namespace.h"
#include "lib/util/mutex.h"

namespace ecd::store {

// One fault to inject. A rule matches an operation of its `op` (kAny: read, write and flush)
// whose LBA range overlaps the rule's (flushes have no range and match any). Of the matching
// operations, the first `after_ops` pass untouched; each later one fires with `probability`,
// at most `max_hits` times (0: without limit). Rules are evaluated in order: every latency
// rule that fires adds its delay; the first failing rule that fires decides the outcome and ends
// the evaluation.
struct FaultRule {
  enum class Op { kRead, kWrite, kFlush, kAny };
  enum class Kind {
    kEio,         // The command fails as a media error; nothing is read or written.
    kShortWrite,  // Only a prefix of whole LBAs is written (possibly none); the write fails.
    kTornWrite,   // A prefix cut at a sector_size boundary is written, even inside an LBA (the
                  // rest keeps its old bytes); the write fails.
    kLatency,     // Sleeps `latency`, then performs the operation normally.
  };
  Op op = Op::kAny;
  Kind kind = Kind::kEio;
  double probability = 1.0;  // In [0, 1].
  uint64_t first_lba = 0;
  uint64_t lba_count = 0;      // 0: the whole device (first_lba is then ignored).
  uint64_t after_ops = 0;      // Start after this many matching operations.
  uint64_t max_hits = 0;       // 0: unlimited.
  absl::Duration latency;      // kLatency only.
  uint32_t sector_size = 512;  // kTornWrite only: the granularity of the cut (a power of two).
};

// Parses a fault spec: rules separated by ';', each `OP:KIND[:PARAM]...`.
//
//   spec   := rule (';' rule)*          empty rules (";;", a trailing ';') are skipped
//   rule   := op ':' kind (':' param)*
//   op     := read | write | flush | any
//   kind   := eio | short | torn | latency   (short and torn need op write)
//   param  := p=FLOAT                 probability in [0, 1] (default 1)
//           | lba=FIRST[+COUNT]       only I/O overlapping LBAs [FIRST, FIRST+COUNT); COUNT
//                                     defaults to 1 (not with flush)
//           | after=N                 the first N matching operations pass
//           | max=N                   fire at most N times (0: unlimited)
//           | ms=FLOAT | us=N         the delay of a latency rule (required for latency only)
//           | sector=N                the cut granularity of a torn rule (power of two, default
//                                     512)
//
// Example:
// "write:eio:p=0.1;read:latency:ms=5;write:torn:sector=512:lba=100+50;flush:eio:after=3:max=1".
// InvalidArgument names the offending rule and token.
absl::StatusOr<std::vector<FaultRule>> ParseFaultSpec(absl::string_view spec);

// Parses `DEV=SPEC[,DEV=SPEC...]` (the value of `ecd --fault-inject`): a device index, '=' and
// a fault spec, per device; empty items are skipped. InvalidArgument for an item without a
// device index, a spec that does not parse (its message prefixed with the device) or a device
// given twice.
absl::StatusOr<std::map<uint32_t, std::vector<FaultRule>>> ParseDeviceFaultSpecs(
    absl::string_view specs);

// One I/O as the namespace received it, whatever faults were injected into it.
struct IoRecord {
  FaultRule::Op op = FaultRule::Op::kRead;  // kRead or kWrite.
  uint64_t lba = 0;
  uint64_t count = 0;  // LBAs.
  friend bool operator==(const IoRecord&, const IoRecord&) = default;
};

struct FaultNamespaceOptions {
  uint64_t seed = 0;          // Seeds the std::mt19937_64 behind every probability draw.
  size_t trace_capacity = 0;  // Records kept for TakeTrace (the oldest are dropped); 0: none.
};

// Thread safety: all methods are thread-safe except set_on_destroy; operations are forwarded to
// the inner namespace without holding the rule lock, so the inner namespace's concurrency is
// preserved. Latency is slept on the calling thread. With the same seed, rules and sequence of
// operations the same faults fire. ReadAsync and WriteAsync are Namespace's defaults: they run
// Read and Write (faults included) and complete before they return. An I/O the inner namespace
// refuses (misaligned, out of range) is forwarded without faults or accounting.
class FaultNamespace final : public Namespace {
 public:
  // Owns `inner`.
  FaultNamespace(std::unique_ptr<Namespace> inner, std::vector<FaultRule> rules,
                 FaultNamespaceOptions options = {});
  ~FaultNamespace() override;

  uint32_t lba_size() const override { return inner_->lba_size(); }
  uint64_t lba_count() const override { return inner_->lba_count(); }

  // EIO: DataLoss "NVMe Unrecovered Read Error", out untouched.
  absl::Status Read(uint64_t lba, absl::Span<uint8_t> out) override;
  // EIO: DataLoss "NVMe Write Fault", nothing written. Short: Internal "NVMe Data Transfer
  // Error" after writing a whole-LBA prefix. Torn: DataLoss "NVMe Write Fault" after writing a
  // sector-aligned prefix. An error of the inner namespace while making the prefix is returned
  // instead.
  absl::Status Write(uint64_t lba, absl::Span<const uint8_t> data) override;
  // EIO: DataLoss "NVMe Write Fault" without flushing the inner namespace. Sticky: once a flush
  // failed (injected or not), every later flush fails.
  absl::Status Flush() override;
  void Deallocate(uint64_t lba, uint64_t count) override { inner_->Deallocate(lba, count); }
  absl::Status Reserve(uint64_t lba, uint64_t count) override {
    return inner_->Reserve(lba, count);
  }
  std::vector<LbaRange> AllocatedRanges() const override { return inner_->AllocatedRanges(); }

  // The inner namespace's counters followed by this one's: io_reads, io_writes, io_flushes,
  // io_read_lbas, io_write_lbas, fault_injected_eio, fault_injected_short_writes,
  // fault_injected_torn_writes, fault_injected_latency, fault_flush_failed (0 or 1),
  // fault_trace_dropped.
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

  // Replaces the rules (their after/max progress starts over); an empty list stops injecting.
  // The sticky flush failure stays.
  void SetRules(std::vector<FaultRule> rules);
  // Returns and clears the I/O records since the last call, oldest first.
  std::vector<IoRecord> TakeTrace();
  // Valid as long as this namespace.
  Namespace& inner() { return *inner_; }

  // Called once from the destructor (used by FaultRegistry). Not thread-safe. REQUIRES: called
  // before the namespace is shared between threads.
  void set_on_destroy(std::function<void(FaultNamespace*)> f) { on_destroy_ = std::move(f); }

 private:
  struct RuleState {
    FaultRule rule;
    uint64_t matched = 0;
    uint64_t hits = 0;
  };
  struct Decision {
    absl::Duration delay;  // Sum of the latency rules that fired.
    bool fail = false;     // A failing rule fired; `kind` says which.
    FaultRule::Kind kind = FaultRule::Kind::kEio;
    uint64_t cut = 0;  // Short: LBAs written. Torn: bytes written.
  };

  // Records the I/O and evaluates the rules for it.
  Decision Decide(FaultRule::Op op, uint64_t lba, uint64_t count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<Namespace> inner_;
  const size_t trace_capacity_;
  std::function<void(FaultNamespace*)> on_destroy_;

  mutable Mutex mu_;
  std::vector<RuleState> rules_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  std::deque<IoRecord> trace_ ABSL_GUARDED_BY(mu_);
  uint64_t reads_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t flushes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t read_lbas_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t write_lbas_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t eio_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t short_writes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t torn_writes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t latency_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t trace_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool flush_failed_ ABSL_GUARDED_BY(mu_) = false;
};

// The FaultNamespaces a FaultInjectingFactory opened, by device index.
// Lifetime: it only refers to namespaces; a namespace removes itself when the store destroys it
// (store close, device reopen), so Get returns null for a device that is not open. A pointer
// from Get stays valid while the store keeps that device open.
// Thread safety: all methods are thread-safe.
class FaultRegistry {
 public:
  // The open fault namespace of `device`, or null.
  FaultNamespace* Get(uint32_t device) const;
  // Replaces the rules of `device`: for its open namespace and for every later open.
  void SetRules(uint32_t device, std::vector<FaultRule> rules);

  // For FaultInjectingFactory: the rules a newly opened `device` starts with, and recording
  // it as the open namespace of `device` (it unregisters itself when destroyed). Register sets
  // ns's on_destroy, which keeps `self` alive as long as `ns`. REQUIRES: self.get() == this; `ns`
  // is not yet shared between threads.
  std::vector<FaultRule> RulesFor(uint32_t device) const;
  void Register(uint32_t device, FaultNamespace* ns, std::shared_ptr<FaultRegistry> self);
  void SetInitialRules(std::map<uint32_t, std::vector<FaultRule>> rules);

 private:
  mutable Mutex mu_;
  std::map<uint32_t, std::vector<FaultRule>> rules_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, FaultNamespace*> open_ ABSL_GUARDED_BY(mu_);
};

// A factory that opens each device with `inner` and wraps it in a FaultNamespace with the rules
// of its device index (from the path ".../nvme<N>.ns"; devices without rules are wrapped too,
// for the I/O accounting), seeded from `seed` and the index. If `registry` is not null it is set
// to the registry the factory fills; the factory keeps it alive. `trace_capacity` is passed to
// every FaultNamespace. Errors of `inner` are returned unchanged. The factory may be called
// concurrently if `inner` may.
NamespaceFactory FaultInjectingFactory(NamespaceFactory inner,
                                       std::map<uint32_t, std::vector<FaultRule>> rules,
                                       uint64_t seed,
                                       std::shared_ptr<FaultRegistry>* registry = nullptr,
                                       size_t trace_capacity = 0);

}  // namespace ecd::store

#endif  // ECD_LIB_STORE_FAULT_NAMESPACE_H_
