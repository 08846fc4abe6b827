// The one route table of trainyardd's own routes (the storage routes come from the storage
// module). Each row binds an HTTP method and path pattern to a handler and, for the ml v1
// methods, carries what the discovery document says about the method. Private to ty_api.
#pragma once

#include <span>
#include <string>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace trainyard::api {

class Handlers;  // api_server.cc
using HandlerFn = void (Handlers::*)(const httplib::Request&, httplib::Response&);

// One parameter of a discovery method.
struct ParamSpec {
  const char* name;
  const char* location;  // "path" or "query"
  const char* type;      // "string", "integer"
  const char* format;    // "int32", "google-fieldmask" or nullptr
  const char* pattern;   // path parameters: the resource-name pattern
  bool required;
  const char* description;
};

// What the discovery document says about an ml v1 method (id == nullptr: not published).
struct DiscoverySpec {
  const char* id = nullptr;         // "ml.projects.jobs.create"
  const char* path = nullptr;       // "v1/{+parent}/jobs"
  const char* flat_path = nullptr;  // "v1/projects/{projectsId}/jobs"
  std::span<const ParamSpec> params;
  const char* request = nullptr;   // schema name of the body, or nullptr
  const char* response = nullptr;  // schema name of the answer
  const char* description = nullptr;
};

enum class RouteKind {
  kMl,       // ml v1: body limit, project check, Google errors
  kLogging,  // Cloud Logging v2 subset: body limit, Google errors
  kOther,    // operational and admin routes
};

struct Route {
  const char* method;   // "GET", "POST", "PUT", "PATCH", "DELETE"
  const char* pattern;  // regex over the path; the first matching row wins
  const char* help;
  bool mutating;
  RouteKind kind;
  HandlerFn handler;
  DiscoverySpec discovery;
};

// The table, in match order.
std::span<const Route> Routes();

}  // namespace trainyard::api
