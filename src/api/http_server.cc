#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace trainyard::api::internal {

namespace {

using Clock = std::chrono::steady_clock;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

// An extra worker leaves after this long without work (min_threads stay).
constexpr auto kWorkerIdle = std::chrono::seconds(60);
// A connection being closed is drained for this long so that the client reads the answer.
constexpr int kLingerMs = 2000;

bool IEquals(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

bool ExpectsBody(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" ||
         method == "PRI";
}

// Content-Length as RFC 9110 §8.6 allows it: digits only, repeated values equal.
bool ParseContentLength(const httplib::Request& req, uint64_t* out) {
  size_t n = req.get_header_value_count("Content-Length");
  for (size_t i = 0; i < n; ++i) {
    std::string v = req.get_header_value("Content-Length", i);
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    uint64_t x = std::stoull(v);
    if (i > 0 && x != *out) return false;
    *out = x;
  }
  return true;
}

std::string AddrOf(const sockaddr_storage& ss, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    *port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    *port = ntohs(in6->sin6_port);
  }
  return buf;
}

// Answers with the response already in `res`, then makes httplib close the connection: the
// content provider writes the whole body and reports failure (TLS listener only, where the
// connection loop is httplib's).
void CloseAfter(httplib::Response& res) {
  auto body = std::make_shared<std::string>(std::move(res.body));
  res.body.clear();
  std::string type = res.get_header_value("Content-Type");
  res.set_header("Connection", "close");
  if (body->empty()) *body = " ";
  res.set_content_provider(body->size(), type.empty() ? "text/plain" : type,
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             sink.write(body->data() + offset, length);
                             return false;
                           });
}

}  // namespace

// ---- ElasticThreadPool ------------------------------------------------------------------------

struct ElasticThreadPool::State {
  std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable done_cv;
  std::deque<std::function<void()>> jobs;
  std::map<std::thread::id, std::thread> live;
  std::vector<std::thread> exited;  // workers that left, joined by the next caller
  size_t min = 1, max = 1, idle = 0, peak = 0;
  bool shutdown = false;

  void Spawn() {  // mu held
    std::thread t([this] { Work(); });
    live.emplace(t.get_id(), std::move(t));
    peak = std::max(peak, live.size());
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      if (jobs.empty() && !shutdown) {
        ++idle;
        bool woke = work_cv.wait_for(lock, kWorkerIdle, [&] { return !jobs.empty() || shutdown; });
        --idle;
        if (!woke && live.size() > min) break;
        continue;
      }
      if (jobs.empty()) break;  // shutting down and nothing left to run
      auto fn = std::move(jobs.front());
      jobs.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
    auto self = live.find(std::this_thread::get_id());
    exited.push_back(std::move(self->second));
    live.erase(self);
    done_cv.notify_all();
  }

  std::vector<std::thread> TakeExited() {  // mu held
    std::vector<std::thread> out;
    out.swap(exited);
    return out;
  }
};

ElasticThreadPool::ElasticThreadPool(size_t min_threads, size_t max_threads)
    : state_(std::make_shared<State>()) {
  state_->min = std::max<size_t>(1, min_threads);
  state_->max = std::max(state_->min, max_threads);
  std::lock_guard<std::mutex> lock(state_->mu);
  for (size_t i = 0; i < state_->min; ++i) state_->Spawn();
}

ElasticThreadPool::~ElasticThreadPool() { shutdown(); }

void ElasticThreadPool::enqueue(std::function<void()> fn) {
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->jobs.push_back(std::move(fn));
    if (state_->jobs.size() > state_->idle && state_->live.size() < state_->max) {
      state_->Spawn();
    } else {
      state_->work_cv.notify_one();
    }
    done = state_->TakeExited();
  }
  for (auto& t : done) t.join();
}

void ElasticThreadPool::shutdown() {
  std::vector<std::thread> done;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->shutdown = true;
    state_->work_cv.notify_all();
    state_->done_cv.wait(lock, [&] { return state_->live.empty(); });
    done = state_->TakeExited();
  }
  for (auto& t : done) t.join();
}

size_t ElasticThreadPool::threads() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->live.size();
}

size_t ElasticThreadPool::peak_threads() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->peak;
}

