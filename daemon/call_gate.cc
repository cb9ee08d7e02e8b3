// CallGate: method paths from the generated descriptors, and the refusal of an unknown method.
#include "daemon/call_gate.h"

#include <google/protobuf/descriptor.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "lib/util/log.h"

namespace ecd::daemon {

CallGate::CallGate(absl::string_view service, const CallRules& rules)
    : service_(service), auth_(rules.authorizer), limiter_(rules.limiter) {
  const google::protobuf::ServiceDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service_);
  if (descriptor == nullptr) {
    Log(LogLevel::kError, "no generated service %s", service_);
    std::abort();
  }
  for (int i = 0; i < descriptor->method_count(); ++i) {
    const std::string& name = descriptor->method(i)->name();
    paths_.emplace(name, absl::StrCat("/", service_, "/", name));
  }
}

const std::string* CallGate::PathOf(absl::string_view method) const {
  auto it = paths_.find(method);
  return it == paths_.end() ? nullptr : &it->second;
}

grpc::Status CallGate::UnknownMethod(absl::string_view method) const {
  return grpc::Status(grpc::StatusCode::INTERNAL,
                      absl::StrCat("ecd has no method ", service_, "/", method,
                                   " to authorize; this is a bug in ecd, please report it"));
}

}  // namespace ecd::daemon
