// Controller: command validation, PRP resolution and io_uring execution for one namespace.
#include "lib/nvme/controller.h"

#include <bit>
#include <cerrno>

#include "absl/strings/str_format.h"
#include "lib/nvme/prp_walker.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {
namespace {

// Tag of an io_uring op: the command id in the low 16 bits.
uint64_t Tag(uint16_t cid) { return cid; }

NvmeStatus StatusForErrno(Opcode op, int err) {
  if (err == ENOSPC) return Failure(kScCapacityExceeded);
  if (err == EIO || err == ENODATA || err == EBADMSG) {
    return Failure(op == Opcode::kRead ? kScUnrecoveredReadError : kScWriteFault, kSctMedia);
  }
  if (op == Opcode::kFlush) return Failure(kScWriteFault, kSctMedia);
  return Failure(kScInternalError);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Controller>> Controller::Create(
    HostMemory* memory, const std::string& path, uint32_t lba_size, uint64_t lba_count,
    const ControllerOptions& options, const DmaMap* dma) {
  if (options.queue_entries < 2 || options.queue_entries > 4096 ||
      (options.queue_entries & (options.queue_entries - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NVMe queue depth %u is not a power of two from 2 to 4096", options.queue_entries));
  }
  if (options.mdts > 16) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MDTS %u is too large: at most 16 (256 MiB in 4 KiB units)", options.mdts));
  }
  if (lba_size < 512 || (lba_size & (lba_size - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("LBA size %u is not a power of two of at least 512", lba_size));
  }
  // The fetch manager's 10-bit No_of_desc_rem bounds a command to about 1024 list entries.
  const uint64_t max_pages = MdtsBytes(options.mdts) / memory->page_size();
  if (options.mdts == 0 || max_pages > 1024) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MDTS %u allows %u-byte commands, more than 1024 pages of %u bytes that a PRP list "
        "set can describe; use an MDTS from 1 to %u",
        options.mdts, MdtsBytes(options.mdts), memory->page_size(),
        10 + std::countr_zero(memory->page_size()) - 12));
  }
  PrpFetchOptions fo;
  fo.page_size = memory->page_size();
  fo.prps_per_index = options.prps_per_index;
  fo.num_indexes = std::min<uint32_t>(options.queue_entries, 4095);
  HostMemory* mem = memory;
  auto fetcher = PrpFetchManager::Create(
      fo, [mem](uint64_t addr, void* dst, size_t len) { return mem->Read(addr, dst, len); });
  if (!fetcher.ok()) return fetcher.status();
  UringOptions uo;
  uo.queue_depth = options.queue_entries;
  uo.direct = options.direct;
  // The pool, then the host's fixed DMA regions, as fixed buffers of at most 1 GiB each.
  std::vector<iovec> buffers = memory->FixedBuffers();
  const size_t pool_buffers = buffers.size();
  if (dma != nullptr) {
    for (const iovec& r : dma->FixedRegions()) {
      AppendFixedBuffers(static_cast<uint8_t*>(r.iov_base), r.iov_len, &buffers);
    }
  }
  auto uring = UringQueue::Open(path, buffers, uo);
  if (!uring.ok()) return uring.status();
  if (!(*uring)->fixed_buffers() && buffers.size() > pool_buffers) {
    // Most likely RLIMIT_MEMLOCK: each device is charged for the shared regions again. Keep at
    // least the pool fixed; the regions' data then moves as plain I/O.
    Log(LogLevel::kWarning,
        "%s: io_uring refused the DMA arena as fixed buffers (%s); its blocks move as plain "
        "I/O, which is slower: raise RLIMIT_MEMLOCK to devices x (--dma-arena + "
        "--nvme-host-memory), or lower --dma-arena (docs/operations.md)",
        path, (*uring)->buffer_registration_status().message());
    buffers.resize(pool_buffers);
    uring->reset();  // one ring at a time
    uring = UringQueue::Open(path, buffers, uo);
    if (!uring.ok()) return uring.status();
  }
  if (!(*uring)->fixed_buffers()) {
    Log(LogLevel::kWarning,
        "%s: io_uring refused the DMA pool as fixed buffers (%s); I/O is slower: raise "
        "RLIMIT_MEMLOCK (docs/operations.md)",
        path, (*uring)->buffer_registration_status().message());
  }
  return std::unique_ptr<Controller>(new Controller(
      memory, dma, *std::move(uring), *std::move(fetcher), lba_size, lba_count, options));
}

Controller::Controller(HostMemory* memory, const DmaMap* dma, std::unique_ptr<UringQueue> uring,
                       std::unique_ptr<PrpFetchManager> fetcher, uint32_t lba_size,
                       uint64_t lba_count, const ControllerOptions& options)
    : memory_(memory),
      dma_(dma),
      uring_(std::move(uring)),
      fetcher_(std::move(fetcher)),
      lba_size_(lba_size),
      lba_count_(lba_count),
      options_(options) {
  stats_.direct = uring_->direct();
  stats_.fixed_buffers = uring_->fixed_buffers();
}

Controller::~Controller() {
  stop_.store(true);
  uring_->Wake();
  if (reaper_.joinable()) reaper_.join();
}

uint64_t Controller::max_transfer_bytes() const { return MdtsBytes(options_.mdts); }

void Controller::AttachQueues(SubmissionQueue* sq, CompletionQueue* cq,
                              std::function<void(CompletionQueue&)> interrupt) {
  sq_ = sq;
  cq_ = cq;
  interrupt_ = std::move(interrupt);
  reaper_ = std::thread([this] { ReaperLoop(); });
}

void Controller::RingSubmissionDoorbell() {
  SubmissionEntry e;
  while (sq_->Pop(&e)) {
    sq_head_.store(sq_->controller_head());
    Start(e);
  }
}

void Controller::CompleteNow(uint16_t cid, NvmeStatus status) {
  {
    MutexLock lock(mu_);
    immediate_.emplace_back(cid, status);
    ++stats_.errors[status.Field()];
  }
  uring_->Wake();
}

void Controller::Start(const SubmissionEntry& e) {
  const auto op = static_cast<Opcode>(e.opcode);
  if (op != Opcode::kRead && op != Opcode::kWrite && op != Opcode::kFlush) {
    return CompleteNow(e.cid, Failure(kScInvalidOpcode));
  }
  if (e.psdt != 0) return CompleteNow(e.cid, Failure(kScInvalidField));  // SGLs unsupported
  if (op == Opcode::kFlush) {
    if (e.nsid != 1 && e.nsid != 0xFFFFFFFF) {
      return CompleteNow(e.cid, Failure(kScInvalidNamespace));
    }
    return Launch(e.cid, op, {IoOp{IoOp::Kind::kFsync, 0, nullptr, 0, Tag(e.cid)}}, 0);
  }
  if (e.nsid != 1) return CompleteNow(e.cid, Failure(kScInvalidNamespace));
  const uint64_t blocks = uint64_t{e.nlb} + 1;
  if (e.slba >= lba_count_ || blocks > lba_count_ - e.slba) {
    return CompleteNow(e.cid, Failure(kScLbaOutOfRange));
  }
  const uint64_t length = blocks * lba_size_;
  if (options_.mdts != 0 && length > max_transfer_bytes()) {
    return CompleteNow(e.cid, Failure(kScInvalidField));
  }
  PrpWalk walk = WalkPrps(*fetcher_, memory_->page_size(), e.prp1, e.prp2, length);
  if (!walk.status.ok()) return CompleteNow(e.cid, walk.status);
  // Segments are checked after coalescing: a run is contiguous host memory, so it is valid
  // when it lies in the pool or in registered regions, whatever the pages it was made of.
  const std::vector<DataSegment> runs =
      CoalesceSegments(walk.segments, memory_->base_address(), kMaxFixedBufferBytes, 1u << 30);
  std::vector<IoOp> ops;
  ops.reserve(runs.size());
  uint64_t file_off = e.slba * lba_size_;
  const IoOp::Kind kind = op == Opcode::kRead ? IoOp::Kind::kRead : IoOp::Kind::kWrite;
  for (const DataSegment& r : runs) {
    uint8_t* data = TranslateData(r.addr, r.len);
    if (data == nullptr) return CompleteNow(e.cid, Failure(kScDataTransferError));
    ops.push_back(IoOp{kind, file_off, data, r.len, Tag(e.cid)});
    file_off += r.len;
  }
  {
    MutexLock lock(mu_);
    stats_.data_segments += walk.segments.size();
    stats_.prp_sets += walk.fetch_sets;
  }
  Launch(e.cid, op, std::move(ops), length);
}

uint8_t* Controller::TranslateData(uint64_t addr, uint64_t len) const {
  if (uint8_t* p = memory_->Translate(addr, len); p != nullptr) return p;
  if (dma_ != nullptr && dma_->Contains(addr, len)) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): host addresses are virtual addresses here
    return reinterpret_cast<uint8_t*>(addr);
  }
  return nullptr;
}

