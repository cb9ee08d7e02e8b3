// Bearer tokens, roles and the method -> role table (see auth.h and docs/security.md).
#include "daemon/auth.h"

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "daemon/convert.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {
namespace {

// The one table. Reads need read-only; anything that writes objects (encode, update, delete,
// recover, scrub) needs operator; device state and replacement, the repair's pause and rate, CXL
// inject/ingest/clear and the interrupt policy need admin. gRPC's health checking and reflection
// are open (they reveal no data).
constexpr MethodRole kMethodRoles[] = {
    {"/ecd.v1.Objects/Encode", Role::kOperator},
    {"/ecd.v1.Objects/Read", Role::kReadOnly},
    {"/ecd.v1.Objects/Stat", Role::kReadOnly},
    {"/ecd.v1.Objects/List", Role::kReadOnly},
    {"/ecd.v1.Objects/Count", Role::kReadOnly},
    {"/ecd.v1.Objects/Delete", Role::kOperator},
    {"/ecd.v1.Objects/Recover", Role::kOperator},
    {"/ecd.v1.Objects/GetBlock", Role::kReadOnly},
    {"/ecd.v1.Objects/Update", Role::kOperator},
    {"/ecd.v1.Objects/Scrub", Role::kOperator},
    {"/ecd.v1.Objects/GetScrubStatus", Role::kReadOnly},
    {"/ecd.v1.Devices/List", Role::kReadOnly},
    {"/ecd.v1.Devices/SetState", Role::kAdmin},
    {"/ecd.v1.Devices/Replace", Role::kAdmin},
    {"/ecd.v1.Rebuilds/List", Role::kReadOnly},
    {"/ecd.v1.Rebuilds/Get", Role::kReadOnly},
    {"/ecd.v1.Rebuilds/GetRepairStatus", Role::kReadOnly},
    {"/ecd.v1.Rebuilds/SetRepair", Role::kAdmin},
    {"/ecd.v1.Catalog/Backup", Role::kAdmin},
    {"/ecd.v1.Cxl/Ingest", Role::kAdmin},
    {"/ecd.v1.Cxl/GetStats", Role::kReadOnly},
    {"/ecd.v1.Cxl/Inject", Role::kAdmin},
    {"/ecd.v1.Cxl/GetEventRecords", Role::kReadOnly},
    {"/ecd.v1.Cxl/ClearEventRecords", Role::kAdmin},
    {"/ecd.v1.Cxl/GetInterruptPolicy", Role::kReadOnly},
    {"/ecd.v1.Cxl/SetInterruptPolicy", Role::kAdmin},
    {"/grpc.health.v1.Health/Check", Role::kOpen},
    {"/grpc.health.v1.Health/Watch", Role::kOpen},
    {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", Role::kOpen},
};

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kOpen:
      return "open";
    case Role::kReadOnly:
      return "read-only";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
  }
  return "admin";
}

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  for (Role r : {Role::kReadOnly, Role::kOperator, Role::kAdmin}) {
    if (name == RoleName(r)) return r;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown role \"", name, "\"; use read-only, operator or admin"));
}

absl::Span<const MethodRole> MethodRoles() { return kMethodRoles; }

Role RequiredRole(absl::string_view method) {
  for (const MethodRole& m : kMethodRoles) {
    if (method == m.method) return m.role;
  }
  return Role::kAdmin;  // Fail closed.
}

