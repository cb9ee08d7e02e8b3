// Device: splits namespace I/O into NVMe commands over PRP-described host pages.
#include "lib/nvme/device.h"

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "absl/strings/str_format.h"
#include "lib/nvme/prp_builder.h"

namespace ecd::nvme {

absl::StatusOr<std::unique_ptr<Device>> Device::Open(const std::string& path, uint32_t lba_size,
                                                     uint64_t lba_count,
                                                     const DeviceOptions& options) {
  const uint64_t pages = options.host_memory_bytes / options.page_size;
  if (pages * options.page_size / 2 < std::max<uint64_t>(lba_size, 2 * options.page_size)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "host memory of %u bytes is too small for %u-byte LBAs and %u-byte pages; give at least "
        "%u bytes",
        options.host_memory_bytes, lba_size, options.page_size,
        2 * std::max<uint64_t>(lba_size, 2 * options.page_size)));
  }
  auto memory = HostMemory::Create(options.page_size, pages);
  if (!memory.ok()) return memory.status();
  auto controller =
      Controller::Create(memory->get(), path, lba_size, lba_count, options.controller);
  if (!controller.ok()) return controller.status();
  return std::unique_ptr<Device>(new Device(path, *std::move(memory), *std::move(controller)));
}

Device::Device(std::string path, std::unique_ptr<HostMemory> memory,
               std::unique_ptr<Controller> controller)
    : path_(std::move(path)),
      memory_(std::move(memory)),
      controller_(std::move(controller)),
      driver_(std::make_unique<Driver>(controller_.get())) {
  const uint64_t mdts = controller_->max_transfer_bytes();
  // Half the pool per command at most, so two commands can always be staged at once.
  uint64_t chunk = memory_->size_bytes() / 2;
  chunk = std::min(chunk, mdts);
  chunk -= chunk % lba_size();
  chunk_bytes_ = std::min<uint64_t>(chunk, uint64_t{lba_size()} << 16);  // NLB is 16 bits
}

Device::~Device() {
  driver_.reset();
  controller_.reset();
}

absl::Status Device::Read(uint64_t lba, absl::Span<uint8_t> out) {
  return Transfer(false, lba, out.data(), out.size());
}

absl::Status Device::Write(uint64_t lba, absl::Span<const uint8_t> data) {
  return Transfer(true, lba, const_cast<uint8_t*>(data.data()), data.size());
}

absl::Status Device::Transfer(bool write, uint64_t lba, uint8_t* buf, uint64_t bytes) {
  const uint32_t lbs = lba_size();
  if (bytes % lbs != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("I/O of %u bytes is not a multiple of the LBA size %u", bytes, lbs));
  }
  const uint32_t page = memory_->page_size();
  struct Pending {
    std::vector<uint64_t> pages;
    PrpDescriptor prps;
    uint8_t* user = nullptr;
    uint64_t len = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  size_t outstanding = 0;
  NvmeStatus first_error;
  std::vector<std::unique_ptr<Pending>> chunks;

  absl::Status local_error;  // a failure before a command could be submitted
  for (uint64_t done = 0; done < bytes; done += chunk_bytes_) {
    auto p = std::make_unique<Pending>();
    p->user = buf + done;
    p->len = std::min(chunk_bytes_, bytes - done);
    // Data and list pages in one allocation, so no caller holds some while waiting for more.
    const uint64_t data_pages = (p->len + page - 1) / page;
    const uint64_t list_pages = data_pages > 2 ? ListPageCount(page, 0, data_pages - 1) : 0;
    auto pages = memory_->AllocatePagesWait(data_pages + list_pages);
    if (!pages.ok()) {
      local_error = pages.status();
      break;  // commands already submitted are waited for below: they use this frame
    }
    p->pages = *std::move(pages);
    const absl::Span<const uint64_t> all(p->pages);
    if (write) {
      for (uint64_t off = 0; off < p->len; off += page) {
        std::memcpy(memory_->Translate(p->pages[off / page], page), p->user + off,
                    std::min<uint64_t>(page, p->len - off));
      }
    }
    auto prps =
        BuildPrps(*memory_, all.subspan(0, data_pages), 0, p->len, 0, all.subspan(data_pages));
    if (!prps.ok()) {
      memory_->FreePages(p->pages);
      local_error = prps.status();
      break;
    }
    p->prps = *std::move(prps);
    SubmissionEntry e;
    e.opcode = static_cast<uint8_t>(write ? Opcode::kWrite : Opcode::kRead);
    e.nsid = 1;
    e.prp1 = p->prps.prp1;
    e.prp2 = p->prps.prp2;
    e.slba = lba + done / lbs;
    e.nlb = static_cast<uint16_t>(p->len / lbs - 1);
    {
      std::lock_guard<std::mutex> lock(mu);
      ++outstanding;
    }
    Pending* raw = p.get();
    chunks.push_back(std::move(p));
    driver_->Submit(e, [&, raw, write](const CompletionEntry& c) {
      if (!write && c.status.ok()) {
        for (uint64_t off = 0; off < raw->len; off += page) {
          std::memcpy(raw->user + off, memory_->Translate(raw->pages[off / page], page),
                      std::min<uint64_t>(page, raw->len - off));
        }
      }
      memory_->FreePages(raw->pages);  // data and list pages
      std::lock_guard<std::mutex> lock(mu);
      if (!c.status.ok() && first_error.ok()) first_error = c.status;
      if (--outstanding == 0) cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return outstanding == 0; });
  if (!local_error.ok()) return local_error;
  return ToAbslStatus(first_error, absl::StrFormat("%s %s LBA %u+%u", write ? "write" : "read",
                                                   path_, lba, bytes / lbs));
}

absl::Status Device::Flush() {
  SubmissionEntry e;
  e.opcode = static_cast<uint8_t>(Opcode::kFlush);
  e.nsid = 1;
  return ToAbslStatus(driver_->Execute(e), "flush " + path_);
}

}  // namespace ecd::nvme
