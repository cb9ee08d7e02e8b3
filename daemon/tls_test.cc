// Tests of the listener rules: which addresses are loopback, and when plaintext is refused.
#include "daemon/tls.h"

#include <gtest/gtest.h>

#include <fstream>

namespace ecd::daemon {
namespace {

TEST(IsLoopbackAddress, LoopbackOnly) {
  for (const char* a :
       {"127.0.0.1:7400", "127.1.2.3:0", "localhost:7400", "LOCALHOST:1", "[::1]:7400", "::1",
        "[::ffff:127.0.0.1]:7400", "unix:/run/ecd/ecd.sock", "127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  }
  for (const char* a :
       {"0.0.0.0:7400", "[::]:7400", "10.0.0.5:7400", "192.168.1.1:1", "example.com:7400",
        "128.0.0.1:7400", "[2001:db8::1]:7400", ":7400", "localhost.evil.com:7400"}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
}

TEST(ListenerCredentials, PlaintextRules) {
  EXPECT_TRUE(ListenerCredentials("127.0.0.1:0", {}).ok());
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> refused =
      ListenerCredentials("0.0.0.0:7400", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "refusing to serve plaintext gRPC on non-loopback address 0.0.0.0:7400: give "
            "--tls-cert and --tls-key (and --tls-client-ca for mutual TLS), listen on "
            "127.0.0.1, or pass --insecure to accept the risk (docs/security.md)");
  EXPECT_TRUE(ListenerCredentials("0.0.0.0:7400", {.insecure = true}).ok());
}

TEST(ListenerCredentials, FlagCombinationsAndFiles) {
  auto message = [](const TlsOptions& o) {
    return std::string(ListenerCredentials("127.0.0.1:0", o).status().message());
  };
  EXPECT_EQ(message({.cert_file = "c.pem"}),
            "--tls-cert and --tls-key go together: give both (the certificate and its key) or "
            "neither");
  EXPECT_EQ(message({.key_file = "k.pem"}),
            "--tls-cert and --tls-key go together: give both (the certificate and its key) or "
            "neither");
  EXPECT_EQ(message({.client_ca_file = "ca.pem"}),
            "--tls-client-ca needs TLS: give --tls-cert and --tls-key too");
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> missing =
      ListenerCredentials("0.0.0.0:1", {.cert_file = "/nonexistent.pem", .key_file = "/k.pem"});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "--tls-cert: cannot read /nonexistent.pem (a PEM file; see docs/security.md)");
  const std::string not_pem = ::testing::TempDir() + "/ecd-tls-test-not.pem";
  std::ofstream(not_pem) << "hello\n";
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> bad =
      ListenerCredentials("0.0.0.0:1", {.cert_file = not_pem, .key_file = not_pem});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "--tls-cert: " + not_pem + " is not a PEM file (no -----BEGIN line)");
}

}  // namespace
}  // namespace ecd::daemon
