// Helpers for tests over fault-injecting namespaces: rules from a spec, and a namespace's
// counters by name. Both report a failure to GoogleTest instead of returning an error.
#ifndef ECD_LIB_FAULT_FAULT_TEST_UTIL_H_
#define ECD_LIB_FAULT_FAULT_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/devices/namespace.h"
#include "lib/fault/fault_namespace.h"

namespace ecd::store {

// The rules of `spec` (ParseFaultSpec); none, with a test failure, when it does not parse.
inline std::vector<FaultRule> Rules(const std::string& spec) {
  absl::StatusOr<std::vector<FaultRule>> r = ParseFaultSpec(spec);
  EXPECT_TRUE(r.ok()) << spec << ": " << r.status();
  return r.ok() ? *r : std::vector<FaultRule>();
}

// The value of counter `name` of `ns` (Namespace::Counters); 0, with a test failure, if it has
// none of that name.
inline uint64_t CounterOf(const Namespace& ns, const std::string& name) {
  for (const auto& [n, v] : ns.Counters()) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

}  // namespace ecd::store

#endif  // ECD_LIB_FAULT_FAULT_TEST_UTIL_H_