// ---- Connection -------------------------------------------------------------------------------

// One accepted socket and what is known about the request being read on it. httplib parses the
// request through this Stream; the header phase ends at the first empty line after the request
// line.
class HttpServer::Connection : public httplib::Stream {
 public:
  Connection(int fd, const HttpLimits& limits, time_t read_sec, time_t write_sec)
      : fd_(fd),
        limits_(limits),
        read_timeout_ms_(static_cast<int>(std::max<time_t>(1, read_sec) * 1000)),
        write_timeout_ms_(static_cast<int>(std::max<time_t>(1, write_sec) * 1000)) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      remote_ip_ = AddrOf(ss, &remote_port_);
    }
    len = sizeof ss;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      local_ip_ = AddrOf(ss, &local_port_);
    }
  }
  ~Connection() override {
    if (fd_ >= 0) {
      ::shutdown(fd_, SHUT_RDWR);
      ::close(fd_);
    }
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }

  void BeginRequest() {
    in_headers_ = true;
    header_bytes_ = 0;
    line_len_ = 0;
    lines_ = 0;
    header_deadline_ms_ = NowMs() + limits_.header_timeout_ms;
    routed_ = false;
    content_length_ = 0;
    chunked_ = false;
    body_read_ = 0;
    budget_ = std::numeric_limits<uint64_t>::max();
    exceeded_ = false;
  }

  // Bytes already received and not yet handed to httplib.
  bool HasInput() const { return pos_ < end_; }

  // > 0 readable (or closed by the peer), 0 not within timeout_ms, < 0 error.
  int WaitReadable(int timeout_ms) const {
    pollfd p{fd_, POLLIN, 0};
    int r;
    do {
      r = ::poll(&p, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    return r;
  }

  // Called before routing: what the request says its body is.
  void SetBody(uint64_t content_length, bool chunked, uint64_t budget) {
    routed_ = true;
    content_length_ = content_length;
    chunked_ = chunked;
    budget_ = budget;
  }
  void RequestClose() { close_ = true; }
  bool exceeded() const { return exceeded_; }

  // True when the connection cannot carry another request: asked to close, the request was
  // refused before routing, its body was cut off or not read to its end.
  bool MustClose() const {
    return close_ || !routed_ || in_headers_ || chunked_ || body_read_ != content_length_;
  }

  // ---- httplib::Stream
  bool is_readable() const override { return HasInput() || WaitReadable(read_timeout_ms_) > 0; }
  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, write_timeout_ms_) > 0 && !(p.revents & (POLLERR | POLLHUP));
  }

  ssize_t read(char* ptr, size_t size) override {
    if (size == 0) return 0;
    if (!in_headers_) {
      if (body_read_ >= budget_) {
        exceeded_ = true;
        close_ = true;
        return -1;
      }
      size = static_cast<size_t>(std::min<uint64_t>(size, budget_ - body_read_));
    } else if (header_bytes_ >= limits_.max_header_bytes) {
      close_ = true;
      return -1;
    }
    if (!HasInput()) {
      int timeout = read_timeout_ms_;
      if (in_headers_) {
        int64_t left = header_deadline_ms_ - NowMs();
        if (left <= 0) return -1;
        timeout = static_cast<int>(std::min<int64_t>(timeout, left));
      }
      if (WaitReadable(timeout) <= 0) return -1;
      ssize_t n;
      do {
        n = ::recv(fd_, buf_, sizeof buf_, MSG_DONTWAIT);
      } while (n < 0 && errno == EINTR);
      if (n == 0) return 0;
      if (n < 0) return -1;
      pos_ = 0;
      end_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, end_ - pos_);
    if (in_headers_) {
      // Hand out the header bytes up to and including the line end of the empty line.
      for (size_t i = 0; i < n; ++i) {
        char c = buf_[pos_ + i];
        ++header_bytes_;
        if (c == '\n') {
          if (line_len_ == 0 && lines_ > 0) {
            in_headers_ = false;
            n = i + 1;
            break;
          }
          if (line_len_ > 0) ++lines_;
          line_len_ = 0;
        } else if (c != '\r') {
          ++line_len_;
        }
      }
    } else {
      body_read_ += n;
    }
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  const HttpLimits& limits_;
  int read_timeout_ms_;
  int write_timeout_ms_;
  std::string remote_ip_, local_ip_;
  int remote_port_ = 0, local_port_ = 0;
  char buf_[16384];
  size_t pos_ = 0, end_ = 0;

  bool in_headers_ = true;
  size_t header_bytes_ = 0;
  size_t line_len_ = 0;
  size_t lines_ = 0;
  int64_t header_deadline_ms_ = 0;
  bool routed_ = false;
  uint64_t content_length_ = 0;
  bool chunked_ = false;
  uint64_t body_read_ = 0;
  uint64_t budget_ = std::numeric_limits<uint64_t>::max();
  bool exceeded_ = false;
  bool close_ = false;
};

