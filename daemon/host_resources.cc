// Host resources ecd claims at start: the open files limit, the connections it allows, and the
// path of its Unix socket.
#include "daemon/host_resources.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "lib/util/log.h"

namespace ecd::daemon {
namespace {

// File descriptors kept free beside the gRPC TCP connections when --max-connections is 0 (the
// default: what the descriptor limit leaves after start-up, less these): for Unix-socket
// clients, the metrics endpoint, the catalog and gRPC itself (docs/limits.md).
constexpr uint64_t kDescriptorReserve = 64;
// The fewest connections the automatic --max-connections allows, however low the limit.
constexpr uint64_t kMinAutoConnections = 8;

}  // namespace

void RaiseDescriptorLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  if (r.rlim_cur >= r.rlim_max) {
    Log(LogLevel::kInfo, "open files limit (RLIMIT_NOFILE): %d", r.rlim_cur);
    return;
  }
  const rlim_t before = r.rlim_cur;
  r.rlim_cur = r.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &r) != 0) {
    Log(LogLevel::kWarning, "cannot raise the open files limit from %d to %d: %s", before,
        r.rlim_max, std::strerror(errno));
    return;
  }
  Log(LogLevel::kInfo, "raised the open files limit (RLIMIT_NOFILE) from %d to %d", before,
      r.rlim_max);
}

uint32_t AutoMaxConnections() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  uint64_t open = 0;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++open;
  }
  const uint64_t limit = r.rlim_cur;
  const uint64_t left = limit > open + kDescriptorReserve ? limit - open - kDescriptorReserve : 0;
  return static_cast<uint32_t>(std::clamp<uint64_t>(left, kMinAutoConnections, UINT32_MAX));
}

namespace {

// What lstat says `mode` is, for a message.
const char* FileKind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a socket";
}

}  // namespace

absl::Status ClearUnixSocketPath(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("--unix-socket ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix-socket ", path, " exists and is not a socket (", FileKind(st.st_mode),
                     "); give another path or remove it"));
  }
  // Non-blocking: a listener with a full backlog answers EAGAIN at once, and is alive too.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot check the unix socket ", path, ": ", std::strerror(errno)));
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), std::min(path.size(), sizeof(addr.sun_path) - 1));
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  if (rc == 0 || err == EAGAIN || err == EINPROGRESS) {
    return absl::FailedPreconditionError(
        absl::StrCat("--unix-socket ", path,
                     " is served by another process; give another path, or stop that process"));
  }
  if (err != ECONNREFUSED) {
    return absl::FailedPreconditionError(absl::StrCat("cannot check whether the unix socket ", path,
                                                      " is in use: ", std::strerror(err),
                                                      "; remove it if nothing serves it"));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot remove the old unix socket ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace ecd::daemon
