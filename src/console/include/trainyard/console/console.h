// The web console's static files, embedded into trainyardd, and how they are served
// (docs/console.md). The console is a single-page application under /console/ that reads only
// the public REST API of the same origin; this module serves its files and nothing else.
//
// Serving rules (ServeConsole):
//  - /console/assets/NAME: the content-hashed file, `Cache-Control: public, max-age=31536000,
//    immutable`; a name not in the table is a 404 (never index.html, so a stale page fails
//    loudly instead of parsing HTML as JavaScript).
//  - every other /console/ path (deep links such as /console/projects/P/jobs/J): index.html
//    with `Cache-Control: no-cache`, so a new daemon's console is picked up on the next load.
//  - every answer carries an ETag (304 on a matching If-None-Match), the gzip bytes compressed
//    at build time when Accept-Encoding allows gzip (identity otherwise, `Vary:
//    Accept-Encoding`), and the security headers (a strict Content-Security-Policy: no inline
//    script or style, same-origin connections only; nosniff; no framing; same-origin referrer).
//  - bytes go out through a content provider: cpp-httplib (0.11, as Debian builds it) would
//    otherwise compress a text/* or JavaScript body again, with brotli at its highest quality,
//    on every request.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace httplib {
class Server;
}

namespace trainyard::console {

// One embedded file, as the build wrote it (console/build.mjs): identity and gzip bytes.
struct ConsoleAsset {
  std::string_view path;  // relative to /console/: "index.html", "assets/main-3F2A9C1B.js"
  std::string_view mime;  // "text/javascript; charset=utf-8"
  std::string_view etag;  // quoted strong ETag, from the content's SHA-256
  bool immutable;         // content-hashed name: cached for a year
  const unsigned char* data;
  std::size_t size;
  const unsigned char* gz;  // nullptr when no gzip copy was made
  std::size_t gz_size;
};

// The files compiled into this binary: the built console, or (when the build had no Node.js or
// no installed console dependencies) a placeholder index.html that says how to build it.
std::span<const ConsoleAsset> EmbeddedAssets();
// True when EmbeddedAssets() is the placeholder.
bool IsPlaceholder();

// What to answer to a GET under /console/.
struct ConsoleReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
  std::string mime;                                          // Content-Type of the body
  const unsigned char* body = nullptr;                       // static bytes, or nullptr
  std::size_t size = 0;
  std::string text;  // the body when `body` is nullptr (error pages)
};

// `path` is what follows "/console/" ("" for the root). Pure: no I/O.
ConsoleReply ServeConsole(std::span<const ConsoleAsset> assets, std::string_view path,
                          std::string_view accept_encoding, std::string_view if_none_match);

// True when an Accept-Encoding header value allows gzip (a "gzip" or "*" coding whose q is not
// 0).
bool AcceptsGzip(std::string_view accept_encoding);

// The security headers of every console response.
std::vector<std::pair<std::string, std::string>> SecurityHeaders();

// Where a gcloud-printed console link (/mlengine/jobs/ID?project=P) leads on this daemon:
// /console/projects/P/jobs/ID, with `default_project` when P is absent. Empty when the id or
// project holds characters no job id or project id has.
std::string JobLinkTarget(std::string_view job_id, std::string_view project,
                          std::string_view default_project);

struct ConsoleOptions {
  std::string default_project = "default";  // where / and /console/ lead
};

// Registers GET /, /console, /console/..., /mlengine/jobs/ID on `server`. The routes serve
// static files only (no job data), so they need no permission when authentication is on.
void RegisterConsoleRoutes(httplib::Server& server, const ConsoleOptions& options);

}  // namespace trainyard::console
