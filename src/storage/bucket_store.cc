#include "trainyard/storage/bucket_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "object_meta.h"
#include "trainyard/core/util.h"

namespace trainyard::storage {
namespace {

namespace fs = std::filesystem;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

Result<Location> ParseLocalPath(std::string_view original, std::string path) {
  if (path.find('\0') != std::string::npos) {
    return InvalidArgument("location \"" + std::string(original) + "\" contains a NUL byte");
  }
  if (path.empty() || path[0] != '/') {
    return InvalidArgument("location \"" + std::string(original) +
                           "\" is neither a gs:// URI nor an absolute path");
  }
  std::string norm = fs::path(path).lexically_normal().string();
  while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
  Location loc;
  loc.kind = Location::Kind::kLocal;
  loc.path = std::move(norm);
  return loc;
}

}  // namespace

Status ValidateBucketName(std::string_view name) {
  const std::string quoted = "bucket name \"" + std::string(name) + "\"";
  if (name.size() < 3 || name.size() > 63) {
    return InvalidArgument(quoted + " must be 3-63 characters long");
  }
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '-' && c != '_' && c != '.') {
      return InvalidArgument(quoted +
                             " may only contain lowercase letters, digits, '-', '_' and '.'");
    }
  }
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) {
    return InvalidArgument(quoted + " must start and end with a letter or digit");
  }
  if (name.find("..") != std::string_view::npos) {
    return InvalidArgument(quoted + " must not contain \"..\"");
  }
  if (name.substr(0, 4) == "goog") {
    return InvalidArgument(quoted + " must not start with \"goog\"");
  }
  return Status::Ok();
}

Status ValidateObjectName(std::string_view name) {
  if (name.empty()) return InvalidArgument("object name is empty");
  const std::string quoted = "object name \"" + std::string(name) + "\"";
  if (name.size() > 1024) return InvalidArgument("object name is longer than 1024 bytes");
  for (char c : name) {
    if (c == '\0' || c == '\r' || c == '\n') {
      return InvalidArgument("object name must not contain NUL, CR or LF characters");
    }
  }
  if (name.front() == '/') return InvalidArgument(quoted + " must not start with '/'");
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view seg = name.substr(start, end - start);
    if (seg.empty()) return InvalidArgument(quoted + " has an empty path segment");
    if (seg == "." || seg == "..") {
      return InvalidArgument(quoted + " has a \"" + std::string(seg) + "\" path segment");
    }
    start = end + 1;
  }
  return Status::Ok();
}

Result<Location> ParseLocation(std::string_view uri) {
  if (uri.substr(0, 5) == "gs://") {
    std::string_view rest = uri.substr(5);
    size_t slash = rest.find('/');
    Location loc;
    loc.kind = Location::Kind::kBucket;
    loc.bucket = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) loc.object = std::string(rest.substr(slash + 1));
    if (Status s = ValidateBucketName(loc.bucket); !s.ok()) return s;
    // A trailing '/' names a directory-like location ("gs://b/out/"): the same place.
    if (!loc.object.empty() && loc.object.back() == '/') loc.object.pop_back();
    if (!loc.object.empty()) {
      if (Status s = ValidateObjectName(loc.object); !s.ok()) return s;
    }
    return loc;
  }
  if (uri.substr(0, 7) == "file://") {
    std::string_view rest = uri.substr(7);
    if (rest.substr(0, 9) == "localhost") rest.remove_prefix(9);
    if (rest.empty() || rest.front() != '/') {
      return InvalidArgument("file URI \"" + std::string(uri) +
                             "\" must have an absolute path (file:///path)");
    }
    auto decoded = PercentDecode(rest);
    if (!decoded.ok()) return decoded.status();
    return ParseLocalPath(uri, std::move(decoded).value());
  }
  if (uri.find("://") != std::string_view::npos) {
    return InvalidArgument("location \"" + std::string(uri) +
                           "\" has an unsupported scheme (use gs://, file:// or an absolute path)");
  }
  return ParseLocalPath(uri, std::string(uri));
}

BucketStore::BucketStore(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  // Best effort: every operation that needs the directory creates it again and reports errors.
  (void)MakeDirs(TempDir());
}

std::string BucketStore::TempDir() const { return root_ + "/.tmp"; }

