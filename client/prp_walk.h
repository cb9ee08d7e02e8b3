// prp-walk: resolves an NVMe command's PRPs from a JSON description of the command and of the
// host memory that holds its PRP lists, the way ecd's controller model would, and reports the
// data segments with every PRP fetch-manager event, or the NVMe status the command fails with.
// The input and output documents are ecd.tools.PrpWalkRequest / PrpWalkReport
// (proto/ecd/tools/prp_walk.proto) in protobuf's JSON mapping; docs/nvme.md has examples.
#ifndef ECD_CLIENT_PRP_WALK_H_
#define ECD_CLIENT_PRP_WALK_H_

#include <string>

#include "absl/status/statusor.h"

namespace ecd::tools {

// Returns the report as JSON (one line when !pretty). InvalidArgument for a document that does
// not parse or describes an impossible setup (page size, addresses that are not numbers, ...).
// A command that the controller would fail is not an error: the report carries its status.
absl::StatusOr<std::string> RunPrpWalk(const std::string& request_json, bool pretty);

}  // namespace ecd::tools

#endif  // ECD_CLIENT_PRP_WALK_H_
