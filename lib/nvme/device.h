// Device: a simulated NVMe device as the store sees it, a byte-addressed-by-LBA namespace on
// top of host memory, a controller and a driver. Every Read and Write is split into commands of
// at most MDTS bytes described by PRPs, and all commands of one call are in flight together.
// A buffer registered in the device's DmaMap is transferred in place: the PRPs point at its own
// pages (zero copy). Any other buffer is staged, a command at a time, through the device's pool
// of host-memory pages (the DMA buffers).
#ifndef ECD_LIB_NVME_DEVICE_H_
#define ECD_LIB_NVME_DEVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/nvme/controller.h"
#include "lib/nvme/dma_map.h"
#include "lib/nvme/driver.h"
#include "lib/nvme/host_memory.h"

namespace ecd::nvme {

struct DeviceOptions {
  ControllerOptions controller;
  uint32_t page_size = 4096;              // host memory page size (CC.MPS)
  uint64_t host_memory_bytes = 8u << 20;  // DMA buffer pool; bounds memory per device
  // Regions the controller may also transfer to and from (null: the pool only). Shared by the
  // devices of one store, which registers its stripe buffers in it.
  std::shared_ptr<DmaMap> dma_map;
};

// How a device's transfers moved their data, by command.
struct TransferStats {
  uint64_t zero_copy_commands = 0;  // PRPs pointed at the caller's registered buffer
  uint64_t staged_commands = 0;     // data copied through the device's pool
};

// Thread safety: Read, Write and Flush may be called concurrently.
class Device {
 public:
  // `path` must exist and hold at least lba_count * lba_size bytes.
  static absl::StatusOr<std::unique_ptr<Device>> Open(const std::string& path, uint32_t lba_size,
                                                      uint64_t lba_count,
                                                      const DeviceOptions& options);
  ~Device();

  uint32_t lba_size() const { return controller_->lba_size(); }
  uint64_t lba_count() const { return controller_->lba_count(); }

  // REQUIRES: sizes are multiples of lba_size(). Errors carry the NVMe status in the message:
  // DataLoss for media errors, OutOfRange for LBA range, ResourceExhausted for Capacity
  // Exceeded (ENOSPC from the file system under a file namespace), Internal otherwise.
  absl::Status Read(uint64_t lba, absl::Span<uint8_t> out);
  absl::Status Write(uint64_t lba, absl::Span<const uint8_t> data);
  absl::Status Flush();

  // As Read and Write, but return once every command of the call is submitted (they may wait
  // for free host-memory pages first); `done` then runs exactly once with the call's status, on
  // the controller's completion thread or, for an error before any command was submitted, on
  // the caller's. The buffer must stay valid and untouched until `done` runs, and `done` must
  // not block on other I/O of this device.
  using Done = std::function<void(absl::Status)>;
  void ReadAsync(uint64_t lba, absl::Span<uint8_t> out, Done done);
  void WriteAsync(uint64_t lba, absl::Span<const uint8_t> data, Done done);

  HostMemory& memory() { return *memory_; }
  Driver& driver() { return *driver_; }
  ControllerStats stats() const { return controller_->stats(); }
  TransferStats transfer_stats() const;

 private:
  Device(std::string path, std::shared_ptr<DmaMap> dma, std::unique_ptr<HostMemory> memory,
         std::unique_ptr<Controller> controller);
  struct Transfer;
  void StartTransfer(bool write, uint64_t lba, uint8_t* buf, uint64_t bytes, Done done);
  // True when [buf, buf + bytes) can be handed to the controller in place: registered, and
  // aligned as PRP1 and the namespace's direct I/O need.
  bool InPlace(const uint8_t* buf, uint64_t bytes) const;

  const std::string path_;
  const std::shared_ptr<DmaMap> dma_;  // may be null; outlives the controller
  std::unique_ptr<HostMemory> memory_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<Driver> driver_;
  uint64_t chunk_bytes_;           // largest staged command
  uint64_t in_place_chunk_bytes_;  // largest command in place
  std::atomic<uint64_t> zero_copy_commands_{0};
  std::atomic<uint64_t> staged_commands_{0};
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_DEVICE_H_
