// ty_loadgen: an HTTP/1.1 load generator for the Trainyard benchmarks.
//
// N threads, each with one keep-alive connection, send requests until the duration or the
// request budget is spent: back to back (closed loop, the default), or open loop with --rate R,
// where request k is due at start + k/R whatever happened to the ones before it and its latency
// is measured from that due time (so a stalled server shows in the latency instead of slowing
// the client down: no coordinated omission). "{i}" in the path and the body is replaced by a
// request number unique across threads (--start, --start + 1, ...), so every create has its own
// job id; "{i%N}" by that number modulo N. --mix FILE sends a weighted mix of requests instead
// of one (see Usage). Prints one JSON object: counts by status, the rate, latency percentiles
// (per request name with --mix), how late requests were sent, a per-second timeline with
// --rate, and the client's own CPU time (so a reader can tell when the client, not the server,
// is the limit).
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
#include <fstream>
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
  double rate = 0;       // open loop: requests (mix entries) due per second; 0 = closed loop
  std::string mix_file;  // --mix
};

// One request of a mix entry.
struct Step {
  std::string name;  // for the per-name statistics
  std::string method, path, body;
};

// A mix entry: its weight and the requests it sends, one after the other on one connection
// (a create and then the cancel of the job it created share their {i}).
struct Op {
  double weight = 1;
  std::vector<Step> steps;
};

using Clock = std::chrono::steady_clock;

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr,
               "ty_loadgen: %s\n"
               "usage: ty_loadgen --port P [--host H] [--connections N] [--duration S]\n"
               "                  [--requests N] [--start I] [--method M] --path PATH\n"
               "                  [--body TEXT] [--close] [--progress N] [--header 'N: V']...\n"
               "                  [--rate R] [--mix FILE]\n"
               "{i} in PATH and TEXT becomes a unique number; --close opens a new connection\n"
               "for every request instead of keeping one alive per thread; --progress prints\n"
               "'<completed> <seconds>' to stderr after every N completed requests\n"
               "--rate R: open loop, R requests (mix entries) due per second, latency from the\n"
               "due time; --mix FILE: one request per line, 'NAME WEIGHT METHOD PATH [BODY]'\n"
               "(the body is the rest of the line); WEIGHT '+' sends the line right after the\n"
               "entry above it, with the same {i}; '#' lines are comments\n",
               msg);
  std::exit(2);
}

// "{i}" becomes i, "{i%N}" i modulo N.
std::string Substitute(const std::string& tmpl, int64_t i) {
  std::string out;
  out.reserve(tmpl.size() + 16);
  size_t pos = 0;
  while (true) {
    size_t at = tmpl.find("{i", pos);
    if (at == std::string::npos) break;
    size_t close = tmpl.find('}', at);
    if (close == std::string::npos) break;
    std::string_view inner(tmpl.data() + at + 2, close - at - 2);
    int64_t value = i;
    if (!inner.empty()) {
      if (inner[0] != '%') {
        out.append(tmpl, pos, close + 1 - pos);
        pos = close + 1;
        continue;
      }
      int64_t n = std::atoll(std::string(inner.substr(1)).c_str());
      if (n > 0) value = i % n;
    }
    out.append(tmpl, pos, at - pos);
    out += std::to_string(value);
    pos = close + 1;
  }
  out.append(tmpl, pos, std::string::npos);
  return out;
}

std::vector<Op> ReadMix(const std::string& file) {
  std::ifstream in(file);
  if (!in) Usage(("cannot read --mix " + file).c_str());
  std::vector<Op> ops;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::string fields[4];
    size_t pos = first;
    for (auto& f : fields) {
      size_t start = line.find_first_not_of(" \t", pos);
      if (start == std::string::npos) Usage(("--mix: short line: " + line).c_str());
      size_t end = line.find_first_of(" \t", start);
      f = line.substr(start, end == std::string::npos ? std::string::npos : end - start);
      pos = end == std::string::npos ? line.size() : end;
    }
    size_t body = line.find_first_not_of(" \t", pos);
    Step step{fields[0], fields[2], fields[3],
              body == std::string::npos ? std::string() : line.substr(body)};
    if (fields[1] == "+") {
      if (ops.empty()) Usage("--mix: a '+' line needs an entry above it");
      ops.back().steps.push_back(std::move(step));
      continue;
    }
    Op op;
    op.weight = std::atof(fields[1].c_str());
    if (!(op.weight > 0)) Usage(("--mix: WEIGHT must be > 0 or '+': " + line).c_str());
    op.steps.push_back(std::move(step));
    ops.push_back(std::move(op));
  }
  if (ops.empty()) Usage("--mix: no requests");
  return ops;
}