absl::StatusOr<std::vector<Token>> ParseTokens(absl::string_view text) {
  std::vector<Token> tokens;
  std::set<std::string> seen;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    auto bad = [line_number](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": ", why, " (each line is TOKEN ROLE [NAME])"));
    };
    if (fields.size() > 3) return bad("too many fields");
    if (fields.size() < 2) return bad("a token without a role");
    if (fields[0].size() < kMinTokenLength) {
      return bad(absl::StrCat("the token is ", fields[0].size(), " characters; use at least ",
                              kMinTokenLength, " (e.g. openssl rand -hex 32)"));
    }
    absl::StatusOr<Role> role = ParseRole(fields[1]);
    if (!role.ok()) return bad(role.status().message());
    if (!seen.insert(std::string(fields[0])).second) return bad("the same token twice");
    Token t;
    t.secret = std::string(fields[0]);
    t.role = *role;
    t.name = fields.size() == 3 ? std::string(fields[2]) : absl::StrCat("line", line_number);
    tokens.push_back(std::move(t));
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        "no tokens: the file would lock every client out; add a line TOKEN ROLE [NAME]");
  }
  return tokens;
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Every byte of the longer string is looked at; only the lengths' equality can leak.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

absl::Status Authorizer::Load(const std::string& path, std::string* warning) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read the token file ", path,
                                            "; check --tokens-file and its permissions"));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<Token>> tokens = ParseTokens(text.str());
  if (!tokens.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", path, ": ", tokens.status().message()));
  }
  struct stat st {};
  if (warning != nullptr && ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH) != 0) {
    *warning = absl::StrCat("token file ", path,
                            " is readable by every user; chmod 0600 (or 0640 for a group)");
  }
  SetTokens(*std::move(tokens));
  return absl::OkStatus();
}

void Authorizer::SetTokens(std::vector<Token> tokens) {
  auto shared = std::make_shared<const std::vector<Token>>(std::move(tokens));
  MutexLock lock(mu_);
  tokens_ = std::move(shared);
}

bool Authorizer::enabled() const {
  MutexLock lock(mu_);
  return tokens_ != nullptr;
}

absl::Status Authorizer::Check(absl::string_view method,
                               const std::vector<absl::string_view>& authorization) const {
  std::shared_ptr<const std::vector<Token>> tokens;
  {
    MutexLock lock(mu_);
    tokens = tokens_;
  }
  if (tokens == nullptr) return absl::OkStatus();
  const Role needed = RequiredRole(method);
  if (needed == Role::kOpen) return absl::OkStatus();
  const Token* match = nullptr;
  bool bearer = false;
  for (absl::string_view header : authorization) {
    absl::string_view value = absl::StripAsciiWhitespace(header);
    if (value.size() < 7 || !absl::EqualsIgnoreCase(value.substr(0, 7), "bearer ")) continue;
    bearer = true;
    value = absl::StripLeadingAsciiWhitespace(value.substr(7));
    for (const Token& t : *tokens) {  // No early exit: every token is compared.
      if (ConstantTimeEquals(value, t.secret) && match == nullptr) match = &t;
    }
  }
  auto deny = [this](absl::Status s) {
    if (denied_hook_) denied_hook_(s.code());
    return s;
  };
  if (match == nullptr) {
    return deny(absl::UnauthenticatedError(
        bearer ? absl::StrCat(method,
                              " was refused: the bearer token is not in ecd's token file; check "
                              "--token, --token-file or ECD_TOKEN")
               : absl::StrCat(method,
                              " needs a token (ecd runs with --tokens-file): pass ecctl --token, "
                              "--token-file or ECD_TOKEN, or the metadata "
                              "\"authorization: Bearer TOKEN\"")));
  }
  if (match->role < needed) {
    return deny(absl::PermissionDeniedError(
        absl::StrCat(method, " needs the ", RoleName(needed), " role; token \"", match->name,
                     "\" has ", RoleName(match->role), ". Use a token with that role")));
  }
  return absl::OkStatus();
}

grpc::Status Authorize(const Authorizer* auth, grpc::ServerContext* context, const char* method) {
  if (auth == nullptr) return grpc::Status::OK;
  std::vector<absl::string_view> values;
  const auto range = context->client_metadata().equal_range("authorization");
  for (auto it = range.first; it != range.second; ++it) {
    values.emplace_back(it->second.data(), it->second.size());
  }
  return ToGrpc(auth->Check(method, values));
}

}  // namespace ecd::daemon