thread_local HttpServer::Connection* HttpServer::current_ = nullptr;

// ---- Parker -----------------------------------------------------------------------------------

// Holds connections between requests (and connections being closed, while they drain) in one
// epoll set; a connection that becomes readable goes back to the pool.
class HttpServer::Parker {
 public:
  Parker(HttpServer* server, size_t max_idle) : server_(server), max_idle_(max_idle) {}
  ~Parker() { Stop(); }

  void Start(httplib::TaskQueue* pool) {
    std::lock_guard<std::mutex> lock(mu_);
    pool_ = pool;
    stopped_ = false;
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_, &ev);
    thread_ = std::thread([this] { Run(); });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      if (wake_ >= 0) {
        uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(wake_, &one, sizeof one);
      }
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    parked_.clear();
    if (epfd_ >= 0) ::close(epfd_);
    if (wake_ >= 0) ::close(wake_);
    epfd_ = wake_ = -1;
    pool_ = nullptr;
  }

  // Waits for the next request on `conn` (closed after idle_ms without one).
  void Park(std::unique_ptr<Connection> conn, int idle_ms) { Add(std::move(conn), idle_ms, false); }

  // Stops sending on `conn` and reads what the client still sends for a while, then closes it.
  void Linger(std::unique_ptr<Connection> conn) {
    ::shutdown(conn->fd(), SHUT_WR);
    Add(std::move(conn), kLingerMs, true);
  }

  size_t idle() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [fd, e] : parked_) n += e.lingering ? 0 : 1;
    return n;
  }

 private:
  struct Entry {
    std::unique_ptr<Connection> conn;
    int64_t deadline_ms;
    bool lingering;
  };

  void Add(std::unique_ptr<Connection> conn, int ms, bool lingering) {
    std::unique_ptr<Connection> evicted;
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || epfd_ < 0) return;  // closes it
    int fd = conn->fd();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.fd = fd;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) return;
    parked_[fd] = Entry{std::move(conn), NowMs() + ms, lingering};
    if (!lingering && max_idle_ > 0 && parked_.size() > max_idle_) {
      // Too many idle connections: close the one that has waited longest.
      auto oldest = parked_.end();
      for (auto it = parked_.begin(); it != parked_.end(); ++it) {
        if (oldest == parked_.end() || it->second.deadline_ms < oldest->second.deadline_ms) {
          oldest = it;
        }
      }
      epoll_ctl(epfd_, EPOLL_CTL_DEL, oldest->first, nullptr);
      evicted = std::move(oldest->second.conn);
      parked_.erase(oldest);
    }
  }

  void Run() {
    epoll_event events[64];
    for (;;) {
      int n = epoll_wait(epfd_, events, 64, 250);
      std::vector<std::unique_ptr<Connection>> ready, closing;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopped_) return;
        for (int i = 0; i < n; ++i) {
          int fd = events[i].data.fd;
          auto it = parked_.find(fd);
          if (it == parked_.end()) continue;
          if (it->second.lingering) {
            if (Drain(fd)) {
              epoll_event ev{};
              ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
              ev.data.fd = fd;
              if (epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) == 0) continue;
            }
            epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
            closing.push_back(std::move(it->second.conn));
          } else {
            epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
            ready.push_back(std::move(it->second.conn));
          }
          parked_.erase(it);
        }
        int64_t now = NowMs();
        for (auto it = parked_.begin(); it != parked_.end();) {
          if (it->second.deadline_ms <= now) {
            epoll_ctl(epfd_, EPOLL_CTL_DEL, it->first, nullptr);
            closing.push_back(std::move(it->second.conn));
            it = parked_.erase(it);
          } else {
            ++it;
          }
        }
        for (auto& c : ready) {
          Connection* raw = c.release();
          HttpServer* server = server_;
          pool_->enqueue([server, raw] { server->Serve(std::unique_ptr<Connection>(raw)); });
        }
      }
      closing.clear();  // closes outside the lock
    }
  }

  // Reads and drops what a closing connection sends; false once it is done (EOF or error).
  static bool Drain(int fd) {
    char buf[65536];
    for (int i = 0; i < 16; ++i) {
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
      return false;
    }
    return true;
  }

  HttpServer* server_;
  size_t max_idle_;
  mutable std::mutex mu_;
  httplib::TaskQueue* pool_ = nullptr;
  bool stopped_ = true;
  int epfd_ = -1;
  int wake_ = -1;
  std::thread thread_;
  std::map<int, Entry> parked_;
};

