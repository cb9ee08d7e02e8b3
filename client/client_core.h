// ecctl's client core: the global options, the gRPC channel to ecd (TLS and bearer token), one
// call's context (deadline, metadata), and the one-line error and exit code of every failure.
//
// Contract:
// - Errors are absl::Status values built by Error() (or ClientCore::Check() from a gRPC status):
//   the status message is the whole stderr line after "ecctl: ", its payload the exit code
//   (ExitCodeOf). A status without that payload exits kExitEcd.
// - ClientCore::Create() reads the credential files and makes the channel; it does not connect
//   (gRPC connects on the first call). The ClientCore owns the channel and the stubs; it keeps a
//   reference to the Globals, which must outlive it.
// - Not thread-safe: ecctl is one thread making one call at a time. Each Context() is a new
//   grpc::ClientContext owned by the caller, for one call.
#ifndef ECD_CLIENT_CLIENT_CORE_H_
#define ECD_CLIENT_CLIENT_CORE_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/progress.h"
#include "ecd/v1/ecd.grpc.pb.h"
#include "wire/raw_methods.h"

namespace ecd::client {

// ---- exit codes: the one list; the `ecctl --help` footer prints it, docs/errors.md has it too.

enum ExitCode : int {
  kExitOk = 0,
  kExitEcd = 1,        // ecd answered with an error, could not be reached, or a job failed
  kExitUsage = 2,      // bad flags or arguments
  kExitLocalFile = 3,  // a local file could not be read or written
  kExitDamage = 4,     // scrub left damage behind (with --check-only: found some)
  kExitAuth = 5,       // ecd refused the token (UNAUTHENTICATED or PERMISSION_DENIED)
};

// The --help footer: every exit code and what it means.
std::string ExitStatusHelp();

// A failure to report: `message` is its one stderr line (without "ecctl: "), `code` its exit code.
absl::Status Error(ExitCode code, std::string message);

// The exit code of `status`: kExitOk if it is OK, the code Error() gave it, else kExitEcd.
int ExitCodeOf(const absl::Status& status);

// Prints the one stderr line of a failure (newlines in messages from elsewhere become spaces).
void ReportError(std::string message);

// The global options (flags before or after the subcommand).
struct Globals {
  std::string addr = "127.0.0.1:7400";
  bool json = false;
  bool quiet = false;
  double timeout = 0;
  // Credentials (docs/security.md): a bearer token from --token, else --token-file, else
  // $ECD_TOKEN; TLS when --tls-ca, --tls-cert or --tls-server-name is given.
  std::string token;
  std::string token_file;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
};

class ClientCore {
 public:
  // The channel to g.addr with the credentials `g` names; exit code 2 for a --tls-cert without
  // --tls-key (or the reverse) or an empty --token-file, 3 for a credential file not readable.
  static absl::StatusOr<std::unique_ptr<ClientCore>> Create(const Globals& g);

  // A context for one call: the bearer token, and the --timeout deadline if one is given.
  std::unique_ptr<grpc::ClientContext> Context() const;

  // OK for an OK status, else the one-line failure "WHAT: CODE: message" (with a hint for a
  // transport failure); exit code 5 for UNAUTHENTICATED and PERMISSION_DENIED, else 1.
  absl::Status Check(const grpc::Status& s, const std::string& what) const;

  ecd::v1::Objects::Stub& objects() { return *objects_; }
  ecd::v1::Devices::Stub& devices() { return *devices_; }
  ecd::v1::Rebuilds::Stub& rebuilds() { return *rebuilds_; }
  ecd::v1::Cxl::Stub& cxl() { return *cxl_; }
  ecd::v1::Catalog::Stub& catalog() { return *catalog_; }
  const Globals& globals() const { return g_; }

  // A client stream of `method` ("/ecd.v1.Objects/Encode") whose messages are written as raw
  // bytes (each a serialized request), so StreamFile can read file data straight into the
  // message; the response is parsed as usual (wire/raw_methods.h).
  template <typename Response>
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> RawWriter(const char* method,
                                                                  grpc::ClientContext* context,
                                                                  Response* response) {
    return ecd::wire::OpenRawWriter(channel_, method, context, response);
  }
  // A server stream of `method` ("/ecd.v1.Objects/Read") whose responses are read as raw bytes
  // (each a serialized response), so that SaveStream writes their data field to the output
  // straight from gRPC's receive slices (DataMessage) rather than from a copy protobuf made.
  template <typename Request>
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> RawReader(const char* method,
                                                                  grpc::ClientContext* context,
                                                                  const Request& request) {
    return ecd::wire::OpenRawReader(channel_, method, context, request);
  }

  // A progress line on stderr, drawn when stderr is a terminal and --quiet is not given.
  ProgressBar Progress(std::string label, ProgressUnit unit) const;

 private:
  explicit ClientCore(const Globals& g) : g_(g) {}

  const Globals& g_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<ecd::v1::Objects::Stub> objects_;
  std::unique_ptr<ecd::v1::Devices::Stub> devices_;
  std::unique_ptr<ecd::v1::Rebuilds::Stub> rebuilds_;
  std::unique_ptr<ecd::v1::Cxl::Stub> cxl_;
  std::unique_ptr<ecd::v1::Catalog::Stub> catalog_;
};

}  // namespace ecd::client

// Returns the status of `expr` from the enclosing function if it is not OK.
#define ECCTL_RETURN_IF_ERROR(expr)                       \
  do {                                                    \
    if (absl::Status ecctl_s_ = (expr); !ecctl_s_.ok()) { \
      return ecctl_s_;                                    \
    }                                                     \
  } while (0)

#define ECCTL_CONCAT_INNER_(a, b) a##b
#define ECCTL_CONCAT_(a, b) ECCTL_CONCAT_INNER_(a, b)
// Declares `lhs` from the value of the StatusOr `expr`, or returns its status if it is not OK.
#define ECCTL_ASSIGN_OR_RETURN(lhs, expr) \
  ECCTL_ASSIGN_OR_RETURN_(ECCTL_CONCAT_(ecctl_or_, __LINE__), lhs, expr)
#define ECCTL_ASSIGN_OR_RETURN_(tmp, lhs, expr) \
  auto tmp = (expr);                            \
  if (!tmp.ok()) return tmp.status();           \
  lhs = std::move(*tmp)

#endif  // ECD_CLIENT_CLIENT_CORE_H_