int BucketStore::RemoveAbandonedUploads() const {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(TempDir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("upload-", 0) == 0 && ::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

Status BucketStore::CreateBucket(std::string_view name) {
  auto meta = internal::CreateBucketMeta(*this, name, "");
  return meta.ok() ? Status::Ok() : meta.status();
}

Result<BucketInfo> BucketStore::GetBucket(std::string_view name) const {
  auto meta = internal::GetBucketMeta(*this, name);
  if (!meta.ok()) return meta.status();
  BucketInfo info = meta->info;
  info.project = meta->project;
  return info;
}

Result<std::vector<BucketInfo>> BucketStore::ListBuckets() const {
  std::vector<BucketInfo> out;
  std::error_code ec;
  fs::directory_iterator it(root_, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    return Internal("cannot list " + root_ + ": " + ec.message());
  }
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    if (!ValidateBucketName(name).ok()) continue;
    auto meta = internal::GetBucketMeta(*this, name);
    if (meta.ok()) {
      out.push_back(meta->info);
      out.back().project = meta->project;
    }
  }
  std::sort(out.begin(), out.end(),
            [](const BucketInfo& a, const BucketInfo& b) { return a.name < b.name; });
  return out;
}

bool BucketStore::BucketExists(std::string_view name) const {
  return internal::BucketDir(*this, name).ok();
}

Result<std::string> BucketStore::LocalPath(const Location& loc) const {
  if (loc.kind == Location::Kind::kLocal) {
    if (loc.path.empty() || loc.path[0] != '/') {
      return InvalidArgument("local path \"" + loc.path + "\" is not absolute");
    }
    return loc.path;
  }
  if (loc.object.empty()) return internal::BucketDir(*this, loc.bucket);
  return internal::ObjectPath(*this, loc.bucket, loc.object);
}

Result<std::string> BucketStore::LocalPathForUri(std::string_view uri) const {
  // Only objects of the bucket store: a host path would let a job read any file the daemon can
  // (or hang a launcher on /dev/zero), and the answer would tell whether it exists. AI Platform
  // takes gs:// URIs only (compat §2).
  if (uri.substr(0, 5) != "gs://") {
    return InvalidArgument("\"" + std::string(uri) + "\" is not a gs:// URI");
  }
  auto loc = ParseLocation(uri);
  if (!loc.ok()) return loc.status();
  if (loc->object.empty()) {
    return InvalidArgument("\"" + std::string(uri) + "\" names a bucket, not an object");
  }
  auto path = LocalPath(*loc);
  if (!path.ok()) return path.status();
  struct stat st {};
  if (::stat(path->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound("No such object: " + loc->bucket + "/" + loc->object);
  }
  return path;
}

Result<ObjectInfo> BucketStore::WriteObject(std::string_view bucket, std::string_view name,
                                            std::string_view data) {
  if (auto path = internal::ObjectPath(*this, bucket, name); !path.ok()) return path.status();
  auto file = internal::UploadFile::Create(*this);
  if (!file.ok()) return file.status();
  TRAINYARD_RETURN_IF_ERROR(file->Append(data.data(), data.size()));
  auto digest = file->Finish();
  if (!digest.ok()) return digest.status();
  auto meta = internal::CommitFile(*this, bucket, name, file->path(),
                                   internal::GuessContentType(name), *digest, {});
  if (!meta.ok()) return meta.status();
  file->Release();
  return meta->info;
}

Result<ObjectInfo> BucketStore::CommitObjectFile(std::string_view bucket, std::string_view name,
                                                 const std::string& temp_file) {
  auto meta = internal::CommitFile(*this, bucket, name, temp_file, internal::GuessContentType(name),
                                   std::nullopt, {});
  if (!meta.ok()) return meta.status();
  return meta->info;
}

Result<ObjectInfo> BucketStore::StatObject(std::string_view bucket, std::string_view name) const {
  auto meta = internal::StatObjectMeta(*this, bucket, name, /*want_hashes=*/false);
  if (!meta.ok()) return meta.status();
  return meta->info;
}

Result<std::string> BucketStore::ReadObject(std::string_view bucket, std::string_view name) const {
  auto path = internal::ObjectPath(*this, bucket, name);
  if (!path.ok()) return path.status();
  struct stat st {};
  if (::stat(path->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound("No such object: " + std::string(bucket) + "/" + std::string(name));
  }
  return ReadFile(*path);
}

Status BucketStore::DeleteObject(std::string_view bucket, std::string_view name) {
  return internal::DeleteObjectIf(*this, bucket, name, {});
}

Result<std::vector<ObjectInfo>> BucketStore::ListObjects(std::string_view bucket,
                                                         std::string_view prefix,
                                                         std::string_view start_after,
                                                         int max_results) const {
  std::vector<ObjectInfo> out;
  Status inner;
  Status s =
      internal::WalkObjects(*this, bucket, prefix, start_after, /*collapse_dirs=*/false,
                            [&](const std::string& name, bool /*is_prefix*/) {
                              auto info = StatObject(bucket, name);
                              if (info.ok()) out.push_back(std::move(info).value());
                              return max_results <= 0 || static_cast<int>(out.size()) < max_results;
                            });
  if (!s.ok()) return s;
  return out;
}

Status BucketStore::ValidateJobDir(std::string_view uri) const {
  const std::string where = "jobDir " + std::string(uri) + ": ";
  if (uri.substr(0, 5) != "gs://") {
    if (job_dir_roots_.empty()) {
      return InvalidArgument(where + "must be a gs:// URI (gs://BUCKET/PATH)");
    }
    auto local = ParseLocation(uri);
    if (!local.ok() || local->kind != Location::Kind::kLocal) {
      return InvalidArgument(where + "must be a gs:// URI (gs://BUCKET/PATH) or an absolute path");
    }
    return ValidateLocalJobDir(where, local->path);
  }
  auto loc = ParseLocation(uri);
  if (!loc.ok()) return InvalidArgument(where + loc.status().message());
  if (!BucketExists(loc->bucket)) {
    return InvalidArgument(where + "bucket \"" + loc->bucket + "\" does not exist");
  }
  auto path = LocalPath(*loc);  // refuses names that resolve outside the bucket
  if (!path.ok()) return InvalidArgument(where + path.status().message());
  // Nothing is created here: the check runs before the create is accepted, and objects under
  // the job dir make their own directories when they are written. The nearest existing
  // directory on the way must be a directory the daemon can write.
  auto bucket_dir = LocalPath(Location{Location::Kind::kBucket, loc->bucket, "", ""});
  if (!bucket_dir.ok()) return InvalidArgument(where + bucket_dir.status().message());
  std::string dir = *path;
  for (;;) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return InvalidArgument(where + (dir == *path
                                            ? "an object has this name"
                                            : "an object is in the way (gs://" + loc->bucket +
                                                  dir.substr(bucket_dir->size()) + ")"));
      }
      if (::access(dir.c_str(), W_OK) != 0) {
        return InvalidArgument(where + "the bucket store cannot write there");
      }
      return Status::Ok();
    }
    if (dir.size() <= bucket_dir->size()) break;
    dir = dir.substr(0, dir.rfind('/'));
  }
  return InvalidArgument(where + "bucket \"" + loc->bucket + "\" does not exist");
}

