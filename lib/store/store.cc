// Store: encode, read, stat, delete and recover of erasure-coded objects on a set of devices.
#include "lib/store/store.h"

#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lib/records/device_label.h"
#include "lib/store/object_name.h"
#include "lib/store/store_device.h"
#include "lib/store/stripe_memory.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"

namespace ecd::store {
namespace {

// Stripes fetched from the catalog at a time, and block rows buffered before an insert.
constexpr uint64_t kStripeBatch = 64;
// The pipelines' depths unless StoreOptions::stripes_in_flight sets them.
// An encode keeps, beyond the one filling and one per EC worker, this many stripes being
// written: workers + 1 + kWritesInFlight stripes, each being filled, encoded or written.
constexpr size_t kWritesInFlight = 2;
// Stripes a read reads ahead of the one it is sending.
constexpr size_t kReadAhead = 2;
// Stripes a recover keeps at most: one being checked, rebuilt and written, the others being read.
constexpr uint64_t kRecoverStripes = 4;

// A lookup of `name` failed with `status`. NotFound for a name no object can be created with
// becomes the name rule it breaks (ValidateObjectName), so that a bad name gets a message that
// says what is wrong with it and control characters are never echoed; objects stored before a
// rule existed (or under a longer --max-name-length) stay reachable, as they are found first.
absl::Status LookupError(absl::Status status, absl::string_view name, size_t max_length) {
  if (!absl::IsNotFound(status)) return status;
  absl::Status rule = ValidateObjectName(name, max_length);
  return rule.ok() ? status : rule;
}

// A stripe buffer's bytes as the budget counts them: whole pages, as the DMA arena hands them
// out, so that the budget never promises more than the arena holds.
uint64_t RoundUpToPage(uint64_t bytes) {
  return (bytes + nvme::kMinPageSize - 1) / nvme::kMinPageSize * nvme::kMinPageSize;
}

// The stripe memory the most demanding single request on an object of M+K blocks of `stride`
// bytes needs at least: an update's two stripes, or a recover's two stripes plus the K blocks
// it verifies parity with. An object must never be stored if it could not be repaired.
uint64_t LeastStripeMemory(uint64_t m, uint64_t k, uint64_t stride) {
  return 2 * RoundUpToPage((m + k) * stride) + RoundUpToPage(k * stride);
}

// The blocks of `stripe` by index (null where the catalog has none), taken from rows ordered
// by stripe and index starting at `row`, which is advanced past them.
std::vector<const BlockRecord*> TakeStripe(const std::vector<BlockRecord>& rows, size_t& row,
                                           uint64_t stripe, int width) {
  std::vector<const BlockRecord*> by_index(width, nullptr);
  for (; row < rows.size() && rows[row].stripe == stripe; ++row) {
    if (rows[row].index < static_cast<uint32_t>(width)) by_index[rows[row].index] = &rows[row];
  }
  return by_index;
}

}  // namespace

// One stripe of M+K blocks (in the DMA arena where it can be). Each block has `stride` bytes
// (its size rounded up to whole LBAs, the unit of I/O); the checksum and the code cover the
// first block_size bytes.
struct Store::StripeBuffer {
  StripeBuffer(int blocks, uint64_t block_size, uint64_t stride, nvme::HostMemory* arena)
      : block_size(block_size), stride(stride), memory(arena, blocks * stride) {
    for (int i = 0; i < blocks; ++i) {
      views.emplace_back(memory.get() + i * stride, block_size);
    }
  }
  absl::Span<uint8_t> block(int i) { return views[i]; }
  absl::Span<uint8_t> padded(int i) { return {views[i].data(), stride}; }

  const uint64_t block_size;
  const uint64_t stride;
  StripeMemory memory;
  std::vector<absl::Span<uint8_t>> views;
};

// The stripe buffers of one request and the budget they were reserved from; the buffers go
// first, then the reservation.
struct Store::StripeSet {
  MemoryBudget::Reservation reservation;
  std::vector<std::unique_ptr<StripeBuffer>> buffers;
  StripeBuffer& operator[](size_t i) { return *buffers[i]; }
};

// Per-object reader/writer locks, created on demand and dropped when unused. Writers are
// preferred: a writer waiting for its exclusive lock holds the object's turnstile, which new
// readers pass through first, so a steady stream of reads cannot starve an update. (No request
// takes an object's lock twice, so the turnstile cannot deadlock.) A wait gives up when the
// request's Interrupt fires: a writer that gives up lets the turnstile go.
class Store::ObjectLocks {
 public:
  struct Lock {
    std::timed_mutex turnstile;
    std::shared_timed_mutex rw;
  };
  // Holds the lock of one object, shared or exclusive, for its lifetime once status() is OK;
  // DeadlineExceeded or Cancelled (nothing held) when `interrupt` fired while it waited.
  class Guard {
   public:
    Guard(ObjectLocks& table, absl::string_view name, bool exclusive,
          const Interrupt& interrupt = {})
        : table_(table), name_(name), exclusive_(exclusive), lock_(table.Get(name_)) {
      if (interrupt.never()) {
        if (exclusive_) {
          std::lock_guard turn(lock_->turnstile);
          lock_->rw.lock();
        } else {
          { std::lock_guard turn(lock_->turnstile); }
          lock_->rw.lock_shared();
        }
        return;
      }
      status_ = Take(interrupt);
    }
    ~Guard() {
      if (status_.ok()) {
        if (exclusive_) {
          lock_->rw.unlock();
        } else {
          lock_->rw.unlock_shared();
        }
      }
      table_.Put(name_, lock_);
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    const absl::Status& status() const { return status_; }

   private:
    // Takes the lock as the constructor does, in slices that end when `interrupt` is to be
    // checked again.
    absl::Status Take(const Interrupt& interrupt) {
      std::string what;  // Made once there is a wait.
      const auto within = [&](auto try_until) -> absl::Status {
        for (absl::Duration slice = absl::ZeroDuration();;) {
          if (try_until(std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(slice))) {
            return absl::OkStatus();
          }
          if (what.empty()) {
            what = absl::StrCat("waiting for the lock of \"", EscapeName(name_),
                                "\" (an update, delete or recover of it was in progress); "
                                "nothing was done");
          }
          if (absl::Status s = interrupt.Check(what); !s.ok()) return s;
          slice = std::clamp(interrupt.NextCheck() - absl::Now(), absl::ZeroDuration(),
                             absl::Seconds(1));
        }
      };
      Lock& l = *lock_;
      if (absl::Status s = within([&](auto t) { return l.turnstile.try_lock_until(t); }); !s.ok()) {
        return s;
      }
      if (!exclusive_) {
        l.turnstile.unlock();
        return within([&](auto t) { return l.rw.try_lock_shared_until(t); });
      }
      absl::Status s = within([&](auto t) { return l.rw.try_lock_until(t); });
      l.turnstile.unlock();
      return s;
    }

    ObjectLocks& table_;
    const std::string name_;
    const bool exclusive_;
    std::shared_ptr<Lock> lock_;
    absl::Status status_;
  };

 private:
  std::shared_ptr<Lock> Get(const std::string& name) {
    std::lock_guard lock(mu_);
    auto& m = locks_[name];
    if (!m) m = std::make_shared<Lock>();
    return m;
  }
  void Put(const std::string& name, std::shared_ptr<Lock>& m) {
    std::lock_guard lock(mu_);
    m.reset();
    auto it = locks_.find(name);
    if (it != locks_.end() && it->second.use_count() == 1) locks_.erase(it);
  }

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Lock>> locks_;
};

Store::Store(StoreOptions options)
    : options_(std::move(options)),
      engine_(
          std::make_unique<ec::Engine>(ec::EngineOptions{.workers = options_.ec_workers,
                                                         .on_task_done = options_.on_ec_task_done,
                                                         .pin_workers = options_.ec_pin_workers})),
      locks_(std::make_unique<ObjectLocks>()) {}

Store::~Store() {
  {
    std::unique_lock lock(pinned_mu_);
    pinned_gone_.wait(lock, [this] { return pinned_sets_ == 0; });
  }
  // A clean stop: every record log says so, with the final committed-through mark.
  if (records_ != nullptr) {
    if (absl::Status s = records_->CloseClean(); !s.ok()) {
      Log(LogLevel::kWarning, "record logs not closed cleanly: %s", s.message());
    }
  }
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(StoreOptions options) {
  if (options.data_dir.empty()) return absl::InvalidArgumentError("data dir is empty");
  if (options.lba_size < 512 || (options.lba_size & (options.lba_size - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LBA size ", options.lba_size, " is not a power of two >= 512"));
  }
  if (options.device_count < 1 || options.device_count > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("device count ", options.device_count, " must be 1..4096"));
  }
  if (options.device_size < options.lba_size || options.device_size % options.lba_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("device size ", options.device_size,
                                                   " must be a positive multiple of the LBA size ",
                                                   options.lba_size));
  }
  if (options.stripes_in_flight == 1 || options.stripes_in_flight > kMaxStripesInFlight) {
    return absl::InvalidArgumentError(absl::StrCat("stripes in flight ", options.stripes_in_flight,
                                                   " must be 2..", kMaxStripesInFlight,
                                                   " (or 0 for each request's own depth)"));
  }
  if (!options.nvme.dma_map) options.nvme.dma_map = std::make_shared<nvme::DmaMap>();
  if (!options.namespace_factory) options.namespace_factory = NvmeNamespaceFactory(options.nvme);
  std::unique_ptr<Store> store(new Store(std::move(options)));
  if (absl::Status s = store->Init(); !s.ok()) {
    if (IsCatalogDamage(s)) return store->RefuseDamagedCatalog(s);
    return s;
  }
  return store;
}

absl::Status Store::Init() {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(options_.data_dir) / "devices", ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("create data dir ", options_.data_dir, ": ", ec.message()));
  }
  if (absl::Status s = OpenCatalog(); !s.ok()) return s;
  if (options_.on_catalog_commit) catalog_->SetCommitObserver(options_.on_catalog_commit);
  space_ = std::make_shared<FsSpace>(options_.fs_reserve_bytes,
                                     options_.fs_stat ? options_.fs_stat : StatFileSystem);
  if (absl::Status s =
          space_->SetCatalog((std::filesystem::path(options_.data_dir) / "catalog.db").string());
      !s.ok()) {
    return s;
  }
  // The catalog's files (and devices/) may be new: make their directory entries durable.
  if (absl::Status s =
          SyncParentDir((std::filesystem::path(options_.data_dir) / "catalog.db").string());
      !s.ok()) {
    return s;
  }

  absl::StatusOr<std::optional<std::string>> store_id = catalog_->GetMeta("store_id");
  if (!store_id.ok()) return store_id.status();
  if (store_id->has_value()) {
    store_id_ = **store_id;
  } else {
    store_id_ = NewStoreId();
    if (absl::Status s = catalog_->SetMeta("store_id", store_id_); !s.ok()) return s;
  }

  absl::StatusOr<int> dropped = catalog_->DropPendingObjects();
  if (!dropped.ok()) return dropped.status();
  if (*dropped > 0) {
    Log(LogLevel::kWarning, "dropped %d object(s) whose encode did not finish before a stop",
        *dropped);
  }

  absl::StatusOr<std::vector<DeviceRecord>> records = catalog_->ListDevices();
  if (!records.ok()) return records.status();
  std::set<uint32_t> new_ids;
  for (uint32_t id = static_cast<uint32_t>(records->size());
       id < static_cast<uint32_t>(options_.device_count); ++id) {
    DeviceRecord d;
    d.id = id;
    d.path = absl::StrCat("devices/nvme", id, ".ns");
    d.size_bytes = options_.device_size;
    d.lba_size = options_.lba_size;
    if (absl::Status s = catalog_->AddDevice(d); !s.ok()) return s;
    records->push_back(d);
    new_ids.insert(id);
  }
  if (records->size() > static_cast<size_t>(options_.device_count)) {
    Log(LogLevel::kInfo, "catalog has %d devices; using all of them", records->size());
  }

  if (absl::Status s = InitMemory(records->size()); !s.ok()) return s;
  if (absl::Status s = OpenDevices(*records, new_ids); !s.ok()) return s;
  if (absl::Status s = OpenRecordLogs(); !s.ok()) return s;

