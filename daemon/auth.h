// Authorization of ecd's gRPC calls: bearer tokens from a file, each with a role, and the one
// table that says which role every RPC needs. docs/security.md describes the file and the roles.
//
// Roles are ordered: read-only < operator < admin; a token may call every method whose role is
// at most its own. The table is fail-closed: a method it does not name needs admin. With no token
// file loaded the Authorizer is off and every call is allowed (the loopback default).
//
// Thread safety: Check may run concurrently with itself and with Load (SIGHUP); a Load that
// fails leaves the previous table in force.
#ifndef ECD_DAEMON_AUTH_H_
#define ECD_DAEMON_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {

enum class Role {
  kOpen = 0,  // no token needed (health checking, reflection)
  kReadOnly = 1,
  kOperator = 2,
  kAdmin = 3,
};

// "open", "read-only", "operator", "admin".
absl::string_view RoleName(Role role);
// The token file's names: "read-only", "operator" or "admin" (kOpen is not a token's role).
absl::StatusOr<Role> ParseRole(absl::string_view name);

struct MethodRole {
  const char* method;  // full gRPC method name, "/ecd.v1.Objects/Encode"
  Role role;
};
// Every RPC ecd serves and the role it needs; docs/security.md prints the same table.
absl::Span<const MethodRole> MethodRoles();
// The role `method` needs: its table entry, or kAdmin for a method the table does not name.
Role RequiredRole(absl::string_view method);

struct Token {
  std::string secret;
  Role role = Role::kReadOnly;
  std::string name;  // for logs; the secret is never logged
};

// Shortest token the file may hold: a guessable token is no protection.
inline constexpr size_t kMinTokenLength = 16;

// Parses a token file: one `TOKEN ROLE [NAME]` per line, `#` starts a comment, blank lines are
// skipped. InvalidArgument naming the line for a wrong field count, an unknown role, a token
// shorter than kMinTokenLength, or a token given twice. An empty file is an error too (it would
// lock everyone out).
absl::StatusOr<std::vector<Token>> ParseTokens(absl::string_view text);

// Equality that takes the same time wherever the strings differ.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

class Authorizer {
 public:
  // Off until a Load succeeds.
  Authorizer() = default;

  // Reads and parses `path`, and on success replaces the tokens in force. A file others may read
  // is loaded with a warning in `*warning` (when not null). Errors name the file.
  absl::Status Load(const std::string& path, std::string* warning = nullptr);
  // Replaces the tokens in force (tests; Load uses it).
  void SetTokens(std::vector<Token> tokens);

  bool enabled() const;

  // OK when a call of `method` with these `authorization` header values may run (always when
  // off). Unauthenticated when no header is a known "Bearer TOKEN", PermissionDenied when the
  // token's role is below the method's. The messages say what to do.
  absl::Status Check(absl::string_view method,
                     const std::vector<absl::string_view>& authorization) const;

  // Called once per denied call with kUnauthenticated or kPermissionDenied (metrics).
  void SetDeniedHook(std::function<void(absl::StatusCode)> hook) { denied_hook_ = std::move(hook); }

 private:
  mutable Mutex mu_;
  std::shared_ptr<const std::vector<Token>> tokens_ ABSL_GUARDED_BY(mu_);  // null: off
  std::function<void(absl::StatusCode)> denied_hook_;
};

// The guard at the top of every handler: checks the call's `authorization` metadata against
// `method`'s role. `auth` may be null (off).
grpc::Status Authorize(const Authorizer* auth, grpc::ServerContext* context, const char* method);

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_AUTH_H_
