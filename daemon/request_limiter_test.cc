// Tests RequestLimiter: the per-client and total limits, their messages and counters, slots
// given back when admissions end, ClientOf's peer parsing, and ResolvePeer's names of
// connections ecd accepted itself.
#include "daemon/request_limiter.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ecd::daemon {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ClientOfTest, DropsThePort) {
  EXPECT_EQ(ClientOf("ipv4:127.0.0.1:54321"), "ipv4:127.0.0.1");
  EXPECT_EQ(ClientOf("ipv6:[::1]:7400"), "ipv6:[::1]");
  EXPECT_EQ(ClientOf("ipv6:[2001:db8::5]:1"), "ipv6:[2001:db8::5]");
  EXPECT_EQ(ClientOf("unix:/run/ecd.sock"), "unix");
  EXPECT_EQ(ClientOf("unix:"), "unix");
  EXPECT_EQ(ClientOf("weird"), "weird");
}

TEST(ResolvePeerTest, NamesAConnectionEcdAcceptedByItsAddress) {
  EXPECT_EQ(ResolvePeer("fd:12"), "fd:12");  // No resolver: as gRPC says.
  SetFdPeerResolver([](int fd) { return fd == 12 ? "ipv4:10.0.0.5:4000" : ""; });
  EXPECT_EQ(ResolvePeer("fd:12"), "ipv4:10.0.0.5:4000");
  EXPECT_EQ(ClientOf(ResolvePeer("fd:12")), "ipv4:10.0.0.5");
  EXPECT_EQ(ResolvePeer("fd:13"), "fd:13");  // Not one of ours.
  EXPECT_EQ(ResolvePeer("fd:x"), "fd:x");
  EXPECT_EQ(ResolvePeer("ipv4:127.0.0.1:1"), "ipv4:127.0.0.1:1");
  EXPECT_EQ(ResolvePeer("unix:/run/ecd/ecd.sock"), "unix:/run/ecd/ecd.sock");
  SetFdPeerResolver(nullptr);
  EXPECT_EQ(ResolvePeer("fd:12"), "fd:12");
}

TEST(RequestLimiterTest, PerClientLimit) {
  RequestLimiter limiter(2, 10);
  RequestLimiter::Admission a = limiter.Admit("ipv4:1.1.1.1");
  RequestLimiter::Admission b = limiter.Admit("ipv4:1.1.1.1");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  RequestLimiter::Admission c = limiter.Admit("ipv4:1.1.1.1");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Has(c.status().error_message(), "--max-streams-per-client"));
  EXPECT_TRUE(Has(c.status().error_message(), "2 in flight, the limit is 2"));
  EXPECT_EQ(limiter.rejections(Limit::kStreamsPerClient), 1u);
  EXPECT_EQ(limiter.rejections(Limit::kStreams), 0u);
  // Another client is not affected.
  EXPECT_TRUE(limiter.Admit("ipv4:2.2.2.2").ok());
  EXPECT_EQ(limiter.in_flight(), 2u);  // The refused call and the finished one hold nothing.
  EXPECT_EQ(limiter.in_flight("ipv4:1.1.1.1"), 2u);
}

TEST(RequestLimiterTest, TotalLimit) {
  RequestLimiter limiter(5, 3);
  std::vector<RequestLimiter::Admission> held;
  held.push_back(limiter.Admit("a"));
  held.push_back(limiter.Admit("b"));
  held.push_back(limiter.Admit("c"));
  for (const auto& h : held) ASSERT_TRUE(h.ok());
  RequestLimiter::Admission d = limiter.Admit("d");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Has(d.status().error_message(), "--max-streams)"));
  EXPECT_TRUE(Has(d.status().error_message(), "3 in flight, the limit is 3"));
  EXPECT_EQ(limiter.rejections(Limit::kStreams), 1u);
  EXPECT_EQ(limiter.in_flight("d"), 0u);
  held.pop_back();  // c finishes: a slot is free again.
  EXPECT_EQ(limiter.in_flight(), 2u);
  EXPECT_TRUE(limiter.Admit("d").ok());
}

TEST(RequestLimiterTest, MovedAdmissionReleasesOnce) {
  RequestLimiter limiter(1, 1);
  {
    std::optional<RequestLimiter::Admission> outer;
    {
      RequestLimiter::Admission a = limiter.Admit("x");
      ASSERT_TRUE(a.ok());
      outer.emplace(std::move(a));
    }
    EXPECT_EQ(limiter.in_flight(), 1u);
    EXPECT_FALSE(limiter.Admit("x").ok());
  }
  EXPECT_EQ(limiter.in_flight(), 0u);
  EXPECT_TRUE(limiter.Admit("x").ok());
}

TEST(RequestLimiterTest, ConcurrentCallsNeverExceedTheLimit) {
  RequestLimiter limiter(4, 6);
  std::atomic<int> peak{0};
  std::atomic<int> now{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        RequestLimiter::Admission a = limiter.Admit(t % 2 ? "odd" : "even");
        if (!a.ok()) {
          ++refused;
          continue;
        }
        const int n = ++now;
        int p = peak.load();
        while (n > p && !peak.compare_exchange_weak(p, n)) {
        }
        --now;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(peak.load(), 6);
  EXPECT_EQ(limiter.in_flight(), 0u);
  EXPECT_EQ(static_cast<uint64_t>(refused.load()),
            limiter.rejections(Limit::kStreams) + limiter.rejections(Limit::kStreamsPerClient));
}

TEST(RequestLimiterTest, CountsOtherLimits) {
  RequestLimiter limiter(1, 1);
  limiter.CountRejection(Limit::kObjectSize);
  limiter.CountRejection(Limit::kObjectSize);
  limiter.CountRejection(Limit::kIngestRecords);
  EXPECT_EQ(limiter.rejections(Limit::kObjectSize), 2u);
  EXPECT_EQ(limiter.rejections(Limit::kIngestRecords), 1u);
  EXPECT_STREQ(LimitName(Limit::kObjectSize), "max-object-size");
}

}  // namespace
}  // namespace ecd::daemon