// A well-mixed 64-bit hash (splitmix64): the mix entry of request k, the same in every run.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
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

// What one thread measured for one request name.
struct StepStats {
  std::vector<uint32_t> latencies_us;
  std::map<int, int64_t> by_status;
};

// One second of the run (by due time, open loop only).
struct Bucket {
  int64_t requests = 0;
  int64_t errors = 0;  // not 2xx
  uint32_t max_us = 0;
};

struct ThreadResult {
  std::vector<StepStats> steps;       // by step index (all ops' steps in order)
  std::vector<uint32_t> send_lag_us;  // open loop: send time - due time of each entry
  std::vector<Bucket> timeline;
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

void PrintLatency(const char* key, std::vector<uint32_t>* v) {
  std::sort(v->begin(), v->end());
  std::printf("\"%s\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}", key,
              Percentile(*v, 50) / 1000, Percentile(*v, 90) / 1000, Percentile(*v, 99) / 1000,
              v->empty() ? 0.0 : v->back() / 1000.0);
}

int64_t CountOk(const std::map<int, int64_t>& by_status) {
  int64_t ok = 0;
  for (auto [s, n] : by_status) {
    if (s >= 200 && s < 300) ok += n;
  }
  return ok;
}

void PrintStatus(const std::map<int, int64_t>& by_status) {
  std::printf("\"status\": {");
  bool first = true;
  for (auto [s, n] : by_status) {
    std::printf("%s\"%d\": %lld", first ? "" : ", ", s, static_cast<long long>(n));
    first = false;
  }
  std::printf("}");
}

std::string BuildRequest(const Options& o, const Step& step, int64_t id) {
  std::string body = Substitute(step.body, id);
  std::string request =
      step.method + " " + Substitute(step.path, id) + " HTTP/1.1\r\nHost: " + o.host + "\r\n";
  if (o.close) request += "Connection: close\r\n";
  request += o.headers;
  if (!body.empty() || step.method == "POST" || step.method == "PUT" || step.method == "PATCH") {
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n";
  request += body;
  return request;
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
    else if (a == "--rate")
      o.rate = std::atof(value().c_str());
    else if (a == "--mix")
      o.mix_file = value();
    else
      Usage(("unknown argument " + a).c_str());
  }
  if (o.port <= 0) Usage("--port is required");
  if (o.connections < 1) Usage("--connections must be at least 1");
  if (o.rate < 0) Usage("--rate must be > 0");

  std::vector<Op> ops;
  if (!o.mix_file.empty()) {
    ops = ReadMix(o.mix_file);
  } else {
    ops.push_back(Op{1, {Step{"request", o.method, o.path, o.body}}});
  }
  // Steps are numbered across ops; cumulative weights pick an op for each request number.
  std::vector<size_t> first_step;
  std::vector<double> cumulative;
  size_t n_steps = 0;
  double total_weight = 0;
  for (const Op& op : ops) {
    first_step.push_back(n_steps);
    n_steps += op.steps.size();
    total_weight += op.weight;
    cumulative.push_back(total_weight);
  }
  const bool detailed = o.rate > 0 || !o.mix_file.empty();
  const size_t n_seconds = static_cast<size_t>(o.duration_s) + 2;

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
      r.steps.resize(n_steps);
      for (auto& s : r.steps) s.latencies_us.reserve(ops.size() == 1 ? 1 << 16 : 1 << 12);
      if (o.rate > 0) r.timeline.resize(n_seconds);
      Connection conn(o);
      while (true) {
        const int64_t n = next.fetch_add(1);
        if (o.max_requests > 0 && n >= o.max_requests) break;
        Clock::time_point due;
        if (o.rate > 0) {
          due = t0 + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(static_cast<double>(n) / o.rate));
          if (due >= deadline) break;
          std::this_thread::sleep_until(due);
        } else {
          due = Clock::now();
          if (due >= deadline) break;
        }
        const int64_t id = o.start + n;
        size_t which = 0;
        if (ops.size() > 1) {
          double u =
              static_cast<double>(Mix64(static_cast<uint64_t>(n)) >> 11) * 0x1.0p-53 * total_weight;
          which = static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) -
                                      cumulative.begin());
          which = std::min(which, ops.size() - 1);
        }
        const Op& op = ops[which];
        if (o.rate > 0) {
          r.send_lag_us.push_back(static_cast<uint32_t>(std::clamp<int64_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - due).count(), 0,
              UINT32_MAX)));
        }
        for (size_t s = 0; s < op.steps.size(); ++s) {
          const std::string request = BuildRequest(o, op.steps[s], id);
          // The first request of an entry is timed from its due time, the ones after it from
          // when they are sent.
          const auto start = s == 0 ? due : Clock::now();
          int status = conn.RoundTrip(request);
          const auto us =
              std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
          const auto lat = static_cast<uint32_t>(std::clamp<int64_t>(us, 0, UINT32_MAX));
          StepStats& st = r.steps[first_step[which] + s];
          st.latencies_us.push_back(lat);
          ++st.by_status[status];
          if (o.rate > 0) {
            size_t sec = static_cast<size_t>(std::chrono::duration<double>(due - t0).count());
            Bucket& b = r.timeline[std::min(sec, n_seconds - 1)];
            ++b.requests;
            if (status < 200 || status >= 300) ++b.errors;
            b.max_us = std::max(b.max_us, lat);
          }
          const int64_t done = completed.fetch_add(1) + 1;
          if (o.progress > 0 && done % o.progress == 0) {
            std::fprintf(stderr, "%lld %.6f\n", static_cast<long long>(done),
                         std::chrono::duration<double>(Clock::now() - t0).count());
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;

  std::vector<uint32_t> all, lag;
  std::map<int, int64_t> by_status;
  std::vector<StepStats> per_step(n_steps);
  std::vector<Bucket> timeline(o.rate > 0 ? n_seconds : 0);
  for (auto& r : results) {
    for (size_t s = 0; s < n_steps; ++s) {
      auto& src = r.steps[s];
      all.insert(all.end(), src.latencies_us.begin(), src.latencies_us.end());
      per_step[s].latencies_us.insert(per_step[s].latencies_us.end(), src.latencies_us.begin(),
                                      src.latencies_us.end());
      for (auto [st, n] : src.by_status) {
        by_status[st] += n;
        per_step[s].by_status[st] += n;
      }
    }
    lag.insert(lag.end(), r.send_lag_us.begin(), r.send_lag_us.end());
    for (size_t i = 0; i < timeline.size(); ++i) {
      timeline[i].requests += r.timeline[i].requests;
      timeline[i].errors += r.timeline[i].errors;
      timeline[i].max_us = std::max(timeline[i].max_us, r.timeline[i].max_us);
    }
  }
  const int64_t ok = CountOk(by_status);
  std::printf("{\"requests\": %zu, \"ok\": %lld, ", all.size(), static_cast<long long>(ok));
  PrintStatus(by_status);
  std::printf(", \"elapsed_s\": %.6f, \"ok_per_s\": %.1f, \"client_cpu_s\": %.3f, ", elapsed,
              static_cast<double>(ok) / elapsed, cpu);
  PrintLatency("latency_ms", &all);
  if (detailed) {
    std::printf(", \"ops\": {");
    bool first = true;
    for (size_t w = 0; w < ops.size(); ++w) {
      for (size_t s = 0; s < ops[w].steps.size(); ++s) {
        auto& st = per_step[first_step[w] + s];
        std::printf("%s\"%s\": {\"requests\": %zu, \"ok\": %lld, ", first ? "" : ", ",
                    ops[w].steps[s].name.c_str(), st.latencies_us.size(),
                    static_cast<long long>(CountOk(st.by_status)));
        PrintStatus(st.by_status);
        std::printf(", ");
        PrintLatency("latency_ms", &st.latencies_us);
        std::printf("}");
        first = false;
      }
    }
    std::printf("}");
  }
  if (o.rate > 0) {
    std::printf(", \"rate\": %.3f, ", o.rate);
    PrintLatency("send_lag_ms", &lag);
    std::printf(", \"timeline\": [");
    for (size_t i = 0; i < timeline.size(); ++i) {
      std::printf("%s[%zu, %lld, %lld, %.3f]", i ? ", " : "", i,
                  static_cast<long long>(timeline[i].requests),
                  static_cast<long long>(timeline[i].errors), timeline[i].max_us / 1000.0);
    }
    std::printf("]");
  }
  std::printf("}\n");
  return ok > 0 ? 0 : 1;
}
