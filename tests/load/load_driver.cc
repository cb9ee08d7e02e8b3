// ecd_load: the load test's driver (docs/load.md). N client threads run a seeded random mix of
// encode, read (whole and ranges), update (overwrite and append), delete, stat and list against a
// running ecd over ecd.v1 for a bounded time, each checking every answer against its own model of
// the objects it owns (their exact bytes); a read of another client's object, racing its owner's
// updates and deletes, must return exactly one committed version (History). Meanwhile an
// injector thread fails devices and brings them back, injects CXL memory-module (evacuate) and
// media-error (rebuild) events, and recovers objects while clients update them, keeping at most
// one device out of service at a time (every shape has K >= 2, so a device failure plus the
// flaky last device stay recoverable). At the end it quiesces (all devices online, rebuild jobs
// finished), reads every object back byte for byte, checks deleted ones are NOT_FOUND, that
// nothing is reported lost (List and /metrics), and that the daemon's peak RSS (VmHWM) stayed
// under the bound of docs/load.md. Prints throughput per operation and the peak RSS.
// Exit 0 on success, 1 on a failed check, 2 on bad flags.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "ecd/v1/ecd.grpc.pb.h"

namespace {

namespace v1 = ecd::v1;
using Clock = std::chrono::steady_clock;
constexpr uint64_t kMiB = 1ull << 20;
constexpr size_t kChunk = 1 << 20;  // Bytes per Encode/Update message, as ecctl sends them.

struct Options {
  std::string addr;
  std::string metrics;  // host:port of /metrics; empty: skip the scrape.
  int pid = 0;          // The daemon's pid, for VmHWM; 0: skip the RSS check.
  double seconds = 20;
  int clients = 8;
  uint64_t seed = 1;
  int devices = 8;
  int out_of_service = 7;  // Devices 0..out_of_service-1 may be failed or evacuated.
  uint64_t max_object = 3 * kMiB;
  int objects_per_client = 8;
  bool inject = true;
  // The daemon's configured limits, for the RSS bound.
  uint64_t max_stripe_memory = 8 * kMiB;
  uint64_t nvme_host_memory = 8 * kMiB;
  int ec_workers = 2;
  bool sanitized = false;
};

// Flags are --name=value (CLI11, as ecd and ecctl parse theirs); sizes are in MiB.
bool ParseFlags(int argc, char** argv, Options& o) {
  CLI::App app{"ecd_load: concurrent clients against a live ecd (docs/load.md)"};
  uint64_t max_object_mib = o.max_object / kMiB, stripe_mib = o.max_stripe_memory / kMiB,
           host_mib = o.nvme_host_memory / kMiB;
  app.add_option("--addr", o.addr, "ecd's gRPC address HOST:PORT")->required();
  app.add_option("--metrics", o.metrics, "host:port of /metrics; empty skips the scrape");
  app.add_option("--pid", o.pid, "the daemon's pid, for VmHWM; 0 skips the RSS check");
  app.add_option("--seconds", o.seconds)->check(CLI::PositiveNumber);
  app.add_option("--clients", o.clients)->check(CLI::Range(1, 1024));
  app.add_option("--seed", o.seed);
  app.add_option("--devices", o.devices)->check(CLI::Range(7, 1024));
  app.add_option("--max-object-mib", max_object_mib);
  app.add_option("--objects-per-client", o.objects_per_client);
  app.add_option("--inject", o.inject, "inject device failures and CXL events");
  app.add_option("--max-stripe-memory-mib", stripe_mib, "ecd's --max-stripe-memory");
  app.add_option("--nvme-host-memory-mib", host_mib, "ecd's --nvme-host-memory");
  app.add_option("--ec-workers", o.ec_workers, "ecd's --ec-workers");
  app.add_option("--sanitized", o.sanitized, "ecd is built with ASan (widens the RSS bound)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // Prints the error (or --help).
    return false;
  }
  o.max_object = max_object_mib * kMiB;
  o.max_stripe_memory = stripe_mib * kMiB;
  o.nvme_host_memory = host_mib * kMiB;
  o.out_of_service = o.devices - 1;  // The last device carries --fault-inject read faults.
  return true;
}

// Failures are collected, not fatal at once, so that the run reports all it saw.
class Failures {
 public:
  void Add(const std::string& what) {
    std::lock_guard lock(mu_);
    if (list_.size() < 50) list_.push_back(what);
    ++count_;
  }
  int count() {
    std::lock_guard lock(mu_);
    return count_;
  }
  void Print() {
    std::lock_guard lock(mu_);
    for (const std::string& f : list_) std::printf("FAIL: %s\n", f.c_str());
  }

