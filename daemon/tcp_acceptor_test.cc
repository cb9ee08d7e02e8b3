// Tests TcpAcceptor: the addresses it binds itself, the connection limit and what it says about
// it, the peers of the connections it hands out, and connections closed by their taker (as gRPC
// closes them) making room again.
#include "daemon/tcp_acceptor.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ecd::daemon {
namespace {

// A blocking connection to 127.0.0.1:port, and its own port.
int Connect(int port, int* local_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *local_port = ntohs(addr.sin_port);
  return fd;
}

// True when the peer closed `fd` within a few seconds.
bool ClosedByPeer(int fd) {
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  char byte;
  return ::recv(fd, &byte, 1, 0) == 0;
}

TEST(TcpAcceptorTest, LeavesAddressesItDoesNotBindToGrpc) {
  for (const char* listen : {"example.com:7400", "127.0.0.1", "127.0.0.1:99999", "unix:/tmp/x"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(TcpAcceptor::Listen(listen).status())) << listen;
  }
}

TEST(TcpAcceptorTest, APortInUseIsUnavailable) {
  absl::StatusOr<std::unique_ptr<TcpAcceptor>> first = TcpAcceptor::Listen("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_GT((*first)->port(), 0);
  absl::StatusOr<std::unique_ptr<TcpAcceptor>> second =
      TcpAcceptor::Listen(absl::StrCat("127.0.0.1:", (*first)->port()));
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  EXPECT_NE(second.status().message().find("is the port taken by another program"),
            std::string::npos);
}

TEST(TcpAcceptorTest, HandsOutConnectionsUpToTheLimitAndClosesTheRest) {
  absl::StatusOr<std::unique_ptr<TcpAcceptor>> listening = TcpAcceptor::Listen("127.0.0.1:0");
  ASSERT_TRUE(listening.ok()) << listening.status();
  TcpAcceptor& acceptor = **listening;
  std::mutex mu;
  std::condition_variable changed;
  std::vector<int> taken;
  acceptor.Start(2, [&](int fd) {
    std::lock_guard lock(mu);
    taken.push_back(fd);
    changed.notify_all();
  });
  const auto wait_taken = [&](size_t n) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(5), [&] { return taken.size() >= n; });
  };
  int ports[4];
  const int a = Connect(acceptor.port(), &ports[0]);
  const int b = Connect(acceptor.port(), &ports[1]);
  ASSERT_TRUE(wait_taken(2));
  EXPECT_EQ(acceptor.PeerOf(taken[0]), absl::StrCat("ipv4:127.0.0.1:", ports[0]));
  EXPECT_EQ(acceptor.PeerOf(taken[1]), absl::StrCat("ipv4:127.0.0.1:", ports[1]));
  EXPECT_EQ(acceptor.NotAccepting(), "");
  // The third is past the limit: closed at once, and /readyz would say why.
  const int c = Connect(acceptor.port(), &ports[2]);
  EXPECT_TRUE(ClosedByPeer(c));
  EXPECT_EQ(acceptor.stats().refused_at_limit, 1u);
  EXPECT_EQ(acceptor.stats().open, 2u);
  EXPECT_NE(acceptor.NotAccepting().find("--max-connections"), std::string::npos)
      << acceptor.NotAccepting();
  // gRPC closes a connection: there is room again for the next one.
  ::close(taken[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int d = Connect(acceptor.port(), &ports[3]);
  ASSERT_TRUE(wait_taken(3));
  EXPECT_EQ(acceptor.PeerOf(taken[2]), absl::StrCat("ipv4:127.0.0.1:", ports[3]));
  EXPECT_EQ(acceptor.stats().open, 2u);
  EXPECT_EQ(acceptor.stats().refused_at_limit, 1u);
  EXPECT_EQ(acceptor.NotAccepting(), "");
  acceptor.Stop();
  for (int fd : {a, b, c, d, taken[1], taken[2]}) ::close(fd);
}

TEST(TcpAcceptorTest, LocalhostAndWildcardsBind) {
  // (Wildcards and localhost bind IPv4 too where the system has no IPv6.)
  for (const char* listen : {"localhost:0", "0.0.0.0:0", "[::]:0", "127.0.0.1:0"}) {
    absl::StatusOr<std::unique_ptr<TcpAcceptor>> a = TcpAcceptor::Listen(listen);
    ASSERT_TRUE(a.ok()) << listen << ": " << a.status();
    EXPECT_GT((*a)->port(), 0) << listen;
  }
}

}  // namespace
}  // namespace ecd::daemon
