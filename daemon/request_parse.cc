// Requests that do not parse: INVALID_ARGUMENT that says why, and no ERROR line per request.
#include "daemon/request_parse.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/support/status.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/util/log.h"

namespace ecd::daemon {
namespace {

using grpc::experimental::InterceptionHookPoints;

class RequestParseFailureInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit RequestParseFailureInterceptor(std::string method) : method_(std::move(method)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* batch) override {
    if (batch->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = batch->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::INTERNAL && status.error_message().empty()) {
        batch->ModifySendStatus(
            grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, RequestParseFailureMessage(method_)));
      }
    }
    batch->Proceed();
  }

 private:
  const std::string method_;
};

void LogProtobuf(google::protobuf::LogLevel level, const char* file, int line,
                 const std::string& message) {
  if (absl::StrContains(message, "contains invalid UTF-8 data when parsing")) {
    Log(LogLevel::kDebug, "libprotobuf: %s", message);
    return;
  }
  const LogLevel ours = level == google::protobuf::LOGLEVEL_INFO      ? LogLevel::kInfo
                        : level == google::protobuf::LOGLEVEL_WARNING ? LogLevel::kWarning
                                                                      : LogLevel::kError;
  Log(ours, "libprotobuf %s:%d: %s", file, line, message);
}

}  // namespace

std::string RequestParseFailureMessage(const std::string& method) {
  return absl::StrCat("the ", method,
                      " request does not parse: its object name (or another string in it) is "
                      "not valid UTF-8, or its bytes are not protobuf; send names as UTF-8 text. "
                      "Nothing was done");
}

grpc::experimental::Interceptor* RequestParseFailureFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (!absl::StartsWith(info->method(), "/ecd.v1.")) return nullptr;
  return new RequestParseFailureInterceptor(info->method());
}

void RouteProtobufLogs() { google::protobuf::SetLogHandler(&LogProtobuf); }

}  // namespace ecd::daemon
