// trainyardd's HTTP listener: cpp-httplib's request parsing and routing, with the connection
// handling replaced so that connections do not hold threads and bodies are limited before they
// are read. Private to ty_api.
//
// Debian 12's cpp-httplib (0.11.4) gives every connection one worker of a fixed pool for as
// long as the connection lives: 16 idle keep-alive sockets or log followers and nobody else is
// answered. HttpServer instead
//  - runs requests on an elastic pool (min_threads kept, more started on demand up to
//    max_threads, extra ones leave after a minute idle);
//  - parks a connection between requests in one epoll thread, so an idle keep-alive socket
//    holds a file descriptor, not a thread, until idle_timeout_ms (then it is closed; past
//    max_idle_connections the longest idle one is closed);
//  - caps the request line and headers (max_header_bytes, header_timeout_ms);
//  - asks body_limit for each request's limit before any body byte is read: a larger
//    Content-Length is refused (413) without reading, and the connection closed; a chunked body
//    is cut off past twice the limit (the handler sees BodyLimitExceeded());
//  - treats a POST/PUT/PATCH/DELETE with neither Content-Length nor Transfer-Encoding as having
//    an empty body (RFC 9112 §6.3; httplib would wait for the peer to close);
//  - closes a connection whose request body was not read to its end (a keep-alive connection
//    would otherwise parse the rest of the body as the next request), and after a request httplib
//    refused before routing it; closing drains what the client still sends for up to 2 s
//    (in the epoll thread), so that it reads the answer instead of a reset.
// The TLS listener (httplib::SSLServer) keeps httplib's connection handling; Configure() gives it
// the elastic pool, the body limits and the empty-body rule (and 411 for chunked bodies on
// limited routes, which it could not cut off).
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace trainyard::api::internal {

struct HttpLimits {
  size_t min_threads = 16;
  size_t max_threads = 1024;
  int idle_timeout_ms = 30000;      // keep-alive: an idle connection is closed after this
  int header_timeout_ms = 30000;    // the request line and headers must arrive within this
  size_t max_header_bytes = 65536;  // request line + headers
  size_t max_idle_connections = 0;  // 0 = half of RLIMIT_NOFILE
};

// The body limit of a request (headers parsed, no body byte read yet); UINT64_MAX = none.
using BodyLimitFn = std::function<uint64_t(const httplib::Request&)>;
// Writes the answer (status and body) to a request refused before routing: 413 (body over the
// limit), 411 (chunked on TLS) or 400 (bad Content-Length / Transfer-Encoding).
using RefuseFn = std::function<void(const httplib::Request&, httplib::Response&, int status,
                                    const std::string& message)>;

// Workers that grow on demand: a TaskQueue for httplib's listen loop.
class ElasticThreadPool : public httplib::TaskQueue {
 public:
  ElasticThreadPool(size_t min_threads, size_t max_threads);
  ~ElasticThreadPool() override;
  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every worker.
  void shutdown() override;
  size_t threads() const;       // alive now
  size_t peak_threads() const;  // the most alive at once

 private:
  struct State;
  std::shared_ptr<State> state_;
};

class HttpServer : public httplib::Server {
 public:
  HttpServer(HttpLimits limits, BodyLimitFn body_limit, RefuseFn refuse);
  ~HttpServer() override;

  // Installs the elastic pool, the body limits and the empty-body rule on a server whose
  // connections httplib handles (the TLS listener).
  static void Configure(httplib::Server& server, const HttpLimits& limits, BodyLimitFn body_limit,
                        RefuseFn refuse);

  // For handlers and the error handler, on the thread serving the request: true when the
  // request's chunked body went past the limit (the read failed; answer 413).
  static bool BodyLimitExceeded();

  // Connections parked between requests now, and the most workers alive at once (for tests).
  size_t idle_connections() const;
  size_t peak_threads() const;

 private:
  class Connection;
  class Parker;
  class Queue;
  bool process_and_close_socket(socket_t sock) override;
  void Serve(std::unique_ptr<Connection> conn);
  httplib::Server::HandlerResponse PreRoute(const httplib::Request& req, httplib::Response& res);

  static thread_local Connection* current_;  // the connection this thread serves

  HttpLimits limits_;
  BodyLimitFn body_limit_;
  RefuseFn refuse_;
  std::shared_ptr<Parker> parker_;
  std::atomic<size_t> peak_threads_{0};
};

}  // namespace trainyard::api::internal
