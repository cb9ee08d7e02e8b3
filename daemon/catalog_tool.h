// `ecd --rebuild-catalog` and `ecd --check-catalog`: the offline catalog tools run on a stopped
// store's data dir, with progress on stderr and a summary on stdout.
#ifndef ECD_DAEMON_CATALOG_TOOL_H_
#define ECD_DAEMON_CATALOG_TOOL_H_

#include <string>

#include "lib/store/store.h"

namespace ecd::daemon {

enum class CatalogTool { kRebuild, kCheck };

// Runs `tool` on `data_dir` with the devices opened by `factory`. REQUIRES: the caller holds
// the data dir's lock. Returns the process exit status: 0 done (check: catalog and devices
// agree), 1 the tool failed, 3 the check found differences.
int RunCatalogTool(CatalogTool tool, const std::string& data_dir,
                   const store::NamespaceFactory& factory, bool json);

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_CATALOG_TOOL_H_
