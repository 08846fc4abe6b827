#include "trainyard/storage/storage_http.h"

#include <dirent.h>
#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "multipart.h"
#include "object_meta.h"
#include "trainyard/core/log.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "upload_range.h"

namespace trainyard::storage {
namespace {

using internal::ObjectMeta;
using internal::Preconditions;
using json = nlohmann::json;

constexpr size_t kMaxJsonBody = 1 << 20;
constexpr size_t kIoChunk = 1 << 16;
constexpr Duration kSessionMaxAge = 7LL * 24 * 3600 * kMicrosPerSecond;

// ---------------------------------------------------------------------------------------------
// Small helpers

// Percent-decoding of one path segment ('+' stays '+').
std::optional<std::string> DecodeSegment(std::string_view s) {
  auto decoded = PercentDecode(s);
  if (!decoded.ok()) return std::nullopt;
  return std::move(decoded).value();
}

std::string FormatMillis(Timestamp ts) {
  std::string s = FormatRfc3339(ts);  // "...:SSZ"
  if (s.empty() || s.back() != 'Z') return s;
  int64_t ms = ((ts % kMicrosPerSecond) + kMicrosPerSecond) % kMicrosPerSecond / 1000;
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03d", static_cast<int>(ms));
  s.insert(s.size() - 1, frac);
  return s;
}

std::optional<int64_t> ParseInt64(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string RandomHex(size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned v = rd() & 0xFFu;
    out.push_back(kHex[v >> 4]);
    out.push_back(kHex[v & 0xF]);
  }
  return out;
}

std::string BaseUrl(const httplib::Request& req) {
  std::string host = req.get_header_value("Host");
  if (host.empty()) host = "127.0.0.1";
  const bool tls = req.ssl != nullptr;
  return std::string(tls ? "https://" : "http://") + host;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void SendJson(httplib::Response& res, int code, const json& body) {
  res.status = code;
  res.set_content(Dump(body), "application/json; charset=UTF-8");
}

void SendError(httplib::Response& res, int code, const std::string& reason,
               const std::string& message) {
  json err = {
      {"code", code},
      {"message", message},
      {"errors", json::array({{{"message", message}, {"domain", "global"}, {"reason", reason}}})}};
  SendJson(res, code, json{{"error", err}});
}

// Maps a store status to GCS's error shape. NOT_FOUND messages for a missing bucket use GCS's
// own wording.
void SendStatus(httplib::Response& res, const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      if (StartsWith(s.message(), "bucket \"")) {
        SendError(res, 404, "notFound", "The specified bucket does not exist.");
      } else {
        SendError(res, 404, "notFound", s.message());
      }
      return;
    case StatusCode::kInvalidArgument:
      SendError(res, 400, "invalid", s.message());
      return;
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
      SendError(res, 409, "conflict", s.message());
      return;
    case StatusCode::kFailedPrecondition:
      SendError(res, 412, "conditionNotMet", s.message());
      return;
    default:
      TY_LOG_WARN("storage", "storage request failed: {}", s.ToString());
      SendError(res, 500, "internalError", s.message());
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// Resources

json ObjectJson(const ObjectMeta& m, const std::string& base) {
  const std::string gen = std::to_string(m.info.generation);
  const std::string enc_b = PercentEncode(m.info.bucket);
  const std::string enc_o = PercentEncode(m.info.name);
  json j = {
      {"kind", "storage#object"},
      {"id", m.info.bucket + "/" + m.info.name + "/" + gen},
      {"selfLink", base + "/storage/v1/b/" + enc_b + "/o/" + enc_o},
      {"mediaLink", base + "/download/storage/v1/b/" + enc_b + "/o/" + enc_o +
                        "?generation=" + gen + "&alt=media"},
      {"name", m.info.name},
      {"bucket", m.info.bucket},
      {"generation", gen},
      {"metageneration", "1"},
      {"contentType", m.content_type},
      {"storageClass", "STANDARD"},
      {"size", std::to_string(m.info.size)},
      {"timeCreated", FormatMillis(m.info.updated)},
      {"updated", FormatMillis(m.info.updated)},
      {"timeStorageClassUpdated", FormatMillis(m.info.updated)},
      {"etag", Base64Encode("g" + gen)},
  };
  if (m.has_hashes) {
    j["md5Hash"] = internal::GcsMd5(m.md5);
    j["crc32c"] = internal::GcsCrc32c(m.crc32c);
  }
  return j;
}

json BucketJson(const internal::BucketMeta& m, const std::string& base) {
  return {
      {"kind", "storage#bucket"},
      {"id", m.info.name},
      {"selfLink", base + "/storage/v1/b/" + m.info.name},
      {"projectNumber", "0"},
      {"name", m.info.name},
      {"timeCreated", FormatMillis(m.info.created)},
      {"updated", FormatMillis(m.info.created)},
      {"metageneration", "1"},
      {"location", "US"},
      {"locationType", "multi-region"},
      {"storageClass", "STANDARD"},
      {"etag", "CAE="},
  };
}

// ---------------------------------------------------------------------------------------------
// Request bodies

// Wraps httplib's ContentReader so that each body is read at most once and an unread body is
// drained before the response (a keep-alive connection would otherwise parse it as a request).
class Body {
 public:
  explicit Body(const httplib::ContentReader* reader) : reader_(reader) {}
  ~Body() { Drain(); }
  Body(const Body&) = delete;
  Body& operator=(const Body&) = delete;

  // Streams the body to `sink`; stops with its error.
  Status Stream(const std::function<Status(const char*, size_t)>& sink) {
    if (reader_ == nullptr || consumed_) return Status::Ok();
    consumed_ = true;
    Status err;
    bool ok = (*reader_)([&](const char* data, size_t size) {
      err = sink(data, size);
      return err.ok();
    });
    if (!err.ok()) {
      failed_ = true;
      return err;
    }
    if (!ok) {
      failed_ = true;
      return InvalidArgument("the request body could not be read");
    }
    return Status::Ok();
  }

  Result<std::string> ReadAll(size_t limit) {
    std::string out;
    Status s = Stream([&](const char* data, size_t size) {
      if (out.size() + size > limit) return InvalidArgument("request body too large");
      out.append(data, size);
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return out;
  }

  void Drain() {
    if (reader_ == nullptr || consumed_) return;
    consumed_ = true;
    (*reader_)([](const char*, size_t) { return true; });
  }

  // True when reading stopped part-way (the connection should not be reused).
  bool failed() const { return failed_; }

 private:
  const httplib::ContentReader* reader_;
  bool consumed_ = false;
  bool failed_ = false;
};

Result<json> ParseJsonBody(Body& body) {
  auto text = body.ReadAll(kMaxJsonBody);
  if (!text.ok()) return text.status();
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("Parse Error");
  return j;
}

std::string JsonString(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

// ---------------------------------------------------------------------------------------------
// Routing

struct Route {
  enum class Api { kJson, kUpload, kDownload } api = Api::kJson;
  std::vector<std::string> segs;  // decoded segments after ".../storage/v1/"
};

// Splits the raw request target (object names may hold %2F, so req.path is not usable).
std::optional<Route> ParseRoute(const httplib::Request& req) {
  std::string_view target = req.target.empty() ? std::string_view(req.path) : req.target;
  target = target.substr(0, target.find('?'));
  Route r;
  auto strip = [&](std::string_view p) {
    if (target.substr(0, p.size()) != p) return false;
    target.remove_prefix(p.size());
    return true;
  };
  if (strip("/storage/v1/")) {
    r.api = Route::Api::kJson;
  } else if (strip("/upload/storage/v1/") || strip("/resumable/upload/storage/v1/")) {
    r.api = Route::Api::kUpload;
  } else if (strip("/download/storage/v1/")) {
    r.api = Route::Api::kDownload;
  } else {
    return std::nullopt;
  }
  size_t start = 0;
  while (start <= target.size()) {
    size_t end = target.find('/', start);
    if (end == std::string_view::npos) end = target.size();
    auto seg = DecodeSegment(target.substr(start, end - start));
    if (!seg) return std::nullopt;
    r.segs.push_back(std::move(*seg));
    start = end + 1;
  }
  return r;
}

std::string JoinSegs(const std::vector<std::string>& segs, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    if (i > from) out.push_back('/');
    out += segs[i];
  }
  return out;
}

std::string Param(const httplib::Request& req, const char* key) {
  return req.has_param(key) ? req.get_param_value(key) : std::string();
}

Result<std::optional<int64_t>> IntParam(const httplib::Request& req, const char* key) {
  if (!req.has_param(key)) return std::optional<int64_t>();
  auto v = ParseInt64(req.get_param_value(key));
  if (!v)
    return InvalidArgument(std::string("Invalid value for ") + key + ": " +
                           req.get_param_value(key));
  return std::optional<int64_t>(*v);
}

// ifGenerationMatch & co. (or ifSourceGenerationMatch & co. with source = true).
Result<Preconditions> PreconditionsFrom(const httplib::Request& req, bool source) {
  Preconditions p;
  const char* names[4] = {"ifGenerationMatch", "ifGenerationNotMatch", "ifMetagenerationMatch",
                          "ifMetagenerationNotMatch"};
  const char* src_names[4] = {"ifSourceGenerationMatch", "ifSourceGenerationNotMatch",
                              "ifSourceMetagenerationMatch", "ifSourceMetagenerationNotMatch"};
  std::optional<int64_t>* slots[4] = {&p.if_generation_match, &p.if_generation_not_match,
                                      &p.if_metageneration_match, &p.if_metageneration_not_match};
  for (int i = 0; i < 4; ++i) {
    auto v = IntParam(req, source ? src_names[i] : names[i]);
    if (!v.ok()) return v.status();
    *slots[i] = *v;
  }
  return p;
}

// Whether a list response must carry md5Hash/crc32c (computing them for files written straight
// to disk costs a read; `fields` lets clients say they do not need them).
bool ListNeedsHashes(const httplib::Request& req) {
  std::string fields = Param(req, "fields");
  if (fields.empty()) return true;
  if (fields.find("md5Hash") != std::string::npos || fields.find("crc32c") != std::string::npos) {
    return true;
  }
  if (fields.find("items(") != std::string::npos || fields.find("items/") != std::string::npos) {
    return false;
  }
  return fields.find("items") != std::string::npos;
}

// True for a single-range Range header that selects no byte of an object of `size` bytes (GCS
// answers 416; httplib would drop the connection).
bool RangeUnsatisfiable(const httplib::Request& req, size_t size) {
  std::string range = req.get_header_value("Range");
  if (range.compare(0, 6, "bytes=") != 0 || range.find(',') != std::string::npos) return false;
  std::string_view spec = std::string_view(range).substr(6);
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return false;
  if (dash == 0) {  // suffix "-n"
    auto n = ParseInt64(spec.substr(1));
    return n && *n == 0;
  }
  auto first = ParseInt64(spec.substr(0, dash));
  return first && *first >= 0 && static_cast<uint64_t>(*first) >= size;
}

// ---------------------------------------------------------------------------------------------
// Operations: what a request asks for, and the permission it needs (docs/security.md)

// In the order of kOperations.
enum class Op {
  kListBuckets,
  kInsertBucket,
  kGetBucket,
  kDeleteBucket,
  kPatchBucket,
  kStorageLayout,
  kListObjects,
  kInsertObject,
  kPutResumable,
  kCancelResumable,
  kGetObject,
  kDownload,
  kDeleteObject,
  kPatchObject,
  kCopy,
  kRewrite,
  kCompose,
};

const StorageOperation kOperations[] = {
    {"storage.buckets.list", "GET", "/storage/v1/b?project=P", "storage.buckets.list", false,
     nullptr},
    {"storage.buckets.insert", "POST", "/storage/v1/b?project=P", "storage.buckets.create", true,
     nullptr},
    {"storage.buckets.get", "GET", "/storage/v1/b/BUCKET", "storage.buckets.get", false, nullptr},
    {"storage.buckets.delete", "DELETE", "/storage/v1/b/BUCKET", "storage.buckets.delete", true,
     nullptr},
    {"storage.buckets.patch", "PATCH", "/storage/v1/b/BUCKET", "storage.buckets.update", true,
     nullptr},
    {"storage.buckets.getStorageLayout", "GET", "/storage/v1/b/BUCKET/storageLayout",
     "storage.buckets.get", false, nullptr},
    {"storage.objects.list", "GET", "/storage/v1/b/BUCKET/o", "storage.objects.list", false,
     nullptr},
    {"storage.objects.insert", "POST", "/upload/storage/v1/b/BUCKET/o?uploadType=media&name=x",
     "storage.objects.create", true, nullptr},
    {"storage.objects.insert", "PUT", "/upload/storage/v1/b/BUCKET/o?upload_id=none",
     "storage.objects.create", true, nullptr},
    {"storage.objects.insert", "DELETE", "/upload/storage/v1/b/BUCKET/o?upload_id=none",
     "storage.objects.create", true, nullptr},
    {"storage.objects.get", "GET", "/storage/v1/b/BUCKET/o/x", "storage.objects.get", false,
     nullptr},
    {"storage.objects.get", "GET", "/download/storage/v1/b/BUCKET/o/x?alt=media",
     "storage.objects.get", false, nullptr},
    {"storage.objects.delete", "DELETE", "/storage/v1/b/BUCKET/o/x", "storage.objects.delete", true,
     nullptr},
    {"storage.objects.patch", "PATCH", "/storage/v1/b/BUCKET/o/x", "storage.objects.update", true,
     nullptr},
    {"storage.objects.copy", "POST", "/storage/v1/b/BUCKET/o/x/copyTo/b/BUCKET/o/y",
     "storage.objects.create", true, "storage.objects.get"},
    {"storage.objects.rewrite", "POST", "/storage/v1/b/BUCKET/o/x/rewriteTo/b/BUCKET/o/y",
     "storage.objects.create", true, "storage.objects.get"},
    {"storage.objects.compose", "POST", "/storage/v1/b/BUCKET/o/x/compose",
     "storage.objects.create", true, "storage.objects.get"},
};

struct Classified {
  Op op;
  StorageAccess access;
  std::string source_object;  // copy/rewrite
};

// The operation a request asks for, from its method and target (the body is not read).
std::optional<Classified> Classify(const httplib::Request& req, const Route& route,
                                   std::string_view default_project) {
  const auto& s = route.segs;
  const std::string& m = req.method;
  const bool get = m == "GET" || m == "HEAD";
  auto make = [&](Op op, std::string bucket = {}, std::string object = {}) {
    Classified c{op, {}, {}};
    c.access.operation = &kOperations[static_cast<size_t>(op)];
    c.access.bucket = std::move(bucket);
    c.access.object = std::move(object);
    return std::optional<Classified>(std::move(c));
  };
  if (route.api == Route::Api::kUpload) {
    // /upload/storage/v1/b/{bucket}/o
    if (s.size() == 3 && s[0] == "b" && s[2] == "o") {
      if (m == "POST") return make(Op::kInsertObject, s[1]);
      if (m == "PUT" && req.has_param("upload_id")) return make(Op::kPutResumable, s[1]);
      if (m == "DELETE" && req.has_param("upload_id")) return make(Op::kCancelResumable, s[1]);
    }
    return std::nullopt;
  }
  if (route.api == Route::Api::kDownload) {
    // /download/storage/v1/b/{bucket}/o/{object}
    if (get && s.size() >= 4 && s[0] == "b" && s[2] == "o") {
      return make(Op::kDownload, s[1], JoinSegs(s, 3, s.size()));
    }
    return std::nullopt;
  }
  if (s.empty() || s[0] != "b") return std::nullopt;
  if (s.size() == 1 || (s.size() == 2 && s[1].empty())) {
    std::optional<Classified> c;
    if (get) c = make(Op::kListBuckets);
    if (m == "POST") c = make(Op::kInsertBucket);
    if (c) {
      c->access.project = Param(req, "project");
      if (c->access.project.empty()) c->access.project = std::string(default_project);
    }
    return c;
  }
  if (s.size() == 2) {
    if (get) return make(Op::kGetBucket, s[1]);
    if (m == "DELETE") return make(Op::kDeleteBucket, s[1]);
    if (m == "PATCH" || m == "PUT") return make(Op::kPatchBucket, s[1]);
    return std::nullopt;
  }
  if (s.size() == 3 && s[2] == "storageLayout" && get) return make(Op::kStorageLayout, s[1]);
  if (s.size() == 3 && s[2] == "o") {
    if (get) return make(Op::kListObjects, s[1]);
    if (m == "POST") return make(Op::kInsertObject, s[1]);
    return std::nullopt;
  }
  if (s.size() >= 4 && s[2] == "o") {
    const std::string& bucket = s[1];
    if (m == "POST") {
      // .../o/{src}/copyTo|rewriteTo/b/{dst bucket}/o/{dst}
      for (size_t i = 4; i + 4 < s.size(); ++i) {
        if ((s[i] == "copyTo" || s[i] == "rewriteTo") && s[i + 1] == "b" && s[i + 3] == "o") {
          auto c = make(s[i] == "rewriteTo" ? Op::kRewrite : Op::kCopy, s[i + 2],
                        JoinSegs(s, i + 4, s.size()));
          c->access.source_bucket = bucket;
          c->source_object = JoinSegs(s, 3, i);
          return c;
        }
      }
      if (s.size() >= 5 && s.back() == "compose") {
        auto c = make(Op::kCompose, bucket, JoinSegs(s, 3, s.size() - 1));
        c->access.source_bucket = bucket;
        return c;
      }
      return std::nullopt;
    }
    std::string name = JoinSegs(s, 3, s.size());
    if (get) return make(Op::kGetObject, bucket, name);
    if (m == "DELETE") return make(Op::kDeleteObject, bucket, name);
    if (m == "PATCH" || m == "PUT") return make(Op::kPatchObject, bucket, name);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// The service

class StorageService {
 public:
  StorageService(BucketStore& store, std::string default_project, StorageGate gate)
      : store_(store), default_project_(std::move(default_project)), gate_(std::move(gate)) {}

  void Handle(const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader* reader);

 private:
  void Serve(const httplib::Request& req, httplib::Response& res, Body& body, const Classified& c);

  // Buckets (of one project).
  void ListBuckets(const httplib::Request& req, httplib::Response& res, const std::string& project);
  void InsertBucket(const httplib::Request& req, httplib::Response& res, Body& body);
  void GetBucket(const httplib::Request& req, httplib::Response& res, const std::string& bucket);
  void DeleteBucket(httplib::Response& res, const std::string& bucket);

  // Objects.
  void ListObjects(const httplib::Request& req, httplib::Response& res, const std::string& bucket);
  void InsertObject(const httplib::Request& req, httplib::Response& res, Body& body,
                    const std::string& bucket);
  void InsertMedia(const httplib::Request& req, httplib::Response& res, Body& body,
                   const std::string& bucket, const Preconditions& pre);
  void InsertMultipart(const httplib::Request& req, httplib::Response& res, Body& body,
                       const std::string& bucket, const Preconditions& pre);
  void StartResumable(const httplib::Request& req, httplib::Response& res, Body& body,
                      const std::string& bucket, const Preconditions& pre);
  void PutResumable(const httplib::Request& req, httplib::Response& res, Body& body);
  void CancelResumable(const httplib::Request& req, httplib::Response& res);
  void GetObject(const httplib::Request& req, httplib::Response& res, const std::string& bucket,
                 const std::string& name, bool media);
  void DeleteObject(const httplib::Request& req, httplib::Response& res, const std::string& bucket,
                    const std::string& name);
  void PatchObject(const httplib::Request& req, httplib::Response& res, Body& body,
                   const std::string& bucket, const std::string& name);
  void CopyObject(const httplib::Request& req, httplib::Response& res, Body& body,
                  const std::string& src_bucket, const std::string& src_name,
                  const std::string& dst_bucket, const std::string& dst_name, bool rewrite);
  void ComposeObject(const httplib::Request& req, httplib::Response& res, Body& body,
                     const std::string& bucket, const std::string& dst);

  // Common checks: the bucket exists (404 otherwise) and the object name is valid (400).
  bool CheckBucket(httplib::Response& res, const std::string& bucket);
  bool CheckObjectName(httplib::Response& res, const std::string& name);
  // For reads: a name no object can have is simply not found.
  bool CheckReadName(httplib::Response& res, const std::string& bucket, const std::string& name);
  // Inserts of "dir/" placeholders (must be empty) create the directory.
  void CommitFolder(const httplib::Request& req, httplib::Response& res, const std::string& bucket,
                    const std::string& name, int64_t size, const Preconditions& pre);
  void SendCommitted(const httplib::Request& req, httplib::Response& res,
                     const Result<ObjectMeta>& meta);

  // Resumable sessions: <TempDir>/session-<id>.json (state) and session-<id>.data (bytes).
  std::string SessionPath(const std::string& id, const char* ext) const {
    return store_.TempDir() + "/session-" + id + ext;
  }
  std::shared_ptr<std::mutex> SessionLock(const std::string& id);
  void ForgetSession(const std::string& id, bool keep_state = false);
  void PruneOldSessions();

  BucketStore& store_;
  const std::string default_project_;
  const StorageGate gate_;
  std::mutex sessions_mu_;
  std::map<std::string, std::weak_ptr<std::mutex>> session_locks_;  // guarded by sessions_mu_
};

void StorageService::Handle(const httplib::Request& req, httplib::Response& res,
                            const httplib::ContentReader* reader) {
  Body body(reader);
  auto route = ParseRoute(req);
  if (!route) {
    SendError(res, 400, "invalid", "Invalid request path: " + req.path);
    return;
  }
  auto c = Classify(req, *route, default_project_);
  if (!c) {
    SendError(res, 404, "notFound", "Not Found: " + req.method + " " + req.path);
    return;
  }
  auto run = [&] {
    try {
      Serve(req, res, body, *c);
    } catch (const std::exception& e) {
      // nlohmann or the standard library on unexpected input; never let it reach httplib.
      SendError(res, 500, "internalError", std::string("internal error: ") + e.what());
    }
  };
  if (gate_) {
    gate_(req, res, c->access, run);
  } else {
    run();
  }
}

void StorageService::Serve(const httplib::Request& req, httplib::Response& res, Body& body,
                           const Classified& c) {
  const StorageAccess& a = c.access;
  switch (c.op) {
    case Op::kListBuckets:
      return ListBuckets(req, res, a.project);
    case Op::kInsertBucket:
      return InsertBucket(req, res, body);
    case Op::kGetBucket:
    case Op::kPatchBucket:
      return GetBucket(req, res, a.bucket);
    case Op::kDeleteBucket:
      return DeleteBucket(res, a.bucket);
    case Op::kStorageLayout:
      // gcloud storage mv/rm ask whether the bucket has a hierarchical namespace.
      if (!CheckBucket(res, a.bucket)) return;
      return SendJson(res, 200,
                      json{{"kind", "storage#storageLayout"},
                           {"bucket", a.bucket},
                           {"location", "US"},
                           {"locationType", "multi-region"},
                           {"hierarchicalNamespace", {{"enabled", false}}}});
    case Op::kListObjects:
      return ListObjects(req, res, a.bucket);
    case Op::kInsertObject:
      return InsertObject(req, res, body, a.bucket);
    case Op::kPutResumable:
      return PutResumable(req, res, body);
    case Op::kCancelResumable:
      return CancelResumable(req, res);
    case Op::kGetObject:
      return GetObject(req, res, a.bucket, a.object, Param(req, "alt") == "media");
    case Op::kDownload:
      return GetObject(req, res, a.bucket, a.object, /*media=*/true);
    case Op::kDeleteObject:
      return DeleteObject(req, res, a.bucket, a.object);
    case Op::kPatchObject:
      return PatchObject(req, res, body, a.bucket, a.object);
    case Op::kCopy:
    case Op::kRewrite:
      return CopyObject(req, res, body, a.source_bucket, c.source_object, a.bucket, a.object,
                        c.op == Op::kRewrite);
    case Op::kCompose:
      return ComposeObject(req, res, body, a.bucket, a.object);
  }
}

bool StorageService::CheckBucket(httplib::Response& res, const std::string& bucket) {
  if (Status s = ValidateBucketName(bucket); !s.ok()) {
    SendError(res, 400, "invalid", "Invalid bucket name: '" + bucket + "'");
    return false;
  }
  if (!store_.BucketExists(bucket)) {
    SendError(res, 404, "notFound", "The specified bucket does not exist.");
    return false;
  }
  return true;
}

bool StorageService::CheckObjectName(httplib::Response& res, const std::string& name) {
  if (name.empty()) {
    SendError(res, 400, "required", "Required");
    return false;
  }
  if (internal::IsFolderName(name)) return true;
  if (Status s = ValidateObjectName(name); !s.ok()) {
    SendError(res, 400, "invalid", "The object name is invalid: " + s.message());
    return false;
  }
  return true;
}

bool StorageService::CheckReadName(httplib::Response& res, const std::string& bucket,
                                   const std::string& name) {
  if (ValidateObjectName(name).ok() || internal::IsFolderName(name)) return true;
  SendError(res, 404, "notFound", "No such object: " + bucket + "/" + name);
  return false;
}

void StorageService::CommitFolder(const httplib::Request& req, httplib::Response& res,
                                  const std::string& bucket, const std::string& name, int64_t size,
                                  const Preconditions& pre) {
  if (size != 0) {
    return SendError(res, 400, "invalid",
                     "The object name is invalid: \"" + name + "\" ends with '/' and is not empty");
  }
  SendCommitted(req, res, internal::MakeFolder(store_, bucket, name, pre));
}

void StorageService::SendCommitted(const httplib::Request& req, httplib::Response& res,
                                   const Result<ObjectMeta>& meta) {
  if (!meta.ok()) return SendStatus(res, meta.status());
  SendJson(res, 200, ObjectJson(*meta, BaseUrl(req)));
}

// --- Buckets ---------------------------------------------------------------------------------

void StorageService::ListBuckets(const httplib::Request& req, httplib::Response& res,
                                 const std::string& project) {
  auto buckets = store_.ListBuckets();
  if (!buckets.ok()) return SendStatus(res, buckets.status());
  const std::string prefix = Param(req, "prefix");
  const std::string token = Param(req, "pageToken");
  auto max = IntParam(req, "maxResults");
  if (!max.ok()) return SendStatus(res, max.status());
  int64_t limit = max->value_or(1000);
  if (limit <= 0 || limit > 1000) limit = 1000;
  json items = json::array();
  std::string next;
  for (const BucketInfo& b : *buckets) {
    // GCS lists the buckets of one project; a directory made by hand is the default project's.
    if ((b.project.empty() ? default_project_ : b.project) != project) continue;
    if (!StartsWith(b.name, prefix) || b.name <= token) continue;
    if (static_cast<int64_t>(items.size()) == limit) {
      next = items.back()["name"].get<std::string>();
      break;
    }
    auto meta = internal::GetBucketMeta(store_, b.name);
    if (meta.ok()) items.push_back(BucketJson(*meta, BaseUrl(req)));
  }
  json out = {{"kind", "storage#buckets"}};
  if (!items.empty()) out["items"] = std::move(items);
  if (!next.empty()) out["nextPageToken"] = next;
  SendJson(res, 200, out);
}

void StorageService::InsertBucket(const httplib::Request& req, httplib::Response& res, Body& body) {
  auto j = ParseJsonBody(body);
  if (!j.ok()) return SendStatus(res, j.status());
  std::string name = JsonString(*j, "name");
  if (name.empty()) return SendError(res, 400, "required", "Required");
  if (Status s = ValidateBucketName(name); !s.ok()) {
    return SendError(res, 400, "invalid", "Invalid bucket name: '" + name + "'");
  }
  std::string project = Param(req, "project");
  if (project.empty()) project = default_project_;
  auto meta = internal::CreateBucketMeta(store_, name, project);
  if (!meta.ok()) {
    if (meta.status().code() == StatusCode::kAlreadyExists) {
      return SendError(
          res, 409, "conflict",
          "Your previous request to create the named bucket succeeded and you already own it.");
    }
    return SendStatus(res, meta.status());
  }
  SendJson(res, 200, BucketJson(*meta, BaseUrl(req)));
}

void StorageService::GetBucket(const httplib::Request& req, httplib::Response& res,
                               const std::string& bucket) {
  if (!CheckBucket(res, bucket)) return;
  auto meta = internal::GetBucketMeta(store_, bucket);
  if (!meta.ok()) return SendStatus(res, meta.status());
  SendJson(res, 200, BucketJson(*meta, BaseUrl(req)));
}

void StorageService::DeleteBucket(httplib::Response& res, const std::string& bucket) {
  if (!CheckBucket(res, bucket)) return;
  Status s = internal::DeleteBucket(store_, bucket);
  if (s.code() == StatusCode::kFailedPrecondition) {
    return SendError(res, 409, "conflict", s.message());
  }
  if (!s.ok()) return SendStatus(res, s);
  res.status = 204;
}

// --- Objects: list, get, delete, patch ---------------------------------------------------------

void StorageService::ListObjects(const httplib::Request& req, httplib::Response& res,
                                 const std::string& bucket) {
  if (!CheckBucket(res, bucket)) return;
  auto max = IntParam(req, "maxResults");
  if (!max.ok()) return SendStatus(res, max.status());
  const std::string prefix = Param(req, "prefix");
  auto page =
      internal::ListPageOf(store_, bucket, prefix, Param(req, "delimiter"), Param(req, "pageToken"),
                           static_cast<int>(std::clamp<int64_t>(max->value_or(1000), 0, 1000)));
  if (!page.ok()) return SendStatus(res, page.status());
  const bool hashes = ListNeedsHashes(req);
  const std::string base = BaseUrl(req);
  json items = json::array();
  for (const std::string& name : page->names) {
    auto meta = internal::StatObjectMeta(store_, bucket, name, hashes);
    if (meta.ok()) items.push_back(ObjectJson(*meta, base));  // else: deleted meanwhile
  }
  json out = {{"kind", "storage#objects"}};
  if (!items.empty()) out["items"] = std::move(items);
  if (!page->prefixes.empty()) out["prefixes"] = page->prefixes;
  if (!page->next_page_token.empty()) out["nextPageToken"] = page->next_page_token;
  SendJson(res, 200, out);
}

void StorageService::GetObject(const httplib::Request& req, httplib::Response& res,
                               const std::string& bucket, const std::string& name, bool media) {
  if (!CheckBucket(res, bucket) || !CheckReadName(res, bucket, name)) return;
  auto pre = PreconditionsFrom(req, false);
  if (!pre.ok()) return SendStatus(res, pre.status());
  auto generation = IntParam(req, "generation");
  if (!generation.ok()) return SendStatus(res, generation.status());
  // A download reports checksums only when they are already known (no extra read of the file).
  auto meta = internal::IsFolderName(name)
                  ? internal::StatFolder(store_, bucket, name)
                  : internal::StatObjectMeta(store_, bucket, name, /*want_hashes=*/!media);
  if (!meta.ok()) return SendStatus(res, meta.status());
  if (*generation && **generation != meta->info.generation) {
    return SendError(res, 404, "notFound", "No such object: " + bucket + "/" + name);
  }
  if (Status s = internal::CheckPreconditions(*meta, *pre); !s.ok()) return SendStatus(res, s);
  if (!media) return SendJson(res, 200, ObjectJson(*meta, BaseUrl(req)));

  const auto size = static_cast<size_t>(meta->info.size);
  res.set_header("X-Goog-Generation", std::to_string(meta->info.generation));
  res.set_header("X-Goog-Metageneration", "1");
  res.set_header("X-Goog-Stored-Content-Length", std::to_string(size));
  res.set_header("X-Goog-Stored-Content-Encoding", "identity");
  res.set_header("X-Goog-Storage-Class", "STANDARD");
  res.set_header("ETag", "\"" + Base64Encode("g" + std::to_string(meta->info.generation)) + "\"");
  if (meta->has_hashes) {
    res.set_header("X-Goog-Hash", "crc32c=" + internal::GcsCrc32c(meta->crc32c) +
                                      ",md5=" + internal::GcsMd5(meta->md5));
  }
  res.set_header("Accept-Ranges", "bytes");
  // The bytes are the uploader's: a browser opening an HTML or SVG object from the daemon's
  // origin (the console's link) must not run its scripts there, where the console's session
  // cookie works (docs/security.md "The console").
  res.set_header("Content-Security-Policy", "sandbox; default-src 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (RangeUnsatisfiable(req, size)) {
    // Not applied to the error body either (httplib slices every body by the request's ranges).
    const_cast<httplib::Request&>(req).ranges.clear();
    res.set_header("Content-Range", "bytes */" + std::to_string(size));
    return SendError(res, 416, "requestedRangeNotSatisfiable",
                     "The requested range cannot be satisfied.");
  }
  if (size == 0) {
    res.status = 200;
    res.set_content("", meta->content_type);
    return;
  }
  if (req.ranges.size() > 1) {
    // Several ranges: the whole object with 200, as GCS answers (it serves single ranges only;
    // RFC 9110 §14.2 lets a server ignore Range). httplib would build multipart/byteranges
    // from the provider and get it wrong. The Request is httplib's own non-const object.
    const_cast<httplib::Request&>(req).ranges.clear();
    res.status = 200;
  }
  auto path = internal::ObjectPath(store_, bucket, name);
  if (!path.ok()) return SendStatus(res, path.status());
  int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SendError(res, 404, "notFound", "No such object: " + bucket + "/" + name);
  auto file = std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  // httplib applies a Range header itself (206 + Content-Range), asking the provider for the
  // requested window only.
  res.set_content_provider(
      size, meta->content_type,
      [file, size](size_t offset, size_t length, httplib::DataSink& sink) {
        char buf[kIoChunk];
        size_t want = std::min({length, sizeof buf, size - std::min(offset, size)});
        if (want == 0) return false;
        ssize_t n = ::pread(*file, buf, want, static_cast<off_t>(offset));
        if (n <= 0) return false;  // the file shrank: abort the response
        return sink.write(buf, static_cast<size_t>(n));
      });
}

void StorageService::DeleteObject(const httplib::Request& req, httplib::Response& res,
                                  const std::string& bucket, const std::string& name) {
  if (!CheckBucket(res, bucket) || !CheckReadName(res, bucket, name)) return;
  auto pre = PreconditionsFrom(req, false);
  if (!pre.ok()) return SendStatus(res, pre.status());
  // Without versioning, deleting a named generation is deleting it only while it is current.
  auto generation = IntParam(req, "generation");
  if (!generation.ok()) return SendStatus(res, generation.status());
  if (*generation) {
    auto cur = internal::IsFolderName(name) ? internal::StatFolder(store_, bucket, name)
                                            : internal::StatObjectMeta(store_, bucket, name, false);
    if (!cur.ok() || cur->info.generation != **generation) {
      return SendError(res, 404, "notFound", "No such object: " + bucket + "/" + name);
    }
    if (!pre->if_generation_match) pre->if_generation_match = **generation;
  }
  Status s = internal::IsFolderName(name) ? internal::RemoveFolder(store_, bucket, name, *pre)
                                          : internal::DeleteObjectIf(store_, bucket, name, *pre);
  if (!s.ok()) return SendStatus(res, s);
  res.status = 204;
}

void StorageService::PatchObject(const httplib::Request& req, httplib::Response& res, Body& body,
                                 const std::string& bucket, const std::string& name) {
  if (!CheckBucket(res, bucket) || !CheckReadName(res, bucket, name)) return;
  auto pre = PreconditionsFrom(req, false);
  if (!pre.ok()) return SendStatus(res, pre.status());
  auto j = ParseJsonBody(body);
  if (!j.ok()) return SendStatus(res, j.status());
  auto current = internal::IsFolderName(name)
                     ? internal::StatFolder(store_, bucket, name)
                     : internal::StatObjectMeta(store_, bucket, name, true);
  if (!current.ok()) return SendStatus(res, current.status());
  std::string type = JsonString(*j, "contentType");
  if (type.empty() || internal::IsFolderName(name)) {
    if (Status s = internal::CheckPreconditions(*current, *pre); !s.ok()) {
      return SendStatus(res, s);
    }
    return SendJson(res, 200, ObjectJson(*current, BaseUrl(req)));
  }
  SendCommitted(req, res, internal::SetContentType(store_, bucket, name, type, *pre));
}

// --- Objects: insert ---------------------------------------------------------------------------

void StorageService::InsertObject(const httplib::Request& req, httplib::Response& res, Body& body,
                                  const std::string& bucket) {
  if (!CheckBucket(res, bucket)) return;
  auto pre = PreconditionsFrom(req, false);
  if (!pre.ok()) return SendStatus(res, pre.status());
  const std::string type = Param(req, "uploadType");
  if (type == "media") return InsertMedia(req, res, body, bucket, *pre);
  if (type == "multipart") return InsertMultipart(req, res, body, bucket, *pre);
  if (type == "resumable") return StartResumable(req, res, body, bucket, *pre);
  if (!type.empty()) {
    return SendError(res, 400, "invalid", "Invalid upload type: " + type);
  }
  // objects.insert without media: the body is the metadata of an empty object.
  auto j = ParseJsonBody(body);
  if (!j.ok()) return SendStatus(res, j.status());
  std::string name = Param(req, "name");
  if (name.empty()) name = JsonString(*j, "name");
  if (!CheckObjectName(res, name)) return;
  if (internal::IsFolderName(name)) return CommitFolder(req, res, bucket, name, 0, *pre);
  auto file = internal::UploadFile::Create(store_);
  if (!file.ok()) return SendStatus(res, file.status());
  auto digest = file->Finish();
  if (!digest.ok()) return SendStatus(res, digest.status());
  auto meta = internal::CommitFile(store_, bucket, name, file->path(),
                                   JsonString(*j, "contentType"), *digest, *pre);
  if (meta.ok()) file->Release();
  SendCommitted(req, res, meta);
}

void StorageService::InsertMedia(const httplib::Request& req, httplib::Response& res, Body& body,
                                 const std::string& bucket, const Preconditions& pre) {
  const std::string name = Param(req, "name");
  if (!CheckObjectName(res, name)) return;
  if (internal::IsFolderName(name)) {
    int64_t size = 0;
    Status s = body.Stream([&](const char*, size_t n) {
      size += static_cast<int64_t>(n);
      return Status::Ok();
    });
    if (!s.ok()) return SendStatus(res, s);
    return CommitFolder(req, res, bucket, name, size, pre);
  }
  if (auto path = internal::ObjectPath(store_, bucket, name); !path.ok()) {
    return SendStatus(res, path.status());
  }
  // Fail before receiving the bytes when the precondition already fails.
  if (!pre.empty()) {
    auto current = internal::StatObjectMeta(store_, bucket, name, false);
    std::optional<ObjectMeta> cur;
    if (current.ok()) cur = *current;
    if (Status s = internal::CheckPreconditions(cur, pre); !s.ok()) return SendStatus(res, s);
  }
  auto file = internal::UploadFile::Create(store_);
  if (!file.ok()) return SendStatus(res, file.status());
  Status s = body.Stream([&](const char* data, size_t size) { return file->Append(data, size); });
  if (!s.ok()) return SendStatus(res, s);
  auto digest = file->Finish();
  if (!digest.ok()) return SendStatus(res, digest.status());
  std::string content_type = req.get_header_value("Content-Type");
  auto meta = internal::CommitFile(store_, bucket, name, file->path(), content_type, *digest, pre);
  if (meta.ok()) file->Release();
  SendCommitted(req, res, meta);
}

void StorageService::InsertMultipart(const httplib::Request& req, httplib::Response& res,
                                     Body& body, const std::string& bucket,
                                     const Preconditions& pre) {
  auto boundary = internal::MultipartBoundary(req.get_header_value("Content-Type"));
  if (!boundary.ok()) return SendStatus(res, boundary.status());
  auto file = internal::UploadFile::Create(store_);
  if (!file.ok()) return SendStatus(res, file.status());
  std::string metadata;
  std::string media_type;
  internal::MultipartParser parser(
      *boundary,
      [&](size_t part, const internal::MultipartParser::Headers& headers) -> Status {
        if (part > 1) return InvalidArgument("multipart upload has more than two parts");
        if (part == 1) {
          if (auto it = headers.find("content-type"); it != headers.end()) media_type = it->second;
          if (auto it = headers.find("content-transfer-encoding");
              it != headers.end() && it->second != "binary" && it->second != "8bit" &&
              it->second != "7bit") {
            return InvalidArgument("unsupported Content-Transfer-Encoding: " + it->second);
          }
        }
        return Status::Ok();
      },
      [&](size_t part, const char* data, size_t size) -> Status {
        if (part == 0) {
          if (metadata.size() + size > kMaxJsonBody) return InvalidArgument("metadata too large");
          metadata.append(data, size);
          return Status::Ok();
        }
        return file->Append(data, size);
      });
  Status s = body.Stream([&](const char* data, size_t size) { return parser.Feed(data, size); });
  if (s.ok()) s = parser.Finish();
  if (s.ok() && parser.parts() != 2) {
    s = InvalidArgument("multipart upload needs a metadata part and a media part");
  }
  if (!s.ok()) return SendStatus(res, s);
  json j = json::object();
  if (metadata.find_first_not_of(" \t\r\n") != std::string::npos) {
    j = json::parse(metadata, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return SendError(res, 400, "parseError", "Parse Error");
  }
  std::string name = JsonString(j, "name");
  if (name.empty()) name = Param(req, "name");
  if (!CheckObjectName(res, name)) return;
  std::string content_type = JsonString(j, "contentType");
  if (content_type.empty()) content_type = media_type;
  auto digest = file->Finish();
  if (!digest.ok()) return SendStatus(res, digest.status());
  if (internal::IsFolderName(name)) return CommitFolder(req, res, bucket, name, digest->size, pre);
  // Clients may send the expected checksums; a mismatch means the bytes were damaged.
  if (std::string md5 = JsonString(j, "md5Hash");
      !md5.empty() && md5 != internal::GcsMd5(digest->md5)) {
    return SendError(res, 400, "invalid",
                     "Provided MD5 hash \"" + md5 + "\" doesn't match calculated MD5 hash \"" +
                         internal::GcsMd5(digest->md5) + "\".");
  }
  if (std::string crc = JsonString(j, "crc32c");
      !crc.empty() && crc != internal::GcsCrc32c(digest->crc32c)) {
    return SendError(res, 400, "invalid",
                     "Provided CRC32C \"" + crc + "\" doesn't match calculated CRC32C \"" +
                         internal::GcsCrc32c(digest->crc32c) + "\".");
  }
  auto meta = internal::CommitFile(store_, bucket, name, file->path(), content_type, *digest, pre);
  if (meta.ok()) file->Release();
  SendCommitted(req, res, meta);
}

// --- Objects: resumable uploads ----------------------------------------------------------------

std::shared_ptr<std::mutex> StorageService::SessionLock(const std::string& id) {
  std::lock_guard<std::mutex> lock(sessions_mu_);
  for (auto it = session_locks_.begin(); it != session_locks_.end();) {
    it = it->second.expired() ? session_locks_.erase(it) : std::next(it);
  }
  auto& weak = session_locks_[id];
  auto mu = weak.lock();
  if (!mu) {
    mu = std::make_shared<std::mutex>();
    weak = mu;
  }
  return mu;
}

void StorageService::ForgetSession(const std::string& id, bool keep_state) {
  ::unlink(SessionPath(id, ".data").c_str());
  if (!keep_state) ::unlink(SessionPath(id, ".json").c_str());
}

void StorageService::PruneOldSessions() {
  DIR* d = ::opendir(store_.TempDir().c_str());
  if (d == nullptr) return;
  const Timestamp cutoff = NowMicros() - kSessionMaxAge;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!StartsWith(name, "session-") && !StartsWith(name, "upload-")) continue;
    std::string path = store_.TempDir() + "/" + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 &&
        static_cast<int64_t>(st.st_mtim.tv_sec) * kMicrosPerSecond < cutoff) {
      ::unlink(path.c_str());
    }
  }
  ::closedir(d);
}

void StorageService::StartResumable(const httplib::Request& req, httplib::Response& res, Body& body,
                                    const std::string& bucket, const Preconditions& pre) {
  auto j = ParseJsonBody(body);
  if (!j.ok()) return SendStatus(res, j.status());
  std::string name = JsonString(*j, "name");
  if (name.empty()) name = Param(req, "name");
  if (!CheckObjectName(res, name)) return;
  const bool folder = internal::IsFolderName(name);
  if (auto path =
          internal::ObjectPath(store_, bucket, folder ? name.substr(0, name.size() - 1) : name);
      !path.ok()) {
    return SendStatus(res, path.status());
  }
  if (!pre.empty()) {
    auto current = folder ? internal::StatFolder(store_, bucket, name)
                          : internal::StatObjectMeta(store_, bucket, name, false);
    std::optional<ObjectMeta> cur;
    if (current.ok()) cur = *current;
    if (Status s = internal::CheckPreconditions(cur, pre); !s.ok()) return SendStatus(res, s);
  }
  std::string content_type = JsonString(*j, "contentType");
  if (content_type.empty()) content_type = req.get_header_value("X-Upload-Content-Type");
  PruneOldSessions();
  if (Status s = MakeDirs(store_.TempDir()); !s.ok()) return SendStatus(res, s);
  const std::string id = RandomHex(16);
  json state = {{"bucket", bucket}, {"name", name}, {"contentType", content_type}};
  if (pre.if_generation_match) state["ifGenerationMatch"] = *pre.if_generation_match;
  if (pre.if_generation_not_match) state["ifGenerationNotMatch"] = *pre.if_generation_not_match;
  if (pre.if_metageneration_match) state["ifMetagenerationMatch"] = *pre.if_metageneration_match;
  if (pre.if_metageneration_not_match) {
    state["ifMetagenerationNotMatch"] = *pre.if_metageneration_not_match;
  }
  if (auto len = ParseInt64(req.get_header_value("X-Upload-Content-Length")); len && *len >= 0) {
    state["expectedSize"] = *len;
  }
  int fd = ::open(SessionPath(id, ".data").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return SendStatus(res, Internal("cannot create an upload session file"));
  ::close(fd);
  if (Status s = WriteFileAtomic(SessionPath(id, ".json"), Dump(state)); !s.ok()) {
    ForgetSession(id);
    return SendStatus(res, s);
  }
  res.status = 200;
  res.set_header("Location", BaseUrl(req) + "/upload/storage/v1/b/" + PercentEncode(bucket) +
                                 "/o?uploadType=resumable&name=" + PercentEncode(name) +
                                 "&upload_id=" + id);
  res.set_header("X-GUploader-UploadID", id);
  res.set_content("", "text/plain");
}

void StorageService::PutResumable(const httplib::Request& req, httplib::Response& res, Body& body) {
  const std::string id = Param(req, "upload_id");
  if (id.size() != 32 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return SendError(res, 404, "notFound", "No such upload session: " + id);
  }
  auto lock_mu = SessionLock(id);
  std::lock_guard<std::mutex> lock(*lock_mu);
  auto text = ReadFile(SessionPath(id, ".json"));
  if (!text.ok()) return SendError(res, 404, "notFound", "No such upload session: " + id);
  json state = json::parse(*text, nullptr, false);
  if (state.is_discarded() || !state.is_object()) {
    return SendError(res, 404, "notFound", "No such upload session: " + id);
  }
  const std::string bucket = JsonString(state, "bucket");
  const std::string name = JsonString(state, "name");
  if (state.value("done", false)) {
    // A retry after completion: answer with the object as it was stored.
    auto cur = internal::IsFolderName(name) ? internal::StatFolder(store_, bucket, name)
                                            : internal::StatObjectMeta(store_, bucket, name, true);
    if (cur.ok() && (internal::IsFolderName(name) ||
                     cur->info.generation == state.value("generation", int64_t{-1}))) {
      return SendJson(res, 200, ObjectJson(*cur, BaseUrl(req)));
    }
    return SendError(res, 404, "notFound", "No such upload session: " + id);
  }
  const std::string data_path = SessionPath(id, ".data");
  struct stat st {};
  if (::stat(data_path.c_str(), &st) != 0) {
    return SendError(res, 404, "notFound", "No such upload session: " + id);
  }
  int64_t have = static_cast<int64_t>(st.st_size);

  // Content-Range: "bytes a-b/total", "bytes a-b/*", "bytes */total" or "bytes */*".
  std::optional<int64_t> first;
  std::optional<int64_t> last;
  std::optional<int64_t> total;
  const std::string range = req.get_header_value("Content-Range");
  if (!range.empty()) {
    auto parsed = internal::ParseContentRange(range);
    if (!parsed.ok()) return SendError(res, 400, "invalid", parsed.status().message());
    first = parsed->first;
    last = parsed->last;
    total = parsed->total;
  } else {
    // No Content-Range: the body is the whole object.
    first = 0;
    if (::truncate(data_path.c_str(), 0) != 0) return SendStatus(res, Internal("truncate failed"));
    have = 0;
  }

  if (first) {
    if (*first > have) {
      return SendError(res, 400, "invalid",
                       "Upload chunk starts at byte " + std::to_string(*first) + " but " +
                           std::to_string(have) + " bytes have been received");
    }
    int fd = ::open(data_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return SendStatus(res, Internal("cannot open the upload session file"));
    // Bytes the client resends (it did not see our last answer) are skipped.
    int64_t skip = have - *first;
    int64_t received = 0;
    Status s = body.Stream([&](const char* data, size_t size) -> Status {
      received += static_cast<int64_t>(size);
      if (skip > 0) {
        size_t drop = static_cast<size_t>(std::min<int64_t>(skip, static_cast<int64_t>(size)));
        skip -= static_cast<int64_t>(drop);
        data += drop;
        size -= drop;
      }
      while (size > 0) {
        ssize_t n = ::write(fd, data, size);
        if (n < 0) {
          if (errno == EINTR) continue;
          return Internal("cannot write the upload session file");
        }
        data += n;
        size -= static_cast<size_t>(n);
      }
      return Status::Ok();
    });
    ::close(fd);
    if (s.ok() && last && received != *last - *first + 1) {
      s = InvalidArgument("Content-Range covers " + std::to_string(*last - *first + 1) +
                          " bytes but the body has " + std::to_string(received));
    }
    if (!s.ok()) {
      // Keep only what was acknowledged before this request.
      if (::truncate(data_path.c_str(), have) != 0) {
        TY_LOG_WARN("storage", "cannot truncate upload session {}", id);
      }
      return SendStatus(res, s);
    }
    if (::stat(data_path.c_str(), &st) != 0) return SendStatus(res, Internal("stat failed"));
    have = static_cast<int64_t>(st.st_size);
    if (range.empty()) total = have;
  }

  if (total && have > *total) {
    return SendError(res, 400, "invalid", "Upload is larger than its declared size");
  }
  if (!total || have < *total) {
    res.status = 308;
    if (have > 0) res.set_header("Range", "bytes=0-" + std::to_string(have - 1));
    res.set_content("", "text/plain");
    return;
  }

  Preconditions pre;
  if (state.contains("ifGenerationMatch")) pre.if_generation_match = state["ifGenerationMatch"];
  if (state.contains("ifGenerationNotMatch")) {
    pre.if_generation_not_match = state["ifGenerationNotMatch"];
  }
  if (state.contains("ifMetagenerationMatch")) {
    pre.if_metageneration_match = state["ifMetagenerationMatch"];
  }
  if (state.contains("ifMetagenerationNotMatch")) {
    pre.if_metageneration_not_match = state["ifMetagenerationNotMatch"];
  }
  auto digest = internal::DigestFile(data_path);
  if (!digest.ok()) return SendStatus(res, digest.status());
  auto meta = internal::IsFolderName(name)
                  ? (digest->size == 0 ? internal::MakeFolder(store_, bucket, name, pre)
                                       : Result<ObjectMeta>(InvalidArgument(
                                             "\"" + name + "\" ends with '/' and is not empty")))
                  : internal::CommitFile(store_, bucket, name, data_path,
                                         JsonString(state, "contentType"), *digest, pre);
  if (!meta.ok()) {
    if (meta.status().code() == StatusCode::kFailedPrecondition) ForgetSession(id);
    return SendStatus(res, meta.status());
  }
  ForgetSession(id, /*keep_state=*/true);
  state["done"] = true;
  state["generation"] = meta->info.generation;
  if (Status s = WriteFileAtomic(SessionPath(id, ".json"), Dump(state)); !s.ok()) {
    TY_LOG_WARN("storage", "cannot record completion of upload session {}: {}", id, s.message());
  }
  SendJson(res, 200, ObjectJson(*meta, BaseUrl(req)));
}

void StorageService::CancelResumable(const httplib::Request& req, httplib::Response& res) {
  const std::string id = Param(req, "upload_id");
  if (id.size() != 32 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return SendError(res, 404, "notFound", "No such upload session: " + id);
  }
  auto lock_mu = SessionLock(id);
  std::lock_guard<std::mutex> lock(*lock_mu);
  struct stat st {};
  if (::stat(SessionPath(id, ".json").c_str(), &st) != 0) {
    return SendError(res, 404, "notFound", "No such upload session: " + id);
  }
  ForgetSession(id);
  res.status = 499;
  res.set_content("", "text/plain");
}

// --- Objects: copy, rewrite, compose ------------------------------------------------------------

void StorageService::CopyObject(const httplib::Request& req, httplib::Response& res, Body& body,
                                const std::string& src_bucket, const std::string& src_name,
                                const std::string& dst_bucket, const std::string& dst_name,
                                bool rewrite) {
  if (!CheckBucket(res, src_bucket) || !CheckReadName(res, src_bucket, src_name)) return;
  if (!CheckBucket(res, dst_bucket) || !CheckObjectName(res, dst_name)) return;
  auto j = ParseJsonBody(body);
  if (!j.ok()) return SendStatus(res, j.status());
  auto dst_pre = PreconditionsFrom(req, false);
  if (!dst_pre.ok()) return SendStatus(res, dst_pre.status());
  auto src_pre = PreconditionsFrom(req, true);
  if (!src_pre.ok()) return SendStatus(res, src_pre.status());
  auto src_gen = IntParam(req, "sourceGeneration");
  if (!src_gen.ok()) return SendStatus(res, src_gen.status());
  if (*src_gen) {
    auto src = store_.StatObject(src_bucket, src_name);
    if (!src.ok()) return SendStatus(res, src.status());
    if (src->generation != **src_gen) {
      return SendError(res, 404, "notFound", "No such object: " + src_bucket + "/" + src_name);
    }
  }
  auto meta = internal::CopyObject(store_, src_bucket, src_name, dst_bucket, dst_name,
                                   JsonString(*j, "contentType"), *src_pre, *dst_pre);
  if (!meta.ok()) return SendStatus(res, meta.status());
  json resource = ObjectJson(*meta, BaseUrl(req));
  if (!rewrite) return SendJson(res, 200, resource);
  const std::string size = std::to_string(meta->info.size);
  SendJson(res, 200,
           json{{"kind", "storage#rewriteResponse"},
                {"totalBytesRewritten", size},
                {"objectSize", size},
                {"done", true},
                {"resource", resource}});
}

void StorageService::ComposeObject(const httplib::Request& req, httplib::Response& res, Body& body,
                                   const std::string& bucket, const std::string& dst) {
  if (!CheckBucket(res, bucket) || !CheckObjectName(res, dst)) return;
  auto pre = PreconditionsFrom(req, false);
  if (!pre.ok()) return SendStatus(res, pre.status());
  auto j = ParseJsonBody(body);
  if (!j.ok()) return SendStatus(res, j.status());
  auto it = j->find("sourceObjects");
  if (it == j->end() || !it->is_array()) return SendError(res, 400, "required", "Required");
  std::vector<std::string> sources;
  for (const json& src : *it) {
    if (!src.is_object()) return SendError(res, 400, "invalid", "Invalid source object");
    std::string name = JsonString(src, "name");
    if (!CheckReadName(res, bucket, name)) return;
    auto cur = store_.StatObject(bucket, name);
    if (!cur.ok()) return SendStatus(res, cur.status());
    auto gen_of = [](const json& v) -> std::optional<int64_t> {
      if (v.is_number_integer()) return v.get<int64_t>();
      if (v.is_string()) return ParseInt64(v.get<std::string>());
      return std::nullopt;
    };
    if (auto g = src.find("generation"); g != src.end() && gen_of(*g) != cur->generation) {
      return SendError(res, 404, "notFound", "No such object: " + bucket + "/" + name);
    }
    if (auto op = src.find("objectPreconditions"); op != src.end() && op->is_object()) {
      if (auto m = op->find("ifGenerationMatch"); m != op->end() && gen_of(*m) != cur->generation) {
        return SendError(res, 412, "conditionNotMet",
                         "At least one of the pre-conditions you specified did not hold.");
      }
    }
    sources.push_back(std::move(name));
  }
  std::string content_type;
  if (auto d = j->find("destination"); d != j->end() && d->is_object()) {
    content_type = JsonString(*d, "contentType");
  }
  SendCommitted(req, res,
                internal::ComposeObjects(store_, bucket, sources, dst, content_type, *pre));
}

}  // namespace

std::span<const StorageOperation> StorageOperations() { return kOperations; }

std::optional<StorageAccess> ClassifyStorageRequest(const httplib::Request& req,
                                                    std::string_view default_project) {
  auto route = ParseRoute(req);
  if (!route) return std::nullopt;
  auto c = Classify(req, *route, default_project);
  if (!c) return std::nullopt;
  return c->access;
}

void WriteStorageError(httplib::Response& res, int code, const std::string& reason,
                       const std::string& message) {
  SendError(res, code, reason, message);
}

void RegisterStorageRoutes(httplib::Server& server, BucketStore& store, std::string default_project,
                           StorageGate gate) {
  auto service =
      std::make_shared<StorageService>(store, std::move(default_project), std::move(gate));
  auto plain = [service](const httplib::Request& req, httplib::Response& res) {
    service->Handle(req, res, nullptr);
  };
  auto streamed = [service](const httplib::Request& req, httplib::Response& res,
                            const httplib::ContentReader& reader) {
    service->Handle(req, res, &reader);
  };
  const std::string json_api = R"(/storage/v1/.*)";
  const std::string upload_api = R"(/(resumable/)?upload/storage/v1/.*)";
  server.Get(json_api, plain);
  server.Get(R"(/download/storage/v1/.*)", plain);
  server.Post(json_api, streamed);
  server.Post(upload_api, streamed);
  server.Put(json_api, streamed);
  server.Put(upload_api, streamed);
  server.Patch(json_api, streamed);
  server.Delete(json_api, plain);
  server.Delete(upload_api, plain);
}

}  // namespace trainyard::storage
