// The head deadline's rule on real loopback sockets (serve/header_deadline.h): a connection
// past the limit, outside a request, with nothing unread at two scans, is shut down; one with
// bytes waiting unread (queued behind busy workers, not slow) is left alone, as is one inside
// a request.
#include "gpufit/serve/header_deadline.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace gpufit::serve {
namespace {

using Clock = HeaderDeadline::Clock;
using namespace std::chrono_literals;

int Listen(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(fd, 8), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// The client's own port, as the server sees the peer.
int PortOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// Whether the server end was shut down: the client reads end of file.
bool Closed(int client) {
  char c = 0;
  timeval tv{.tv_sec = 1, .tv_usec = 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return ::recv(client, &c, 1, 0) == 0;
}

TEST(HeaderDeadline, CutsOnlyDrainedIdleConnectionsPastTheLimit) {
  int port = 0;
  const int listener = Listen(&port);
  const int slow = Connect(port), queued = Connect(port), busy = Connect(port);
  std::vector<int> served;
  for (int i = 0; i < 3; ++i) served.push_back(::accept(listener, nullptr, nullptr));
  ASSERT_EQ(::send(queued, "GET / HTTP/1.1\r\n\r\n", 18, 0), 18);  // waits unread: nobody reads it
  std::vector<std::string> cut;
  HeaderDeadline d(port, 1.0, [&](const std::string& peer) { cut.push_back(peer); });
  d.RequestBegan("127.0.0.1", PortOf(busy));  // inside a request

  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(d.ScanOnce(t0), 0);         // first seen now
  EXPECT_EQ(d.ScanOnce(t0 + 500ms), 0);  // within the limit
  EXPECT_EQ(d.ScanOnce(t0 + 2s), 1);    // slow: drained at two scans, past the limit
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0], "127.0.0.1:" + std::to_string(PortOf(slow)));
  EXPECT_TRUE(Closed(slow));
  EXPECT_EQ(d.ScanOnce(t0 + 3s), 0);  // queued (bytes unread) and busy (in a request) stay

  // The busy one's request ends: its wait starts again from the answer.
  d.RequestEnded("127.0.0.1", PortOf(busy));
  EXPECT_EQ(d.ScanOnce(Clock::now() + 500ms), 0);
  EXPECT_EQ(d.ScanOnce(Clock::now() + 2s), 1);
  EXPECT_TRUE(Closed(busy));

  // CloseAll takes the queued one too (it shuts down every server end still open: all three).
  EXPECT_EQ(d.CloseAll(), 3);
  EXPECT_TRUE(Closed(queued));
  for (int fd : served) ::close(fd);
  for (int fd : {slow, queued, busy, listener}) ::close(fd);
}

}  // namespace
}  // namespace gpufit::serve
