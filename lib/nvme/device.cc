// Device: splits namespace I/O into NVMe commands over PRP-described host pages.
#include "lib/nvme/device.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "lib/nvme/prp_builder.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {

absl::StatusOr<std::unique_ptr<Device>> Device::Open(const std::string& path, uint32_t lba_size,
                                                     uint64_t lba_count,
                                                     const DeviceOptions& options) {
  const uint64_t pages = options.host_memory_bytes / options.page_size;
  const uint64_t least = 2 * std::max<uint64_t>(lba_size, 2 * uint64_t{options.page_size});
  if (pages * options.page_size < least) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "host memory of %u bytes is too small for %u-byte LBAs and %u-byte pages; give at least "
        "%u bytes",
        options.host_memory_bytes, lba_size, options.page_size, least));
  }
  auto memory = HostMemory::Create(options.page_size, pages);
  if (!memory.ok()) return memory.status();
  auto controller = Controller::Create(memory->get(), path, lba_size, lba_count, options.controller,
                                       options.dma_map.get());
  if (!controller.ok()) return controller.status();
  return std::unique_ptr<Device>(
      new Device(path, options.dma_map, *std::move(memory), *std::move(controller)));
}

Device::Device(std::string path, std::shared_ptr<DmaMap> dma, std::unique_ptr<HostMemory> memory,
               std::unique_ptr<Controller> controller)
    : path_(std::move(path)),
      dma_(std::move(dma)),
      memory_(std::move(memory)),
      controller_(std::move(controller)),
      driver_(std::make_unique<Driver>(controller_.get())) {
  // At most MDTS and 2^16 LBAs (NLB is 16 bits) per command. A staged command also takes at
  // most half the pool, so two can always be staged at once; one in place takes only its PRP
  // list pages from the pool (at most 3 of the 4 a pool has at least).
  uint64_t limit =
      std::min<uint64_t>(controller_->max_transfer_bytes(), uint64_t{lba_size()} << 16);
  limit -= limit % lba_size();
  in_place_chunk_bytes_ = limit;
  chunk_bytes_ = std::min(limit, memory_->size_bytes() / 2 / lba_size() * lba_size());
}

Device::~Device() {
  driver_.reset();
  controller_.reset();
}

TransferStats Device::transfer_stats() const {
  return TransferStats{zero_copy_commands_.load(std::memory_order_relaxed),
                       staged_commands_.load(std::memory_order_relaxed)};
}

bool Device::InPlace(const uint8_t* buf, uint64_t bytes) const {
  // Direct I/O wants memory aligned to the logical block; PRP1 wants a dword.
  const uint64_t align = std::min<uint64_t>(lba_size(), kMinPageSize);
  const auto addr = reinterpret_cast<uint64_t>(buf);
  return dma_ != nullptr && addr % align == 0 && dma_->Contains(addr, bytes);
}

namespace {

// Waits for one asynchronous call's status. The callback finishes under the lock it notifies
// with, so the waiter (and this object) cannot be gone before the callback is done with it.
class StatusWaiter {
 public:
  Device::Done Callback() {
    return [this](absl::Status s) {
      MutexLock lock(mu_);
      status_ = std::move(s);
      done_ = true;
      cv_.NotifyOne();
    };
  }
  absl::Status Wait() {
    MutexLock lock(mu_);
    cv_.Wait(mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_; });
    return status_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool done_ = false;
  absl::Status status_;
};

}  // namespace

absl::Status Device::Read(uint64_t lba, absl::Span<uint8_t> out) {
  StatusWaiter waiter;
  ReadAsync(lba, out, waiter.Callback());
  return waiter.Wait();
}

absl::Status Device::Write(uint64_t lba, absl::Span<const uint8_t> data) {
  StatusWaiter waiter;
  WriteAsync(lba, data, waiter.Callback());
  return waiter.Wait();
}

void Device::ReadAsync(uint64_t lba, absl::Span<uint8_t> out, Done done) {
  StartTransfer(false, lba, out.data(), out.size(), std::move(done));
}

void Device::WriteAsync(uint64_t lba, absl::Span<const uint8_t> data, Done done) {
  StartTransfer(true, lba, const_cast<uint8_t*>(data.data()), data.size(), std::move(done));
}

// One Read or Write call: its commands and what their completions share. The submitter holds
// one count of `outstanding` until every command is submitted, so `done` cannot run early.
struct Device::Transfer {
  struct Chunk {
    // Pool pages this command holds: staged data pages, then PRP list pages.
    std::vector<uint64_t> pages;
    PrpDescriptor prps;
    uint8_t* user = nullptr;
    uint64_t len = 0;
  };
  bool write = false;
  bool in_place = false;  // PRPs point at the caller's buffer; nothing is staged
  uint64_t lba = 0;
  uint64_t lba_count = 0;
  Done done;
  std::vector<std::unique_ptr<Chunk>> chunks;  // appended by the submitter only

