// The credentials of ecd's TCP listener: TLS (optionally mutual) from PEM files, or plaintext,
// which is allowed only on a loopback address unless the operator says --insecure.
// docs/security.md has the rules and the openssl commands that make the files.
#ifndef ECD_DAEMON_TLS_H_
#define ECD_DAEMON_TLS_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ecd::daemon {

// True for a gRPC listen address that only this machine can reach: 127.0.0.0/8, [::1],
// localhost (any port), or a unix: address. False for everything else, 0.0.0.0 and [::] included.
bool IsLoopbackAddress(absl::string_view listen);

struct TlsOptions {
  std::string cert_file;       // server certificate chain (PEM); empty: no TLS
  std::string key_file;        // its private key (PEM)
  std::string client_ca_file;  // non-empty: mutual TLS, clients must present a cert it signed
  bool insecure = false;       // allow plaintext on a non-loopback address
};

// The credentials for `listen`. InvalidArgument, with the flag to fix, for a key without a
// certificate (or the reverse), a client CA without TLS, plaintext on a non-loopback address
// without `insecure`, a file that is not PEM, a certificate or key that does not parse (an
// encrypted key included), or a key that is not the certificate's (`--tls-key K does not match
// --tls-cert C`); NotFound for a file that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ListenerCredentials(
    absl::string_view listen, const TlsOptions& options);

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_TLS_H_
