// ty_loadgen: a closed-loop HTTP/1.1 load generator for the Trainyard benchmarks.
//
// N threads, each with one keep-alive connection, send requests back to back until the
// duration or the request budget is spent. "{i}" in the path and the body is replaced by a
// request number unique across threads (--start, --start + 1, ...), so every create has its own
// job id. Prints one JSON object: counts by status, the rate, latency percentiles and the
// client's own CPU time (so a reader can tell when the client, not the server, is the limit).
//
// Plain sockets and no dependencies beyond the C++ library: the client does as little work per
// request as possible, which is the point of not using Python for this.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  int connections = 8;
  double duration_s = 10;
  int64_t max_requests = 0;  // 0: no limit
  int64_t start = 0;
  std::string method = "GET";
  std::string path = "/";
  std::string body;
  bool close = false;    // one connection per request (Connection: close)
  int64_t progress = 0;  // print "<completed> <seconds>" to stderr every this many requests
  std::string headers;   // extra "Name: value\r\n" lines (--header), e.g. Authorization
};

using Clock = std::chrono::steady_clock;

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr,
               "ty_loadgen: %s\n"
               "usage: ty_loadgen --port P [--host H] [--connections N] [--duration S]\n"
               "                  [--requests N] [--start I] [--method M] --path PATH\n"
               "                  [--body TEXT] [--close] [--progress N] [--header 'N: V']...\n"
               "{i} in PATH and TEXT becomes a unique number; --close opens a new connection\n"
               "for every request instead of keeping one alive per thread; --progress prints\n"
               "'<completed> <seconds>' to stderr after every N completed requests\n",
               msg);
  std::exit(2);
}

std::string Substitute(const std::string& tmpl, int64_t i) {
  std::string out;
  out.reserve(tmpl.size() + 16);
  size_t pos = 0;
  while (true) {
    size_t at = tmpl.find("{i}", pos);
    if (at == std::string::npos) break;
    out.append(tmpl, pos, at - pos);
    out += std::to_string(i);
    pos = at + 3;
  }
  out.append(tmpl, pos, std::string::npos);
  return out;
}

class Connection {
 public:
  explicit Connection(const Options& o) : o_(o) {}
  ~Connection() { Close(); }

  // Sends one request and reads the whole response; returns the status, or -1 on an I/O error
  // (the connection is then closed and reopened by the next call).
  int RoundTrip(const std::string& request) {
    if (fd_ < 0 && !Open()) return -1;
    if (!SendAll(request)) {
      Close();
      return -1;
    }
    int status = ReadResponse();
    if (status < 0 || close_after_ || o_.close) Close();
    return status;
  }

