// PrpFetchManager: a software model of the PRP fetch manager of the AMD/Xilinx NVMe Target
// Controller (PG329). For a command whose PRP2 is a PRP List pointer, the controller reads PRP
// list entries from host memory into per-command ping/pong buffers and describes each set, and
// what remains, in a 128-bit "PRP fetch information" header. The application asks for the next
// set by sending that header back (sgl_prp_req_axis); the controller answers with a 16-bit fill
// descriptor (sgl_prp_fill_m_axis) naming the buffer it filled.
//
// Interpretation decisions (the public PG329 text leaves these open):
// - Header layout follows the bit positions of PG329's PRP fetch information header table. Bit
//   93 is not listed there and is treated as reserved (must be 0). No_of_desc_rem is [117:108],
//   i.e. 10 bits; the table's size column says "9", but the bit positions win.
// - Buffers: every prp_index (UID) owns a ping and a pong buffer of B = 2*(C_NUM_PRPS_PER_INDX-1)
//   entries each, so B <= 14 fits the 4-bit Valid_entries. The initial fetch ("2*(C-1) PRPs")
//   fills ping alone; every later fetch fills the other buffer than the last filled one, so sets
//   land in ping, pong, ping, pong, ...
// - data_size_rem is the number of data bytes still to be described by list entries not yet
//   fetched (after this set); no_of_desc_rem == ceil(data_size_rem / page_size). Both are 0 in the
//   last set, which is how the application recognises "last PRP".
// - host_addr is the host address of the next list slot to read. It may be the last slot of a
//   list page holding a chain pointer: whether a slot is a chain pointer follows from its address
//   and no_of_desc_rem alone, so a header is enough to resume the walk. It is 0 when nothing
//   remains. In a set with an error it is the address of the slot where the error was found (for a
//   misaligned list pointer, that pointer with bits 2:0 cleared; for a failed read, the start of
//   the read).
// - PRP errors found in host memory are not absl errors: Begin/Fetch succeed and the set's header
//   carries error_code (kScPrpOffsetInvalid or kScDataTransferError) with valid_entries = the
//   number of good entries fetched into this buffer before the bad one. Its data_size_rem and
//   no_of_desc_rem are what the walk left; no_of_desc_rem is capped at 1023, the field's maximum,
//   when the first set of a list longer than that fails. The caller must fail the command (moving
//   no data) and Release the index; no further Fetch is allowed for it. absl errors report misuse
//   of the API (bad arguments, stale requests, no free index).
// - Because no_of_desc_rem has 10 bits, Begin refuses a transfer needing more than 1023 + B list
//   entries (PG329 bounds transfers by MDTS, far below that).
#ifndef ECD_LIB_NVME_PRP_FETCH_H_
#define ECD_LIB_NVME_PRP_FETCH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lib/nvme/command.h"
#include "lib/util/mutex.h"

namespace ecd::nvme {

// error_code holds an NVMe Generic Command Status code (SCT 0h, lib/nvme/command.h):
// kScSuccess, kScDataTransferError (a list read from host memory failed) or kScPrpOffsetInvalid
// (misaligned list pointer, entry or chain).

// Buffer numbers, as in the ping_or_pong fields.
inline constexpr int kPing = 0;
inline constexpr int kPong = 1;

// The 128-bit PRP fetch information header that accompanies each PRP set.
// Bit layout (bit 0 = bit 0 of byte 0 of the packed little-endian image):
//   [31:0] data_size_rem  [92:32] host_addr[63:3]  [93] reserved  [94] sgl_or_prp
//   [106:95] prp_index  [107] ping_or_pong  [117:108] no_of_desc_rem  [123:118] error_code
//   [127:124] valid_entries
struct PrpFetchInfo {
  uint32_t data_size_rem = 0;   // data bytes for list entries not yet fetched
  uint64_t host_addr = 0;       // full byte address of the next list slot; bits 2:0 are zero
  bool sgl_or_prp = false;      // false = PRP (the only mode this model supports)
  uint16_t prp_index = 0;       // 12 bits: the command's PRP buffer index (UID)
  uint8_t ping_or_pong = 0;     // 1 bit: kPing or kPong, the buffer this set landed in
  uint16_t no_of_desc_rem = 0;  // 10 bits: data entries still to fetch after this set
  uint8_t error_code = 0;       // 6 bits: NVMe generic status of a PRP error, 0 if none
  uint8_t valid_entries = 0;    // 4 bits: valid data entries in this buffer