  // Free space is whatever the catalog does not reference.
  absl::Status inconsistent;
  absl::Status s = catalog_->ForEachBlock([&](const BlockRecord& b) {
    if (!inconsistent.ok()) return;
    if (b.device >= devices_.size()) {
      inconsistent = absl::FailedPreconditionError(
          absl::StrCat("catalog references unknown device ", b.device));
      return;
    }
    inconsistent = devices_[b.device]->allocator.MarkUsed(b.lba, b.lba_count);
  });
  if (!s.ok()) return s;
  if (!inconsistent.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("catalog is inconsistent: ", inconsistent.message()));
  }
  for (auto& d : devices_) {
    if (!d->label_lba) continue;
    if (absl::Status s = d->allocator.MarkUsed(*d->label_lba, 1); !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("catalog is inconsistent: device ", d->record.id, "'s label LBA ",
                       *d->label_lba, " is also a block's: ", s.message()));
    }
  }
  for (auto& d : devices_) {
    if (d->log_place.empty()) continue;
    if (absl::Status s = d->allocator.MarkUsed(d->log_place.first_lba, d->log_place.lba_count);
        !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("catalog is inconsistent: device ", d->record.id, "'s record log (LBAs ",
                       d->log_place.first_lba, "+", d->log_place.lba_count,
                       ") overlaps a block or its label: ", s.message()));
    }
  }
  if (absl::Status s = LabelDevices(); !s.ok()) return s;
  if (absl::Status s = PrepareRecordLogs(); !s.ok()) return s;
  // After the record logs have their regions: every LBA still free is punched.
  ReclaimFreeSpace();
  return absl::OkStatus();
}

