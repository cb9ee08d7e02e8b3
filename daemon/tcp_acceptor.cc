// TcpAcceptor: listening sockets, the accept thread, and the connections handed to gRPC.
#include "daemon/tcp_acceptor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "lib/util/log.h"
#include "lib/util/mutex.h"

namespace ecd::daemon {
namespace {

// How often the open connections are checked for those gRPC has closed, while accepting.
constexpr int64_t kSweepEveryMs = 1000;
// At the limit, how often a refusal may check first whether connections have closed meanwhile.
constexpr int64_t kSweepAtLimitEveryMs = 50;
// How long accepting pauses after a descriptor shortage before it tries again.
constexpr int kShortageRetryMs = 100;
// How many waiting connections one shortage may close through the reserve descriptor.
constexpr int kDropPerShortage = 256;
// At most one warning about refused connections per this many milliseconds.
constexpr int64_t kLogEveryMs = 10000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// gRPC's way of naming a peer, which ClientOf understands.
std::string PeerString(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    return absl::StrCat("ipv4:", text, ":", ntohs(a.sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {  // An IPv4 client of a dual-stack socket.
      inet_ntop(AF_INET, &a.sin6_addr.s6_addr[12], text, sizeof(text));
      return absl::StrCat("ipv4:", text, ":", ntohs(a.sin6_port));
    }
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    return absl::StrCat("ipv6:[", text, "]:", ntohs(a.sin6_port));
  }
  return "unknown";
}

// One address to listen on: `family` and the address bytes (port filled in later).
struct Address {
  int family = AF_INET;
  in_addr v4{};
  in6_addr v6{};
  bool dual_stack = false;  // an IPv6 wildcard that takes IPv4 too
  bool optional = false;    // may fail to bind when another address of the host did not
};

// A listening socket on `a` at `port`, or -1 with errno set.
int ListenOn(const Address& a, int port) {
  const int fd = ::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (a.family == AF_INET) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr = a.v4;
    sin.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&sin), sizeof(sin));
  } else {
    const int v6only = a.dual_stack ? 0 : 1;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_addr = a.v6;
    sin6.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&sin6), sizeof(sin6));
  }
  if (rc != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in&>(addr).sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6&>(addr).sin6_port);
}

// The soft limit on open descriptors, for messages.
uint64_t DescriptorLimit() {
  rlimit r{};
  return ::getrlimit(RLIMIT_NOFILE, &r) == 0 ? r.rlim_cur : 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpAcceptor>> TcpAcceptor::Listen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("\"", listen, "\" is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::vector<Address> addresses;
  Address a;
  if (host.empty() || host == "0.0.0.0" || host == "::") {
    a.family = AF_INET6;
    a.v6 = in6addr_any;
    a.dual_stack = true;
    addresses.push_back(a);
    Address v4;  // Where the system has no IPv6.
    v4.v4.s_addr = htonl(INADDR_ANY);
    v4.optional = true;
    addresses.push_back(v4);
  } else if (host == "localhost") {
    a.v4.s_addr = htonl(INADDR_LOOPBACK);
    addresses.push_back(a);
    Address v6;
    v6.family = AF_INET6;
    v6.v6 = in6addr_loopback;
    v6.optional = true;
    addresses.push_back(v6);
  } else if (inet_pton(AF_INET, host.c_str(), &a.v4) == 1) {
    addresses.push_back(a);
  } else if (inet_pton(AF_INET6, host.c_str(), &a.v6) == 1) {
    a.family = AF_INET6;
    addresses.push_back(a);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", host, "\" is not an IP address, localhost or a wildcard"));
  }
  std::unique_ptr<TcpAcceptor> acceptor(new TcpAcceptor());
  const bool wildcard = addresses.front().dual_stack;
  for (const Address& address : addresses) {
    // The dual-stack wildcard takes IPv4 as well: the IPv4 one is for systems without IPv6.
    if (wildcard && !acceptor->listeners_.empty()) break;
    const int fd = ListenOn(address, acceptor->port_ != 0 ? acceptor->port_ : port);
    if (fd < 0) {
      if (address.optional || (wildcard && &address == &addresses.front())) continue;
      return absl::UnavailableError(absl::StrCat(
          "cannot listen on ", listen, ": ", std::strerror(errno),
          "; is the port taken by another program, or the address not this host's? Give another "
          "--listen"));
    }
    acceptor->listeners_.push_back(fd);
    if (acceptor->port_ == 0) acceptor->port_ = BoundPort(fd);
  }
  if (acceptor->listeners_.empty()) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen, ": ", std::strerror(errno)));
  }
  if (::pipe2(acceptor->wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot make a pipe: ", std::strerror(errno)));
  }
  acceptor->reserve_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return acceptor;
}

TcpAcceptor::~TcpAcceptor() {
  Stop();
  for (int fd : {wake_[0], wake_[1], reserve_}) {
    if (fd >= 0) ::close(fd);
  }
}

void TcpAcceptor::Start(uint32_t max_connections, std::function<void(int fd)> take) {
  max_connections_ = max_connections;
  take_ = std::move(take);
  thread_ = std::thread([this] { Run(); });
}

void TcpAcceptor::Stop() {
  if (stopping_.exchange(true)) return;
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : listeners_) ::close(fd);
  listeners_.clear();
}

std::string TcpAcceptor::PeerOf(int fd) const {
  MutexLock lock(mu_);
  auto it = connections_.find(fd);
  return it == connections_.end() ? "" : it->second.peer;
}

