// Tests for SQE/CQE packing at the specification's byte and bit positions, and the queues'
// doorbell and phase-tag behaviour.
#include "lib/nvme/command.h"

#include <gtest/gtest.h>

#include "lib/nvme/queue.h"

namespace ecd::nvme {
namespace {

TEST(SubmissionEntry, PacksAtSpecOffsets) {
  SubmissionEntry e;
  e.opcode = 0x02;
  e.cid = 0xBEEF;
  e.nsid = 0x01020304;
  e.prp1 = 0x1122334455667788ULL;
  e.prp2 = 0x99AABBCCDDEEFF00ULL;
  e.slba = 0x0000123456789ABCULL;
  e.nlb = 0x00FF;
  const auto b = e.Pack();
  EXPECT_EQ(b[0], 0x02);  // opcode
  EXPECT_EQ(b[1], 0x00);  // FUSE 0, PSDT 0
  EXPECT_EQ(b[2], 0xEF);  // CID low
  EXPECT_EQ(b[3], 0xBE);
  EXPECT_EQ(b[4], 0x04);  // NSID little-endian
  EXPECT_EQ(b[7], 0x01);
  for (int i = 8; i < 24; ++i) EXPECT_EQ(b[i], 0) << i;  // reserved + MPTR
  EXPECT_EQ(b[24], 0x88);                                // PRP1
  EXPECT_EQ(b[31], 0x11);
  EXPECT_EQ(b[32], 0x00);  // PRP2
  EXPECT_EQ(b[39], 0x99);
  EXPECT_EQ(b[40], 0xBC);  // SLBA (CDW10-11)
  EXPECT_EQ(b[45], 0x12);
  EXPECT_EQ(b[48], 0xFF);  // NLB (CDW12 15:0)
  EXPECT_EQ(b[49], 0x00);
  for (int i = 50; i < 64; ++i) EXPECT_EQ(b[i], 0) << i;
  EXPECT_EQ(SubmissionEntry::Unpack(b), e);
}

TEST(SubmissionEntry, PsdtInBits15To14) {
  SubmissionEntry e;
  e.psdt = 1;
  EXPECT_EQ(e.Pack()[1], 0x40);
  e.psdt = 2;
  EXPECT_EQ(e.Pack()[1], 0x80);
  EXPECT_EQ(SubmissionEntry::Unpack(e.Pack()).psdt, 2);
}

TEST(CompletionEntry, StatusPhaseAndHeadAtSpecBits) {
  CompletionEntry c;
  c.dw0 = 0xA1B2C3D4;
  c.sq_head = 0x0102;
  c.sq_id = 0x0304;
  c.cid = 0x0506;
  c.phase = true;
  c.status = Failure(kScPrpOffsetInvalid);  // SCT 0, SC 0x13, DNR
  const auto b = c.Pack();
  EXPECT_EQ(b[0], 0xD4);
  EXPECT_EQ(b[8], 0x02);   // SQHD
  EXPECT_EQ(b[10], 0x04);  // SQID
  EXPECT_EQ(b[12], 0x06);  // CID
  const uint32_t dw3 = b[12] | b[13] << 8 | b[14] << 16 | static_cast<uint32_t>(b[15]) << 24;
  EXPECT_EQ(dw3 & 0xFFFF, 0x0506u);
  EXPECT_EQ((dw3 >> 16) & 1, 1u);        // phase tag
  EXPECT_EQ((dw3 >> 17) & 0xFF, 0x13u);  // SC
  EXPECT_EQ((dw3 >> 25) & 0x7, 0u);      // SCT
  EXPECT_EQ(dw3 >> 31, 1u);              // DNR
  EXPECT_EQ(CompletionEntry::Unpack(b), c);
}

TEST(CompletionEntry, MediaErrorSct) {
  CompletionEntry c;
  c.status = Failure(kScUnrecoveredReadError, kSctMedia);
  const auto b = c.Pack();
  const uint32_t dw3 = b[12] | b[13] << 8 | b[14] << 16 | static_cast<uint32_t>(b[15]) << 24;
  EXPECT_EQ((dw3 >> 17) & 0xFF, 0x81u);
  EXPECT_EQ((dw3 >> 25) & 0x7, 2u);
  EXPECT_EQ(CompletionEntry::Unpack(b).status.ToString(),
            "Unrecovered Read Error (SCT 0x2, SC 0x81, DNR)");
}

TEST(StatusName, NamesEachCodeOfItsTypeAndNoOther) {
  EXPECT_EQ(StatusName(kSctGeneric, kScSuccess), "Successful Completion");
  EXPECT_EQ(StatusName(kSctGeneric, kScLbaOutOfRange), "LBA Out of Range");
  EXPECT_EQ(StatusName(kSctMedia, kScUnrecoveredReadError), "Unrecovered Read Error");
  // 0x80 and 0x81 mean different things under the generic and the media type.
  EXPECT_EQ(StatusName(kSctMedia, kScWriteFault), "Write Fault");
  EXPECT_EQ(StatusName(kSctGeneric, kScWriteFault), "LBA Out of Range");
  EXPECT_EQ(StatusName(kSctMedia, kScSuccess), "Unknown");
  EXPECT_EQ(StatusName(kSctGeneric, 0x7F), "Unknown");
  EXPECT_EQ(Failure(kScUnrecoveredReadError, kSctMedia).ToString(),
            "Unrecovered Read Error (SCT 0x2, SC 0x81, DNR)");
}

TEST(Status, MapsToAbsl) {
  EXPECT_TRUE(ToAbslStatus(NvmeStatus{}, "x").ok());
  EXPECT_EQ(ToAbslStatus(Failure(kScLbaOutOfRange), "x").code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ToAbslStatus(Failure(kScCapacityExceeded), "x").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ToAbslStatus(Failure(kScWriteFault, kSctMedia), "x").code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ToAbslStatus(Failure(kScPrpOffsetInvalid), "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ToAbslStatus(Failure(kScDataTransferError), "ctx").message(),
            "ctx: NVMe Data Transfer Error (SCT 0x0, SC 0x04, DNR)");
}

TEST(SubmissionQueue, HoldsEntriesMinusOneAndWrapsWithDoorbell) {
  SubmissionQueue sq(4);
  SubmissionEntry e, got;
  for (uint16_t i = 0; i < 3; ++i) {
    ASSERT_FALSE(sq.Full());
    e.cid = i;
    sq.Push(e);
  }
  EXPECT_TRUE(sq.Full());
  EXPECT_FALSE(sq.Pop(&got));  // nothing visible before the doorbell
  EXPECT_EQ(sq.RingTailDoorbell(), 3u);
  for (uint16_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(sq.Pop(&got));
    EXPECT_EQ(got.cid, i);
  }
  EXPECT_FALSE(sq.Pop(&got));
  EXPECT_TRUE(sq.Full());  // the host has not seen the new head yet
  sq.UpdateHead(sq.controller_head());
  EXPECT_FALSE(sq.Full());
  // Wrap around many times.
  for (uint16_t i = 0; i < 50; ++i) {
    e.cid = static_cast<uint16_t>(100 + i);
    sq.Push(e);
    sq.RingTailDoorbell();
    ASSERT_TRUE(sq.Pop(&got));
    EXPECT_EQ(got.cid, 100 + i);
    sq.UpdateHead(sq.controller_head());
  }
}

TEST(CompletionQueue, PhaseTagFlipsOnEachWrap) {
  CompletionQueue cq(4);
  CompletionEntry c, got;
  EXPECT_FALSE(cq.Peek(&got));  // zeroed memory has phase 0; the host expects 1
  uint16_t next_cid = 0;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_FALSE(cq.Full());
      c.cid = next_cid++;
      cq.Post(c);
    }
    EXPECT_TRUE(cq.Full());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(cq.Peek(&got));
      EXPECT_EQ(got.cid, next_cid - 3 + i);
      cq.Advance();
    }
    EXPECT_FALSE(cq.Peek(&got));  // stale entries from the last lap carry the old phase
    cq.RingHeadDoorbell();
    EXPECT_FALSE(cq.Full());
  }
}

}  // namespace
}  // namespace ecd::nvme
