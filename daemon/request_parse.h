// A request that does not parse as its ecd.v1 message, most often because a string field (an
// object name) is not valid UTF-8, which proto3 refuses: answered INVALID_ARGUMENT with a message
// that says so, not gRPC's INTERNAL with none, and not logged as an ERROR for every request.
#ifndef ECD_DAEMON_REQUEST_PARSE_H_
#define ECD_DAEMON_REQUEST_PARSE_H_

#include <grpcpp/support/server_interceptor.h>

#include <string>

namespace ecd::daemon {

// The message a request that does not parse is answered with, for `method` ("/ecd.v1.X/Y").
std::string RequestParseFailureMessage(const std::string& method);

// Server interceptors for ecd.v1 methods: a call that ends with INTERNAL and no message, which
// is how gRPC answers a request it could not parse (ecd's own INTERNAL errors always say what
// failed), ends with INVALID_ARGUMENT and RequestParseFailureMessage instead. Register it before
// interceptors that look at the status sent (the RPC metrics), so that they see the new one.
class RequestParseFailureFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

// Sends libprotobuf's log lines through ecd's log (lib/util/log.h), at the same level, except
// the line protobuf logs for a string field that is not valid UTF-8 while parsing: that is a
// client's mistake, answered to the client, so it goes to the debug level. Call once at start.
void RouteProtobufLogs();

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_REQUEST_PARSE_H_