namespace {

// True when `path` is `root` or below it (both lexically normal, absolute).
bool Under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

std::string Normal(const std::string& p) {
  std::string out = std::filesystem::path(p).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

// A local jobDir: under a configured root, lexically and after resolving symlinks of the part
// that exists, never inside the daemon's data dir, and the nearest existing directory on
// the way writable. The roots are checked before anything is looked at, so a refused path says
// nothing about host files. Nothing is created: the launcher makes the directory when the job's
// replicas start.
Status BucketStore::ValidateLocalJobDir(const std::string& where, const std::string& path) const {
  const std::string dir = Normal(path);
  std::string roots;
  for (const auto& r : job_dir_roots_) roots += (roots.empty() ? "" : ", ") + r;
  const std::string outside = where +
                              "a local job directory must be below one of the job-dir roots (" +
                              roots + "; setting job_dir_roots), or use gs://BUCKET/PATH";
  auto under_root = [&](const std::string& p, bool resolve) {
    for (const auto& r : job_dir_roots_) {
      std::string root = Normal(r);
      if (resolve) {
        std::error_code ec;
        auto real = std::filesystem::weakly_canonical(root, ec);
        if (ec) continue;
        root = Normal(real.string());
      }
      if (Under(p, root)) return true;
    }
    return false;
  };
  if (!under_root(dir, false)) return InvalidArgument(outside);
  // The nearest existing ancestor, with its symlinks resolved, must still be under a root.
  std::string existing = dir;
  struct stat st {};
  while (::stat(existing.c_str(), &st) != 0) {
    if (existing == "/") return InvalidArgument(outside);
    existing = std::filesystem::path(existing).parent_path().string();
  }
  std::error_code ec;
  std::string real = Normal(std::filesystem::canonical(existing, ec).string());
  if (ec || !under_root(real, true)) return InvalidArgument(outside);
  // The daemon's data dir (the bucket store's parent) holds the database and replica work
  // dirs: never a job dir.
  const std::string data_dir = Normal(
      std::filesystem::weakly_canonical(std::filesystem::path(root_).parent_path(), ec).string());
  if (!ec && Under(real, data_dir)) {
    return InvalidArgument(where + "is inside the daemon's data directory; use gs://BUCKET/PATH");
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument(where + (existing == dir ? "exists and is not a directory"
                                                    : "a file is in the way (" + existing + ")"));
  }
  if (::access(existing.c_str(), W_OK) != 0) {
    return InvalidArgument(where + "the daemon cannot write in " + existing);
  }
  return Status::Ok();
}

}  // namespace trainyard::storage