  // Returns InvalidArgument if host_addr has bits 2:0 set or a field exceeds its width.
  absl::Status Check() const;

  // Packs into the 16-byte little-endian image. Each field is masked to its width, so an
  // out-of-range value never spills into a neighbour; host_addr is stored as host_addr >> 3.
  // REQUIRES: Check().ok() (otherwise the masked-off bits are lost silently).
  std::array<uint8_t, 16> Pack() const;

  // Parses a 16-byte image. InvalidArgument if bytes.size() != 16 or reserved bit 93 is set.
  static absl::StatusOr<PrpFetchInfo> Unpack(absl::Span<const uint8_t> bytes);

  friend bool operator==(const PrpFetchInfo&, const PrpFetchInfo&) = default;
};

// The 16-bit fill descriptor sent on sgl_prp_fill_m_axis when a requested set has been fetched.
//   [11:0] prp_index  [12] ping_or_pong  [15:13] reserved
struct FillDescriptor {
  uint16_t prp_index = 0;    // 12 bits
  uint8_t ping_or_pong = 0;  // 1 bit

  // Returns InvalidArgument if a field exceeds its width.
  absl::Status Check() const;
  // Packs, masking each field to its width. REQUIRES: Check().ok().
  uint16_t Pack() const;
  // InvalidArgument if any reserved bit (15:13) is set.
  static absl::StatusOr<FillDescriptor> Unpack(uint16_t bits);

  friend bool operator==(const FillDescriptor&, const FillDescriptor&) = default;
};

// A DMA read of `len` bytes of host memory at `addr` into `dst`. Returns false if the range
// cannot be read (the manager reports kScDataTransferError).
using HostReader = std::function<bool(uint64_t addr, void* dst, size_t len)>;

struct PrpFetchOptions {
  uint32_t page_size = 4096;    // CC.MPS memory page size: a power of two, 4 KiB..64 KiB
  uint32_t prps_per_index = 8;  // C_NUM_PRPS_PER_INDX, 2..8; each buffer holds 2*(this-1)
  uint32_t num_indexes = 64;    // PRP buffer indexes (UIDs) 0..num_indexes-1; 1..4095
};

// One filled set, reported to the event sink.
struct PrpFetchEvent {
  enum Kind {
    kBegin,  // the initial set of a command, without error
    kFill,   // a set fetched on request, without error
    kError,  // a set (initial or requested) whose header carries an error_code
  };
  Kind kind = kBegin;
  uint16_t prp_index = 0;
  int buffer = kPing;
  PrpFetchInfo header;
};

class PrpFetchManager {
 public:
  // Counters since Create.
  struct Stats {
    uint64_t begins = 0;      // Begin calls that allocated an index
    uint64_t fills_ping = 0;  // sets written into a ping buffer (including error sets)
    uint64_t fills_pong = 0;  // sets written into a pong buffer (including error sets)
    uint64_t refills = 0;     // Fetch calls that filled a buffer without a PRP error
    uint64_t host_reads = 0;  // HostReader calls, failed ones included
    std::array<uint64_t, 64> errors_by_code{};  // error sets, indexed by 6-bit error_code
  };

  // InvalidArgument for options out of range or a null reader.
  static absl::StatusOr<std::unique_ptr<PrpFetchManager>> Create(const PrpFetchOptions& options,
                                                                 HostReader reader);
  ~PrpFetchManager();
  PrpFetchManager(const PrpFetchManager&) = delete;
  PrpFetchManager& operator=(const PrpFetchManager&) = delete;

  const PrpFetchOptions& options() const { return options_; }
  // B: the capacity of each ping or pong buffer, 2*(prps_per_index-1).
  int entries_per_buffer() const { return entries_per_buffer_; }

