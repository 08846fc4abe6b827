#include "trainyard/console/console.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>

#include "trainyard/core/etag.h"

namespace trainyard::console {

namespace {

constexpr const char* kCsp =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const ConsoleAsset* Find(std::span<const ConsoleAsset> assets, std::string_view path) {
  for (const auto& a : assets) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

bool IsIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

void Apply(const ConsoleReply& reply, httplib::Response& res) {
  res.status = reply.status;
  for (const auto& [k, v] : reply.headers) res.set_header(k, v);
  if (reply.status == 304) return;
  if (reply.body != nullptr) {
    const unsigned char* data = reply.body;
    // The content provider is the one path on which cpp-httplib sends the bytes untouched
    // (console.h).
    res.set_content_provider(
        reply.size, reply.mime, [data](size_t offset, size_t length, httplib::DataSink& sink) {
          return sink.write(reinterpret_cast<const char*>(data) + offset, length);
        });
  } else {
    auto text = std::make_shared<std::string>(reply.text);
    res.set_content_provider(text->size(), reply.mime,
                             [text](size_t offset, size_t length, httplib::DataSink& sink) {
                               return sink.write(text->data() + offset, length);
                             });
  }
}

void Redirect(httplib::Response& res, const std::string& location) {
  ConsoleReply r;
  r.status = 302;
  r.headers = SecurityHeaders();
  r.headers.emplace_back("Location", location);
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.mime = "text/plain; charset=utf-8";
  r.text = "See " + location + "\n";
  Apply(r, res);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SecurityHeaders() {
  return {{"Content-Security-Policy", kCsp},
          {"X-Content-Type-Options", "nosniff"},
          {"X-Frame-Options", "DENY"},
          {"Referrer-Policy", "same-origin"}};
}

bool AcceptsGzip(std::string_view header) {
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view item = Trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    size_t semi = item.find(';');
    std::string_view coding = Trim(item.substr(0, semi));
    if (!EqualsIgnoreCase(coding, "gzip") && coding != "*") continue;
    if (semi == std::string_view::npos) return true;
    std::string_view param = Trim(item.substr(semi + 1));
    if (!param.starts_with("q=") && !param.starts_with("Q=")) return true;
    std::string_view q = Trim(param.substr(2));
    // q is 0, 0.0, 0.00 or 0.000 exactly when every digit is 0.
    bool zero = !q.empty() && q.find_first_not_of("0.") == std::string_view::npos;
    if (!zero) return true;
    if (coding != "*") return false;  // gzip;q=0 refuses gzip whatever "*" says
  }
  return false;
}

ConsoleReply ServeConsole(std::span<const ConsoleAsset> assets, std::string_view path,
                          std::string_view accept_encoding, std::string_view if_none_match) {
  ConsoleReply reply;
  reply.headers = SecurityHeaders();
  // A file of the table by its own name; else an asset name is a 404 and any other path a
  // deep link into the application.
  const ConsoleAsset* asset = path == "index.html" ? nullptr : Find(assets, path);
  if (asset == nullptr && path.starts_with("assets/")) {
    reply.status = 404;
    reply.mime = "text/plain; charset=utf-8";
    reply.headers.emplace_back("Cache-Control", "no-cache");
    reply.text = "No console file /console/" + std::string(path) +
                 " in this trainyardd (reload the page: the console was rebuilt)\n";
    return reply;
  }
  if (asset == nullptr) {
    asset = Find(assets, "index.html");
    if (asset == nullptr) {
      reply.status = 500;
      reply.mime = "text/plain; charset=utf-8";
      reply.text = "This trainyardd was built without console files\n";
      return reply;
    }
  }
  reply.headers.emplace_back("Cache-Control",
                             asset->immutable ? "public, max-age=31536000, immutable" : "no-cache");
  reply.headers.emplace_back("ETag", std::string(asset->etag));
  if (asset->gz != nullptr) reply.headers.emplace_back("Vary", "Accept-Encoding");
  if (!if_none_match.empty() && IfNoneMatchHits(if_none_match, asset->etag)) {
    reply.status = 304;
    return reply;
  }
  reply.mime = std::string(asset->mime);
  if (asset->gz != nullptr && AcceptsGzip(accept_encoding)) {
    reply.headers.emplace_back("Content-Encoding", "gzip");
    reply.body = asset->gz;
    reply.size = asset->gz_size;
  } else {
    reply.body = asset->data;
    reply.size = asset->size;
  }
  return reply;
}

std::string JobLinkTarget(std::string_view job_id, std::string_view project,
                          std::string_view default_project) {
  if (project.empty()) project = default_project;
  if (job_id.empty() || project.empty() || job_id.size() > 128 || project.size() > 128 ||
      !std::all_of(job_id.begin(), job_id.end(), IsIdChar) ||
      !std::all_of(project.begin(), project.end(), IsIdChar)) {
    return "";
  }
  return "/console/projects/" + std::string(project) + "/jobs/" + std::string(job_id);
}

void RegisterConsoleRoutes(httplib::Server& server, const ConsoleOptions& options) {
  std::string home = "/console/projects/" + options.default_project + "/jobs";
  server.Get("/",
             [](const httplib::Request&, httplib::Response& res) { Redirect(res, "/console/"); });
  server.Get("/console",
             [](const httplib::Request&, httplib::Response& res) { Redirect(res, "/console/"); });
  server.Get("/console/",
             [home](const httplib::Request&, httplib::Response& res) { Redirect(res, home); });
  server.Get(R"(/console/(.+))", [](const httplib::Request& req, httplib::Response& res) {
    Apply(ServeConsole(EmbeddedAssets(), req.matches[1].str(),
                       req.get_header_value("Accept-Encoding"),
                       req.get_header_value("If-None-Match")),
          res);
  });
  std::string default_project = options.default_project;
  server.Get(R"(/mlengine/jobs/([^/]+))",
             [default_project](const httplib::Request& req, httplib::Response& res) {
               std::string target = JobLinkTarget(req.matches[1].str(),
                                                  req.get_param_value("project"), default_project);
               if (target.empty()) {
                 ConsoleReply r;
                 r.status = 404;
                 r.headers = SecurityHeaders();
                 r.mime = "text/plain; charset=utf-8";
                 r.text =
                     "Not a job link: the job id and ?project= may hold letters, digits, "
                     "'_', '-' and '.'\n";
                 Apply(r, res);
                 return;
               }
               Redirect(res, target);
             });
}

}  // namespace trainyard::console