 private:
  bool Open() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(o_.port));
    if (::inet_pton(AF_INET, o_.host.c_str(), &addr.sin_addr) != 1) Usage("--host must be IPv4");
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Close();
      return false;
    }
    buf_.clear();
    return true;
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buf_.clear();
  }

  bool SendAll(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  bool Fill() {
    char tmp[65536];
    ssize_t n;
    do {
      n = ::recv(fd_, tmp, sizeof tmp, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  static bool HeaderIs(std::string_view line, std::string_view name, std::string_view* value) {
    if (line.size() <= name.size() || line[name.size()] != ':') return false;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
    }
    std::string_view v = line.substr(name.size() + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.remove_suffix(1);
    *value = v;
    return true;
  }

  int ReadResponse() {
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return -1;
    }
    std::string_view head(buf_.data(), head_end);
    if (head.size() < 12 || head.substr(0, 5) != "HTTP/") return -1;
    int status = std::atoi(std::string(head.substr(9, 3)).c_str());
    int64_t length = -1;
    bool chunked = false;
    close_after_ = false;
    size_t pos = head.find("\r\n");
    while (pos != std::string_view::npos && pos < head.size()) {
      size_t next = head.find("\r\n", pos + 2);
      std::string_view line = head.substr(
          pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
      std::string_view v;
      if (HeaderIs(line, "content-length", &v)) length = std::atoll(std::string(v).c_str());
      if (HeaderIs(line, "transfer-encoding", &v)) chunked = v.find("chunked") != v.npos;
      if (HeaderIs(line, "connection", &v)) close_after_ = v == "close" || v == "Close";
      pos = next;
    }
    buf_.erase(0, head_end + 4);
    if (chunked) {
      while (true) {
        size_t eol;
        while ((eol = buf_.find("\r\n")) == std::string::npos) {
          if (!Fill()) return -1;
        }
        size_t size = std::strtoul(buf_.substr(0, eol).c_str(), nullptr, 16);
        while (buf_.size() < eol + 2 + size + 2) {
          if (!Fill()) return -1;
        }
        buf_.erase(0, eol + 2 + size + 2);
        if (size == 0) break;
      }
    } else if (length >= 0) {
      while (buf_.size() < static_cast<size_t>(length)) {
        if (!Fill()) return -1;
      }
      buf_.erase(0, static_cast<size_t>(length));
    } else {
      while (Fill()) {
      }
      close_after_ = true;
    }
    return status;
  }

  const Options& o_;
  int fd_ = -1;
  std::string buf_;
  bool close_after_ = false;
};

struct ThreadResult {
  std::vector<uint32_t> latencies_us;
  std::map<int, int64_t> by_status;
};

double CpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  double k = static_cast<double>(sorted.size() - 1) * p / 100.0;
  size_t lo = static_cast<size_t>(k);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (k - static_cast<double>(lo));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--host")
      o.host = value();
    else if (a == "--port")
      o.port = std::atoi(value().c_str());
    else if (a == "--connections")
      o.connections = std::atoi(value().c_str());
    else if (a == "--duration")
      o.duration_s = std::atof(value().c_str());
    else if (a == "--requests")
      o.max_requests = std::atoll(value().c_str());
    else if (a == "--start")
      o.start = std::atoll(value().c_str());
    else if (a == "--method")
      o.method = value();
    else if (a == "--path")
      o.path = value();
    else if (a == "--body")
      o.body = value();
    else if (a == "--close")
      o.close = true;
    else if (a == "--progress")
      o.progress = std::atoll(value().c_str());
    else if (a == "--header")
      o.headers += value() + "\r\n";
    else
      Usage(("unknown argument " + a).c_str());
  }
  if (o.port <= 0) Usage("--port is required");
  if (o.connections < 1) Usage("--connections must be at least 1");

  std::atomic<int64_t> next{0};
  std::atomic<int64_t> completed{0};
  std::vector<ThreadResult> results(static_cast<size_t>(o.connections));
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));
  std::vector<std::thread> threads;
  for (int t = 0; t < o.connections; ++t) {
    threads.emplace_back([&, t] {
      ThreadResult& r = results[static_cast<size_t>(t)];
      r.latencies_us.reserve(1 << 16);
      Connection conn(o);
      std::string request;
      while (Clock::now() < deadline) {
        int64_t n = next.fetch_add(1);
        if (o.max_requests > 0 && n >= o.max_requests) break;
        const int64_t id = o.start + n;
        std::string body = Substitute(o.body, id);
        request.clear();
        request +=
            o.method + " " + Substitute(o.path, id) + " HTTP/1.1\r\nHost: " + o.host + "\r\n";
        if (o.close) request += "Connection: close\r\n";
        request += o.headers;
        if (!body.empty() || o.method == "POST" || o.method == "PUT" || o.method == "PATCH") {
          request +=
              "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
              "\r\n";
        }
        request += "\r\n";
        request += body;
        const auto start = Clock::now();
        int status = conn.RoundTrip(request);
        const auto us =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
        r.latencies_us.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
        ++r.by_status[status];
        const int64_t done = completed.fetch_add(1) + 1;
        if (o.progress > 0 && done % o.progress == 0) {
          std::fprintf(stderr, "%lld %.6f\n", static_cast<long long>(done),
                       std::chrono::duration<double>(Clock::now() - t0).count());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;

  std::vector<uint32_t> all;
  std::map<int, int64_t> by_status;
  for (auto& r : results) {
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    for (auto [s, n] : r.by_status) by_status[s] += n;
  }
  std::sort(all.begin(), all.end());
  int64_t ok = 0;
  for (auto [s, n] : by_status) {
    if (s >= 200 && s < 300) ok += n;
  }
  std::printf("{\"requests\": %zu, \"ok\": %lld, \"status\": {", all.size(),
              static_cast<long long>(ok));
  bool first = true;
  for (auto [s, n] : by_status) {
    std::printf("%s\"%d\": %lld", first ? "" : ", ", s, static_cast<long long>(n));
    first = false;
  }
  std::printf("}, \"elapsed_s\": %.6f, \"ok_per_s\": %.1f, \"client_cpu_s\": %.3f, ", elapsed,
              static_cast<double>(ok) / elapsed, cpu);
  std::printf("\"latency_ms\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}}\n",
              Percentile(all, 50) / 1000, Percentile(all, 90) / 1000, Percentile(all, 99) / 1000,
              all.empty() ? 0.0 : all.back() / 1000.0);
  return ok > 0 ? 0 : 1;
}
