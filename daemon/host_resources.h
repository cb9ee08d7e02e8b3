// Host resources ecd claims at start: the open files limit, the number of gRPC connections it
// allows, and a free path for its Unix socket.
#ifndef ECD_DAEMON_HOST_RESOURCES_H_
#define ECD_DAEMON_HOST_RESOURCES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace ecd::daemon {

// Raises the soft limit on open files to the hard limit: every gRPC connection holds one.
// Logs what it did.
void RaiseDescriptorLimit();

// How many connections --max-connections 0 allows: what the descriptor limit leaves after the
// descriptors open now, less a reserve of 64 for Unix-socket clients, the metrics endpoint,
// the catalog and gRPC itself; at least 8.
uint32_t AutoMaxConnections();

// Makes `path` free for ecd's Unix socket. Nothing there is fine; a socket that no process
// serves (left by an ecd that was killed) is removed. FailedPrecondition for anything else at
// the path (left alone), for a socket a process still serves (another ecd with another data
// dir, say), and when the socket cannot be checked or removed; the message says what to do.
absl::Status ClearUnixSocketPath(const std::string& path);

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_HOST_RESOURCES_H_