 private:
  std::mutex mu_;
  std::vector<std::string> list_;
  int count_ = 0;
};
Failures failures;

// Every client's objects as the other clients may see them: the bytes of the last few committed
// versions of each name, so that a read racing an update or delete of an object another client
// owns can still be checked exactly (it must return one committed version, whole).
class History {
 public:
  static constexpr size_t kKept = 6;
  void Commit(const std::string& name, uint64_t version, const std::string& bytes) {
    auto copy = std::make_shared<const std::string>(bytes);
    std::lock_guard lock(mu_);
    auto& versions = names_[name];
    versions[version] = std::move(copy);
    while (versions.size() > kKept) versions.erase(versions.begin());
  }
  void Erase(const std::string& name) {
    std::lock_guard lock(mu_);
    names_.erase(name);
  }
  // A random name some client stores; empty if none.
  std::string Pick(uint64_t r) {
    std::lock_guard lock(mu_);
    if (names_.empty()) return "";
    auto it = names_.begin();
    std::advance(it, r % names_.size());
    return it->first;
  }
  // The bytes of `version` of `name`; null if unknown (not yet recorded, or pruned). `pruned`
  // tells the second case apart (older than every version kept).
  std::shared_ptr<const std::string> Get(const std::string& name, uint64_t version, bool& pruned) {
    std::lock_guard lock(mu_);
    pruned = false;
    auto it = names_.find(name);
    if (it == names_.end()) return nullptr;
    auto v = it->second.find(version);
    if (v != it->second.end()) return v->second;
    pruned = !it->second.empty() && version < it->second.begin()->first;
    return nullptr;
  }
  bool Has(const std::string& name) {
    std::lock_guard lock(mu_);
    return names_.count(name) > 0;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::map<uint64_t, std::shared_ptr<const std::string>>> names_;
};
History history;

std::string Describe(const grpc::Status& s) {
  return absl::StrCat("code ", static_cast<int>(s.error_code()), ": ", s.error_message());
}

enum Op { kEncode, kRead, kReadRange, kReadOther, kUpdate, kDelete, kStat, kList, kOps };
const char* const kOpNames[kOps] = {"encode", "read",   "read-range", "read-other",
                                    "update", "delete", "stat",       "list"};

struct OpStats {
  uint64_t ok = 0, refused = 0, bytes = 0;
  double seconds = 0;  // Time inside the RPCs.
  std::map<int, uint64_t> refused_by_code;
  std::map<int, std::string> first_message;  // Of each refusal code.
  void Merge(const OpStats& o) {
    ok += o.ok, refused += o.refused, bytes += o.bytes, seconds += o.seconds;
    for (auto [c, n] : o.refused_by_code) refused_by_code[c] += n;
    for (const auto& [c, m] : o.first_message) first_message.emplace(c, m);
  }
};

struct Shape {
  uint32_t m, k;
  uint64_t block_size;
};
// Every shape has K >= 2 and M+K <= 7: one device out of service plus the flaky last device
// never cost a stripe more than K blocks, and a stripe always finds M+K online devices.
const Shape kShapes[] = {{4, 2, 64 << 10}, {2, 2, 4 << 10},   {3, 3, 16 << 10}, {5, 2, 1 << 20},
                         {1, 2, 4 << 10},  {4, 3, 256 << 10}, {4, 2, 1 << 20}};

std::unique_ptr<v1::Objects::Stub> ObjectsStub(const std::string& addr) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // Its own connection per client.
  return v1::Objects::NewStub(
      grpc::CreateCustomChannel(addr, grpc::InsecureChannelCredentials(), args));
}

void FillRandom(std::mt19937_64& rng, std::string& s) {
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(&s[i], &v, 8);
  }
  for (; i < s.size(); ++i) s[i] = static_cast<char>(rng());
}

grpc::Status DoRead(v1::Objects::Stub& stub, const std::string& name, uint64_t offset,
                    uint64_t length, std::string& out, uint64_t& size,
                    uint64_t* version = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  v1::ReadRequest req;
  req.set_name(name);
  req.set_offset(offset);
  req.set_length(length);
  auto reader = stub.Read(&ctx, req);
  v1::ReadResponse r;
  out.clear();
  size = 0;
  while (reader->Read(&r)) {
    if (r.object_size() > 0) size = r.object_size();
    if (version != nullptr && r.object_version() > 0) *version = r.object_version();
    out += r.data();
  }
  return reader->Finish();
}

// Allowed refusals while devices fail under the clients: too few online devices for a stripe
// (FAILED_PRECONDITION), no room (RESOURCE_EXHAUSTED) or a device that failed mid-write
// (UNAVAILABLE, DATA_LOSS or INTERNAL for a write only). Each is checked to have changed nothing.
bool WriteRefusalAllowed(grpc::StatusCode c) {
  return c == grpc::StatusCode::FAILED_PRECONDITION || c == grpc::StatusCode::RESOURCE_EXHAUSTED ||
         c == grpc::StatusCode::UNAVAILABLE || c == grpc::StatusCode::DATA_LOSS ||
         c == grpc::StatusCode::INTERNAL;
}

