// ecctl's client core: the channel to ecd, each call's context, and the one line and exit code
// of every failure (client/client_core.h).
#include "client/client_core.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ecd::client {
namespace {

// The payload of an Error() status: its exit code, in decimal.
constexpr char kExitCodeUrl[] = "ecctl/exit-code";

struct ExitCodeDoc {
  ExitCode code;
  const char* meaning;
};

constexpr ExitCodeDoc kExitCodes[] = {
    {kExitOk, "success"},
    {kExitEcd,
     "ecd answered with an error (the line names the gRPC code), ecd could not be reached, or a "
     "waited-for rebuild job failed"},
    {kExitUsage, "usage error: bad flags or arguments"},
    {kExitLocalFile, "a local file could not be read or written"},
    {kExitDamage, "scrub left damage behind (with --check-only: found some)"},
    {kExitAuth,
     "ecd refused the call: no or an unknown token (UNAUTHENTICATED), or the token's role is too "
     "low (PERMISSION_DENIED); see docs/security.md"},
};

// The whole of a small local file; exit code 3 if it cannot be read.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in) return Error(kExitLocalFile, absl::StrCat(flag, ": cannot read ", path));
  return text.str();
}

// The bearer token to send, "" for none: --token, else --token-file's first line, else
// $ECD_TOKEN.
absl::StatusOr<std::string> ResolveToken(const Globals& g) {
  if (!g.token.empty()) return g.token;
  if (!g.token_file.empty()) {
    ECCTL_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(g.token_file, "--token-file"));
    std::string first(absl::StripAsciiWhitespace(text.substr(0, text.find('\n'))));
    if (first.empty()) {
      return Error(kExitUsage, absl::StrCat("--token-file: ", g.token_file,
                                            " holds no token on its first line"));
    }
    return first;
  }
  const char* env = std::getenv("ECD_TOKEN");
  return env != nullptr ? std::string(absl::StripAsciiWhitespace(env)) : "";
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const Globals& g, grpc::ChannelArguments& args) {
  if (g.tls_cert.empty() != g.tls_key.empty()) {
    return Error(kExitUsage, "--tls-cert and --tls-key go together: give both or neither");
  }
  if (g.tls_ca.empty() && g.tls_cert.empty() && g.tls_server_name.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  if (!g.tls_ca.empty()) {
    ECCTL_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadSmallFile(g.tls_ca, "--tls-ca"));
  }
  if (!g.tls_cert.empty()) {
    ECCTL_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadSmallFile(g.tls_cert, "--tls-cert"));
    ECCTL_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadSmallFile(g.tls_key, "--tls-key"));
  }
  if (!g.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(g.tls_server_name);
  }
  return grpc::SslCredentials(ssl);
}

// gRPC's status codes are absl's, with the same canonical names ("NOT_FOUND").
std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace

std::string ExitStatusHelp() {
  std::string text = "Exit status (every error is one line on stderr):\n";
  for (const ExitCodeDoc& e : kExitCodes)
    absl::StrAppend(&text, "  ", e.code, "  ", e.meaning, "\n");
  return text + "See docs/errors.md for each error and how to recover from it.";
}

absl::Status Error(ExitCode code, std::string message) {
  absl::Status status(absl::StatusCode::kUnknown, message);
  status.SetPayload(kExitCodeUrl, absl::Cord(absl::StrCat(static_cast<int>(code))));
  return status;
}

int ExitCodeOf(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  const auto payload = status.GetPayload(kExitCodeUrl);
  int code = kExitEcd;
  if (payload.has_value() && absl::SimpleAtoi(std::string(*payload), &code)) return code;
  return kExitEcd;
}

void ReportError(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::fflush(stdout);
  std::fprintf(stderr, "ecctl: %s\n", message.c_str());
}

absl::StatusOr<std::unique_ptr<ClientCore>> ClientCore::Create(const Globals& g) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  // A fixed 8 MiB receive window per call, as ecd's (no BDP growth): reads stream at full
  // speed and gRPC buffers at most that much per call.
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
  ECCTL_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                         ChannelCredentials(g, args));
  std::unique_ptr<ClientCore> core(new ClientCore(g));
  ECCTL_ASSIGN_OR_RETURN(core->token_, ResolveToken(g));
  core->channel_ = grpc::CreateCustomChannel(g.addr, credentials, args);
  core->objects_ = ecd::v1::Objects::NewStub(core->channel_);
  core->devices_ = ecd::v1::Devices::NewStub(core->channel_);
  core->rebuilds_ = ecd::v1::Rebuilds::NewStub(core->channel_);
  core->cxl_ = ecd::v1::Cxl::NewStub(core->channel_);
  core->catalog_ = ecd::v1::Catalog::NewStub(core->channel_);
  return core;
}

std::unique_ptr<grpc::ClientContext> ClientCore::Context() const {
  auto c = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) c->AddMetadata("authorization", absl::StrCat("Bearer ", token_));
  if (g_.timeout > 0) {
    c->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(g_.timeout * 1000)));
  }
  return c;
}

absl::Status ClientCore::Check(const grpc::Status& s, const std::string& what) const {
  if (s.ok()) return absl::OkStatus();
  std::string message = s.error_message();
  // The hint is for a transport failure, not for ecd's own UNAVAILABLE (a device flush).
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && absl::StrContains(message, "andshake")) {
    message = absl::StrCat(message, " (TLS: check --tls-ca, --tls-cert and --tls-key)");
  } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE &&
             (absl::StrContains(message, "connect") ||
              absl::StrContains(message, "Socket closed") ||
              absl::StrContains(message, "DNS resolution") ||
              absl::StrContains(message, "Connection reset"))) {
    message = absl::StrCat(message, " (is ecd running at ", g_.addr, "?)");
  }
  const bool auth = s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
                    s.error_code() == grpc::StatusCode::PERMISSION_DENIED;
  return Error(auth ? kExitAuth : kExitEcd,
               absl::StrCat(what, ": ", CodeName(s.error_code()), ": ", message));
}

ProgressBar ClientCore::Progress(std::string label, ProgressUnit unit) const {
  return ProgressBar(stderr, ProgressWanted(g_.quiet), std::move(label), std::move(unit));
}

}  // namespace ecd::client