// The stripe-memory budget, and the DMA arena, made before any device opens so that each one
// registers the arena with its io_uring as fixed buffers.
absl::Status Store::InitMemory(size_t device_count) {
  // What the devices' DMA pools leave of the memory limit is for stripe buffers.
  MemoryBudgetOptions budget;
  budget.max_waiters = options_.memory_waiters;
  budget.max_wait = options_.memory_wait;
  if (options_.memory_limit > 0) {
    const uint64_t pools = device_count * options_.nvme.host_memory_bytes;
    const uint64_t stride = LbasPerBlock(options_.default_block_size) * options_.lba_size;
    const uint64_t least =
        LeastStripeMemory(options_.default_data_blocks, options_.default_parity_blocks, stride);
    if (options_.memory_limit < pools + least) {
      return absl::InvalidArgumentError(
          absl::StrCat("the memory limit of ", options_.memory_limit,
                       " bytes does not hold the DMA pools of ", device_count, " devices (", pools,
                       " bytes) and what one request on a default stripe needs (", least,
                       " bytes: two stripes and K blocks); raise --memory-limit, or lower "
                       "--nvme-host-memory or --block-size"));
    }
    budget.limit_bytes = options_.memory_limit - pools;
  }
  budget_ = std::make_unique<MemoryBudget>(budget);
  if (const uint64_t arena_pages =
          std::min(budget.limit_bytes, options_.dma_arena_bytes) / nvme::kMinPageSize;
      arena_pages > 0) {
    // The budget, or its first dma_arena_bytes, as one arena.
    absl::StatusOr<std::unique_ptr<nvme::HostMemory>> arena =
        nvme::HostMemory::Create(nvme::kMinPageSize, arena_pages);
    if (arena.ok()) {
      arena_ = *std::move(arena);
      arena_registration_ = nvme::DmaRegistration(
          options_.nvme.dma_map.get(),
          arena_->Translate(arena_->base_address(), arena_->size_bytes()), arena_->size_bytes(),
          /*fixed=*/true);
      if (!arena_registration_.registered()) {
        Log(LogLevel::kWarning,
            "the DMA arena could not be registered for DMA: stripe buffers are copied through "
            "the devices' pools");
      }
    } else {
      Log(LogLevel::kWarning,
          "no DMA arena (%s): stripe buffers are mapped per request and copied through the "
          "devices' pools, which is slower; lower --dma-arena",
          arena.status().message());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const ec::Codec>> Store::CodecFor(ec::MatrixType type, int data,
                                                                 int parity) {
  const auto key = std::make_tuple(static_cast<int>(type), data, parity);
  {
    std::lock_guard lock(mu_);
    auto it = codecs_.find(key);
    if (it != codecs_.end()) return it->second;
  }
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = ec::Codec::Create(type, data, parity);
  if (!codec.ok()) return codec.status();
  std::lock_guard lock(mu_);
  codecs_.emplace(key, *codec);
  return *codec;
}

Store::ReadBufferSets Store::read_buffer_sets() const {
  std::lock_guard lock(pinned_mu_);
  return {pinned_sets_ - outlived_sets_, outlived_sets_};
}

Store::ArenaStats Store::arena_stats() const {
  ArenaStats s;
  if (arena_ != nullptr) {
    s.bytes = arena_->size_bytes();
    s.free_bytes = arena_->free_pages() * arena_->page_size();
  }
  s.fallbacks = arena_fallbacks_.load();
  return s;
}

absl::StatusOr<Store::StripeSet> Store::AllocateStripes(const std::vector<int>& blocks,
                                                        uint64_t block_size, uint64_t extra,
                                                        const Interrupt& interrupt) {
  const uint64_t stride = LbasPerBlock(block_size) * options_.lba_size;
  uint64_t bytes = extra;
  for (int n : blocks) bytes += RoundUpToPage(static_cast<uint64_t>(n) * stride);
  StripeSet set;
  absl::StatusOr<MemoryBudget::Reservation> reserved = budget_->Reserve(bytes, interrupt);
  if (!reserved.ok()) return reserved.status();
  set.reservation = std::move(*reserved);
  for (int n : blocks) {
    set.buffers.push_back(std::make_unique<StripeBuffer>(n, block_size, stride, arena_.get()));
    if (arena_ != nullptr && !set.buffers.back()->memory.in_arena()) arena_fallbacks_.fetch_add(1);
    if (set.buffers.back()->memory.get() == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory for ", bytes, " bytes of stripe buffers"));
    }
  }
  return set;
}

Store::StripeBuffer* Store::GrowStripes(StripeSet& set, int blocks, uint64_t block_size) {
  const uint64_t stride = LbasPerBlock(block_size) * options_.lba_size;
  std::optional<MemoryBudget::Reservation> reserved =
      budget_->TryReserve(RoundUpToPage(static_cast<uint64_t>(blocks) * stride));
  if (!reserved.has_value()) return nullptr;
  auto buffer = std::make_unique<StripeBuffer>(blocks, block_size, stride, arena_.get());
  if (arena_ != nullptr && !buffer->memory.in_arena()) arena_fallbacks_.fetch_add(1);
  if (buffer->memory.get() == nullptr) return nullptr;  // The reservation goes back.
  set.reservation.Merge(*std::move(reserved));
  set.buffers.push_back(std::move(buffer));
  return set.buffers.back().get();
}

uint64_t Store::LbasPerBlock(uint64_t block_size) const {
  return (block_size + options_.lba_size - 1) / options_.lba_size;
}

size_t Store::WithinQuarter(size_t depth, uint64_t unit, uint64_t extra) const {
  const uint64_t share = budget_->limit_bytes() / 4;
  if (share == 0 || unit == 0) return depth;
  return std::clamp<size_t>(share > extra ? static_cast<size_t>((share - extra) / unit) : 0, 2,
                            depth);
}

size_t Store::PipelineDepth(size_t own, uint64_t unit) const {
  return options_.stripes_in_flight == 0 ? own : WithinQuarter(options_.stripes_in_flight, unit);
}

std::shared_ptr<Namespace> Store::NamespaceOf(uint32_t id, bool online_only) {
  std::lock_guard lock(mu_);
  if (id >= devices_.size()) return nullptr;
  const Device& d = *devices_[id];
  if (online_only && d.record.state != DeviceState::kOnline &&
      d.record.state != DeviceState::kFailing) {
    return nullptr;
  }
  return d.ns;
}

bool Store::DeviceDown(uint32_t id) {
  std::lock_guard lock(mu_);
  return id < devices_.size() && devices_[id]->record.state == DeviceState::kDown;
}

bool Store::DeviceOnline(uint32_t id) {
  std::lock_guard lock(mu_);
  if (id >= devices_.size() || devices_[id]->ns == nullptr) return false;
  const DeviceState state = devices_[id]->record.state;
  return state == DeviceState::kOnline || state == DeviceState::kFailing;
}

absl::StatusOr<ObjectRecord> Store::Encode(const EncodeParams& params, ByteSource& source,
                                           const Interrupt& interrupt) {
  if (absl::Status s = ValidateObjectName(params.name, options_.max_name_length); !s.ok()) {
    return s;
  }
  ObjectRecord object;
  object.name = params.name;
  object.data_blocks = params.data_blocks ? params.data_blocks : options_.default_data_blocks;
  object.parity_blocks =
      params.parity_blocks ? params.parity_blocks : options_.default_parity_blocks;
  object.block_size = params.block_size ? params.block_size : options_.default_block_size;
  object.matrix = params.matrix;
  object.created_unix_ms = absl::ToUnixMillis(absl::Now());
  // Clamped so that absurd requests still get ValidateShape's message, without int overflow.
  const int m = static_cast<int>(std::min<uint32_t>(object.data_blocks, 1u << 20));
  const int k = static_cast<int>(std::min<uint32_t>(object.parity_blocks, 1u << 20));
  if (absl::Status s = ec::ValidateShape(m, k); !s.ok()) return s;
  if (absl::Status s = ec::ValidateBlockSize(object.block_size); !s.ok()) return s;
  const uint64_t stride = LbasPerBlock(object.block_size) * options_.lba_size;
  {
    std::lock_guard lock(mu_);
    size_t online = 0;
    for (const auto& d : devices_) {
      online += d->record.state == DeviceState::kOnline && d->ns != nullptr;
    }
    const size_t width = static_cast<size_t>(m) + static_cast<size_t>(k);
    if (width > devices_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          m, "+", k, " puts ", m + k, " blocks of each stripe on distinct devices, but ecd has ",
          devices_.size(), "; use fewer data or parity blocks, or start ecd with more devices"));
    }
    if (width > online) {
      return absl::FailedPreconditionError(
          absl::StrCat(m, "+", k, " needs ", m + k, " online devices but only ", online,
                       " are online; bring devices online (`ecctl device online`) or use a "
                       "narrower stripe"));
    }
  }
  if (static_cast<uint64_t>(m + k) * stride > options_.max_stripe_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a stripe of ", m + k, " x ", object.block_size, " bytes exceeds the stripe memory limit (",
        options_.max_stripe_bytes, " bytes); use a smaller --block-size"));
  }
  // Never store an object that could not be updated or repaired within the memory limit.
  if (absl::Status s = budget_->CheckFits(LeastStripeMemory(m, k, stride)); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = CodecFor(object.matrix, m, k);
  if (!codec.ok()) return codec.status();

  // Stripes pipeline: while stripe n is being filled from the source on this (the caller's)
  // thread, the stripes before it are encoded and written: the EC worker that encodes a stripe
  // also computes its blocks' CRC32C in the same pass (CreateTask::checksums) and stages them
  // for the devices (StartBlockWrites), so this thread only copies the source's bytes in. Memory is
  // at most (workers + 1 + kWritesInFlight) stripes (or stripes_in_flight) whatever the object's
  // size, taken as the source delivers: the first stripe once it has bytes (or has ended), one
  // more whenever every buffer is in use and the source has more, only if the budget has it free
  // at once (GrowStripes: waiting for more while holding some could deadlock two encodes).
  const uint64_t unit = RoundUpToPage(static_cast<uint64_t>(m + k) * stride);
  const size_t depth = budget_->Fit(
      unit, PipelineDepth(static_cast<size_t>(engine_->workers()) + 1 + kWritesInFlight, unit));
  if (absl::StatusOr<bool> more = source.Await(); !more.ok()) return more.status();
  absl::StatusOr<StripeSet> buffers = AllocateStripes({m + k}, object.block_size, 0, interrupt);
  if (!buffers.ok()) return buffers.status();

  absl::StatusOr<int64_t> id = catalog_->CreatePendingObject(object);
  if (!id.ok()) return id.status();
  object.id = *id;

  // One stripe between its submit and the end of its writes. `blocks` are placed (extents
  // allocated) before the submit; the encode's callback fills their CRCs and starts the writes,
  // then sets `started`; this thread touches blocks and write only after `started` is ready.
  struct InFlight {
    StripeBuffer* buffer = nullptr;
    std::vector<BlockRecord> blocks;
    std::vector<uint32_t> checksums;  // Of blocks, filled by the encode.
    StripeWrite write;
    std::future<absl::Status> started;
  };
  std::deque<std::unique_ptr<InFlight>> in_flight;
  std::vector<StripeBuffer*> idle;
  for (auto& b : buffers->buffers) idle.push_back(b.get());

  std::vector<BlockRecord> records;  // Written, not yet in the catalog.
  std::vector<bool> touched(devices_.size(), false);
  uint64_t unflushed = 0;  // Bytes written since the last flush (FlushEvery).
  auto fail = [&](absl::Status status) -> absl::Status {
    for (auto& f : in_flight) {
      f->started.wait();  // The engine still uses the buffer, then the writes do.
      (void)f->write.Finish();
      DiscardExtents(f->blocks);
    }
    std::vector<BlockRecord> stored;
    (void)catalog_->ForEachBlockOf(object.id, [&](const BlockRecord& b) { stored.push_back(b); });
    absl::Status deleted = catalog_->DeleteObject(object.id);
    if (deleted.ok()) DiscardExtents(stored);  // Else they stay used until the next start.
    DiscardExtents(records);
    return status;
  };
  // Waits for the oldest stripe's parity and writes; its buffer is free again.
  auto finish_oldest = [&]() -> absl::Status {
    std::unique_ptr<InFlight> f = std::move(in_flight.front());
    in_flight.pop_front();
    // With a CPU the workers leave free, run queued stripes here rather than sleep until a
    // worker has; without one, this thread would only take CPU time from the workers.
    if (engine_->spare_cpu()) engine_->Progress();
    absl::Status s = f->started.get();
    absl::Status written = f->write.Finish();
    if (s.ok()) s = written;
    if (s.ok()) s = FlushEvery(f->blocks.size() * object.block_size, unflushed, touched);
    idle.push_back(f->buffer);
    records.insert(records.end(), f->blocks.begin(), f->blocks.end());  // fail() frees them.
    if (s.ok() && records.size() >= kStripeBatch * static_cast<size_t>(m + k)) {
      s = catalog_->AddBlocks(object.id, records);
      if (s.ok()) records.clear();  // Else fail() frees them: the insert was rolled back.
    }
    return s;
  };

  uint64_t size = 0;
  uint64_t stripe = 0;
  bool eof = false;
  while (!eof) {
    if (idle.empty() && buffers->buffers.size() < depth) {
      absl::StatusOr<bool> more = source.Await();
      if (!more.ok()) return fail(more.status());
      if (*more) {
        if (StripeBuffer* grown = GrowStripes(*buffers, m + k, object.block_size)) {
          idle.push_back(grown);
        }
      }
    }
    if (idle.empty()) {
      if (absl::Status s = finish_oldest(); !s.ok()) return fail(s);
    }
    StripeBuffer& buffer = *idle.back();
    uint64_t filled = 0;
    for (int i = 0; i < m && !eof; ++i) {
      absl::Span<uint8_t> block = buffer.block(i);
      size_t at = 0;
      while (at < block.size()) {
        absl::StatusOr<size_t> n = source.Read(block.subspan(at));
        if (!n.ok()) return fail(n.status());
        if (*n == 0) {
          eof = true;
          break;
        }
        at += *n;
      }
      filled += at;
      if (at < block.size()) std::memset(block.data() + at, 0, block.size() - at);
    }
    if (filled == 0) break;
    for (int i = static_cast<int>((filled + object.block_size - 1) / object.block_size); i < m;
         ++i) {
      std::memset(buffer.block(i).data(), 0, object.block_size);  // Padding of the last stripe.
    }
    auto f = std::make_unique<InFlight>();
    f->buffer = &buffer;
    if (absl::Status s = PlaceStripe(object, stripe, f->blocks); !s.ok()) return fail(s);
    if (absl::Status s = PrepareWrites(f->blocks, touched, f->write); !s.ok()) {
      FreeExtents(f->blocks);
      return fail(s);
    }
    idle.pop_back();
    f->checksums.resize(f->blocks.size());
    ec::CreateTask task{*codec, {}, {}, absl::MakeSpan(f->checksums)};
    for (int i = 0; i < m; ++i) task.data.push_back(buffer.block(i));
    for (int j = 0; j < k; ++j) task.parity.push_back(buffer.block(m + j));
    // The callback owns the promise: this thread may drop `f` as soon as `started` is ready.
    auto started = std::make_shared<std::promise<absl::Status>>();
    f->started = started->get_future();
    InFlight* raw = f.get();
    in_flight.push_back(std::move(f));
    // On the thread that ran the encode: the CRCs and the writes of its blocks, then `started`.
    engine_->Submit(std::move(task), [this, raw, started](absl::Status s) {
      if (s.ok()) {
        StartBlockWrites(*raw->buffer, absl::MakeSpan(raw->blocks), raw->write, raw->checksums);
      }
      started->set_value(std::move(s));
    });
    size += filled;
    ++stripe;
  }
  while (!in_flight.empty()) {
    if (absl::Status s = finish_oldest(); !s.ok()) return fail(s);
  }
  if (absl::Status s = catalog_->AddBlocks(object.id, records); !s.ok()) return fail(s);
  records.clear();
  object.size = size;
  object.stripe_count = stripe;
  // Each device written gets the records of its blocks, flushed with them.
  std::unique_ptr<RecordKeeper::Op> op = records_->NewOp();
  op->SetObject(object);
  if (absl::Status s =
          catalog_->ForEachBlockOf(object.id, [&](const BlockRecord& b) { op->AddBlock(b); });
      !s.ok()) {
    return fail(s);
  }
  if (stripe == 0) {  // An empty object: its record goes on every online device.
    std::vector<uint32_t> online;
    for (uint32_t d = 0; d < devices_.size(); ++d) {
      if (DeviceOnline(d)) online.push_back(d);
    }
    op->AlsoOn(std::move(online));
  }
  if (absl::Status s = op->Write(touched); !s.ok()) return fail(s);
  // Data first, then the catalog: the commit below is the moment the object exists.
  if (absl::Status s = FlushDevices(touched); !s.ok()) return fail(s);
  if (absl::Status s = source.BeforeCommit(); !s.ok()) return fail(s);
  if (absl::Status s = catalog_->CommitObject(object.id, size, stripe, op->seq()); !s.ok()) {
    return fail(s);
  }
  op->Commit();
  CountStripes(object.parity_blocks, static_cast<int64_t>(stripe));
  return object;
}

std::unique_ptr<Store::BlockReads> Store::StartLoad(const ObjectRecord& object,
                                                    const std::vector<const BlockRecord*>& by_index,
                                                    const std::vector<int>& need,
                                                    StripeBuffer& buffer) {
  const size_t m = object.data_blocks;
  auto reads = std::make_unique<BlockReads>();
  std::vector<bool> chosen(by_index.size(), false);
  auto readable = [&](size_t i) {
    const BlockRecord* b = by_index[i];
    return b != nullptr && !b->corrupt && DeviceOnline(b->device);
  };
  auto add = [&](size_t i) {
    chosen[i] = true;
    reads->indices.push_back(static_cast<int>(i));
    reads->blocks.push_back(by_index[i]);
    reads->outs.push_back(buffer.block(static_cast<int>(i)));
  };
  for (int i : need) {
    if (readable(i)) add(i);
  }
  if (reads->indices.size() < need.size()) {  // Some will be rebuilt: read M blocks in all.
    for (size_t i = 0; i < by_index.size() && reads->indices.size() < m; ++i) {
      if (!chosen[i] && readable(i)) add(i);
    }
  }
  StartReads(object, *reads);
  return reads;
}

absl::StatusOr<std::vector<int>> Store::LoadBlocks(const ObjectRecord& object, uint64_t stripe,
                                                   const std::shared_ptr<const ec::Codec>& codec,
                                                   const std::vector<const BlockRecord*>& by_index,
                                                   const std::vector<int>& need,
                                                   StripeBuffer& buffer, absl::string_view outcome,
                                                   std::unique_ptr<BlockReads> first,
                                                   LoadReport* report) {
  const int m = static_cast<int>(object.data_blocks);
  const int width = static_cast<int>(by_index.size());
  for (int i : need) {
    if (by_index[i] == nullptr) {  // Nothing to check a rebuilt block against.
      return absl::DataLossError(absl::StrCat("the catalog has no block ", i, " of stripe ", stripe,
                                              " of \"", object.name, "\".", outcome,
                                              " Run `ecctl recover ", object.name, "`"));
    }
  }
  if (first == nullptr) first = StartLoad(object, by_index, need, buffer);
  std::vector<bool> tried(width, false);
  std::vector<int> available;
  auto in_need = [&](int i) { return std::find(need.begin(), need.end(), i) != need.end(); };
  // Counts one finished read of block i (for `report`).
  auto count = [&](int i, BlockRead result) {
    if (report == nullptr) return;
    ++report->blocks_read;
    if (std::find(report->read.begin(), report->read.end(), i) == report->read.end()) {
      report->read.push_back(i);
    }
    if (result == BlockRead::kGood) {
      ++report->good_reads;
      return;
    }
    if (result == BlockRead::kCorrupt) ++report->corrupt_reads;
    if (!in_need(i) && std::find(report->found_bad.begin(), report->found_bad.end(), i) ==
                           report->found_bad.end()) {
      report->found_bad.push_back(i);
    }
  };
  auto finish = [&](BlockReads& reads) {
    const std::vector<BlockRead> results = FinishReads(object, reads);
    for (size_t j = 0; j < results.size(); ++j) {
      tried[reads.indices[j]] = true;
      if (results[j] == BlockRead::kGood) available.push_back(reads.indices[j]);
      if (reads.blocks[j] != nullptr && DeviceOnline(reads.blocks[j]->device)) {
        count(reads.indices[j], results[j]);
      }
    }
  };
  finish(*first);
  auto good = [&](int i) {
    return std::find(available.begin(), available.end(), i) != available.end();
  };
  if (std::all_of(need.begin(), need.end(), good)) return std::vector<int>{};
  // More blocks, as many at a time as are still missing, until M are good.
  while (static_cast<int>(available.size()) < m) {
    BlockReads more;
    for (int i = 0; i < width && static_cast<int>(available.size() + more.indices.size()) < m;
         ++i) {
      if (tried[i] || by_index[i] == nullptr || by_index[i]->corrupt) continue;
      more.indices.push_back(i);
      more.blocks.push_back(by_index[i]);
      more.outs.push_back(buffer.block(i));
    }
    if (more.indices.empty()) break;
    StartReads(object, more);
    finish(more);
  }
  // Last resort: blocks flagged corrupt earlier (perhaps by a transient read error); their
  // checksum still decides. One that reads good again is trusted again.
  for (int i = 0; i < width && static_cast<int>(available.size()) < m; ++i) {
    const BlockRecord* b = by_index[i];
    if (b == nullptr || !b->corrupt) continue;  // The others were tried above.
    const BlockRead result = ReadBlock(object, *b, buffer.block(i));
    if (DeviceOnline(b->device)) count(i, result);
    if (result == BlockRead::kGood) {
      available.push_back(i);
      if (report == nullptr || report->repair) {
        (void)catalog_->SetBlockCorrupt(object.id, stripe, b->index, false);
      }
      if (report != nullptr) {
        auto& bad = report->found_bad;
        bad.erase(std::remove(bad.begin(), bad.end(), i), bad.end());
      }
    }
  }
  if (static_cast<int>(available.size()) < m) {
    return absl::DataLossError(absl::StrCat(
        "stripe ", stripe, " of \"", object.name, "\" has only ", available.size(),
        " readable blocks of the ", m, " needed: more than ", object.parity_blocks,
        " blocks are lost.", outcome,
        " Bring failed devices back online (`ecctl device online`) and retry; otherwise "
        "restore this object from a backup"));
  }
  // What to rebuild is decided only now, after every read: a block of `need` that StartLoad
  // could not read (its device was offline then) may have read good since.
  std::vector<int> wanted;
  for (int i : need) {
    if (!good(i)) wanted.push_back(i);
  }
  if (report != nullptr) {  // Rebuild what read bad on the way too.
    for (int i : report->found_bad) {
      if (!good(i) && by_index[i] != nullptr) wanted.push_back(i);
    }
  }
  if (wanted.empty()) return wanted;
  std::sort(available.begin(), available.end());
  absl::StatusOr<int> failed = RebuildInBuffer(codec, by_index, buffer, available, wanted);
  if (!failed.ok()) return failed.status();
  if (*failed >= 0) {
    return absl::DataLossError(absl::StrCat(
        "stripe ", stripe, " block ", *failed, " of \"", object.name,
        "\" rebuilt to bytes that fail its checksum: more blocks are damaged than their "
        "checksums show.",
        outcome, " Run `ecctl recover ", object.name, "` and check the devices"));
  }
  return wanted;
}

absl::StatusOr<int> Store::RebuildInBuffer(const std::shared_ptr<const ec::Codec>& codec,
                                           const std::vector<const BlockRecord*>& by_index,
                                           StripeBuffer& buffer, const std::vector<int>& available,
                                           const std::vector<int>& wanted) {
  ec::RecoverTask task{codec,
                       {buffer.views.begin(), buffer.views.end()},
                       {available.begin(), available.end()},
                       {wanted.begin(), wanted.end()}};
  if (absl::Status s = engine_->Run(task); !s.ok()) return s;
  for (int i : wanted) {
    if (by_index[i] != nullptr && Crc32c(buffer.block(i)) != by_index[i]->crc32c) return i;
  }
  return -1;
}

absl::StatusOr<BlockRecord> Store::AllocateCopy(absl::string_view object, const BlockRecord& old,
                                                std::map<uint32_t, int>& occupied,
                                                bool allow_same_device, SpaceUse use) {
  std::lock_guard lock(mu_);
  --occupied[old.device];  // The block leaves its old extent.
  auto eligible = [&](const Device& d) {
    return d.record.state == DeviceState::kOnline && d.ns != nullptr && occupied[d.record.id] == 0;
  };
  std::vector<Device*> candidates;
  if (allow_same_device && old.device < devices_.size() && eligible(*devices_[old.device])) {
    candidates.push_back(devices_[old.device].get());
  }
  std::vector<Device*> others;
  for (auto& d : devices_) {
    if (d->record.id != old.device && eligible(*d)) others.push_back(d.get());
  }
  std::sort(others.begin(), others.end(), [](Device* a, Device* b) {
    return a->allocator.free_lbas() > b->allocator.free_lbas();
  });
  candidates.insert(candidates.end(), others.begin(), others.end());
  for (Device* d : candidates) {
    std::optional<uint64_t> lba = d->allocator.Allocate(old.lba_count);
    if (!lba) continue;
    const ClaimedExtent claim{d->record.id, *lba, old.lba_count,
                              static_cast<uint64_t>(old.lba_count) * d->record.lba_size};
    if (absl::Status s = space_->Claim({&claim, 1}, use); !s.ok()) {
      (void)d->allocator.Free(*lba, old.lba_count);
      ++occupied[old.device];
      return s;
    }
    BlockRecord fresh = old;
    fresh.device = d->record.id;
    fresh.lba = *lba;
    fresh.corrupt = false;
    ++occupied[fresh.device];
    return fresh;
  }
  ++occupied[old.device];
  if (others.empty()) {  // No free space would help: there is no device outside the stripe.
    int online = 0;
    for (auto& d : devices_) online += d->record.state == DeviceState::kOnline && d->ns != nullptr;
    return absl::FailedPreconditionError(
        absl::StrCat("stripe ", old.stripe, " of \"", object, "\" is on every online device (",
                     online, "); add a device or bring one back online to move block ", old.index));
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("out of space: no online device outside stripe ", old.stripe, " has ",
                   static_cast<uint64_t>(old.lba_count) * options_.lba_size,
                   " free bytes for the new copy of block ", old.index,
                   "; nothing was changed. Delete objects or add devices and retry"));
}

absl::StatusOr<UpdateResult> Store::Update(absl::string_view name, uint64_t offset,
                                           ByteSource& data, bool append,
                                           const Interrupt& interrupt) {
  // The object's lock and the stripes' memory are taken once the source has bytes: a source
  // that sends nothing holds neither.
  if (absl::StatusOr<bool> more = data.Await(); !more.ok()) return more.status();
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/true, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> found = catalog_->GetObject(name);
  if (!found.ok()) return LookupError(found.status(), name, options_.max_name_length);
  ObjectRecord object = *found;
  if (offset > object.size) {
    return absl::OutOfRangeError(
        absl::StrCat("offset ", offset, " is past the end of \"", name, "\" (", object.size,
                     " bytes); an update starts inside the object, or at its end (", object.size,
                     ") with append"));
  }
  const int m = static_cast<int>(object.data_blocks);
  const int k = static_cast<int>(object.parity_blocks);
  const int width = m + k;
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = CodecFor(object.matrix, m, k);
  if (!codec.ok()) return codec.status();
  const uint64_t bs = object.block_size;
  const uint64_t stripe_bytes = bs * static_cast<uint64_t>(m);
  // `old` holds a stripe's current blocks as read; `fresh` its new data and parity blocks.
  absl::StatusOr<StripeSet> buffers = AllocateStripes({width, width}, bs, 0, interrupt);
  if (!buffers.ok()) return buffers.status();
  StripeBuffer& old = (*buffers)[0];
  StripeBuffer& fresh = (*buffers)[1];

  UpdateResult result;
  std::vector<BlockRecord> replaced;    // New extents of rewritten blocks, to commit.
  std::vector<BlockRecord> superseded;  // Their old extents, freed after the commit.
  std::vector<BlockRecord> added;       // Blocks of appended stripes, to commit.
  std::vector<bool> touched(devices_.size(), false);
  uint64_t unflushed = 0;  // Bytes written since the last flush (FlushEvery).
  // Nothing uncommitted is in the catalog, so giving back the new extents undoes everything.
  auto abandon = [&](absl::Status status) -> absl::Status {
    DiscardExtents(replaced);
    DiscardExtents(added);
    return status;
  };
  const uint64_t limit = append ? std::numeric_limits<uint64_t>::max() : object.size;
  uint64_t pos = offset;  // The object offset of the next byte of `data`.
  bool eof = false;
  for (uint64_t stripe = offset / stripe_bytes; !eof; ++stripe) {
    const uint64_t base = stripe * stripe_bytes;
    const uint64_t lo = pos - base;
    uint64_t hi = lo;  // The source's bytes go to [lo, hi) of this stripe's data.
    while (hi < stripe_bytes) {
      absl::StatusOr<size_t> n = data.Read(fresh.block(static_cast<int>(hi / bs)).subspan(hi % bs));
      if (!n.ok()) return abandon(n.status());
      if (*n == 0) {
        eof = true;
        break;
      }
      hi += *n;
    }
    if (hi == lo) break;
    if (base + hi > limit) {
      return abandon(absl::OutOfRangeError(absl::StrCat(
          "the update runs past the end of \"", name, "\" (", object.size,
          " bytes); nothing was changed. Send at most ", object.size - offset,
          " bytes from offset ", offset, ", or pass append (`ecctl update --append`) to grow it")));
    }
    pos = base + hi;
    result.bytes_written += hi - lo;
    const int first = static_cast<int>(lo / bs);
    const int last = static_cast<int>((hi - 1) / bs);

    if (stripe >= object.stripe_count) {  // Past the old end (lo is 0): encode it fresh.
      std::memset(fresh.block(last).data() + (hi - static_cast<uint64_t>(last) * bs), 0,
                  static_cast<uint64_t>(last + 1) * bs - hi);
      for (int i = last + 1; i < m; ++i) std::memset(fresh.block(i).data(), 0, bs);
      ec::CreateTask task{*codec, {}, {}};
      for (int i = 0; i < m; ++i) task.data.push_back(fresh.block(i));
      for (int j = 0; j < k; ++j) task.parity.push_back(fresh.block(m + j));
      if (absl::Status s = engine_->Run(task); !s.ok()) return abandon(s);
      if (absl::Status s = WriteStripe(object, stripe, fresh, added, touched); !s.ok()) {
        return abandon(s);
      }
      if (absl::Status s = FlushEvery(static_cast<uint64_t>(width) * bs, unflushed, touched);
          !s.ok()) {
        return abandon(s);
      }
      ++result.stripes_appended;
      continue;
    }

    // An existing stripe. Overwritten whole: encoded fresh, nothing read. Otherwise the old
    // touched data blocks and the old parity in, the delta through the engine.
    absl::StatusOr<std::vector<BlockRecord>> rows = catalog_->GetBlocks(object.id, stripe, 1);
    if (!rows.ok()) return abandon(rows.status());
    size_t row = 0;
    const std::vector<const BlockRecord*> by_index = TakeStripe(*rows, row, stripe, width);
    std::vector<int> need;  // The blocks rewritten: the changed data blocks and the parity.
    if (lo == 0 && hi == stripe_bytes) {
      for (int i = 0; i < width; ++i) need.push_back(i);
      ec::CreateTask task{*codec, {}, {}};
      for (int i = 0; i < m; ++i) task.data.push_back(fresh.block(i));
      for (int j = 0; j < k; ++j) task.parity.push_back(fresh.block(m + j));
      if (absl::Status s = engine_->Run(task); !s.ok()) return abandon(s);
    } else {
      std::vector<int> changed;
      for (int i = first; i <= last; ++i) changed.push_back(i);
      need = changed;
      for (int j = 0; j < k; ++j) need.push_back(m + j);
      if (absl::StatusOr<std::vector<int>> rebuilt =
              LoadBlocks(object, stripe, *codec, by_index, need, old, " Nothing was changed.");
          !rebuilt.ok()) {
        return abandon(rebuilt.status());
      }
      ec::UpdateTask task{*codec, {changed.begin(), changed.end()}, {}, {}, {}, {}};
      for (int i : changed) {
        // The new block: the source's bytes in [from, to), the old bytes around them.
        const uint64_t block_lo = static_cast<uint64_t>(i) * bs;
        const uint64_t from = std::max(lo, block_lo) - block_lo;
        const uint64_t to = std::min(hi, block_lo + bs) - block_lo;
        std::memcpy(fresh.block(i).data(), old.block(i).data(), from);
        std::memcpy(fresh.block(i).data() + to, old.block(i).data() + to, bs - to);
        task.old_data.push_back(old.block(i));
        task.new_data.push_back(fresh.block(i));
      }
      for (int j = 0; j < k; ++j) {
        task.old_parity.push_back(old.block(m + j));
        task.new_parity.push_back(fresh.block(m + j));
      }
      if (absl::Status s = engine_->Run(task); !s.ok()) return abandon(s);
    }

    // Copy-on-write: every changed block to a new extent; the live ones are not touched.
    std::map<uint32_t, int> occupied;
    for (const BlockRecord* b : by_index) {
      if (b != nullptr) ++occupied[b->device];
    }
    for (int i : need) {
      if (by_index[i] == nullptr) {
        return abandon(absl::DataLossError(
            absl::StrCat("the catalog has no block ", i, " for stripe ", stripe, " of \"", name,
                         "\"; nothing was changed. Run `ecctl recover ", name, "`")));
      }
      absl::StatusOr<BlockRecord> copy = AllocateCopy(name, *by_index[i], occupied);
      if (!copy.ok()) return abandon(copy.status());
      copy->crc32c = Crc32c(fresh.block(i));
      replaced.push_back(*copy);
      std::shared_ptr<Namespace> ns = NamespaceOf(copy->device, /*online_only=*/false);
      if (ns == nullptr) {
        return abandon(absl::UnavailableError(absl::StrCat("device ", copy->device, " is gone")));
      }
      if (absl::Status s = ns->Write(copy->lba, fresh.padded(i)); !s.ok()) return abandon(s);
      touched[copy->device] = true;
      superseded.push_back(*by_index[i]);
    }
    if (absl::Status s = FlushEvery(need.size() * bs, unflushed, touched); !s.ok()) {
      return abandon(s);
    }
    ++result.stripes_updated;
  }
  if (result.bytes_written == 0) {
    result.object = object;
    return result;
  }

  const uint64_t size = std::max(object.size, pos);
  const uint64_t stripes = std::max(object.stripe_count, (size + stripe_bytes - 1) / stripe_bytes);
  ObjectRecord after = object;
  after.size = size;
  after.stripe_count = stripes;
  after.version = object.version + 1;
  std::unique_ptr<RecordKeeper::Op> op = records_->NewOp();
  op->SetObject(after);
  for (const BlockRecord& b : replaced) op->AddBlock(b);
  for (const BlockRecord& b : added) op->AddBlock(b);
  if (absl::Status s = op->Write(touched); !s.ok()) return abandon(s);
  // Data first, then the catalog: the commit below is the moment the new version exists.
  if (absl::Status s = FlushDevices(touched); !s.ok()) return abandon(s);
  if (absl::Status s = data.BeforeCommit(); !s.ok()) return abandon(s);
  if (absl::Status s = catalog_->CommitUpdate(object.id, object.version, replaced, added, size,
                                              stripes, op->seq());
      !s.ok()) {
    return abandon(s);
  }
  op->Commit();
  CountStripes(object.parity_blocks,
               static_cast<int64_t>(stripes) - static_cast<int64_t>(object.stripe_count));
  for (const BlockRecord& b : superseded) {
    if (auto ns = NamespaceOf(b.device, /*online_only=*/true)) ns->Deallocate(b.lba, b.lba_count);
  }
  FreeExtents(superseded);
  object.size = size;
  object.stripe_count = stripes;
  ++object.version;
  result.object = object;
  return result;
}

absl::Status Store::PlaceStripe(const ObjectRecord& object, uint64_t stripe,
                                std::vector<BlockRecord>& records) {
  const int width = static_cast<int>(object.data_blocks + object.parity_blocks);
  const uint64_t lbas = LbasPerBlock(object.block_size);
  const size_t first = records.size();
  {
    // Rotate the starting device by object and stripe so data and parity spread evenly.
    std::lock_guard lock(mu_);
    const size_t n = devices_.size();
    const size_t start = static_cast<size_t>(object.id + stripe) % n;
    for (size_t step = 0; step < n && records.size() - first < static_cast<size_t>(width); ++step) {
      Device& d = *devices_[(start + step) % n];
      if (d.record.state != DeviceState::kOnline || d.ns == nullptr) continue;
      std::optional<uint64_t> lba = d.allocator.Allocate(lbas);
      if (!lba) continue;
      BlockRecord b;
      b.stripe = stripe;
      b.index = static_cast<uint32_t>(records.size() - first);
      b.device = d.record.id;
      b.lba = *lba;
      b.lba_count = static_cast<uint32_t>(lbas);
      records.push_back(b);
    }
  }
  if (records.size() - first < static_cast<size_t>(width)) {
    const size_t got = records.size() - first;
    std::vector<BlockRecord> partial(records.begin() + first, records.end());
    records.resize(first);
    FreeExtents(partial);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of space: stripe ", stripe, " needs ", width, " devices with ",
                     lbas * options_.lba_size, " free bytes each, only ", got,
                     " have it; delete objects or add devices"));
  }
  // The devices have the LBAs; their file systems must have the bytes.
  std::vector<ClaimedExtent> claims;
  for (size_t i = first; i < records.size(); ++i) {
    claims.push_back({records[i].device, records[i].lba, lbas, lbas * options_.lba_size});
  }
  if (absl::Status s = space_->Claim(claims, SpaceUse::kNewData); !s.ok()) {
    std::vector<BlockRecord> placed(records.begin() + first, records.end());
    records.resize(first);
    FreeExtents(placed);
    return s;
  }
  return absl::OkStatus();
}