// One client: owns the objects named c<id>-<n> and their exact bytes.
class Client {
 public:
  Client(int id, const Options& o)
      : id_(id), o_(o), rng_(o.seed * 1000003 + id), stub_(ObjectsStub(o.addr)) {}

  void Run(Clock::time_point end) {
    while (Clock::now() < end && failures.count() == 0) {
      int dice = static_cast<int>(rng_() % 100);
      if (objects_.empty() ||
          (dice < 22 && objects_.size() < static_cast<size_t>(o_.objects_per_client)))
        Encode();
      else if (dice < 34)
        Read(false);
      else if (dice < 46)
        ReadOther();
      else if (dice < 58)
        Read(true);
      else if (dice < 78)
        Update();
      else if (dice < 86)
        Delete();
      else if (dice < 96)
        Stat();
      else
        List();
    }
  }

  // After quiescing: every object is read back whole; every deleted or refused one is gone.
  void Verify(OpStats& stats) {
    for (auto& [name, bytes] : objects_) {
      std::string got;
      uint64_t size = 0;
      grpc::Status s = DoRead(*stub_, name, 0, 0, got, size);
      if (!s.ok()) {
        failures.Add(absl::StrCat("final read of ", name, ": ", Describe(s)));
      } else if (got != bytes) {
        failures.Add(absl::StrCat("final read of ", name, ": ", got.size(),
                                  " bytes differ from the ", bytes.size(), " of the model at byte ",
                                  FirstDiff(got, bytes)));
      } else {
        ++stats.ok, stats.bytes += got.size();
      }
    }
    for (const std::string& name : gone_) {
      if (objects_.count(name)) continue;
      std::string got;
      uint64_t size = 0;
      grpc::Status s = DoRead(*stub_, name, 0, 0, got, size);
      if (s.error_code() != grpc::StatusCode::NOT_FOUND)
        failures.Add(
            absl::StrCat("final read of deleted ", name, ": want NOT_FOUND, got ", Describe(s)));
    }
  }

  const std::map<std::string, std::string>& objects() const { return objects_; }
  const std::set<std::string>& gone() const { return gone_; }
  OpStats stats[kOps];

 private:
  static size_t FirstDiff(const std::string& a, const std::string& b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
  }

  uint64_t RandomSize(uint64_t max) {
    int d = static_cast<int>(rng_() % 20);
    if (d == 0) return 0;
    if (d < 8) return 1 + rng_() % 5000;          // Small and odd.
    if (d < 15) return 1 + rng_() % (256 << 10);  // Medium.
    return 1 + rng_() % max;                      // Up to max_object.
  }

  std::string PickName() {
    auto it = objects_.begin();
    std::advance(it, rng_() % objects_.size());
    return it->first;
  }

  void Record(Op op, Clock::time_point t0, const grpc::Status& s, uint64_t bytes) {
    OpStats& st = stats[op];
    st.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    if (s.ok()) {
      ++st.ok, st.bytes += bytes;
    } else {
      ++st.refused, ++st.refused_by_code[s.error_code()];
      st.first_message.emplace(s.error_code(), s.error_message());
    }
  }

