// The bucket store behind gs://BUCKET/OBJECT: by default a directory tree under the data dir
// (<root>/<bucket>/<object path>). Object names that would escape their bucket ("..", absolute
// names, empty segments, NUL) are refused. ParseLocation() also reads local absolute paths and
// file:// URIs, but packageUris must be gs:// inside the store (compat §2), and a local jobDir
// is accepted only under the configured job-dir roots: a job never reaches other host files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/core/time.h"

namespace trainyard::storage {

// A parsed location.
struct Location {
  enum class Kind { kBucket, kLocal };
  Kind kind = Kind::kLocal;
  std::string bucket;  // kBucket
  std::string object;  // kBucket: object name (may be "" for the bucket root)
  std::string path;    // kLocal: absolute path
};

// Parses "gs://bucket/path", "file:///abs/path" or "/abs/path". INVALID_ARGUMENT names the
// problem (bad bucket name per GCS rules, escaping path, relative path).
Result<Location> ParseLocation(std::string_view uri);
// GCS bucket name rules: 3-63 chars, lowercase letters, digits, '-', '_', '.'; starts and ends
// with a letter or digit.
Status ValidateBucketName(std::string_view name);
// Object name rules: 1-1024 bytes, no NUL/CR/LF, no "." or ".." segment, not starting with "/".
Status ValidateObjectName(std::string_view name);

struct ObjectInfo {
  std::string bucket;
  std::string name;
  int64_t size = 0;
  Timestamp updated = 0;
  int64_t generation = 0;  // mtime in microseconds
};

struct BucketInfo {
  std::string name;
  Timestamp created = 0;
  std::string project;  // the project that created it (docs/security.md); "" = made by hand
};

class BucketStore {
 public:
  explicit BucketStore(std::string root);

  const std::string& root() const { return root_; }

  Status CreateBucket(std::string_view name);                 // ALREADY_EXISTS if present
  Result<BucketInfo> GetBucket(std::string_view name) const;  // NOT_FOUND
  Result<std::vector<BucketInfo>> ListBuckets() const;
  bool BucketExists(std::string_view name) const;

  // Local filesystem path for a location (bucket must exist for kBucket; NOT_FOUND otherwise).
  Result<std::string> LocalPath(const Location& loc) const;
  // The file of a package object: a gs://BUCKET/OBJECT URI (anything else is INVALID_ARGUMENT)
  // whose object exists inside the store as a regular file (NOT_FOUND otherwise). Says nothing
  // about host files outside the store.
  Result<std::string> LocalPathForUri(std::string_view uri) const;

  // Writes an object atomically (temp file + rename), creating parent directories.
  Result<ObjectInfo> WriteObject(std::string_view bucket, std::string_view name,
                                 std::string_view data);
  // Moves a finished local file into place as an object (for streamed uploads).
  Result<ObjectInfo> CommitObjectFile(std::string_view bucket, std::string_view name,
                                      const std::string& temp_file);
  Result<ObjectInfo> StatObject(std::string_view bucket, std::string_view name) const;
  Result<std::string> ReadObject(std::string_view bucket, std::string_view name) const;
  Status DeleteObject(std::string_view bucket, std::string_view name);
  // Objects whose names start with prefix, in name order, after `start_after` (exclusive).
  Result<std::vector<ObjectInfo>> ListObjects(std::string_view bucket, std::string_view prefix,
                                              std::string_view start_after, int max_results) const;

  // The jobDir check of projects.jobs.create, without side effects: a gs:// URI, its bucket
  // exists, no object has its name or a parent's, and the store can write there. Creates
  // nothing. INVALID_ARGUMENT names the problem.
  Status ValidateJobDir(std::string_view uri) const;
  // Host directories under which ValidateJobDir accepts a local jobDir (absolute path or
  // file://, a Trainyard extension for one-machine use). Empty (the default) = gs:// only.
  // Set before the store is shared between threads.
  void SetLocalJobDirRoots(std::vector<std::string> roots) { job_dir_roots_ = std::move(roots); }

  // Temp directory for uploads in progress (inside root, so renames stay on one filesystem).
  std::string TempDir() const;
  // Removes the temp files of simple, multipart, copy and compose uploads (`upload-*`): they
  // belong to requests of a process that has ended (a daemon killed mid-upload), and nothing
  // can finish them. Resumable sessions (`session-*`) are kept: a client may resume one after a
  // restart. Only the daemon that holds the data dir lock calls it, before it serves. Returns
  // how many it removed.
  int RemoveAbandonedUploads() const;

 private:
  std::string root_;
  std::vector<std::string> job_dir_roots_;
  Status ValidateLocalJobDir(const std::string& where, const std::string& path) const;
};

}  // namespace trainyard::storage
