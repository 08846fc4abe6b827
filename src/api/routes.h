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

// Who may call a route (docs/security.md). Every row names a permission, one of these two
// markers, or kAdmin; a row that names none is refused to everyone but administrators (and the
// permission-matrix test fails).
inline constexpr const char* kPublic = "public";               // no credential needed
inline constexpr const char* kAnyPrincipal = "authenticated";  // any valid credential
inline constexpr const char* kAdmin = "trainyard.admin";       // daemon administrators

// Where a route's resource is, for the permission check.
enum class Scope {
  kDaemon,      // the daemon itself (administration)
  kProject,     // matches[1]: the project
  kJob,         // matches[1]: the project, matches[2]: the job
  kBucket,      // matches[1]: the bucket (its project from the bucket store)
  kLogEntries,  // the project named by the body's resourceNames
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
  const char* permission = nullptr;  // Google's name ("ml.jobs.get"), kPublic, kAnyPrincipal
  Scope scope = Scope::kDaemon;
  const char* name = nullptr;  // the method in audit records when discovery.id is unset
};

// The table, in match order.
std::span<const Route> Routes();
const char* ScopeName(Scope scope);
// The table and the storage operations as JSON (GET /v1/help?format=json): method, pattern,
// permission, scope, mutating; for the permission-matrix test and docs/security.md.
std::string RouteTableJson();

}  // namespace trainyard::api