  void Encode() {
    const Shape& shape = kShapes[rng_() % std::size(kShapes)];
    std::string name = absl::StrCat("c", id_, "-", next_++);
    std::string bytes(RandomSize(o_.max_object), '\0');
    FillRandom(rng_, bytes);
    auto t0 = Clock::now();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
    v1::EncodeResponse resp;
    auto writer = stub_->Encode(&ctx, &resp);
    size_t at = 0;
    bool first = true;
    while (first || at < bytes.size()) {
      v1::EncodeRequest req;
      if (first) {
        auto* h = req.mutable_header();
        h->set_name(name);
        h->set_data_blocks(shape.m);
        h->set_parity_blocks(shape.k);
        h->set_block_size(shape.block_size);
        h->set_matrix(rng_() % 2 ? v1::MATRIX_TYPE_CAUCHY : v1::MATRIX_TYPE_VANDERMONDE);
        first = false;
      }
      size_t n = std::min(kChunk, bytes.size() - at);
      req.set_data(bytes.substr(at, n));
      at += n;
      if (!writer->Write(req)) break;
    }
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    Record(kEncode, t0, s, bytes.size());
    if (s.ok()) {
      if (resp.object().size() != bytes.size())
        failures.Add(absl::StrCat("encode ", name, ": size ", resp.object().size(), ", sent ",
                                  bytes.size()));
      history.Commit(name, resp.object().version(), bytes);
      objects_[name] = std::move(bytes);
    } else if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT &&
               absl::StrContains(s.error_message(), "Vandermonde")) {
      // A Vandermonde shape the daemon refuses (not every pattern invertible): never stored.
      gone_.insert(name);
    } else if (WriteRefusalAllowed(s.error_code())) {
      gone_.insert(name);  // "On error nothing is stored": checked at the end.
    } else {
      failures.Add(absl::StrCat("encode ", name, " (", shape.m, "+", shape.k, " ", shape.block_size,
                                " B, ", bytes.size(), " B): ", Describe(s)));
    }
  }

  void Read(bool range) {
    std::string name = PickName();
    const std::string& model = objects_[name];
    uint64_t offset = 0, length = 0;
    if (range && !model.empty()) {
      offset = rng_() % model.size();
      length = 1 + rng_() % (model.size() - offset);
    }
    auto t0 = Clock::now();
    std::string got;
    uint64_t size = 0;
    grpc::Status s = DoRead(*stub_, name, offset, length, got, size);
    Record(range ? kReadRange : kRead, t0, s, got.size());
    if (!s.ok()) {
      failures.Add(absl::StrCat("read ", name, " [", offset, "+", length, "]: ", Describe(s)));
      return;
    }
    std::string want = length ? model.substr(offset, length) : model;
    if (got != want)
      failures.Add(absl::StrCat("read ", name, " [", offset, "+", length, "]: ", got.size(),
                                " bytes, want ", want.size(), ", first difference at ",
                                FirstDiff(got, want)));
  }

  // Reads an object another client owns (and may be updating or deleting right now): the bytes
  // must be exactly those of the version the response names; NOT_FOUND only once it is deleted.
  void ReadOther() {
    std::string name = history.Pick(rng_());
    if (name.empty()) return;
    auto t0 = Clock::now();
    std::string got;
    uint64_t size = 0, version = 0;
    grpc::Status s = DoRead(*stub_, name, 0, 0, got, size, &version);
    Record(kReadOther, t0, s, got.size());
    auto wait_until = Clock::now() + std::chrono::seconds(5);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
      // The owner erases the name from the history right after its Delete returns.
      while (history.Has(name) && Clock::now() < wait_until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (history.Has(name))
        failures.Add(absl::StrCat("read of ", name,
                                  " (another client's): NOT_FOUND, but it is "
                                  "not deleted"));
      return;
    }
    if (!s.ok()) {
      failures.Add(absl::StrCat("read of ", name, " (another client's): ", Describe(s)));
      return;
    }
    for (;;) {
      bool pruned = false;
      std::shared_ptr<const std::string> want = history.Get(name, version, pruned);
      if (want != nullptr) {
        if (*want != got)
          failures.Add(absl::StrCat("read of ", name, " (another client's) version ", version, ": ",
                                    got.size(), " bytes, want ", want->size(),
                                    ", first difference at ", FirstDiff(got, *want)));
        return;
      }
      // Pruned (many updates during the read), or deleted since: nothing left to compare with.
      if (pruned || !history.Has(name)) return;
      if (Clock::now() > wait_until) {  // The owner records a version right after it commits.
        failures.Add(absl::StrCat("read of ", name, " (another client's) returned version ",
                                  version, ", which was never committed"));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  void Update() {
    std::string name = PickName();
    std::string& model = objects_[name];
    uint64_t offset = model.empty() ? 0 : rng_() % (model.size() + 1);
    bool append = rng_() % 4 == 0;
    uint64_t room = model.size() - offset;
    uint64_t n = 1 + rng_() % (64 << 10);
    if (!append) {
      if (room == 0) return;
      n = std::min<uint64_t>(n, room);
    } else if (model.size() + n > o_.max_object + kMiB) {
      append = false;
      if (room == 0) return;
      n = std::min<uint64_t>(n, room);
    }
    std::string patch(n, '\0');
    FillRandom(rng_, patch);
    auto t0 = Clock::now();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
    v1::UpdateResponse resp;
    auto writer = stub_->Update(&ctx, &resp);
    v1::UpdateRequest req;
    req.mutable_header()->set_name(name);
    req.mutable_header()->set_offset(offset);
    req.mutable_header()->set_append(append);
    req.set_data(patch);
    writer->Write(req);
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    Record(kUpdate, t0, s, n);
    if (s.ok()) {
      if (model.size() < offset + n) model.resize(offset + n);
      model.replace(offset, n, patch);
      history.Commit(name, resp.object().version(), model);
      if (resp.object().size() != model.size() || resp.bytes_written() != n)
        failures.Add(absl::StrCat("update ", name, " at ", offset, "+", n, ": size ",
                                  resp.object().size(), " written ", resp.bytes_written(),
                                  ", model size ", model.size()));
    } else if (!WriteRefusalAllowed(s.error_code())) {
      failures.Add(absl::StrCat("update ", name, " at ", offset, "+", n, (append ? " append" : ""),
                                ": ", Describe(s)));
    }
  }

  void Delete() {
    std::string name = PickName();
    auto t0 = Clock::now();
    grpc::ClientContext ctx;
    v1::DeleteRequest req;
    req.set_name(name);
    v1::DeleteResponse resp;
    grpc::Status s = stub_->Delete(&ctx, req, &resp);
    Record(kDelete, t0, s, 0);
    if (s.ok()) {
      history.Erase(name);
      objects_.erase(name);
      gone_.insert(name);
      std::string got;
      uint64_t size;
      grpc::Status r = DoRead(*stub_, name, 0, 0, got, size);
      if (r.error_code() != grpc::StatusCode::NOT_FOUND)
        failures.Add(
            absl::StrCat("read after delete of ", name, ": want NOT_FOUND, got ", Describe(r)));
    } else if (!WriteRefusalAllowed(s.error_code())) {
      failures.Add(absl::StrCat("delete ", name, ": ", Describe(s)));
    }
  }

  void Stat() {
    std::string name = PickName();
    auto t0 = Clock::now();
    grpc::ClientContext ctx;
    v1::StatRequest req;
    req.set_name(name);
    req.set_verify(rng_() % 4 == 0);
    v1::StatResponse resp;
    grpc::Status s = stub_->Stat(&ctx, req, &resp);
    Record(kStat, t0, s, 0);
    if (!s.ok()) {
      failures.Add(absl::StrCat("stat ", name, ": ", Describe(s)));
    } else if (resp.object().size() != objects_[name].size() || resp.object().lost_stripes()) {
      failures.Add(absl::StrCat("stat ", name, ": size ", resp.object().size(), " (model ",
                                objects_[name].size(), "), lost stripes ",
                                resp.object().lost_stripes()));
    }
  }

  void List() {
    auto t0 = Clock::now();
    grpc::ClientContext ctx;
    v1::ListRequest req;
    v1::ListResponse resp;
    grpc::Status s = stub_->List(&ctx, req, &resp);
    Record(kList, t0, s, 0);
    if (!s.ok()) {
      failures.Add(absl::StrCat("list: ", Describe(s)));
      return;
    }
    // Only this client changes its objects, and it is here: List must show exactly them.
    std::string prefix = absl::StrCat("c", id_, "-");
    size_t mine = 0;
    for (const v1::ObjectInfo& info : resp.objects()) {
      if (info.name().rfind(prefix, 0) != 0) continue;
      ++mine;
      auto it = objects_.find(info.name());
      if (it == objects_.end()) {
        failures.Add(absl::StrCat("list shows ", info.name(), ", which is not stored"));
      } else if (info.size() != it->second.size() || info.lost_stripes()) {
        failures.Add(absl::StrCat("list: ", info.name(), " size ", info.size(), " (model ",
                                  it->second.size(), "), lost stripes ", info.lost_stripes()));
      }
    }
    if (mine != objects_.size())
      failures.Add(absl::StrCat("list shows ", mine, " objects of client ", id_, ", model has ",
                                objects_.size()));
  }

  const int id_;
  const Options& o_;
  std::mt19937_64 rng_;
  std::unique_ptr<v1::Objects::Stub> stub_;
  std::map<std::string, std::string> objects_;  // Name -> exact bytes.
  std::set<std::string> gone_;                  // Deleted, or refused by Encode.
  int next_ = 0;
};

// Fails, evacuates and stresses devices while the clients run; one device out at a time.
class Injector {
 public:
  explicit Injector(const Options& o) : o_(o), rng_(o.seed ^ 0x5eed) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    auto ch = grpc::CreateCustomChannel(o.addr, grpc::InsecureChannelCredentials(), args);
    devices_ = v1::Devices::NewStub(ch);
    cxl_ = v1::Cxl::NewStub(ch);
    rebuilds_ = v1::Rebuilds::NewStub(ch);
    objects_ = v1::Objects::NewStub(ch);
  }

  void Run(Clock::time_point end) {
    while (Clock::now() < end && failures.count() == 0) {
      // An evacuation that outlived its wait ends with its device failed: bring every device
      // back before taking another one out, so that at most one is ever out of service.
      if (!AllOnline()) {
        WaitRebuilds(Clock::now() + std::chrono::seconds(30));
        AllOnline();
      }
      uint32_t d = static_cast<uint32_t>(rng_() % o_.out_of_service);
      switch (rng_() % 3) {
        case 0:  // Fail a device, repair objects while it is out, bring it back.
          if (SetState(d, v1::DEVICE_STATE_FAILED)) {
            ++fails;
            Sleep(0.5 + (rng_() % 1000) / 1000.0, end);
            RecoverSome(3);
            Sleep(0.5, end);
            SetState(d, v1::DEVICE_STATE_ONLINE);
          }
          break;
        case 1: {  // A memory module reports it needs replacing: the policy evacuates it.
          v1::CxlInjectRequest req;
          req.set_device(d);
          req.set_log(v1::CXL_LOG_FAILURE);
          req.set_type("memory-module");
          req.set_health_status(4);
          if (Inject(req)) {
            ++evacuations;
            WaitRebuilds(std::min(end, Clock::now() + std::chrono::seconds(10)));
            SetState(d, v1::DEVICE_STATE_ONLINE);
          }
          break;
        }
        default: {  // An uncorrectable media error somewhere: a media-range rebuild.
          v1::CxlInjectRequest req;
          req.set_device(static_cast<uint32_t>(rng_() % o_.devices));
          req.set_log(v1::CXL_LOG_FAILURE);
          req.set_type("general-media");
          req.set_dpa((rng_() % (64 << 20)) & ~uint64_t{63});
          req.set_event_descriptor(1);
          if (Inject(req)) ++media_errors;
          Sleep(0.3, end);
          break;
        }
      }
      Sleep(0.2, end);
    }
  }

  // Quiesce: every device online and every rebuild job finished.
  bool Quiesce() {
    auto until = Clock::now() + std::chrono::seconds(60);
    for (;;) {
      WaitRebuilds(until);
      if (AllOnline() && WaitRebuilds(until)) return true;
      if (Clock::now() > until) return false;
    }
  }

  int fails = 0, evacuations = 0, media_errors = 0, recovers = 0;

 private:
  void Sleep(double s, Clock::time_point end) {
    auto until = std::min(end, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(s)));
    std::this_thread::sleep_until(until);
  }

  // True if every device is online; sets the others online (and returns false).
  bool AllOnline() {
    grpc::ClientContext ctx;
    v1::ListDevicesResponse resp;
    if (!devices_->List(&ctx, v1::ListDevicesRequest(), &resp).ok()) return false;
    bool all = true;
    for (const auto& dev : resp.devices()) {
      if (dev.state() != v1::DEVICE_STATE_ONLINE) {
        all = false;
        SetState(dev.id(), v1::DEVICE_STATE_ONLINE);
      }
    }
    return all;
  }

  bool SetState(uint32_t d, v1::DeviceState state) {
    grpc::ClientContext ctx;
    v1::SetDeviceStateRequest req;
    req.set_id(d);
    req.set_state(state);
    v1::SetDeviceStateResponse resp;
    grpc::Status s = devices_->SetState(&ctx, req, &resp);
    if (!s.ok() && s.error_code() != grpc::StatusCode::FAILED_PRECONDITION)
      failures.Add(absl::StrCat("set device ", d, " state ", state, ": ", Describe(s)));
    return s.ok();
  }

  bool Inject(const v1::CxlInjectRequest& req) {
    grpc::ClientContext ctx;
    v1::CxlInjectResponse resp;
    grpc::Status s = cxl_->Inject(&ctx, req, &resp);
    if (!s.ok()) failures.Add(absl::StrCat("cxl inject ", req.type(), ": ", Describe(s)));
    return s.ok();
  }

  // Recover (rebuild elsewhere) a few objects the clients are reading and updating meanwhile.
  void RecoverSome(int n) {
    grpc::ClientContext lctx;
    v1::ListResponse list;
    if (!objects_->List(&lctx, v1::ListRequest(), &list).ok() || list.objects_size() == 0) return;
    for (int i = 0; i < n; ++i) {
      const std::string& name = list.objects(rng_() % list.objects_size()).name();
      grpc::ClientContext ctx;
      v1::RecoverRequest req;
      req.set_name(name);
      auto reader = objects_->Recover(&ctx, req);
      v1::RecoverProgress p;
      while (reader->Read(&p)) {
      }
      grpc::Status s = reader->Finish();
      if (s.ok()) ++recovers;
      // UNAVAILABLE: an injected write fault failed a rebuilt block's write; nothing was
      // committed (the end-of-run checks still read every object back). FAILED_PRECONDITION: a
      // stripe is on every online device, so a block on the failed one has nowhere to go.
      else if (s.error_code() != grpc::StatusCode::NOT_FOUND &&
               s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED &&
               s.error_code() != grpc::StatusCode::FAILED_PRECONDITION &&
               s.error_code() != grpc::StatusCode::UNAVAILABLE)
        failures.Add(absl::StrCat("recover ", name, " with a device failed: ", Describe(s)));
    }
  }

  // Waits until no rebuild job is queued or running; false at `until`.
  bool WaitRebuilds(Clock::time_point until) {
    for (;;) {
      grpc::ClientContext ctx;
      v1::ListRebuildsResponse resp;
      if (!rebuilds_->List(&ctx, v1::ListRebuildsRequest(), &resp).ok()) return false;
      bool busy = false;
      for (const auto& j : resp.jobs()) {
        if (j.state() == "queued" || j.state() == "running") busy = true;
        if (j.state() == "failed" && !reported_.count(j.id())) {
          reported_.insert(j.id());
          std::printf("note: rebuild job %llu (%s) failed: %s\n",
                      static_cast<unsigned long long>(j.id()), j.kind().c_str(), j.error().c_str());
        }
      }
      if (!busy) return true;
      if (Clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  const Options& o_;
  std::mt19937_64 rng_;
  std::unique_ptr<v1::Devices::Stub> devices_;
  std::unique_ptr<v1::Cxl::Stub> cxl_;
  std::unique_ptr<v1::Rebuilds::Stub> rebuilds_;
  std::unique_ptr<v1::Objects::Stub> objects_;
  std::set<uint64_t> reported_;
};

// A "Key:   N kB" field of /proc/PID/status in bytes (0 if unreadable): VmHWM is the peak RSS.
uint64_t ProcStatus(int pid, const std::string& key) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      uint64_t kb = 0;
      std::istringstream(line.substr(key.size() + 1)) >> kb;
      return kb << 10;
    }
  }
  return 0;
}