absl::Status Store::PrepareWrites(absl::Span<const BlockRecord> blocks, std::vector<bool>& touched,
                                  StripeWrite& write) {
  write.Reset(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    write.devices[i] = NamespaceOf(blocks[i].device, /*online_only=*/false);
    if (write.devices[i] == nullptr) {
      write.devices.clear();
      return absl::UnavailableError(absl::StrCat("device ", blocks[i].device, " is gone"));
    }
    touched[blocks[i].device] = true;
  }
  return absl::OkStatus();
}

void Store::StartBlockWrites(StripeBuffer& buffer, absl::Span<BlockRecord> blocks,
                             StripeWrite& write, absl::Span<const uint32_t> checksums) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    blocks[i].crc32c = checksums.empty() ? Crc32c(buffer.block(static_cast<int>(i))) : checksums[i];
    write.devices[i]->WriteAsync(blocks[i].lba, buffer.padded(static_cast<int>(i)),
                                 TrackWrite(blocks[i].device, write.batch.Track(&write.status[i])));
  }
}

absl::Status Store::StartWriteStripe(const ObjectRecord& object, uint64_t stripe,
                                     StripeBuffer& buffer, std::vector<BlockRecord>& records,
                                     std::vector<bool>& touched, StripeWrite& write) {
  const size_t first = records.size();
  if (absl::Status s = PlaceStripe(object, stripe, records); !s.ok()) return s;
  const absl::Span<BlockRecord> blocks = absl::MakeSpan(records).subspan(first);
  if (absl::Status s = PrepareWrites(blocks, touched, write); !s.ok()) return s;
  StartBlockWrites(buffer, blocks, write);
  return absl::OkStatus();
}

