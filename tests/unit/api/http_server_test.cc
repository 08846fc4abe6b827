// HttpServer: connections that do not hold threads, bodies limited before they are read.
#include "http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainyard/api/api_server.h"

namespace trainyard::api::internal {
namespace {

constexpr uint64_t kLimit = 1024;

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpLimits limits) {
    server_ = std::make_unique<HttpServer>(
        limits,
        [](const httplib::Request& req) {
          return req.path.rfind("/upload", 0) == 0 ? std::numeric_limits<uint64_t>::max() : kLimit;
        },
        [](const httplib::Request&, httplib::Response& res, int status, const std::string& msg) {
          res.status = status;
          res.set_content("refused: " + msg, "text/plain");
        });
    server_->Get("/hello", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("hello", "text/plain");
    });
    server_->Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("got " + std::to_string(req.body.size()), "text/plain");
    });
    server_->Post("/upload", [](const httplib::Request&, httplib::Response& res,
                                const httplib::ContentReader& reader) {
      size_t n = 0;
      reader([&](const char*, size_t len) {
        n += len;
        return true;
      });
      res.set_content("stored " + std::to_string(n), "text/plain");
    });
    server_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (HttpServer::BodyLimitExceeded()) {
        res.status = 413;
        res.set_content("chunked body over the limit", "text/plain");
      }
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::yield();
  }

  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  int Connect() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{30, 0};  // a hang fails the test instead of blocking it
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
  }

  static void Send(int fd, const std::string& data) {
    ASSERT_EQ(::send(fd, data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }

  // Reads one response (headers and a Content-Length body); "" when the connection closed or
  // timed out first.
  static std::string ReadResponse(int fd) {
    std::string in;
    char buf[4096];
    for (;;) {
      size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t cl = 0;
        size_t p = in.find("Content-Length: ");
        if (p != std::string::npos && p < end) cl = std::stoul(in.substr(p + 16));
        if (in.size() >= end + 4 + cl) return in.substr(0, end + 4 + cl);
      }
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return "";
      in.append(buf, static_cast<size_t>(n));
    }
  }

  // True when the server closed the connection (EOF or reset) rather than leaving it open.
  static bool ClosedByServer(int fd) {
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }

  std::string Get(const std::string& path) {
    int fd = Connect();
    Send(fd, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string r = ReadResponse(fd);
    ::close(fd);
    return r;
  }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(HttpServerTest, IdleKeepAliveConnectionsDoNotLockOthersOut) {
  HttpLimits limits;
  limits.min_threads = 2;
  limits.max_threads = 4;
  Start(limits);
  std::vector<int> held;
  // 64 keep-alive connections that made one request and stay open, 16 that never send.
  for (int i = 0; i < 64; ++i) {
    int fd = Connect();
    Send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_NE(ReadResponse(fd).find("hello"), std::string::npos);
    held.push_back(fd);
  }
  for (int i = 0; i < 16; ++i) held.push_back(Connect());
  // Another client is answered, more than once, while all of them are held.
  for (int i = 0; i < 8; ++i) EXPECT_NE(Get("/hello").find("200 OK"), std::string::npos);
  // The held connections still work.
  Send(held[0], "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ReadResponse(held[0]).find("hello"), std::string::npos);
  EXPECT_LE(server_->peak_threads(), 4u);
  for (int fd : held) ::close(fd);
}

TEST_F(HttpServerTest, SlowRequestsGrowThePoolUpToTheCap) {
  HttpLimits limits;
  limits.min_threads = 1;
  limits.max_threads = 3;
  Start(limits);
  // Three requests whose headers are incomplete each hold a worker; a fourth still gets one
  // once they finish.
  std::vector<int> slow;
  for (int i = 0; i < 3; ++i) {
    int fd = Connect();
    Send(fd, "GET /hello HTTP/1.1\r\n");
    slow.push_back(fd);
  }
  for (int fd : slow) {
    Send(fd, "Host: x\r\n\r\n");
    EXPECT_NE(ReadResponse(fd).find("hello"), std::string::npos);
    ::close(fd);
  }
  EXPECT_NE(Get("/hello").find("hello"), std::string::npos);
  server_->stop();
  thread_.join();
  EXPECT_GE(server_->peak_threads(), 1u);
  EXPECT_LE(server_->peak_threads(), 3u);
}

TEST_F(HttpServerTest, OversizedContentLengthIsRefusedBeforeTheBodyIsRead) {
  Start({});
  int fd = Connect();
  // 256 MiB announced; only a little sent. The answer comes without the rest.
  Send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 268435456\r\n\r\n" +
               std::string(4096, 'x'));
  std::string r = ReadResponse(fd);
  EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
  EXPECT_NE(r.find("refused: Request payload size exceeds the limit: 1024 bytes."),
            std::string::npos);
  EXPECT_NE(r.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
}

TEST_F(HttpServerTest, RefusalReachesAClientThatSendsTheWholeBodyAndAskedToClose) {
  Start({});
  int fd = Connect();
  // The whole 4 MiB is sent before the answer is read: the server drains it instead of
  // resetting the connection (which would lose the answer).
  std::string body(4 << 20, 'b');
  std::thread sender([&] {
    Send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  sender.join();
  std::string r = ReadResponse(fd);
  EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
  ::close(fd);
}

TEST_F(HttpServerTest, ExpectContinueOverTheLimitIsRefusedWithoutContinue) {
  Start({});
  int fd = Connect();
  Send(fd,
       "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n");
  std::string r = ReadResponse(fd);
  EXPECT_EQ(r.find("100 Continue"), std::string::npos) << r;
  EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
  ::close(fd);
}

TEST_F(HttpServerTest, UploadRoutesTakeBodiesOverTheApiLimit) {
  Start({});
  int fd = Connect();
  std::string body(1 << 20, 'u');
  Send(fd, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\n\r\n" + body);
  EXPECT_NE(ReadResponse(fd).find("stored 1048576"), std::string::npos);
  // The connection stays usable.
  Send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ReadResponse(fd).find("hello"), std::string::npos);
  ::close(fd);
}

TEST_F(HttpServerTest, ChunkedBodyPastTheLimitIsCutOff) {
  Start({});
  int fd = Connect();
  std::string chunk(512, 'c');
  std::string req = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 160; ++i) req += "200\r\n" + chunk + "\r\n";  // 80 KiB
  req += "0\r\n\r\n";
  Send(fd, req);
  std::string r = ReadResponse(fd);
  EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
}

TEST_F(HttpServerTest, ChunkedBodyWithinTheLimitIsRead) {
  Start({});
  int fd = Connect();
  Send(fd,
       "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
       "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_NE(ReadResponse(fd).find("got 5"), std::string::npos);
  ::close(fd);
}

TEST_F(HttpServerTest, PostWithoutLengthHasAnEmptyBody) {
  HttpLimits limits;
  Start(limits);
  server_->set_read_timeout(60);  // httplib alone would wait this long, then answer 400
  int fd = Connect();
  Send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string r = ReadResponse(fd);
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
  EXPECT_NE(r.find("got 0"), std::string::npos);
  // Keep-alive goes on.
  Send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ReadResponse(fd).find("hello"), std::string::npos);
  ::close(fd);
}

TEST_F(HttpServerTest, UnreadBodyClosesTheConnectionInsteadOfParsingItAsARequest) {
  Start({});
  int fd = Connect();
  // A GET body is never read; its bytes must not become the next request.
  std::string smuggled = "GET /nothere HTTP/1.1\r\nHost: x\r\n\r\n";
  Send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(smuggled.size()) +
               "\r\n\r\n" + smuggled);
  std::string r = ReadResponse(fd);
  EXPECT_NE(r.find("hello"), std::string::npos);
  EXPECT_NE(r.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(ClosedByServer(fd));  // no 404 for the smuggled request
  ::close(fd);
}

TEST_F(HttpServerTest, InvalidContentLengthIsRefused) {
  Start({});
  int fd = Connect();
  Send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello");
  EXPECT_NE(ReadResponse(fd).find("HTTP/1.1 400"), std::string::npos);
  ::close(fd);
  fd = Connect();
  Send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n");
  EXPECT_NE(ReadResponse(fd).find("HTTP/1.1 400"), std::string::npos);
  ::close(fd);
}

TEST_F(HttpServerTest, OversizedHeadersCloseTheConnection) {
  Start({});
  int fd = Connect();
  // A request line that never ends: the server stops reading at the header limit.
  std::string line = "GET /" + std::string(128 << 10, 'a');
  ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
  EXPECT_NE(Get("/hello").find("hello"), std::string::npos);
}

TEST_F(HttpServerTest, PipelinedRequestsAreAllAnswered) {
  Start({});
  int fd = Connect();
  Send(fd,
       "GET /hello HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: "
       "3\r\n\r\nabcGET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  // The three answers may arrive in one read.
  std::string all;
  char buf[4096];
  while (all.find("got 3") == std::string::npos || all.rfind("hello") < all.find("got 3")) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0) << all;
    all.append(buf, static_cast<size_t>(n));
  }
  EXPECT_LT(all.find("hello"), all.find("got 3"));
  ::close(fd);
}

TEST_F(HttpServerTest, StopClosesParkedConnections) {
  Start({});
  int fd = Connect();
  Send(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_NE(ReadResponse(fd).find("hello"), std::string::npos);
  server_->stop();
  thread_.join();
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
}

TEST(ElasticThreadPoolTest, RunsEveryTaskAndGrowsOnlyToItsCap) {
  ElasticThreadPool pool(1, 4);
  std::mutex mu;
  std::condition_variable cv;
  int running = 0, done = 0;
  bool release = false;
  for (int i = 0; i < 8; ++i) {
    pool.enqueue([&] {
      std::unique_lock<std::mutex> lock(mu);
      ++running;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
      ++done;
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return running == 4; });  // four blocked at once: the pool grew
    release = true;
    cv.notify_all();
  }
  pool.shutdown();
  EXPECT_EQ(done, 8);
  EXPECT_EQ(pool.peak_threads(), 4u);
  EXPECT_EQ(pool.threads(), 0u);
}

}  // namespace
}  // namespace trainyard::api::internal

namespace trainyard::api {
namespace {

TEST(IsLoopbackHostTest, OnlyLoopbackAddressesAreLoopback) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h :
       {"0.0.0.0", "::", "[::]", "10.0.0.1", "192.168.1.2", "128.0.0.1", "", "example.com"}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
}

}  // namespace
}  // namespace trainyard::api
