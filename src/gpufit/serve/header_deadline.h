// A deadline on reading a request's head (request line and headers), which cpp-httplib 0.11
// does not have: it bounds each socket read (read_timeout) but not the whole head, so a client
// that sends its head one byte a second holds one of the server's worker threads for as long
// as it keeps sending (a "slowloris"). HeaderDeadline closes such connections.
//
// How. The connections are the process's sockets whose local port is the server's and that
// have a peer; a thread finds them in /proc/self/fd (Linux) every `limit_s / 4` seconds (at
// most 1 s) and follows each by its socket inode (unique while it is open, so a reused fd
// number is a new connection). The server reports when a request's head has been read
// (RequestBegan: cpp-httplib's pre-routing handler) and when its answer is written
// (RequestEnded: its logger), by the peer's address and port. A connection is shut down
// (shutdown(2), read and write: the worker's blocked read returns and cpp-httplib closes it)
// when it is not inside a request, has waited more than `limit_s` since it was first seen or
// since its last answer, and had no unread bytes in its receive buffer (FIONREAD) at this scan
// and the one before: a worker is reading it byte by byte as the bytes come. A connection
// with bytes waiting is not slow but queued, for a worker the slow ones hold, and is left
// alone. Idle keep-alive connections cpp-httplib closes itself sooner
// (set_keep_alive_timeout below `limit_s`), so only a head that keeps trickling reaches the
// deadline. A request in flight is never cut here: its body has its own deadline.
//
// Limits: the scan finds a connection up to one period late, and cannot see a connection that
// lives less than a period; both only delay a close. Without /proc (not Linux) it finds no
// connection and cuts none.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace gpufit::serve {

class HeaderDeadline {
 public:
  using Clock = std::chrono::steady_clock;
  // `port`: the server's; `on_close(peer)` is called for each connection closed ("addr:port").
  HeaderDeadline(int port, double limit_s, std::function<void(const std::string& peer)> on_close);
  ~HeaderDeadline();
  HeaderDeadline(const HeaderDeadline&) = delete;
  HeaderDeadline& operator=(const HeaderDeadline&) = delete;

  void Start();  // the scanning thread
  void Stop();   // joins it; idempotent

  // From the server's threads, by the peer as cpp-httplib reports it (Request::remote_addr,
  // remote_port).
  void RequestBegan(const std::string& addr, int port);
  void RequestEnded(const std::string& addr, int port);

  // One scan at `now` (the thread's step; tests call it directly). Returns the connections
  // closed.
  int ScanOnce(Clock::time_point now);
  // Shuts down every connection of the server now (a server about to stop, whose worker
  // threads would otherwise wait for their slow clients). Returns how many.
  int CloseAll();

 private:
  struct Connection {
    int fd = -1;
    std::string peer;
    Clock::time_point first_seen;
    bool seen = false;     // in the current scan
    bool drained = false;  // no unread bytes at the previous scan
  };
  struct Peer {
    int in_flight = 0;
    Clock::time_point last_end{};
    Clock::time_point touched{};  // last RequestBegan or RequestEnded
  };

  const int port_;
  const std::chrono::duration<double> limit_;
  const std::function<void(const std::string&)> on_close_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::uint64_t, Connection> connections_;  // by socket inode
  std::map<std::string, Peer> peers_;                // by "addr:port"
  std::thread thread_;
};

}  // namespace gpufit::serve
