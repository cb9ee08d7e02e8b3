// Tests for `ecd-nvme prp-walk`: JSON descriptions in, resolved segments, fetch events or the
// failing NVMe status out.
#include "client/prp_walk.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ecd/tools/prp_walk.pb.h"

namespace ecd::tools {
namespace {

PrpWalkReport Walk(const std::string& json) {
  auto out = RunPrpWalk(json, false);
  EXPECT_TRUE(out.ok()) << out.status();
  PrpWalkReport r;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(out.value_or("{}"), &r).ok());
  return r;
}

// A list of `n` entries at `addr` pointing at consecutive pages from 0x100000.
std::string List(uint64_t addr, int n, uint64_t first_page = 0x100000) {
  std::vector<std::string> e;
  for (int i = 0; i < n; ++i) e.push_back(absl::StrFormat("\"0x%x\"", first_page + i * 4096ULL));
  return absl::StrFormat(R"({"addr":"0x%x","entries":[%s]})", addr, absl::StrJoin(e, ","));
}

TEST(PrpWalk, SinglePageWithOffset) {
  PrpWalkReport r = Walk(R"({"length":100,"prp1":"0x10004"})");
  EXPECT_TRUE(r.status().ok());
  ASSERT_EQ(r.segments_size(), 1);
  EXPECT_EQ(r.segments(0).addr(), "0x10004");
  EXPECT_EQ(r.segments(0).len(), 100u);
  EXPECT_EQ(r.events_size(), 0);
}

TEST(PrpWalk, TwoPagesUsePrp2AsData) {
  PrpWalkReport r = Walk(R"({"nlb":16,"lba_size":512,"prp1":"0x10000","prp2":"0x20000"})");
  EXPECT_TRUE(r.status().ok());
  ASSERT_EQ(r.segments_size(), 2);
  EXPECT_EQ(r.segments(1).addr(), "0x20000");
  EXPECT_EQ(r.segments(1).len(), 4096u);
}

TEST(PrpWalk, ListWithRefillsReportsPingPongHeaders) {
  // 1 + 30 pages: 30 list entries = sets of 14, 14, 2 (ping, pong, ping).
  const std::string json =
      absl::StrFormat(R"({"length":%d,"prp1":"0x10000","prp2":"0x20000","lists":[%s]})", 31 * 4096,
                      List(0x20000, 30));
  PrpWalkReport r = Walk(json);
  ASSERT_TRUE(r.status().ok()) << r.status().name();
  ASSERT_EQ(r.segments_size(), 31);
  EXPECT_EQ(r.segments(30).addr(), absl::StrFormat("0x%x", 0x100000 + 29 * 4096));
  ASSERT_EQ(r.events_size(), 3);
  EXPECT_EQ(r.events(0).kind(), "begin");
  EXPECT_EQ(r.events(0).buffer(), "ping");
  EXPECT_EQ(r.events(0).header().valid_entries(), 14u);
  EXPECT_EQ(r.events(0).header().no_of_desc_rem(), 16u);
  EXPECT_EQ(r.events(0).header().data_size_rem(), 16u * 4096);
  EXPECT_EQ(r.events(0).entries_size(), 14);
  EXPECT_EQ(r.events(1).kind(), "fill");
  EXPECT_EQ(r.events(1).buffer(), "pong");
  EXPECT_EQ(r.events(1).fill_descriptor(), "0x1000");  // index 0, pong
  EXPECT_EQ(r.events(1).header().no_of_desc_rem(), 2u);
  EXPECT_EQ(r.events(2).buffer(), "ping");
  EXPECT_EQ(r.events(2).header().valid_entries(), 2u);
  EXPECT_EQ(r.events(2).header().no_of_desc_rem(), 0u);
  EXPECT_EQ(r.events(0).header().packed_hex().size(), 32u);
  ASSERT_EQ(r.coalesced_size(), 2);  // PRP1's page, then the 30 contiguous list pages
}

TEST(PrpWalk, ChainedListFirstListMidPage) {
  // First list at 0x20ff0: two slots, the second chains to 0x30000.
  const std::string json = absl::StrFormat(
      R"({"length":%d,"prp1":"0x10000","prp2":"0x20ff0","lists":[%s,%s]})", 5 * 4096,
      R"({"addr":"0x20ff0","entries":["0x100000","0x30000"]})", List(0x30000, 3, 0x101000));
  PrpWalkReport r = Walk(json);
  ASSERT_TRUE(r.status().ok()) << r.status().name();
  ASSERT_EQ(r.segments_size(), 5);
  EXPECT_EQ(r.segments(1).addr(), "0x100000");
  EXPECT_EQ(r.segments(2).addr(), "0x101000");
  EXPECT_EQ(r.segments(4).addr(), "0x103000");
}

TEST(PrpWalk, FailuresCarryTheNvmeStatus) {
  PrpWalkReport r = Walk(R"({"length":100,"prp1":"0x10002"})");
  EXPECT_FALSE(r.status().ok());
  EXPECT_EQ(r.status().sc(), 0x13u);
  EXPECT_EQ(r.status().name(), "PRP Offset Invalid");
  EXPECT_EQ(r.segments_size(), 0);

  r = Walk(R"({"length":8192,"prp1":"0x10000","prp2":"0x20100"})");
  EXPECT_EQ(r.status().sc(), 0x13u);

  r = Walk(R"({"length":12288,"prp1":"0x10000","prp2":"0x20000"})");  // list not in memory
  EXPECT_EQ(r.status().sc(), 0x04u);
  EXPECT_EQ(r.status().name(), "Data Transfer Error");

  r = Walk(R"({"length":2097152,"mdts":8,"prp1":"0x10000","prp2":"0x20000"})");
  EXPECT_EQ(r.status().sc(), 0x02u);  // beyond MDTS (1 MiB)

  const std::string bad_entry =
      absl::StrFormat(R"({"length":%d,"prp1":"0x10000","prp2":"0x20000","lists":[%s]})", 4 * 4096,
                      R"({"addr":"0x20000","entries":["0x100000","0x101010","0x102000"]})");
  r = Walk(bad_entry);
  EXPECT_EQ(r.status().sc(), 0x13u);
  ASSERT_GE(r.events_size(), 1);
  EXPECT_EQ(r.events(0).kind(), "error");
  EXPECT_EQ(r.events(0).header().error_code(), 0x13u);
}

TEST(PrpWalk, BadDocumentsAreErrors) {
  EXPECT_EQ(RunPrpWalk("not json", false).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunPrpWalk(R"({"length":1,"prp1":"zz"})", false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunPrpWalk(R"({"prp1":"0x1000"})", false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunPrpWalk(R"({"length":1,"page_size":3000})", false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ecd::tools
