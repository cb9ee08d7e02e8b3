// TcpAcceptor: ecd's own accept loop for its plaintext TCP listener. gRPC 1.51's accept loop
// stops for good at the first accept error it does not expect (EMFILE when the process is out
// of file descriptors), after which the port still takes connections that nobody serves. This
// one never stops: it hands each connection to gRPC (grpc::AddInsecureChannelFromFd), keeps the
// connections it handed out under a limit so that they cannot use up the descriptors the rest
// of ecd needs, and when descriptors run out anyway it closes the connections it cannot serve
// (through a descriptor it keeps in reserve for that) and tries again shortly.
//
// Thread safety: all methods may be called concurrently, except that Start is called once.
#ifndef ECD_DAEMON_TCP_ACCEPTOR_H_
#define ECD_DAEMON_TCP_ACCEPTOR_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {

class TcpAcceptor {
 public:
  // Binds and listens on `listen`: "HOST:PORT" with HOST an IPv4 address, "[IPv6]",
  // "localhost" (its IPv4 and IPv6 loopback) or a wildcard (0.0.0.0, [::] or empty: IPv6 and
  // IPv4 on one socket where the system allows); PORT 0 picks one. InvalidArgument for anything
  // else (gRPC then listens itself), Unavailable when it cannot be bound (naming the error).
  static absl::StatusOr<std::unique_ptr<TcpAcceptor>> Listen(const std::string& listen);
  ~TcpAcceptor();  // Stop()
  TcpAcceptor(const TcpAcceptor&) = delete;
  TcpAcceptor& operator=(const TcpAcceptor&) = delete;

  int port() const { return port_; }

  // Starts the accept thread. Each connection accepted while fewer than `max_connections`
  // (0: no limit) are open goes to `take`, which owns its descriptor from then on (gRPC closes
  // it when the connection ends); the others are closed at once. Call once.
  void Start(uint32_t max_connections, std::function<void(int fd)> take);
  // Stops accepting and closes the listening sockets; returns once the thread has ended.
  void Stop();

  // The address a connection handed out as descriptor `fd` came from ("ipv4:127.0.0.1:51000",
  // "ipv6:[::1]:51000"), or "" if `fd` is not one of them.
  std::string PeerOf(int fd) const;
  // Why new connections are not being served now ("" when they are): at the connection limit,
  // or out of file descriptors.
  std::string NotAccepting() const;

  struct Stats {
    uint64_t open = 0;                  // connections handed out and not closed yet
    uint64_t refused_at_limit = 0;      // closed at once: max_connections were open
    uint64_t refused_descriptors = 0;   // closed at once: no descriptor to serve them with
    uint64_t descriptor_shortages = 0;  // times accepting stopped for want of descriptors
    uint64_t recoveries = 0;            // times it accepted again after such a shortage
  };
  Stats stats() const;

 private:
  TcpAcceptor() = default;
  void Run();
  // Handles one accepted connection `fd` from `peer`.
  void Accepted(int fd, std::string peer);
  // A descriptor shortage (`error`: EMFILE, ENFILE, ENOBUFS or ENOMEM) on listening socket
  // `listener`: closes one waiting connection through the reserve descriptor, and reports.
  void OutOfDescriptors(int listener, int error);
  // Forgets the connections gRPC has closed since (their descriptor is closed, or now another
  // file). REQUIRES: mu_ held.
  void SweepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits up to `ms` for a listening socket to become readable or for Stop.
  void Poll(int ms);

  std::vector<int> listeners_;
  int port_ = 0;
  int wake_[2] = {-1, -1};  // A pipe: Stop writes to it.
  int reserve_ = -1;        // /dev/null, closed to make room when descriptors run out.
  uint32_t max_connections_ = 0;
  std::function<void(int)> take_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  struct Connection {
    ino_t inode;
    std::string peer;
  };
  mutable Mutex mu_;
  std::map<int, Connection> connections_ ABSL_GUARDED_BY(mu_);  // by descriptor
  std::string not_accepting_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);  // (but `open`, from connections_)
  bool short_of_descriptors_ ABSL_GUARDED_BY(mu_) = false;
  int64_t last_sweep_ms_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_log_ms_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ecd::daemon

#endif  // ECD_DAEMON_TCP_ACCEPTOR_H_