void Store::BlockIo::Reset(size_t n) {
  status.assign(n, absl::OkStatus());
  devices.assign(n, nullptr);
}

absl::Status Store::BlockIo::Finish() {
  batch.Wait();
  devices.clear();
  for (const absl::Status& s : status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Store::WriteStripe(const ObjectRecord& object, uint64_t stripe, StripeBuffer& buffer,
                                std::vector<BlockRecord>& records, std::vector<bool>& touched) {
  StripeWrite write;
  absl::Status started = StartWriteStripe(object, stripe, buffer, records, touched, write);
  absl::Status finished = write.Finish();
  return started.ok() ? finished : started;
}

absl::Status Store::FlushEvery(uint64_t wrote, uint64_t& unflushed,
                               const std::vector<bool>& touched) {
  if (options_.flush_bytes == 0) return absl::OkStatus();
  unflushed += wrote;
  if (unflushed < options_.flush_bytes) return absl::OkStatus();
  unflushed = 0;
  return FlushDevices(touched);
}

absl::Status Store::FlushDevices(const std::vector<bool>& touched) {
  for (size_t d = 0; d < touched.size(); ++d) {
    if (!touched[d]) continue;
    std::shared_ptr<Namespace> ns = NamespaceOf(static_cast<uint32_t>(d), /*online_only=*/false);
    absl::Status s = ns == nullptr ? absl::UnavailableError("the device is gone") : ns->Flush();
    if (!s.ok()) {
      // After a failed flush the device may have dropped any write since its last good one, and
      // a later flush may "succeed" without them: it takes no new blocks from now on.
      {
        std::lock_guard lock(mu_);
        ++devices_[d]->flush_failures;
      }
      MarkSuspect(static_cast<uint32_t>(d), absl::StrCat("flush failed: ", s.message()));
      return absl::UnavailableError(absl::StrCat(
          "flush of device ", d, " failed (", s.message(),
          "); nothing was committed and the device is now failing (suspect: it takes no new "
          "blocks and is being evacuated). Retry: the data will go to other devices"));
    }
  }
  return absl::OkStatus();
}

void Store::MarkSuspect(uint32_t id, const std::string& reason) {
  absl::StatusOr<DeviceStatus> marked = SetDeviceState(id, DeviceState::kFailing);
  if (!marked.ok()) {  // Already failing or failed: nothing more to do.
    Log(LogLevel::kWarning, "device %d: %s (%s)", id, reason, marked.status().message());
    return;
  }
  Log(LogLevel::kError, "device %d is suspect and now failing: %s", id, reason);
  std::function<void(uint32_t, const std::string&)> listener;
  {
    std::lock_guard lock(mu_);
    listener = suspect_listener_;
  }
  if (listener) listener(id, reason);
}

void Store::SetSuspectListener(std::function<void(uint32_t, const std::string&)> listener) {
  std::lock_guard lock(mu_);
  suspect_listener_ = std::move(listener);
}

void Store::FreeExtents(absl::Span<const BlockRecord> blocks) {
  std::lock_guard lock(mu_);
  for (const BlockRecord& b : blocks) {
    if (b.device >= devices_.size()) continue;
    space_->Release(b.device, b.lba, b.lba_count);
    absl::Status s = devices_[b.device]->allocator.Free(b.lba, b.lba_count);
    if (!s.ok()) Log(LogLevel::kError, "device %d: %s", b.device, s.message());
  }
}

void Store::DiscardExtents(absl::Span<const BlockRecord> blocks) {
  for (const BlockRecord& b : blocks) {
    if (auto ns = NamespaceOf(b.device, /*online_only=*/true)) ns->Deallocate(b.lba, b.lba_count);
  }
  FreeExtents(blocks);
}

void Store::StartReads(const ObjectRecord& object, BlockReads& reads) {
  const size_t n = reads.blocks.size();
  BlockIo& io = reads.io;
  io.Reset(n);
  reads.checksum_failed.assign(n, 0);
  for (size_t j = 0; j < n; ++j) {
    const BlockRecord* b = reads.blocks[j];
    if (b == nullptr) continue;
    if (b->lba_count != LbasPerBlock(object.block_size)) {
      // A catalog row that disagrees with its object: reading it would overrun the block's room
      // in the stripe buffer. Unreadable, so the block is rebuilt from the others.
      Log(LogLevel::kError,
          "object %s stripe %d block %d: the catalog gives %d LBAs where a %d-byte block has "
          "%d; not read (run `ecctl recover %s`)",
          object.name, b->stripe, b->index, b->lba_count, object.block_size,
          LbasPerBlock(object.block_size), object.name);
      continue;
    }
    io.devices[j] = NamespaceOf(b->device, /*online_only=*/true);
    if (io.devices[j] == nullptr) continue;
    const absl::Span<uint8_t> padded(reads.outs[j].data(),
                                     static_cast<size_t>(b->lba_count) * options_.lba_size);
    // The check runs before the batch counts the read done, so FinishReads sees its verdict.
    io.devices[j]->ReadAsync(
        b->lba, padded,
        [done = io.batch.Track(&io.status[j]),
         bytes = padded.first(std::min<size_t>(padded.size(), object.block_size)),
         expected = b->crc32c, failed = &reads.checksum_failed[j]](absl::Status s) {
          if (s.ok() && Crc32c(bytes) != expected) {
            *failed = 1;
            s = absl::DataLossError("checksum mismatch");
          }
          done(std::move(s));
        });
  }
}

std::vector<Store::BlockRead> Store::FinishReads(const ObjectRecord& object, BlockReads& reads) {
  BlockIo& io = reads.io;
  io.batch.Wait();
  const size_t n = reads.blocks.size();
  std::vector<BlockRead> results(n, BlockRead::kUnreadable);
  bool marked = false;
  for (size_t j = 0; j < n; ++j) {
    if (io.devices[j] == nullptr) continue;
    io.devices[j] = nullptr;
    const BlockRecord& b = *reads.blocks[j];
    absl::Status& s = io.status[j];
    if (reads.checksum_failed[j]) {
      Log(LogLevel::kWarning,
          "object %s stripe %d block %d on device %d LBA %d fails its CRC32C; not served, "
          "marked for rebuild",
          object.name, b.stripe, b.index, b.device, b.lba);
    } else if (!s.ok()) {
      Log(LogLevel::kWarning, "object %s stripe %d block %d: %s", object.name, b.stripe, b.index,
          s.message());
    }
    if (!s.ok()) {
      if (!b.corrupt) {
        (void)catalog_->SetBlockCorrupt(object.id, b.stripe, b.index, true);
        marked = true;
      }
      results[j] = absl::IsDataLoss(s) ? BlockRead::kCorrupt : BlockRead::kUnreadable;
    } else {
      results[j] = BlockRead::kGood;
    }
  }
  if (marked) NotifyRepair();  // Heal on read: the repair planner rebuilds the stripe.
  return results;
}

Store::BlockRead Store::ReadBlock(const ObjectRecord& object, const BlockRecord& b,
                                  absl::Span<uint8_t> out) {
  BlockReads reads;
  reads.blocks.push_back(&b);
  reads.outs.push_back(out);
  StartReads(object, reads);
  return FinishReads(object, reads)[0];
}

namespace {

// Finishes a sink whose read failed with `status`, and returns that status.
absl::Status FailSink(ByteSink& sink, absl::Status status) {
  (void)sink.Finish(/*ok=*/false);
  return status;
}

}  // namespace

absl::Status Store::Read(absl::string_view name, uint64_t offset, uint64_t length, ByteSink& sink,
                         const Interrupt& interrupt) {
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/false, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> found = catalog_->GetObject(name);
  if (!found.ok()) return LookupError(found.status(), name, options_.max_name_length);
  const ObjectRecord& object = *found;
  if (offset > object.size) {
    return absl::OutOfRangeError(absl::StrCat("offset ", offset, " is past the end of \"", name,
                                              "\" (", object.size, " bytes)"));
  }
  const uint64_t end = length == 0 || length > object.size - offset ? object.size : offset + length;
  sink.SetObject(object);
  if (absl::Status s = sink.Start(object.size); !s.ok()) return FailSink(sink, s);
  if (offset == end) return sink.Finish(/*ok=*/true);

  const int m = static_cast<int>(object.data_blocks);
  const int width = m + static_cast<int>(object.parity_blocks);
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec =
      CodecFor(object.matrix, m, static_cast<int>(object.parity_blocks));
  if (!codec.ok()) return FailSink(sink, codec.status());
  const uint64_t bs = object.block_size;
  const uint64_t stripe_bytes = bs * static_cast<uint64_t>(m);
  // Read-ahead: while one stripe's bytes go to the sink, the blocks of the next kReadAhead
  // stripes (stripes_in_flight - 1) are being read.
  // The sink's own buffers are reserved with the stripes, and it is finished (below) while
  // they still are.
  // No more stripes than the read touches.
  const uint64_t held = sink.held_bytes(end - offset);
  const uint64_t unit =
      RoundUpToPage(static_cast<uint64_t>(width) * LbasPerBlock(bs) * options_.lba_size);
  const uint64_t touched = (end - 1) / stripe_bytes - offset / stripe_bytes + 1;
  const size_t depth = budget_->Fit(
      unit, static_cast<size_t>(std::min<uint64_t>(PipelineDepth(kReadAhead + 1, unit), touched)),
      held);
  absl::StatusOr<StripeSet> buffers =
      AllocateStripes(std::vector<int>(depth, width), bs, held, interrupt);
  if (!buffers.ok()) return FailSink(sink, buffers.status());
  // The buffers are shared with the sink's pins (ByteSink::WritePinned): a buffer is read into
  // again only once no pin of it is left, and the set lives until the last pin is gone, which
  // may be after this read.
  struct Pinned {
    explicit Pinned(Store* store) : store(store) {
      std::lock_guard lock(store->pinned_mu_);
      ++store->pinned_sets_;
    }
    ~Pinned() {
      { StripeSet gone = std::move(set); }  // Memory and budget back before ~Store may go on.
      std::lock_guard lock(store->pinned_mu_);
      if (outlived) --store->outlived_sets_;
      if (--store->pinned_sets_ == 0) store->pinned_gone_.notify_all();
    }
    Pinned(const Pinned&) = delete;
    Pinned& operator=(const Pinned&) = delete;
    Store* const store;
    StripeSet set;
    std::mutex mu;
    std::condition_variable released;
    std::vector<int> pins;  // Live pins per buffer. Guarded by mu.
    bool outlived = false;  // The read returned before the last pin went. Guarded by pinned_mu_.
  };
  struct Pin {
    Pin(std::shared_ptr<Pinned> of, size_t buffer) : of(std::move(of)), buffer(buffer) {
      std::lock_guard lock(this->of->mu);
      ++this->of->pins[buffer];
    }
    ~Pin() {
      {
        std::lock_guard lock(of->mu);
        --of->pins[buffer];
      }
      of->released.notify_all();
    }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    const std::shared_ptr<Pinned> of;
    const size_t buffer;
  };
  auto pinned = std::make_shared<Pinned>(this);
  pinned->set = *std::move(buffers);
  pinned->pins.assign(depth, 0);
  // When the read returns (after the sink's Finish, every pin made), the set is counted as
  // outliving it if a pin still holds it.
  struct Leave {
    ~Leave() {
      {
        std::lock_guard lock(pinned->store->pinned_mu_);
        if (pinned.use_count() > 1) {
          pinned->outlived = true;
          ++pinned->store->outlived_sets_;
        }
      }
      pinned.reset();  // Not under pinned_mu_: the last owner's ~Pinned takes it.
    }
    std::shared_ptr<Pinned>& pinned;
  } leave{pinned};
  std::deque<size_t> idle;  // Oldest first: its pins are the likeliest to be gone.
  for (size_t i = 0; i < depth; ++i) idle.push_back(i);
  // Takes the oldest idle buffer, once the sink holds no pin of it; CANCELLED if the sink's
  // reader goes away meanwhile (its pins may then go only after this read has returned).
  auto take_idle = [&]() -> absl::StatusOr<size_t> {
    const size_t i = idle.front();
    for (;;) {
      {
        std::unique_lock lock(pinned->mu);
        if (pinned->released.wait_for(lock, std::chrono::milliseconds(20),
                                      [&] { return pinned->pins[i] == 0; })) {
          break;
        }
      }
      // Not under pinned->mu: the sink drops pins under its own lock.
      if (sink.Gone()) return absl::CancelledError("the reader went away");
    }
    idle.pop_front();
    return i;
  };
  struct Ahead {
    size_t index;
    StripeBuffer* buffer;
    uint64_t stripe;
    std::vector<const BlockRecord*> by_index;
    uint64_t lo, hi;  // The bytes of the stripe's data to serve.
    std::vector<int> need;
    std::unique_ptr<BlockReads> reads;
  };
  std::deque<Ahead> ahead;  // After `buffers`: destroyed first, waiting for its reads.
  // Completes the oldest stripe's blocks (rebuilding what is bad) and sends its bytes.
  auto serve_oldest = [&]() -> absl::Status {
    Ahead a = std::move(ahead.front());
    ahead.pop_front();
    absl::StatusOr<std::vector<int>> wanted =
        LoadBlocks(object, a.stripe, *codec, a.by_index, a.need, *a.buffer, "", std::move(a.reads));
    if (!wanted.ok()) return wanted.status();
    uint32_t reconstructed = static_cast<uint32_t>(wanted->size());
    const std::shared_ptr<const void> pin = std::make_shared<const Pin>(pinned, a.index);
    idle.push_back(a.index);  // Reused once the sink has let go of it.
    for (int i : a.need) {
      const uint64_t block_lo = static_cast<uint64_t>(i) * bs;
      const uint64_t from = std::max(a.lo, block_lo) - block_lo;
      const uint64_t to = std::min(a.hi, block_lo + bs) - block_lo;
      if (absl::Status s =
              sink.WritePinned(a.buffer->block(i).subspan(from, to - from), reconstructed, pin);
          !s.ok()) {
        return s;
      }
      reconstructed = 0;
    }
    return absl::OkStatus();
  };

  const uint64_t first_stripe = offset / stripe_bytes;
  const uint64_t last_stripe = (end - 1) / stripe_bytes;
  absl::Status streamed = [&]() -> absl::Status {
    for (uint64_t batch = first_stripe; batch <= last_stripe; batch += kStripeBatch) {
      const uint64_t count = std::min(kStripeBatch, last_stripe + 1 - batch);
      absl::StatusOr<std::vector<BlockRecord>> blocks =
          catalog_->GetBlocks(object.id, batch, count);
      if (!blocks.ok()) return blocks.status();
      size_t row = 0;
      for (uint64_t stripe = batch; stripe < batch + count; ++stripe) {
        if (idle.empty()) {
          if (absl::Status s = serve_oldest(); !s.ok()) return s;
        }
        absl::StatusOr<size_t> free = take_idle();
        if (!free.ok()) return free.status();
        Ahead a;
        a.index = *free;
        a.buffer = &pinned->set[a.index];
        a.stripe = stripe;
        a.by_index = TakeStripe(*blocks, row, stripe, width);
        const uint64_t base = stripe * stripe_bytes;
        a.lo = std::max(offset, base) - base;
        a.hi = std::min(end, base + stripe_bytes) - base;
        for (int i = static_cast<int>(a.lo / bs); i <= static_cast<int>((a.hi - 1) / bs); ++i) {
          a.need.push_back(i);
        }
        a.reads = StartLoad(object, a.by_index, a.need, *a.buffer);
        ahead.push_back(std::move(a));
      }
      while (!ahead.empty()) {  // They point into `blocks`.
        if (absl::Status s = serve_oldest(); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }();
  if (!streamed.ok()) return FailSink(sink, streamed);
  return sink.Finish(/*ok=*/true);
}

absl::Status Store::GetBlock(absl::string_view name, uint64_t stripe, uint32_t index,
                             ByteSink& sink, const Interrupt& interrupt) {
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/false, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> found = catalog_->GetObject(name);
  if (!found.ok()) return LookupError(found.status(), name, options_.max_name_length);
  const ObjectRecord& object = *found;
  const int m = static_cast<int>(object.data_blocks);
  const int width = m + static_cast<int>(object.parity_blocks);
  if (stripe >= object.stripe_count || index >= static_cast<uint32_t>(width)) {
    return absl::OutOfRangeError(absl::StrCat("\"", name, "\" has stripes 0..", object.stripe_count,
                                              " (exclusive) and blocks 0..", width - 1,
                                              "; asked for stripe ", stripe, " block ", index));
  }
  absl::StatusOr<std::shared_ptr<const ec::Codec>> codec =
      CodecFor(object.matrix, m, static_cast<int>(object.parity_blocks));
  if (!codec.ok()) return codec.status();
  absl::StatusOr<std::vector<BlockRecord>> blocks = catalog_->GetBlocks(object.id, stripe, 1);
  if (!blocks.ok()) return blocks.status();
  size_t row = 0;
  const std::vector<const BlockRecord*> by_index = TakeStripe(*blocks, row, stripe, width);
  absl::StatusOr<StripeSet> buffers =
      AllocateStripes({width}, object.block_size, sink.held_bytes(object.block_size), interrupt);
  if (!buffers.ok()) return buffers.status();
  StripeBuffer& buffer = (*buffers)[0];
  sink.SetObject(object);
  if (absl::Status s = sink.Start(object.block_size); !s.ok()) return FailSink(sink, s);
  absl::StatusOr<std::vector<int>> rebuilt =
      LoadBlocks(object, stripe, *codec, by_index, {static_cast<int>(index)}, buffer, "");
  if (!rebuilt.ok()) return FailSink(sink, rebuilt.status());
  if (absl::Status s = sink.Write(buffer.block(index), static_cast<uint32_t>(rebuilt->size()));
      !s.ok()) {
    return FailSink(sink, s);
  }
  return sink.Finish(/*ok=*/true);  // While the stripe's reservation still holds.
}

absl::StatusOr<ObjectStatus> Store::Health(const ObjectRecord& object, bool with_blocks,
                                           bool verify, bool per_stripe,
                                           const Interrupt& interrupt) {
  ObjectStatus status;
  status.object = object;
  const uint32_t m = object.data_blocks;
  const uint32_t width = m + object.parity_blocks;
  StripeSet buffers;
  StripeBuffer* buffer = nullptr;
  if (verify) {
    absl::StatusOr<StripeSet> allocated =
        AllocateStripes({static_cast<int>(width)}, object.block_size, 0, interrupt);
    if (!allocated.ok()) return allocated.status();
    buffers = std::move(*allocated);
    buffer = &buffers[0];
  }
  for (uint64_t batch = 0; batch < object.stripe_count; batch += kStripeBatch) {
    if (absl::Status s = interrupt.Check(
            absl::StrCat("checking stripe ", batch, " of ", object.stripe_count, "; stat stopped"));
        !s.ok()) {
      return s;
    }
    const uint64_t count = std::min(kStripeBatch, object.stripe_count - batch);
    absl::StatusOr<std::vector<BlockRecord>> blocks = catalog_->GetBlocks(object.id, batch, count);
    if (!blocks.ok()) return blocks.status();
    size_t row = 0;
    for (uint64_t stripe = batch; stripe < batch + count; ++stripe) {
      StripeStatus ss;
      ss.index = stripe;
      const size_t first = row;
      while (row < blocks->size() && (*blocks)[row].stripe == stripe) ++row;
      std::vector<bool> healthy(row - first);
      std::vector<size_t> to_read;  // positions in `healthy`
      for (size_t j = 0; j < healthy.size(); ++j) {
        const BlockRecord& b = (*blocks)[first + j];
        healthy[j] = !b.corrupt && DeviceOnline(b.device);
        if (healthy[j] && verify) to_read.push_back(j);
      }
      // The stripe's blocks are read together, `width` at a time (one buffer slot each).
      for (size_t at = 0; at < to_read.size(); at += width) {
        BlockReads reads;
        for (size_t j = at; j < std::min<size_t>(to_read.size(), at + width); ++j) {
          reads.blocks.push_back(&(*blocks)[first + to_read[j]]);
          reads.outs.push_back(buffer->block(static_cast<int>(j - at)));
        }
        StartReads(object, reads);
        const std::vector<BlockRead> results = FinishReads(object, reads);
        for (size_t j = 0; j < results.size(); ++j) {
          healthy[to_read[at + j]] = results[j] == BlockRead::kGood;
        }
      }
      for (size_t j = 0; j < healthy.size(); ++j) {
        ss.healthy_blocks += healthy[j];
        if (with_blocks) ss.blocks.push_back(BlockStatus{(*blocks)[first + j], healthy[j]});
      }
      if (ss.healthy_blocks < width) ++status.degraded_stripes;
      if (ss.healthy_blocks < m) ++status.lost_stripes;
      if (per_stripe) status.stripes.push_back(std::move(ss));
    }
  }
  return status;
}

absl::StatusOr<ObjectStatus> Store::Stat(absl::string_view name, bool with_blocks, bool verify,
                                         const Interrupt& interrupt) {
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/false, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> object = catalog_->GetObject(name);
  if (!object.ok()) return LookupError(object.status(), name, options_.max_name_length);
  return Health(*object, with_blocks, verify, /*per_stripe=*/true, interrupt);
}

absl::StatusOr<std::vector<ObjectStatus>> Store::List() {
  absl::StatusOr<std::vector<ObjectRecord>> objects = catalog_->ListObjects();
  if (!objects.ok()) return objects.status();
  std::vector<ObjectStatus> out;
  for (ObjectRecord o : *objects) {
    // No object lock (a repair or scrub batch may hold one for long). An object deleted or
    // updated since the listing would show its vanished blocks as lost: such an object is
    // looked up again, and skipped or measured as it is now.
    absl::StatusOr<ObjectStatus> s = Health(o, false, false, /*per_stripe=*/false);
    if (!s.ok()) return s.status();
    if (s->lost_stripes > 0) {
      absl::StatusOr<ObjectRecord> now = catalog_->GetObject(o.name);
      if (absl::IsNotFound(now.status())) continue;  // deleted meanwhile
      if (!now.ok()) return now.status();
      if (now->id != o.id || now->version != o.version) {
        s = Health(*now, false, false, /*per_stripe=*/false);
        if (!s.ok()) return s.status();
      }
    }
    out.push_back(std::move(*s));
  }
  return out;
}

absl::StatusOr<uint64_t> Store::Delete(absl::string_view name, const Interrupt& interrupt) {
  ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/true, interrupt);
  if (!guard.status().ok()) return guard.status();
  absl::StatusOr<ObjectRecord> object = catalog_->GetObject(name);
  if (!object.ok()) return LookupError(object.status(), name, options_.max_name_length);
  std::vector<BlockRecord> blocks;
  if (absl::Status s =
          catalog_->ForEachBlockOf(object->id, [&](const BlockRecord& b) { blocks.push_back(b); });
      !s.ok()) {
    return s;
  }
  // A tombstone on every device, flushed before the delete is acknowledged, so that a catalog
  // rebuilt from the devices keeps the object deleted.
  std::unique_ptr<RecordKeeper::Op> op = records_->NewOp();
  std::vector<uint32_t> devices;
  for (uint32_t d = 0; d < devices_.size(); ++d) {
    if (DeviceOnline(d)) devices.push_back(d);
  }
  op->DeleteObject(object->id, std::move(devices));
  std::vector<bool> touched(devices_.size(), false);
  if (absl::Status s = op->Write(touched); !s.ok()) return s;
  if (absl::Status s = FlushDevices(touched); !s.ok()) return s;
  if (absl::Status s = catalog_->DeleteObject(object->id, op->seq()); !s.ok()) return s;
  op->Commit();
  CountStripes(object->parity_blocks, -static_cast<int64_t>(object->stripe_count));
  uint64_t freed = 0;
  for (const BlockRecord& b : blocks) {
    freed += static_cast<uint64_t>(b.lba_count) * options_.lba_size;
    if (auto ns = NamespaceOf(b.device, /*online_only=*/true)) ns->Deallocate(b.lba, b.lba_count);
  }
  FreeExtents(blocks);
  return freed;
}

absl::StatusOr<Store::StripeFindings> Store::RebuildStripe(
    const ObjectRecord& object, uint64_t stripe, const std::shared_ptr<const ec::Codec>& codec,
    const std::vector<const BlockRecord*>& by_index, const std::vector<int>& need,
    const std::vector<int>& evict, StripeBuffer& buffer, std::unique_ptr<BlockReads> reads,
    bool repair, RecoverProgress& p) {
  StripeFindings found;
  LoadReport report;
  report.repair = repair;
  absl::StatusOr<std::vector<int>> rebuilt =
      LoadBlocks(object, stripe, codec, by_index, need, buffer, " Other stripes are still rebuilt.",
                 std::move(reads), &report);
  p.blocks_checked += report.blocks_read;
  p.bytes_checked += report.good_reads * object.block_size;
  p.blocks_corrupt += report.corrupt_reads;
  p.blocks_unreadable += report.blocks_read - report.good_reads - report.corrupt_reads;
  if (!rebuilt.ok()) {
    if (!absl::IsDataLoss(rebuilt.status())) return rebuilt.status();
    Log(LogLevel::kError, "object %s: %s", object.name, rebuilt.status().message());
    ++p.lost_stripes;
    found.lost = true;
    return found;
  }
  found.bad = std::move(*rebuilt);
  for (int i : found.bad) {
    // Known bad and never read: counted here (the reads counted what they found).
    if (std::find(report.read.begin(), report.read.end(), i) != report.read.end()) continue;
    if (by_index[i]->corrupt) {
      ++p.blocks_corrupt;
    } else if (!DeviceOnline(by_index[i]->device)) {
      ++p.blocks_unreadable;
    }
  }
  for (int i : evict) {  // Read good, but chosen to move.
    if (std::find(found.bad.begin(), found.bad.end(), i) == found.bad.end()) {
      found.evicted.push_back(i);
    }
  }
  return found;
}

absl::StatusOr<Store::StripeFindings> Store::CheckStripe(
    const ObjectRecord& object, uint64_t stripe, const std::shared_ptr<const ec::Codec>& codec,
    const std::vector<const BlockRecord*>& by_index, StripeBuffer& buffer, BlockReads& reads,
    const RecoverOptions& options, RecoverProgress& p) {
  StripeFindings found;
  std::vector<int> available;
  const std::vector<BlockRead> results = FinishReads(object, reads);
  for (size_t i = 0; i < by_index.size(); ++i) {
    const BlockRecord* b = by_index[i];
    ++p.blocks_checked;
    if (results[i] == BlockRead::kGood) {
      p.bytes_checked += object.block_size;
      available.push_back(static_cast<int>(i));
      if (options.evict && options.evict(*b)) found.evicted.push_back(static_cast<int>(i));
      if (b->corrupt && options.repair) {  // It reads back good now (a transient error).
        (void)catalog_->SetBlockCorrupt(object.id, stripe, b->index, false);
      }
    } else {
      found.bad.push_back(static_cast<int>(i));
      ++(results[i] == BlockRead::kCorrupt ? p.blocks_corrupt : p.blocks_unreadable);
    }
  }
  if (static_cast<int>(available.size()) < codec->data_blocks()) {
    if (!found.bad.empty()) ++p.lost_stripes;
    found.lost = true;
    return found;
  }
  if (found.bad.empty()) return found;
  // Never store a rebuilt block that does not match its checksum. (A block missing from the
  // catalog has no checksum; Recover fails if it would store one.)
  absl::StatusOr<int> failed = RebuildInBuffer(codec, by_index, buffer, available, found.bad);
  if (!failed.ok()) return failed.status();
  if (*failed >= 0) {
    Log(LogLevel::kError, "object %s stripe %d block %d rebuilt with a wrong checksum", object.name,
        stripe, *failed);
    ++p.lost_stripes;
    found.lost = true;
  }
  return found;
}

absl::Status Store::VerifyParity(const ObjectRecord& object, uint64_t stripe,
                                 const std::shared_ptr<const ec::Codec>& codec,
                                 StripeBuffer& buffer, StripeBuffer& parity, bool repair,
                                 StripeFindings& found, RecoverProgress& p) {
  const int m = static_cast<int>(object.data_blocks);
  const int k = static_cast<int>(object.parity_blocks);
  // Data blocks that pass their checksum are what the client wrote: they decide.
  ec::CreateTask task{codec, {}, {}};
  for (int i = 0; i < m; ++i) task.data.push_back(buffer.block(i));
  for (int j = 0; j < k; ++j) task.parity.push_back(parity.block(j));
  if (absl::Status s = engine_->Run(task); !s.ok()) return s;
  for (int j = 0; j < k; ++j) {
    const int i = m + j;
    if (std::find(found.bad.begin(), found.bad.end(), i) != found.bad.end()) continue;
    if (std::equal(parity.block(j).begin(), parity.block(j).end(), buffer.block(i).begin())) {
      continue;
    }
    ++p.parity_mismatches;
    Log(LogLevel::kWarning,
        "object %s stripe %d parity block %d passes its CRC32C but does not match the data%s",
        object.name, stripe, i, repair ? "; rewriting it" : "");
    std::copy(parity.block(j).begin(), parity.block(j).end(), buffer.block(i).begin());
    found.mismatch.push_back(i);
  }
  return absl::OkStatus();
}

absl::StatusOr<RecoverProgress> Store::Recover(
    absl::string_view name, const std::function<void(const RecoverProgress&)>& progress,
    const RecoverOptions& options) {
  const bool check_all = options.check_all || options.verify_parity;
  RecoverProgress p;
  int64_t object_id = 0;
  StripeSet buffers;
  // Up to kRecoverStripes (or stripes_in_flight) stripes, at least 2, as the memory limit
  // allows: while one is checked, rebuilt and written, the next ones' blocks are read.
  std::vector<StripeBuffer*> stripe_buffers;
  StripeBuffer* parity = nullptr;  // K blocks: the parity the data encodes to.
  absl::Status no_space;
  // One batch of stripes at a time under the object's exclusive lock, so that reads and
  // updates of the object proceed between batches (and `progress`, which may sleep to keep a
  // rate, runs without the lock). Each batch reads the object afresh: an update between batches
  // is seen, a delete ends the walk.
  const std::vector<uint64_t>& listed = options.stripes;      // empty: every stripe
  const Interrupt interrupt{.cancelled = options.cancelled};  // for the lock and memory waits
  bool first = true;
  for (uint64_t batch = listed.empty() ? 0 : listed.front();; first = false) {
    {
      ObjectLocks::Guard guard(*locks_, name, /*exclusive=*/true, interrupt);
      if (!guard.status().ok()) return guard.status();
      absl::StatusOr<ObjectRecord> found = catalog_->GetObject(name);
      if (!found.ok()) {
        if (first) return LookupError(found.status(), name, options_.max_name_length);
        if (!absl::IsNotFound(found.status())) return found.status();
        break;  // Deleted meanwhile: nothing left to check.
      }
      const ObjectRecord& object = *found;
      if (first) object_id = object.id;
      if (object.id != object_id) break;  // Deleted and stored again under the same name.
      p.stripes_total = object.stripe_count;
      if (static_cast<uint64_t>(batch) >= object.stripe_count) break;
      const int m = static_cast<int>(object.data_blocks);
      const int k = static_cast<int>(object.parity_blocks);
      const int width = m + k;
      absl::StatusOr<std::shared_ptr<const ec::Codec>> codec = CodecFor(object.matrix, m, k);
      if (!codec.ok()) return codec.status();
      const uint64_t lbas = LbasPerBlock(object.block_size);
      if (stripe_buffers.empty()) {
        const uint64_t stride = lbas * options_.lba_size;
        const uint64_t unit = static_cast<uint64_t>(width) * stride;
        const uint64_t extra = options.verify_parity ? static_cast<uint64_t>(k) * stride : 0;
        // At most a quarter of the memory limit beyond the two stripes every object may ask
        // for: a recover that sized itself to the whole limit would wait for every other
        // request to drain at each batch, and every later request would queue behind it.
        uint64_t depth = WithinQuarter(
            options_.stripes_in_flight != 0 ? options_.stripes_in_flight : kRecoverStripes, unit,
            extra);
        // No more than the object has (but 2, which the walk needs).
        depth = std::min<uint64_t>(depth, std::max<uint64_t>(object.stripe_count, 2));
        std::vector<int> blocks(depth, width);
        if (options.verify_parity) blocks.push_back(k);
        absl::StatusOr<StripeSet> allocated =
            AllocateStripes(blocks, object.block_size, 0, interrupt);
        if (!allocated.ok()) return allocated.status();
        buffers = std::move(*allocated);
        for (uint64_t d = 0; d < depth; ++d) stripe_buffers.push_back(&buffers[d]);
        if (options.verify_parity) parity = &buffers[depth];
      }
      const size_t depth = stripe_buffers.size();
      const uint64_t count = std::min(kStripeBatch, object.stripe_count - batch);
      absl::StatusOr<std::vector<BlockRecord>> blocks =
          catalog_->GetBlocks(object.id, batch, count);
      if (!blocks.ok()) return blocks.status();
      std::vector<BlockRecord> replaced;    // New locations, to commit.
      std::vector<BlockRecord> superseded;  // Old locations, freed after the commit.
      std::vector<bool> touched(devices_.size(), false);
      // By buffer: the writes of the rebuilt blocks of the stripe last worked on in it, waited
      // for before the buffer is read into again and before the batch commits.
      std::vector<std::unique_ptr<BlockIo>> writes(depth);
      // A failed write of a rebuilt block loses nothing: the batch commits nothing and the old
      // blocks stay where they were. Unavailable says so, rather than the device's DataLoss.
      auto finish_writes = [&](std::unique_ptr<BlockIo>& io) {
        if (io == nullptr) return absl::OkStatus();
        absl::Status s = io->Finish();
        io.reset();
        if (s.ok() || IsFileSystemFull(s)) return s;
        return absl::UnavailableError(absl::StrCat(
            "writing a rebuilt block of \"", name, "\" failed (", s.message(),
            "); nothing of this batch was committed and no data was lost. Check the devices "
            "(`ecctl device ls`) and run recover again"));
      };
      auto abandon = [&](absl::Status s) {
        for (std::unique_ptr<BlockIo>& io : writes) (void)finish_writes(io);
        DiscardExtents(replaced);
        return s;
      };
      std::vector<std::vector<const BlockRecord*>> stripes;
      size_t row = 0;
      for (uint64_t stripe = batch; stripe < batch + count; ++stripe) {
        stripes.push_back(TakeStripe(*blocks, row, stripe, width));
      }
      // The stripes to work on, as offsets in the batch, and for a rebuild the blocks of each
      // that need a new home: all stripes when checking every block.
      std::vector<uint64_t> work;
      std::vector<std::vector<int>> needs(count);
      std::vector<std::vector<int>> evicts(count);  // of needs[n], those `evict` chose
      for (uint64_t n = 0; n < count; ++n) {
        if (!listed.empty() && !std::binary_search(listed.begin(), listed.end(), batch + n)) {
          continue;
        }
        if (check_all) {
          work.push_back(n);
          continue;
        }
        for (int i = 0; i < width; ++i) {
          const BlockRecord* b = stripes[n][i];
          if (b != nullptr && options.evict && options.evict(*b)) {
            needs[n].push_back(i);
            evicts[n].push_back(i);
          } else if (b == nullptr || b->corrupt ||
                     (!DeviceOnline(b->device) &&
                      (options.rebuild_down || !DeviceDown(b->device)))) {
            needs[n].push_back(i);
          }
        }
        if (!needs[n].empty()) work.push_back(n);
      }
      // Starts the reads of work[w] into buffer w % depth: every block of the stripe, or for a
      // rebuild what LoadBlocks reads first.
      auto start_stripe = [&](size_t w) {
        const uint64_t n = work[w];
        if (!check_all) return StartLoad(object, stripes[n], needs[n], *stripe_buffers[w % depth]);
        auto reads = std::make_unique<BlockReads>();
        for (int i = 0; i < width; ++i) reads->indices.push_back(i);
        reads->blocks = stripes[n];
        reads->outs = stripe_buffers[w % depth]->views;
        StartReads(object, *reads);
        return reads;
      };
      p.stripes_done = batch;  // Every stripe before this batch; the batch's when it ends.
      std::deque<std::unique_ptr<BlockReads>> ahead;  // work[w ...]: waited for if abandoned
      size_t started = 0;
      // Starts reads into every buffer not being read, except the one of the stripe just
      // worked on while its rebuilt blocks are still being written (they overlap the next
      // stripe's work; that buffer is read into once they are done).
      auto read_ahead = [&]() -> absl::Status {
        while (started < work.size() && ahead.size() < depth) {
          std::unique_ptr<BlockIo>& io = writes[started % depth];
          if (io != nullptr && ahead.size() + 1 == depth) break;
          if (absl::Status s = finish_writes(io); !s.ok()) return s;
          ahead.push_back(start_stripe(started++));
        }
        return absl::OkStatus();
      };
      for (size_t w = 0; w < work.size(); ++w) {
        if (absl::Status s = read_ahead(); !s.ok()) return abandon(s);
        const uint64_t n = work[w];
        const uint64_t stripe = batch + n;
        const std::vector<const BlockRecord*>& by_index = stripes[n];
        StripeBuffer* const buffer = stripe_buffers[w % depth];
        std::unique_ptr<BlockReads> reads = std::move(ahead.front());
        ahead.pop_front();
        absl::StatusOr<StripeFindings> found =
            check_all ? CheckStripe(object, stripe, *codec, by_index, *buffer, *reads, options, p)
                      : RebuildStripe(object, stripe, *codec, by_index, needs[n], evicts[n],
                                      *buffer, std::move(reads), options.repair, p);
        if (!found.ok()) return abandon(found.status());
        if (found->lost) continue;
        if (options.verify_parity) {
          if (absl::Status s =
                  VerifyParity(object, stripe, *codec, *buffer, *parity, options.repair, *found, p);
              !s.ok()) {
            return abandon(s);
          }
        }
        if (!options.repair) continue;
        // Rebuilt, evicted and recomputed blocks all get new homes.
        const std::vector<int>& evicted = found->evicted;
        const std::vector<int>& mismatch = found->mismatch;
        std::vector<int> moves = found->bad;
        moves.insert(moves.end(), evicted.begin(), evicted.end());
        moves.insert(moves.end(), mismatch.begin(), mismatch.end());
        if (moves.empty()) continue;
        // Devices holding a block of this stripe (good or bad, one count per block): a rebuilt
        // block may only go to a device that holds no other block of the stripe.
        std::map<uint32_t, int> occupied;
        for (const BlockRecord* b : by_index) {
          if (b != nullptr) ++occupied[b->device];
        }
        std::unique_ptr<BlockIo>& io = writes[w % depth] = std::make_unique<BlockIo>();
        io->Reset(moves.size());
        for (size_t j = 0; j < moves.size(); ++j) {
          const int i = moves[j];
          const bool forced = std::find(evicted.begin(), evicted.end(), i) != evicted.end();
          const bool recomputed = std::find(mismatch.begin(), mismatch.end(), i) != mismatch.end();
          if (by_index[i] == nullptr) {
            return abandon(absl::InternalError(
                absl::StrCat("stripe ", stripe, " block ", i, " is missing from the catalog")));
          }
          BlockRecord old = *by_index[i];
          // Prefer the block's own device (copy-on-write) unless it is being evicted.
          absl::StatusOr<BlockRecord> placed =
              AllocateCopy(name, old, occupied, /*allow_same_device=*/!forced, SpaceUse::kRepair);
          if (!placed.ok()) {  // Keep going: other blocks and stripes may still find room.
            no_space =
                IsFileSystemFull(placed.status()) || absl::IsFailedPrecondition(placed.status())
                    ? placed.status()
                    : absl::ResourceExhaustedError(absl::StrCat(
                          "no online device outside stripe ", stripe, " has ",
                          lbas * options_.lba_size,
                          " free bytes for a rebuilt block; add or repair devices and run "
                          "recover again"));
            continue;
          }
          BlockRecord fresh = *placed;
          if (recomputed) fresh.crc32c = Crc32c(buffer->block(i));
          replaced.push_back(fresh);
          std::shared_ptr<Namespace> target = NamespaceOf(fresh.device, /*online_only=*/false);
          if (target == nullptr) return abandon(absl::UnavailableError("the device is gone"));
          io->devices[j] = target;
          target->WriteAsync(fresh.lba, buffer->padded(i),
                             TrackWrite(fresh.device, io->batch.Track(&io->status[j])));
          touched[fresh.device] = true;
          superseded.push_back(old);
          ++p.blocks_rebuilt;
          if (forced) ++p.blocks_relocated;
          p.bytes_rebuilt += object.block_size;
        }
      }
      p.stripes_done = batch + count;
      for (std::unique_ptr<BlockIo>& io : writes) {
        if (absl::Status s = finish_writes(io); !s.ok()) return abandon(s);
      }
      std::unique_ptr<RecordKeeper::Op> op = records_->NewOp();
      if (!replaced.empty()) {
        op->SetObject(object);
        for (const BlockRecord& b : replaced) op->AddBlock(b);
        if (absl::Status s = op->Write(touched); !s.ok()) return abandon(s);
      }
      if (absl::Status s = FlushDevices(touched); !s.ok()) return abandon(s);
      if (!replaced.empty()) {
        if (absl::Status s = catalog_->ReplaceBlocks(object.id, replaced, op->seq()); !s.ok()) {
          return abandon(s);
        }
        op->Commit();
        for (const BlockRecord& b : superseded) {
          if (auto ns = NamespaceOf(b.device, /*online_only=*/true)) {
            ns->Deallocate(b.lba, b.lba_count);
          }
        }
        FreeExtents(superseded);
      }
      // Never wait for the object's lock (the next batch) while holding stripe memory: a
      // request holding that lock may be waiting for the memory.
      buffers.buffers.clear();
      buffers.reservation.Release();
      stripe_buffers.clear();
      parity = nullptr;
    }
    if (progress) progress(p);
    if (options.cancelled && options.cancelled()) {
      return absl::CancelledError(absl::StrCat("stopped after ", p.stripes_done, " of ",
                                               p.stripes_total, " stripes of \"", name, "\""));
    }
    batch += kStripeBatch;
    if (!listed.empty()) {
      auto next = std::lower_bound(listed.begin(), listed.end(), batch);
      if (next == listed.end()) break;
      batch = *next;
    }
  }
  if (p.lost_stripes > 0) {
    return absl::DataLossError(absl::StrCat(
        p.lost_stripes, " of ", p.stripes_total, " stripes of \"", name,
        "\" have too few good blocks to rebuild what is bad (the rest were ",
        options.repair ? "repaired" : "checked",
        "). Bring failed devices back online and run recover again, or restore from a backup"));
  }
  if (!no_space.ok()) return no_space;
  return p;
}

absl::StatusOr<std::vector<DeviceStatus>> Store::ListDevices() {
  absl::StatusOr<std::vector<std::pair<uint32_t, uint64_t>>> counts =
      catalog_->BlockCountsByDevice();
  if (!counts.ok()) return counts.status();
  std::lock_guard lock(mu_);
  std::vector<DeviceStatus> out;
  for (const auto& d : devices_) {
    DeviceStatus s;
    s.record = d->record;
    s.used_bytes = d->allocator.used_lbas() * d->record.lba_size;
    s.free_bytes = d->allocator.free_lbas() * d->record.lba_size;
    s.metadata_bytes = ((d->label_lba ? 1 : 0) + d->log_place.lba_count) * d->record.lba_size;
    s.flush_failures = d->flush_failures;
    if (d->ns) s.counters = d->ns->Counters();
    out.push_back(s);
  }
  for (const auto& [id, n] : *counts) {
    if (id < out.size()) out[id].blocks = n;
  }
  return out;
}

absl::StatusOr<DeviceStatus> Store::SetDeviceState(uint32_t id, DeviceState state,
                                                   std::optional<DeviceState> only_from) {
  if (id >= devices_.size()) {
    return absl::NotFoundError(absl::StrCat("device ", id, " not found; devices are 0..",
                                            devices_.size() - 1, " (`ecctl device ls`)"));
  }
  Device& d = *devices_[id];
  std::lock_guard transition(state_mu_);  // One state change at a time.
  if (only_from) {
    std::lock_guard lock(mu_);
    if (d.record.state != *only_from) {
      return absl::FailedPreconditionError(
          absl::StrCat("device ", id, " is ", DeviceStateName(d.record.state), " now"));
    }
  }
  if (state == DeviceState::kFailing) {
    std::lock_guard lock(mu_);
    if (d.record.state != DeviceState::kOnline || d.ns == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("device ", id, " is ", DeviceStateName(d.record.state),
                       "; only an online device can be marked failing (to be evacuated)"));
    }
  }
  if (state == DeviceState::kDown) {
    return absl::InvalidArgumentError("a device is marked down by MarkDeviceDown, not here");
  }
  if (state == DeviceState::kOnline) {
    bool reopen;
    std::optional<uint64_t> label_lba;
    {
      std::lock_guard lock(mu_);
      reopen = d.ns == nullptr || d.record.state == DeviceState::kFailed ||
               d.record.state == DeviceState::kDown;
      label_lba = d.label_lba;
    }
    if (reopen) {  // A repaired device: open its namespace again and check its label.
      DeviceLabel label;
      absl::StatusOr<std::unique_ptr<Namespace>> ns =
          OpenDevice(d.record, /*create=*/false, label_lba, &label);
      if (!ns.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "device ", id, " cannot be brought online: ", ns.status().message(),
            ". Fix it and retry, or put a new blank namespace in its slot with `ecctl device "
            "replace ",
            id, "`"));
      }
      {
        std::lock_guard lock(mu_);
        d.ns = std::move(*ns);  // I/O still holding the old handle finishes on it.
        d.write_errors_in_a_row = 0;
      }
      if (!label_lba) {
        if (absl::Status s = LabelDevice(d); !s.ok()) return s;
      }
      if (absl::Status s = ReopenRecordLog(d, label.log); !s.ok()) return s;
    } else if (records_->log(id) == nullptr) {  // Its log could not be written before.
      if (absl::Status s = ReopenRecordLog(d, {}); !s.ok()) return s;
    }
  }
  if (absl::Status s = catalog_->SetDeviceState(id, state); !s.ok()) return s;
  {
    std::lock_guard lock(mu_);
    d.record.state = state;
    d.record.down_since_unix_ms = 0;
    d.record.down_reason.clear();
  }
  Log(LogLevel::kInfo, "device %d is now %s", id, DeviceStateName(state));
  NotifyRepair();
  absl::StatusOr<std::vector<DeviceStatus>> all = ListDevices();
  if (!all.ok()) return all.status();
  return (*all)[id];
}

}  // namespace ecd::store
