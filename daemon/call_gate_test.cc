// Tests CallGate: a call runs its body only when it is authorized and admitted, holds its slot
// while the body runs, and an unknown method is an error rather than an unchecked call.
#include "daemon/call_gate.h"

#include <grpcpp/server_context.h>
#include <gtest/gtest.h>

#include "ecd/v1/ecd.grpc.pb.h"

namespace ecd::daemon {
namespace {

CallRules LimitedBy(RequestLimiter* limiter) {
  CallRules rules;
  rules.limiter = limiter;
  return rules;
}

CallRules CheckedBy(const Authorizer* auth) {
  CallRules rules;
  rules.authorizer = auth;
  return rules;
}

TEST(CallGateTest, AnAllowedCallRunsItsBodyHoldingASlot) {
  RequestLimiter limiter(/*max_per_client=*/4, /*max_total=*/4);
  CallGate gate(v1::Objects::service_full_name(), LimitedBy(&limiter));
  grpc::ServerContext context;
  uint32_t in_flight = 0;
  grpc::Status s = gate.Run(&context, "Stat", [&] {
    in_flight = limiter.in_flight();
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "from the body");
  });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "from the body");
  EXPECT_EQ(in_flight, 1u);
  EXPECT_EQ(limiter.in_flight(), 0u);
}

TEST(CallGateTest, ACallOverTheLimitsIsRefusedWithoutRunning) {
  RequestLimiter limiter(/*max_per_client=*/1, /*max_total=*/1);
  CallGate gate(v1::Devices::service_full_name(), LimitedBy(&limiter));
  grpc::ServerContext context;
  RequestLimiter::Admission held = limiter.Admit(&context);
  ASSERT_TRUE(held.ok());
  bool ran = false;
  grpc::Status s = gate.Run(&context, "List", [&] {
    ran = true;
    return grpc::Status::OK;
  });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_FALSE(ran);
}

TEST(CallGateTest, ACallWithoutATokenIsRefusedWithoutRunning) {
  Authorizer auth;
  auth.SetTokens({Token{.secret = "0123456789abcdef0123", .role = Role::kAdmin, .name = "a"}});
  CallGate gate(v1::Objects::service_full_name(), CheckedBy(&auth));
  grpc::ServerContext context;
  bool ran = false;
  grpc::Status s = gate.Run(&context, "Delete", [&] {
    ran = true;
    return grpc::Status::OK;
  });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_FALSE(ran);
}

TEST(CallGateTest, AMethodTheServiceLacksIsAnErrorNotAnUncheckedCall) {
  CallGate gate(v1::Catalog::service_full_name(), {});
  grpc::ServerContext context;
  bool ran = false;
  grpc::Status s = gate.Run(&context, "Backups", [&] {
    ran = true;
    return grpc::Status::OK;
  });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_NE(s.error_message().find("ecd.v1.Catalog/Backups"), std::string::npos);
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace ecd::daemon
