// Tests of the listener rules: which addresses are loopback, when plaintext is refused, and that
// a TLS key must be its certificate's.
#include "daemon/tls.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

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

// A new P-256 key, written as PEM to `path`.
EVP_PKEY* WriteKey(const std::string& path) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) return nullptr;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return nullptr;
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  return key;
}

// A self-signed certificate for `key` (CN=localhost, valid a day), written as PEM to `path`.
bool WriteCert(EVP_PKEY* key, const std::string& path) {
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), &X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  if (X509_sign(cert.get(), key, EVP_sha256()) == 0) return false;
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  PEM_write_X509(f, cert.get());
  std::fclose(f);
  return true;
}

// TLS options naming a certificate and a key file.
TlsOptions Files(const std::string& cert, const std::string& key) {
  TlsOptions o;
  o.cert_file = cert;
  o.key_file = key;
  return o;
}

TEST(ListenerCredentials, TheKeyMustBeTheCertificates) {
  const std::string dir = ::testing::TempDir();
  const std::string cert = dir + "/ecd-tls-test-server.pem";
  const std::string key = dir + "/ecd-tls-test-server.key";
  const std::string other_key = dir + "/ecd-tls-test-other.key";
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> k(WriteKey(key), &EVP_PKEY_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> other(WriteKey(other_key), &EVP_PKEY_free);
  ASSERT_TRUE(k != nullptr && other != nullptr);
  ASSERT_TRUE(WriteCert(k.get(), cert));

  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> good =
      ListenerCredentials("0.0.0.0:1", Files(cert, key));
  EXPECT_TRUE(good.ok()) << good.status();

  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> mismatch =
      ListenerCredentials("0.0.0.0:1", Files(cert, other_key));
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mismatch.status().message(), "--tls-key " + other_key + " does not match --tls-cert " +
                                             cert + "; give the key the certificate was made for");

  // The two files swapped: neither holds what its flag needs.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> swapped =
      ListenerCredentials("0.0.0.0:1", Files(key, cert));
  EXPECT_EQ(swapped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(swapped.status().message(),
            "--tls-cert: " + key + " holds no PEM certificate that parses");
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> no_key =
      ListenerCredentials("0.0.0.0:1", Files(cert, cert));
  EXPECT_EQ(no_key.status().message(),
            "--tls-key: " + cert +
                " holds no PEM private key that parses (an encrypted key is not supported)");
}

}  // namespace
}  // namespace ecd::daemon
