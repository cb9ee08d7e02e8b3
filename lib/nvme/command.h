// NVMe commands and completions: the 64-byte submission queue entry (SQE) and the 16-byte
// completion queue entry (CQE) of the NVM command set's Read, Write and Flush, packed and
// unpacked at the bit positions of NVMe Base Specification 2.x (Figures 91-100), and the status
// codes the controller model returns.
//
// SQE: CDW0 = opcode[7:0], FUSE[9:8], PSDT[15:14], CID[31:16]; CDW1 = NSID; CDW6-9 = PRP1, PRP2
// (bytes 24-39); CDW10-11 = SLBA; CDW12 = NLB[15:0] (zero-based).
// CQE: DW0 command specific; DW2 = SQHD[15:0], SQID[31:16]; DW3 = CID[15:0], phase tag [16],
// status [31:17] = SC[24:17], SCT[27:25], CRD[29:28], M[30], DNR[31].
#ifndef ECD_LIB_NVME_COMMAND_H_
#define ECD_LIB_NVME_COMMAND_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace ecd::nvme {

enum class Opcode : uint8_t { kFlush = 0x00, kWrite = 0x01, kRead = 0x02 };

// Status code types and the codes this model produces.
inline constexpr uint8_t kSctGeneric = 0x0;
inline constexpr uint8_t kSctMedia = 0x2;
// Generic command status (SCT 0).
inline constexpr uint8_t kScSuccess = 0x00;
inline constexpr uint8_t kScInvalidOpcode = 0x01;
inline constexpr uint8_t kScInvalidField = 0x02;
inline constexpr uint8_t kScDataTransferError = 0x04;
inline constexpr uint8_t kScInternalError = 0x06;
inline constexpr uint8_t kScInvalidNamespace = 0x0B;
inline constexpr uint8_t kScPrpOffsetInvalid = 0x13;
inline constexpr uint8_t kScLbaOutOfRange = 0x80;
inline constexpr uint8_t kScCapacityExceeded = 0x81;
// Media and data integrity errors (SCT 2).
inline constexpr uint8_t kScWriteFault = 0x80;
inline constexpr uint8_t kScUnrecoveredReadError = 0x81;

struct NvmeStatus {
  uint8_t sct = kSctGeneric;
  uint8_t sc = kScSuccess;
  bool dnr = false;  // Do Not Retry

  bool ok() const { return sct == kSctGeneric && sc == kScSuccess; }
  // The 15-bit status field (CQE DW3 bits 31:17, shifted down by 17).
  uint16_t Field() const;
  static NvmeStatus FromField(uint16_t field);
  // "PRP Offset Invalid (SCT 0x0, SC 0x13, DNR)".
  std::string ToString() const;
  friend bool operator==(const NvmeStatus&, const NvmeStatus&) = default;
};

// A failed command, with DNR set: the model never succeeds on a retry of the same command.
NvmeStatus Failure(uint8_t sc, uint8_t sct = kSctGeneric);
// Name of a status code, e.g. "LBA Out of Range"; "Unknown" for codes this model does not use.
std::string StatusName(uint8_t sct, uint8_t sc);
// Maps an NVMe status onto absl: OK, DataLoss for media errors, OutOfRange for LBA range,
// ResourceExhausted for Capacity Exceeded, InvalidArgument for field and PRP errors, Internal
// otherwise; the message names the status.
absl::Status ToAbslStatus(const NvmeStatus& s, const std::string& context);

struct SubmissionEntry {
  uint8_t opcode = 0;
  uint8_t psdt = 0;  // 0 = PRPs
  uint16_t cid = 0;
  uint32_t nsid = 0;
  uint64_t prp1 = 0;
  uint64_t prp2 = 0;
  uint64_t slba = 0;
  uint16_t nlb = 0;  // number of logical blocks, zero-based (0 means one block)

  std::array<uint8_t, 64> Pack() const;
  // REQUIRES: bytes.size() == 64.
  static SubmissionEntry Unpack(absl::Span<const uint8_t> bytes);
  friend bool operator==(const SubmissionEntry&, const SubmissionEntry&) = default;
};

struct CompletionEntry {
  uint32_t dw0 = 0;
  uint16_t sq_head = 0;
  uint16_t sq_id = 0;
  uint16_t cid = 0;
  bool phase = false;
  NvmeStatus status;

  std::array<uint8_t, 16> Pack() const;
  // REQUIRES: bytes.size() == 16.
  static CompletionEntry Unpack(absl::Span<const uint8_t> bytes);
  friend bool operator==(const CompletionEntry&, const CompletionEntry&) = default;
};

}  // namespace ecd::nvme

#endif  // ECD_LIB_NVME_COMMAND_H_
