#include "gpufit/serve/header_deadline.h"

#include <dirent.h>
#include <netdb.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

namespace gpufit::serve {
namespace {

std::string PeerKey(const std::string& addr, int port) { return addr + ":" + std::to_string(port); }

// The socket's port (local) or its peer's address and port, as getnameinfo writes them
// numerically (cpp-httplib's remote_addr); false when it has none.
bool Endpoint(int fd, bool peer, std::string* addr, int* port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return false;
  if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) return false;
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  if (addr != nullptr) *addr = host;
  *port = std::atoi(serv);
  return true;
}

// The process's open fds and their socket inodes (non-sockets left out).
std::vector<std::pair<int, std::uint64_t>> OpenSockets() {
  std::vector<std::pair<int, std::uint64_t>> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode))
      out.emplace_back(static_cast<int>(fd), static_cast<std::uint64_t>(st.st_ino));
  }
  ::closedir(dir);
  return out;
}

}  // namespace

HeaderDeadline::HeaderDeadline(int port, double limit_s, std::function<void(const std::string&)> on_close)
    : port_(port), limit_(limit_s), on_close_(std::move(on_close)) {}

HeaderDeadline::~HeaderDeadline() { Stop(); }

void HeaderDeadline::Start() {
  const std::chrono::duration<double> period = std::min(limit_ / 4, std::chrono::duration<double>(1.0));
  thread_ = std::thread([this, period] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
      lock.unlock();
      ScanOnce(Clock::now());
      lock.lock();
    }
  });
}

void HeaderDeadline::Stop() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeaderDeadline::RequestBegan(const std::string& addr, int port) {
  const std::lock_guard lock(mu_);
  Peer& p = peers_[PeerKey(addr, port)];
  ++p.in_flight;
  p.touched = Clock::now();
}

void HeaderDeadline::RequestEnded(const std::string& addr, int port) {
  const std::lock_guard lock(mu_);
  Peer& p = peers_[PeerKey(addr, port)];
  p.in_flight = std::max(0, p.in_flight - 1);
  p.last_end = p.touched = Clock::now();
}

int HeaderDeadline::ScanOnce(Clock::time_point now) {
  const std::vector<std::pair<int, std::uint64_t>> sockets = OpenSockets();
  std::vector<std::pair<int, std::string>> close;  // fd, peer
  {
    const std::lock_guard lock(mu_);
    for (auto& [inode, c] : connections_) c.seen = false;
    for (const auto& [fd, inode] : sockets) {
      if (const auto it = connections_.find(inode); it != connections_.end()) {
        it->second.seen = true;
        it->second.fd = fd;
        continue;
      }
      int local = 0, remote = 0;
      std::string addr;
      if (!Endpoint(fd, false, nullptr, &local) || local != port_ || !Endpoint(fd, true, &addr, &remote)) continue;
      connections_.emplace(inode, Connection{.fd = fd, .peer = PeerKey(addr, remote), .first_seen = now, .seen = true});
    }
    std::map<std::string, Peer> live;
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!it->second.seen) {  // closed since the last scan
        it = connections_.erase(it);
        continue;
      }
      Connection& c = it->second;
      const auto p = peers_.find(c.peer);
      const Peer peer = p == peers_.end() ? Peer{} : p->second;
      live.emplace(c.peer, peer);
      int unread = 0;
      const bool drained = ::ioctl(c.fd, FIONREAD, &unread) == 0 && unread == 0;
      const bool was_drained = std::exchange(c.drained, drained);
      const Clock::time_point waiting_since = std::max(c.first_seen, peer.last_end);
      if (peer.in_flight == 0 && drained && was_drained && now - waiting_since > limit_) {
        close.emplace_back(c.fd, c.peer);
        it = connections_.erase(it);
        continue;
      }
      ++it;
    }
    // Peers whose connections are gone are forgotten, but for one the scan has not seen yet
    // (accepted after its listing) that reported lately.
    for (auto& [key, p] : peers_)
      if (!live.contains(key) && now - p.touched < limit_) live.emplace(key, p);
    peers_ = std::move(live);
  }
  int closed = 0;
  for (const auto& [fd, peer] : close) {
    // The fd may have been closed and reused since the scan: shut it down only if it is still
    // a connection of this server with the same peer.
    std::string addr;
    int local = 0, remote = 0;
    if (!Endpoint(fd, false, nullptr, &local) || local != port_ || !Endpoint(fd, true, &addr, &remote) ||
        PeerKey(addr, remote) != peer)
      continue;
    ::shutdown(fd, SHUT_RDWR);
    ++closed;
    if (on_close_) on_close_(peer);
  }
  return closed;
}

int HeaderDeadline::CloseAll() {
  int closed = 0;
  for (const auto& [fd, inode] : OpenSockets()) {
    std::string addr;
    int local = 0, remote = 0;
    if (!Endpoint(fd, false, nullptr, &local) || local != port_ || !Endpoint(fd, true, &addr, &remote)) continue;
    ::shutdown(fd, SHUT_RDWR);
    ++closed;
  }
  return closed;
}

}  // namespace gpufit::serve