std::string TcpAcceptor::NotAccepting() const {
  MutexLock lock(mu_);
  return not_accepting_;
}

TcpAcceptor::Stats TcpAcceptor::stats() const {
  MutexLock lock(mu_);
  Stats s = stats_;
  s.open = connections_.size();
  return s;
}

void TcpAcceptor::Poll(int ms) {
  std::vector<pollfd> fds;
  fds.push_back({wake_[0], POLLIN, 0});
  for (int fd : listeners_) fds.push_back({fd, POLLIN, 0});
  ::poll(fds.data(), fds.size(), ms);
}

void TcpAcceptor::SweepLocked() {
  last_sweep_ms_ = NowMs();
  for (auto it = connections_.begin(); it != connections_.end();) {
    struct stat st {};
    if (::fstat(it->first, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != it->second.inode) {
      it = connections_.erase(it);  // Closed by gRPC (and perhaps reused for another file).
    } else {
      ++it;
    }
  }
  if (!short_of_descriptors_ && (max_connections_ == 0 || connections_.size() < max_connections_)) {
    not_accepting_.clear();
  }
}

void TcpAcceptor::Run() {
  while (!stopping_.load()) {
    // The reserve could not be taken back after a shortage: try again.
    if (reserve_ < 0) reserve_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    bool short_of_descriptors;
    {
      MutexLock lock(mu_);
      if (NowMs() - last_sweep_ms_ >= kSweepEveryMs) SweepLocked();
      short_of_descriptors = short_of_descriptors_;
    }
    if (short_of_descriptors) {
      // The listening sockets stay readable while connections wait: sleep instead.
      pollfd wake{wake_[0], POLLIN, 0};
      ::poll(&wake, 1, kShortageRetryMs);
    } else {
      Poll(static_cast<int>(kSweepEveryMs));
    }
    if (stopping_.load()) break;
    for (int listener : listeners_) {
      for (;;) {
        sockaddr_storage addr{};
        socklen_t len = sizeof(addr);
        const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&addr), &len,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
          Accepted(fd, PeerString(addr));
          continue;
        }
        const int error = errno;
        if (error == EAGAIN || error == EWOULDBLOCK) break;
        if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
          OutOfDescriptors(listener, error);
          break;
        }
        // What accept(2) passes on from a connection that failed while it waited: try the
        // next one.
        if (error == EINTR || error == ECONNABORTED || error == EPROTO || error == EPERM ||
            error == ENETDOWN || error == ENOPROTOOPT || error == EHOSTDOWN || error == ENONET ||
            error == EHOSTUNREACH || error == EOPNOTSUPP || error == ENETUNREACH ||
            error == ETIMEDOUT) {
          continue;
        }
        MutexLock lock(mu_);
        if (NowMs() - last_log_ms_ >= kLogEveryMs) {
          last_log_ms_ = NowMs();
          Log(LogLevel::kError, "accepting a gRPC connection failed: %s; trying again",
              std::strerror(error));
        }
        break;
      }
    }
  }
}

void TcpAcceptor::Accepted(int fd, std::string peer) {
  {
    MutexLock lock(mu_);
    if (max_connections_ != 0 && connections_.size() >= max_connections_ &&
        NowMs() - last_sweep_ms_ >= kSweepAtLimitEveryMs) {
      SweepLocked();
    }
    if (max_connections_ != 0 && connections_.size() >= max_connections_) {
      ++stats_.refused_at_limit;
      not_accepting_ = absl::StrCat(connections_.size(),
                                    " gRPC TCP connections are open, as many as "
                                    "--max-connections allows; new ones are closed at once");
      if (NowMs() - last_log_ms_ >= kLogEveryMs) {
        last_log_ms_ = NowMs();
        Log(LogLevel::kWarning,
            "%s (the last from %s; %d refused so far). Idle connections close after "
            "--max-connection-idle",
            not_accepting_, peer, stats_.refused_at_limit);
      }
      ::close(fd);
      return;
    }
    struct stat st {};
    ::fstat(fd, &st);
    connections_[fd] = Connection{st.st_ino, peer};
    if (short_of_descriptors_) {
      short_of_descriptors_ = false;
      ++stats_.recoveries;
      Log(LogLevel::kInfo, "accepting gRPC connections again (%d open)", connections_.size());
    }
    not_accepting_.clear();
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  take_(fd);
}

void TcpAcceptor::OutOfDescriptors(int listener, int error) {
  // Close waiting connections through the reserve descriptor, so that their clients learn at
  // once rather than wait in the backlog for a descriptor that may not come.
  int dropped = 0;
  while (reserve_ >= 0 && dropped < kDropPerShortage) {
    ::close(reserve_);
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      ++dropped;
    }
    reserve_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;  // Nothing more waits (or still no room).
  }
  MutexLock lock(mu_);
  stats_.refused_descriptors += dropped;
  const uint64_t limit = DescriptorLimit();
  not_accepting_ =
      absl::StrCat("out of file descriptors (accept: ", std::strerror(error), "; ",
                   connections_.size(), " gRPC TCP connections open, the descriptor limit is ",
                   limit, "); new connections are closed at once");
  if (!short_of_descriptors_) {
    short_of_descriptors_ = true;
    ++stats_.descriptor_shortages;
    Log(LogLevel::kError,
        "ecd is %s. It tries again every %d ms; raise LimitNOFILE (or ulimit -n) or lower "
        "--max-connections",
        not_accepting_, kShortageRetryMs);
  }
  SweepLocked();
}

}  // namespace ecd::daemon