// The body of GET http://HOST:PORT/metrics (HTTP/1.0, loopback); empty on error.
std::string FetchMetrics(const std::string& hostport) {
  auto colon = hostport.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(hostport.substr(colon + 1), &port)) return "";
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, hostport.substr(0, colon).c_str(), &sa.sin_addr);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    std::string req = "GET /metrics HTTP/1.0\r\nHost: " + hostport + "\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  auto body = out.find("\r\n\r\n");
  return body == std::string::npos ? "" : out.substr(body + 4);
}

// The value of one series (name and labels exactly as printed) in a scrape; -1 when absent.
double ScrapeMetric(const std::string& hostport, const std::string& series) {
  std::string body = FetchMetrics(hostport);
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (absl::StartsWith(line, series + " ")) {
      double v;
      if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
    }
  }
  return -1;
}
}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseFlags(argc, argv, o)) return 2;
  std::printf("ecd_load: %d clients for %.0f s against %s, seed %llu, injection %s\n", o.clients,
              o.seconds, o.addr.c_str(), static_cast<unsigned long long>(o.seed),
              o.inject ? "on" : "off");
  std::fflush(stdout);

  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < o.clients; ++i) clients.push_back(std::make_unique<Client>(i, o));
  Injector injector(o);
  auto start = Clock::now();
  auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  std::vector<std::thread> threads;
  for (auto& c : clients) threads.emplace_back([&c, end] { c->Run(end); });
  std::thread inject;
  if (o.inject) inject = std::thread([&] { injector.Run(end); });
  for (auto& t : threads) t.join();
  if (inject.joinable()) inject.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  // Quiesce, then check everything.
  if (!injector.Quiesce()) failures.Add("could not quiesce: devices not online or rebuilds busy");
  OpStats verify;
  auto v0 = Clock::now();
  for (auto& c : clients) c->Verify(verify);
  double verify_s = std::chrono::duration<double>(Clock::now() - v0).count();
  size_t live = 0, gone = 0;
  uint64_t expected_used = 0;  // Device bytes the listed objects' blocks take.
  for (auto& c : clients) live += c->objects().size(), gone += c->gone().size();
  {
    auto stub = ObjectsStub(o.addr);
    grpc::ClientContext ctx;
    v1::ListResponse list;
    grpc::Status s = stub->List(&ctx, v1::ListRequest(), &list);
    if (!s.ok()) failures.Add(absl::StrCat("final list: ", Describe(s)));
    uint64_t lost = 0;
    for (const auto& info : list.objects()) {
      lost += info.lost_stripes();
      const uint64_t stride = (info.block_size() + 4095) / 4096 * 4096;  // Whole 4 KiB LBAs.
      expected_used += info.stripe_count() * (info.data_blocks() + info.parity_blocks()) * stride;
    }
    if (s.ok() && (static_cast<size_t>(list.objects_size()) != live || lost != 0))
      failures.Add(absl::StrCat("final list: ", list.objects_size(), " objects (model ", live,
                                "), ", lost, " lost stripes"));
  }
  {
    grpc::ChannelArguments args;
    auto devices = v1::Devices::NewStub(
        grpc::CreateCustomChannel(o.addr, grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext ctx;
    v1::ListDevicesResponse resp;
    if (devices->List(&ctx, v1::ListDevicesRequest(), &resp).ok()) {
      uint64_t used = 0, blocks = 0;
      for (const auto& d : resp.devices()) {
        used += d.used_bytes(), blocks += d.blocks();
        expected_used += d.metadata_bytes();  // its label and its block-record log
      }
      std::printf("devices: %.1f MB used by %llu blocks; the objects' blocks take %.1f MB\n",
                  used / 1e6, static_cast<unsigned long long>(blocks), expected_used / 1e6);
      // Every extent of a deleted, refused or superseded version must have been freed.
      if (used != expected_used)
        failures.Add(absl::StrCat("devices report ", used, " bytes used, the objects' blocks take ",
                                  expected_used, ": leaked or double-freed extents"));
    }
  }
  if (!o.metrics.empty()) {
    double lost = ScrapeMetric(o.metrics, "ecd_lost_stripes");
    double objects = ScrapeMetric(o.metrics, "ecd_objects");
    std::printf("metrics: ecd_objects %.0f, ecd_lost_stripes %.0f\n", objects, lost);
    if (lost != 0) failures.Add(absl::StrCat("/metrics ecd_lost_stripes is ", lost, ", want 0"));
    if (objects != static_cast<double>(live))
      failures.Add(absl::StrCat("/metrics ecd_objects is ", objects, ", model has ", live));
  }

  // Throughput.
  OpStats total[kOps];
  for (auto& c : clients)
    for (int i = 0; i < kOps; ++i) total[i].Merge(c->stats[i]);
  std::printf("%-11s %8s %8s %9s %9s  %s\n", "op", "ok", "refused", "ops/s", "MB/s", "refusals");
  uint64_t all_ops = 0, all_bytes = 0;
  for (int i = 0; i < kOps; ++i) {
    std::string codes;
    for (auto [c, n] : total[i].refused_by_code) absl::StrAppend(&codes, "code", c, "x", n, " ");
    std::printf("%-11s %8llu %8llu %9.1f %9.2f  %s\n", kOpNames[i],
                static_cast<unsigned long long>(total[i].ok),
                static_cast<unsigned long long>(total[i].refused), total[i].ok / elapsed,
                total[i].bytes / elapsed / 1e6, codes.c_str());
    all_ops += total[i].ok, all_bytes += total[i].bytes;
  }
  for (int i = 0; i < kOps; ++i)
    for (const auto& [c, m] : total[i].first_message)
      std::printf("  %s code %d, e.g.: %s\n", kOpNames[i], c, m.c_str());
  std::printf("%-11s %8llu %8s %9.1f %9.2f\n", "all", static_cast<unsigned long long>(all_ops), "",
              all_ops / elapsed, all_bytes / elapsed / 1e6);
  std::printf(
      "verify: %llu objects (%.1f MB) read back in %.1f s; %zu deleted or refused names "
      "NOT_FOUND\n",
      static_cast<unsigned long long>(verify.ok), verify.bytes / 1e6, verify_s, gone);
  std::printf("injected: %d device failures, %d evacuations, %d media errors, %d recovers\n",
              injector.fails, injector.evacuations, injector.media_errors, injector.recovers);

  // Peak RSS against the bound of docs/load.md:
  //   requests = (clients + 3) x (ec_workers + 3) x max_stripe_memory
  //              (every client request, a rebuild job, a recover and a scrub, each holding at
  //              most an encode's ec_workers + 3 stripes; a read holds 3, a recover 4)
  //   bound = 64 MiB base + devices x nvme_host_memory + 2 x requests
  //         + clients x 16 MiB (gRPC buffers: the daemon accepts 16 MiB messages)
  //   The factor 2 is glibc's: freed stripes stay resident in its per-thread arenas.
  //   Sanitized (ASan): 2 x bound + 256 MiB (shadow, redzones and the freed-memory quarantine).
  if (o.pid > 0) {
    uint64_t hwm = ProcStatus(o.pid, "VmHWM");
    std::printf("RSS of ecd now: %.1f MiB anonymous, %.1f MiB file, %.1f MiB shared memory\n",
                static_cast<double>(ProcStatus(o.pid, "RssAnon")) / kMiB,
                static_cast<double>(ProcStatus(o.pid, "RssFile")) / kMiB,
                static_cast<double>(ProcStatus(o.pid, "RssShmem")) / kMiB);
    const uint64_t requests = (o.clients + 3ull) * (o.ec_workers + 3ull) * o.max_stripe_memory;
    uint64_t bound =
        64 * kMiB + o.devices * o.nvme_host_memory + 2 * requests + o.clients * 16 * kMiB;
    if (o.sanitized) bound = 2 * bound + 256 * kMiB;
    std::printf("peak RSS (VmHWM) of ecd: %.1f MiB, bound %.1f MiB%s\n",
                static_cast<double>(hwm) / kMiB, static_cast<double>(bound) / kMiB,
                o.sanitized ? " (sanitized build)" : "");
    if (hwm == 0) failures.Add(absl::StrCat("cannot read VmHWM of pid ", o.pid));
    if (hwm > bound)
      failures.Add(
          absl::StrCat("peak RSS ", hwm >> 20, " MiB exceeds the bound ", bound >> 20, " MiB"));
  }
  std::fflush(stdout);
  if (failures.count()) {
    failures.Print();
    std::printf("ecd_load: FAILED (%d failures)\n", failures.count());
    return 1;
  }
  std::printf("ecd_load: PASS\n");
  return 0;
}
