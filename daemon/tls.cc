// Listener credentials: TLS, mutual TLS or plaintext by the rules in tls.h.
#include "daemon/tls.h"

#include <arpa/inet.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ecd::daemon {
namespace {

// The host part of host:port, [v6]:port or a bare host.
std::string HostOf(absl::string_view listen) {
  if (absl::StartsWith(listen, "[")) {
    const size_t close = listen.find(']');
    return std::string(
        listen.substr(1, close == absl::string_view::npos ? listen.size() : close - 1));
  }
  const size_t colon = listen.rfind(':');
  if (colon != absl::string_view::npos && listen.find(':') == colon) {
    return std::string(listen.substr(0, colon));
  }
  return std::string(listen);  // A bare host, or a bare IPv6 address.
}

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty()) {
    return absl::NotFoundError(
        absl::StrCat(flag, ": cannot read ", path, " (a PEM file; see docs/security.md)"));
  }
  if (!absl::StrContains(text.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", path, " is not a PEM file (no -----BEGIN line)"));
  }
  return text.str();
}

}  // namespace

bool IsLoopbackAddress(absl::string_view listen) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) return true;
  const std::string host = absl::AsciiStrToLower(HostOf(listen));
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  }
  return false;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ListenerCredentials(
    absl::string_view listen, const TlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key go together: give both (the certificate and its key) or neither");
  }
  if (options.cert_file.empty()) {
    if (!options.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-client-ca needs TLS: give --tls-cert and --tls-key too");
    }
    if (!IsLoopbackAddress(listen) && !options.insecure) {
      return absl::InvalidArgumentError(absl::StrCat(
          "refusing to serve plaintext gRPC on non-loopback address ", listen,
          ": give --tls-cert and --tls-key (and --tls-client-ca for mutual TLS), listen on "
          "127.0.0.1, or pass --insecure to accept the risk (docs/security.md)"));
    }
    return grpc::InsecureServerCredentials();
  }
  absl::StatusOr<std::string> cert = ReadPem(options.cert_file, "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(options.key_file, "--tls-key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!options.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(options.client_ca_file, "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace ecd::daemon