  // Starts a command whose PRP2 `list_addr` is a PRP List pointer. `list_bytes` is the number of
  // data bytes the list entries must describe (the transfer length minus what PRP1 covers), so
  // the list holds ceil(list_bytes / page_size) data entries. Allocates the lowest free index,
  // fetches up to B entries into its ping buffer and returns that set's header (ping_or_pong 0).
  // If list_addr has bits 2:0 set the header carries kScPrpOffsetInvalid and no entries.
  // InvalidArgument if list_bytes is 0, exceeds UINT32_MAX or needs more than 1023 + B entries;
  // ResourceExhausted if every index is in use.
  absl::StatusOr<PrpFetchInfo> Begin(uint64_t list_addr, uint64_t list_bytes);

  // The application's trigger on sgl_prp_req_axis. `request` is the header of the most recent set
  // of request.prp_index; its host_addr, data_size_rem, no_of_desc_rem and prp_index must match
  // the manager's state (ping_or_pong, error_code and valid_entries are ignored). Fetches the next
  // up-to-B entries into the other buffer than the last filled one and returns the fill
  // descriptor naming it; that set's header is then available from Header().
  //
  // Latency hiding: the application may request set n+1 before consuming set n, since that set
  // lands in the other buffer. A buffer holding a set is "unconsumed" until Consumed() is called
  // for it, and a Fetch that would overwrite an unconsumed set is refused.
  //
  // InvalidArgument: index out of range or not allocated, sgl_or_prp set, nothing remains, or a
  // stale/mismatched header. FailedPrecondition: the index had a PRP error, or the target buffer
  // still holds an unconsumed set.
  absl::StatusOr<FillDescriptor> Fetch(const PrpFetchInfo& request);

  // Marks the set in `buffer` of `prp_index` consumed, so a later Fetch may refill that buffer.
  // No-op for an index that is not allocated or a buffer other than kPing/kPong.
  void Consumed(uint16_t prp_index, int buffer);

  // Frees `prp_index` for a later Begin. No-op if it is not allocated.
  void Release(uint16_t prp_index);

  // The valid entries of the set last written into `buffer` (header.valid_entries of them), in
  // list order. Empty for an index that is not allocated or a bad buffer number. The span points
  // into storage owned by the manager: its contents change when that buffer is refilled (only
  // after Consumed) or the index is released and reused.
  absl::Span<const uint64_t> Entries(uint16_t prp_index, int buffer) const;

  // The header of the set last written into `buffer`; all-zero for an index that is not
  // allocated, a buffer not yet filled, or a bad buffer number.
  PrpFetchInfo Header(uint16_t prp_index, int buffer) const;

  Stats stats() const;

  // Installs a sink called once per filled set (Begin or Fetch), on the calling thread, after the
  // set is filled and with no lock held. Pass nullptr to remove it. If the manager is used from
  // several threads, the sink must be thread-safe.
  void set_event_sink(std::function<void(const PrpFetchEvent&)> sink);

  // Thread safety: all methods may be called concurrently; they are serialised by one internal
  // mutex. Concurrent use is meaningful for distinct prp_index values (one command per index).
  // The HostReader is called with that mutex held and must not call back into the manager.

 private:
  struct IndexState;

  PrpFetchManager(const PrpFetchOptions& options, HostReader reader);

  // Fetches the next up-to-B entries of `s` into `buffer`, records the set and returns its
  // header. REQUIRES: mu_ held, s.desc_rem > 0, `buffer` holds no unconsumed set.
  PrpFetchInfo FillSet(IndexState& s, uint16_t prp_index, int buffer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PrpFetchOptions options_;
  const int entries_per_buffer_;
  const HostReader reader_;

  mutable Mutex mu_;
  std::vector<IndexState> indexes_ ABSL_GUARDED_BY(mu_);  // Sized once in the constructor
  std::set<uint16_t> free_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::function<void(const PrpFetchEvent&)> sink_ ABSL_GUARDED_BY(mu_);
  std::vector<uint8_t> read_buf_ ABSL_GUARDED_BY(mu_);  // (B+1)*8 bytes of list slots per read
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_PRP_FETCH_H_