  Mutex mu;
  size_t outstanding ABSL_GUARDED_BY(mu) = 1;
  NvmeStatus first_error ABSL_GUARDED_BY(mu);
  absl::Status local_error;  // a failure before a command could be submitted; submitter only

  // Drops one count; the last one reports the call's status.
  // Not analysed: the last count's holder reads first_error unlocked, as no other thread is left.
  void Release(const std::string& path) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    {
      MutexLock lock(mu);
      if (--outstanding != 0) return;
    }
    if (!local_error.ok()) {
      done(local_error);
    } else {
      done(ToAbslStatus(first_error, absl::StrFormat("%s %s LBA %u+%u", write ? "write" : "read",
                                                     path, lba, lba_count)));
    }
  }
};

void Device::StartTransfer(bool write, uint64_t lba, uint8_t* buf, uint64_t bytes, Done done) {
  const uint32_t lbs = lba_size();
  if (bytes % lbs != 0) {
    done(absl::InvalidArgumentError(
        absl::StrFormat("I/O of %u bytes is not a multiple of the LBA size %u", bytes, lbs)));
    return;
  }
  const uint32_t page = memory_->page_size();
  auto t = std::make_shared<Transfer>();
  t->write = write;
  t->lba = lba;
  t->lba_count = bytes / lbs;
  t->done = std::move(done);
  t->in_place = InPlace(buf, bytes);
  std::vector<uint64_t> user_pages;  // in place: the pages of one chunk of the caller's buffer
  const uint64_t chunk_bytes = t->in_place ? in_place_chunk_bytes_ : chunk_bytes_;
  for (uint64_t at = 0; at < bytes; at += chunk_bytes) {
    auto p = std::make_unique<Transfer::Chunk>();
    p->user = buf + at;
    p->len = std::min(chunk_bytes, bytes - at);
    const auto user_addr = reinterpret_cast<uint64_t>(p->user);
    const uint32_t offset = t->in_place ? static_cast<uint32_t>(user_addr % page) : 0;
    const uint64_t data_pages = DataPageCount(page, offset, p->len);
    const uint64_t list_pages = data_pages > 2 ? ListPageCount(page, 0, data_pages - 1) : 0;
    const uint64_t pool_pages = (t->in_place ? 0 : data_pages) + list_pages;
    if (pool_pages > 0) {
      // Data and list pages in one allocation, so no caller holds some while waiting for more.
      auto pages = memory_->AllocatePagesWait(pool_pages);
      if (!pages.ok()) {
        t->local_error = pages.status();
        break;  // commands already submitted complete first: they use this call's buffer
      }
      p->pages = *std::move(pages);
    }
    absl::Span<const uint64_t> data(p->pages);
    absl::Span<const uint64_t> lists = data.subspan(t->in_place ? 0 : data_pages);
    if (t->in_place) {
      user_pages.clear();
      for (uint64_t i = 0; i < data_pages; ++i) user_pages.push_back(user_addr - offset + i * page);
      data = user_pages;
    } else if (write) {
      for (uint64_t off = 0; off < p->len; off += page) {
        std::memcpy(memory_->Translate(p->pages[off / page], page), p->user + off,
                    std::min<uint64_t>(page, p->len - off));
      }
    }
    auto prps = BuildPrps(*memory_, data.subspan(0, data_pages), offset, p->len, 0, lists);
    if (!prps.ok()) {
      if (!p->pages.empty()) memory_->FreePages(p->pages);
      t->local_error = prps.status();
      break;
    }
    p->prps = *std::move(prps);
    SubmissionEntry e;
    e.opcode = static_cast<uint8_t>(write ? Opcode::kWrite : Opcode::kRead);
    e.nsid = 1;
    e.prp1 = p->prps.prp1;
    e.prp2 = p->prps.prp2;
    e.slba = lba + at / lbs;
    e.nlb = static_cast<uint16_t>(p->len / lbs - 1);
    {
      MutexLock lock(t->mu);
      ++t->outstanding;
    }
    Transfer::Chunk* raw = p.get();
    t->chunks.push_back(std::move(p));
    (t->in_place ? zero_copy_commands_ : staged_commands_).fetch_add(1, std::memory_order_relaxed);
    driver_->Submit(e, [this, t, raw, page](const CompletionEntry& c) {
      if (!t->write && !t->in_place && c.status.ok()) {
        for (uint64_t off = 0; off < raw->len; off += page) {
          std::memcpy(raw->user + off, memory_->Translate(raw->pages[off / page], page),
                      std::min<uint64_t>(page, raw->len - off));
        }
      }
      if (!raw->pages.empty()) memory_->FreePages(raw->pages);  // staged data and list pages
      {
        MutexLock lock(t->mu);
        if (!c.status.ok() && t->first_error.ok()) t->first_error = c.status;
      }
      t->Release(path_);
    });
  }
  t->Release(path_);
}

absl::Status Device::Flush() {
  SubmissionEntry e;
  e.opcode = static_cast<uint8_t>(Opcode::kFlush);
  e.nsid = 1;
  return ToAbslStatus(driver_->Execute(e), "flush " + path_);
}

}  // namespace ecd::nvme