void Controller::Launch(uint16_t cid, Opcode op, std::vector<IoOp> ops, uint64_t expected) {
  {
    MutexLock lock(mu_);
    Inflight f;
    f.cid = cid;
    f.opcode = op;
    f.ops_left = static_cast<uint32_t>(ops.size());
    f.expected = expected;
    inflight_[cid] = f;
    ++(op == Opcode::kRead ? stats_.reads : op == Opcode::kWrite ? stats_.writes : stats_.flushes);
    stats_.io_ops += ops.size();
    ++stats_.in_flight;
  }
  if (absl::Status s = uring_->Submit(ops); !s.ok()) {
    // Submit queues all or nothing; nothing of this command is in flight.
    MutexLock lock(mu_);
    inflight_.erase(cid);
    --stats_.in_flight;
    immediate_.emplace_back(cid, Failure(kScInternalError));
    ++stats_.errors[Failure(kScInternalError).Field()];
  }
}

void Controller::ReaperLoop() {
  std::vector<IoResult> results;
  while (!stop_.load()) {
    results.clear();
    (void)uring_->Reap(1, &results);
    std::vector<std::pair<uint16_t, NvmeStatus>> done;
    {
      MutexLock lock(mu_);
      done.swap(immediate_);
      for (const IoResult& r : results) {
        auto it = inflight_.find(static_cast<uint16_t>(r.tag & 0xFFFF));
        if (r.tag > 0xFFFF || it == inflight_.end()) continue;  // a wake-up
        Inflight& f = it->second;
        if (r.res < 0) {
          if (f.status.ok()) f.status = StatusForErrno(f.opcode, -r.res);
        } else {
          f.bytes += static_cast<uint64_t>(r.res);
        }
        if (--f.ops_left > 0) continue;
        if (f.status.ok() && f.bytes != f.expected) f.status = Failure(kScDataTransferError);
        if (f.status.ok()) {
          if (f.opcode == Opcode::kRead) stats_.bytes_read += f.bytes;
          if (f.opcode == Opcode::kWrite) stats_.bytes_written += f.bytes;
        } else {
          ++stats_.errors[f.status.Field()];
        }
        done.emplace_back(f.cid, f.status);
        inflight_.erase(it);
        --stats_.in_flight;
      }
    }
    if (!done.empty()) Post(done);
  }
}

void Controller::Post(const std::vector<std::pair<uint16_t, NvmeStatus>>& done) {
  MutexLock lock(cq_mu_);
  for (const auto& [cid, status] : done) {
    CompletionEntry c;
    c.cid = cid;
    c.sq_id = 1;
    c.sq_head = static_cast<uint16_t>(sq_head_.load());
    c.status = status;
    // The host consumes every completion in the interrupt, and at most entries-1 commands are
    // outstanding, so the queue cannot be full here.
    cq_->Post(c);
  }
  interrupt_(*cq_);
}

ControllerStats Controller::stats() const {
  // The ring's lock is held across io_uring_submit: never take it under mu_.
  const UringStats u = uring_->stats();
  MutexLock lock(mu_);
  ControllerStats s = stats_;
  s.fetch = fetcher_->stats();
  s.fixed_io_ops = u.fixed_rw;
  s.plain_io_ops = u.plain_rw;
  return s;
}

}  // namespace ecd::nvme
