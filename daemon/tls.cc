// Listener credentials: TLS, mutual TLS or plaintext by the rules in tls.h.
#include "daemon/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <memory>
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

// OpenSSL's password callback: no password. An encrypted key fails to load instead of prompting.
int NoPassword(char*, int, int, void*) { return 0; }

// Checks at start-up what gRPC would find out only when it binds, as "cannot listen": that the
// certificate file's first certificate (the server's own) and the key file's key are a pair.
absl::Status CheckKeyPair(const std::string& cert_pem, const std::string& key_pem,
                          const TlsOptions& options) {
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
      BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())), &BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, NoPassword, nullptr), &X509_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
      BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())), &BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassword, nullptr), &EVP_PKEY_free);
  const bool pair =
      cert != nullptr && key != nullptr && X509_check_private_key(cert.get(), key.get()) == 1;
  ERR_clear_error();  // OpenSSL's error queue is per thread; leave nothing for gRPC to find.
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert: ", options.cert_file, " holds no PEM certificate that parses"));
  }
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key: ", options.key_file,
                     " holds no PEM private key that parses (an encrypted key is not supported)"));
  }
  if (!pair) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-key ", options.key_file,
                                                   " does not match --tls-cert ", options.cert_file,
                                                   "; give the key the certificate was made for"));
  }
  return absl::OkStatus();
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
  if (absl::Status s = CheckKeyPair(*cert, *key, options); !s.ok()) return s;
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