// The pool httplib's listen loop gets; shutting it down first closes the parked connections.
class HttpServer::Queue : public ElasticThreadPool {
 public:
  Queue(HttpServer* server, const HttpLimits& limits)
      : ElasticThreadPool(limits.min_threads, limits.max_threads), server_(server) {
    server_->parker_->Start(this);
  }
  ~Queue() override {
    server_->peak_threads_ = std::max(server_->peak_threads_.load(), peak_threads());
  }
  void shutdown() override {
    server_->parker_->Stop();
    ElasticThreadPool::shutdown();
    server_->peak_threads_ = std::max(server_->peak_threads_.load(), peak_threads());
  }

 private:
  HttpServer* server_;
};

// ---- HttpServer -------------------------------------------------------------------------------

HttpServer::HttpServer(HttpLimits limits, BodyLimitFn body_limit, RefuseFn refuse)
    : limits_(limits), body_limit_(std::move(body_limit)), refuse_(std::move(refuse)) {
  if (limits_.max_idle_connections == 0) {
    rlimit rl{};
    size_t nofile = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
    limits_.max_idle_connections = std::max<size_t>(64, nofile / 2);
  }
  parker_ = std::make_shared<Parker>(this, limits_.max_idle_connections);
  new_task_queue = [this] { return new Queue(this, limits_); };
  set_keep_alive_timeout(std::max<time_t>(1, limits_.idle_timeout_ms / 1000));
  set_keep_alive_max_count(std::numeric_limits<int>::max());
  set_payload_max_length(std::numeric_limits<size_t>::max());
  set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return PreRoute(req, res); });
  // Expect: 100-continue is answered before routing: refuse a body over the limit there, so that
  // the client does not send it.
  set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
    uint64_t length = 0;
    if (!ParseContentLength(req, &length)) {
      refuse_(req, res, 400, "Invalid Content-Length header");
      return 400;
    }
    uint64_t limit = body_limit_(req);
    if (length > limit) {
      refuse_(req, res, 413,
              "Request payload size exceeds the limit: " + std::to_string(limit) + " bytes.");
      return 413;
    }
    return 100;
  });
  // A connection that will be closed says so.
  set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (current_ != nullptr && current_->MustClose() && !res.has_header("Connection")) {
      res.set_header("Connection", "close");
    }
  });
}

HttpServer::~HttpServer() { parker_->Stop(); }

