// The statuses of the ObjectCatalog contract shared by every implementation: a commit whose
// outcome is unknown.
#include "lib/catalog/object_catalog.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace ecd::store {
namespace {

constexpr char kOutcomeUnknownPayload[] = "ecd.catalog/outcome-unknown";

}  // namespace

absl::Status CommitOutcomeUnknownError(absl::string_view what) {
  absl::Status status(absl::StatusCode::kUnknown,
                      absl::StrCat(what,
                                   "; the catalog cannot tell whether this commit is durable: "
                                   "re-read the catalog to learn its outcome"));
  status.SetPayload(kOutcomeUnknownPayload, absl::Cord("1"));
  return status;
}

bool IsCommitOutcomeUnknown(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnknown &&
         status.GetPayload(kOutcomeUnknownPayload).has_value();
}

}  // namespace ecd::store