httplib::Server::HandlerResponse HttpServer::PreRoute(const httplib::Request& req,
                                                      httplib::Response& res) {
  Connection* conn = current_;
  uint64_t length = 0;
  if (!ParseContentLength(req, &length)) {
    refuse_(req, res, 400, "Invalid Content-Length header");
    if (conn) conn->RequestClose();
    return HandlerResponse::Handled;
  }
  bool chunked = false;
  if (req.has_header("Transfer-Encoding")) {
    if (!IEquals(req.get_header_value("Transfer-Encoding"), "chunked") ||
        req.get_header_value_count("Transfer-Encoding") != 1 || req.has_header("Content-Length")) {
      refuse_(req, res, 400, "Unsupported Transfer-Encoding (only chunked is accepted)");
      if (conn) conn->RequestClose();
      return HandlerResponse::Handled;
    }
    chunked = true;
  } else if (!req.has_header("Content-Length") && ExpectsBody(req.method)) {
    // No length, not chunked: the body is empty. httplib would read until the peer closes.
    // (The Request is httplib's own non-const local; only its headers are completed here.)
    const_cast<httplib::Request&>(req).set_header("Content-Length", "0");
  }
  uint64_t limit = body_limit_(req);
  if (length > limit) {
    refuse_(req, res, 413,
            "Request payload size exceeds the limit: " + std::to_string(limit) + " bytes.");
    if (conn) {
      conn->RequestClose();
    } else {
      CloseAfter(res);
    }
    return HandlerResponse::Handled;
  }
  if (conn == nullptr) {
    if (chunked && limit != std::numeric_limits<uint64_t>::max()) {
      refuse_(req, res, 411, "A Content-Length header is required on this listener");
      CloseAfter(res);
      return HandlerResponse::Handled;
    }
    return HandlerResponse::Unhandled;
  }
  uint64_t budget = length;
  if (chunked) {
    budget = limit == std::numeric_limits<uint64_t>::max() ? limit : 2 * limit + 65536;
  }
  // (httplib never reads the body of a GET: MustClose() then sees it unread.)
  conn->SetBody(length, chunked, budget);
  return HandlerResponse::Unhandled;
}

void HttpServer::Configure(httplib::Server& server, const HttpLimits& limits,
                           BodyLimitFn body_limit, RefuseFn refuse) {
  server.new_task_queue = [limits] {
    return new ElasticThreadPool(limits.min_threads, limits.max_threads);
  };
  server.set_keep_alive_timeout(5);
  server.set_payload_max_length(std::numeric_limits<size_t>::max());
  server.set_pre_routing_handler(
      [body_limit, refuse](const httplib::Request& req, httplib::Response& res) {
        uint64_t length = 0;
        if (!ParseContentLength(req, &length)) {
          refuse(req, res, 400, "Invalid Content-Length header");
          CloseAfter(res);
          return httplib::Server::HandlerResponse::Handled;
        }
        uint64_t limit = body_limit(req);
        bool chunked = req.has_header("Transfer-Encoding");
        if (length > limit) {
          refuse(req, res, 413,
                 "Request payload size exceeds the limit: " + std::to_string(limit) + " bytes.");
          CloseAfter(res);
          return httplib::Server::HandlerResponse::Handled;
        }
        if (chunked && limit != std::numeric_limits<uint64_t>::max()) {
          refuse(req, res, 411, "A Content-Length header is required on this listener");
          CloseAfter(res);
          return httplib::Server::HandlerResponse::Handled;
        }
        if (!chunked && !req.has_header("Content-Length") && ExpectsBody(req.method)) {
          const_cast<httplib::Request&>(req).set_header("Content-Length", "0");
        }
        return httplib::Server::HandlerResponse::Unhandled;
      });
}

bool HttpServer::BodyLimitExceeded() { return current_ != nullptr && current_->exceeded(); }

size_t HttpServer::idle_connections() const { return parker_->idle(); }

size_t HttpServer::peak_threads() const { return peak_threads_; }

bool HttpServer::process_and_close_socket(socket_t sock) {
  Serve(std::make_unique<Connection>(sock, limits_, read_timeout_sec_, write_timeout_sec_));
  return true;
}

void HttpServer::Serve(std::unique_ptr<Connection> conn) {
  for (;;) {
    if (svr_sock_ == INVALID_SOCKET) return;  // stopping: closes it
    if (!conn->HasInput() && conn->WaitReadable(0) == 0) {
      parker_->Park(std::move(conn), limits_.idle_timeout_ms);
      return;
    }
    conn->BeginRequest();
    bool closed_by_client = false;
    current_ = conn.get();
    bool ok = process_request(*conn, false, closed_by_client, nullptr);
    current_ = nullptr;
    if (!ok) return;  // the peer went away or a write failed
    if (conn->MustClose()) {
      // The client may still be sending (a refused body): drain before closing, or the reset
      // would destroy the answer before it is read. Also when it asked to close.
      parker_->Linger(std::move(conn));
      return;
    }
    if (closed_by_client) return;
  }
}

}  // namespace trainyard::api::internal
