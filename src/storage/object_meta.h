// The parts of the bucket store that only the Cloud Storage API needs: per-object metadata kept
// in a sidecar tree (checksums, content type, generation), preconditions, streamed uploads,
// paged and delimited listings, copy/compose and bucket deletion. Private to the storage module
// (ty_storage and ty_storage_http); the rest of Trainyard uses bucket_store.h only.
//
// On-disk layout under the store root (see docs/storage.md):
//   <root>/<bucket>/<object name>            the object bytes, a plain file
//   <root>/.meta/buckets/<bucket>            bucket sidecar (creation time, project)
//   <root>/.meta/objects/<bucket>/<hh>/<sha256(name)>   object sidecar
//   <root>/.tmp/                             uploads in progress, resumable sessions
// An object sidecar is trusted only while the file's (size, mtime, inode) still match what it
// records; otherwise the checksums are recomputed from the file and the sidecar rewritten. So
// files written straight to disk (trainers writing their job dir) need no sidecar at all.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hashing.h"
#include "trainyard/core/status.h"
#include "trainyard/core/time.h"
#include "trainyard/storage/bucket_store.h"

namespace trainyard::storage::internal {

struct ObjectMeta {
  ObjectInfo info;
  bool has_hashes = false;  // false when the caller asked StatObjectMeta not to compute them
  std::string md5;          // raw 16 bytes
  uint32_t crc32c = 0;
  std::string content_type;
};

struct BucketMeta {
  BucketInfo info;
  std::string project;
};

// The GCS conditional-request parameters. Generation 0 in if_generation_match means "the object
// must not exist". Every object has metageneration 1.
struct Preconditions {
  std::optional<int64_t> if_generation_match;
  std::optional<int64_t> if_generation_not_match;
  std::optional<int64_t> if_metageneration_match;
  std::optional<int64_t> if_metageneration_not_match;
  bool empty() const {
    return !if_generation_match && !if_generation_not_match && !if_metageneration_match &&
           !if_metageneration_not_match;
  }
};

// <root>/<bucket> after checking the name; NOT_FOUND when the bucket does not exist.
Result<std::string> BucketDir(const BucketStore& store, std::string_view bucket);
// <root>/<bucket>/<name> after checking both names and that the path, with symlinks resolved as
// far as it exists, stays inside the bucket's directory. NOT_FOUND when the bucket does not exist.
Result<std::string> ObjectPath(const BucketStore& store, std::string_view bucket,
                               std::string_view name);

// FAILED_PRECONDITION when the current state (nullopt = absent) does not satisfy `pre`.
Status CheckPreconditions(const std::optional<ObjectMeta>& current, const Preconditions& pre);

// Bytes streamed into a temp file under the store's TempDir, hashed on the way. The temp file is
// removed on destruction unless Release() was called.
class UploadFile {
 public:
  UploadFile() = default;
  ~UploadFile();
  UploadFile(UploadFile&& other) noexcept;
  UploadFile& operator=(UploadFile&& other) noexcept;
  UploadFile(const UploadFile&) = delete;
  UploadFile& operator=(const UploadFile&) = delete;

  static Result<UploadFile> Create(const BucketStore& store);

  Status Append(const char* data, size_t size);
  // Flushes, fsyncs and closes the file; returns its digest.
  Result<FileDigest> Finish();
  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }
  // Forgets the file (it was renamed into place).
  void Release() { path_.clear(); }

 private:
  void Close();
  int fd_ = -1;
  std::string path_;
  int64_t size_ = 0;
  Md5 md5_;
  Crc32c crc_;
};

// Creates a uniquely named empty file under TempDir (for resumable sessions).
Result<std::string> NewTempPath(const BucketStore& store, std::string_view suffix);

Result<BucketMeta> CreateBucketMeta(BucketStore& store, std::string_view name,
                                    std::string_view project);
Result<BucketMeta> GetBucketMeta(const BucketStore& store, std::string_view name);
// FAILED_PRECONDITION when the bucket still holds objects, NOT_FOUND when absent.
Status DeleteBucket(BucketStore& store, std::string_view name);

// NOT_FOUND when the bucket or object is absent. With want_hashes, MD5/CRC32C come from the
// sidecar when it is current and are recomputed (and cached) otherwise.
Result<ObjectMeta> StatObjectMeta(const BucketStore& store, std::string_view bucket,
                                  std::string_view name, bool want_hashes = true);

// Moves `temp_file` into place as bucket/name, checking `pre` against the current object under
// the store's commit lock. `digest` is the file's digest if the caller computed it while
// writing (otherwise the file is read once). An empty content type means
// "application/octet-stream". The new generation is greater than the replaced one.
Result<ObjectMeta> CommitFile(const BucketStore& store, std::string_view bucket,
                              std::string_view name, const std::string& temp_file,
                              std::string_view content_type,
                              const std::optional<FileDigest>& digest, const Preconditions& pre);

Status DeleteObjectIf(const BucketStore& store, std::string_view bucket, std::string_view name,
                      const Preconditions& pre);

// Copies src to dst (same or another bucket). `content_type` empty keeps the source's.
Result<ObjectMeta> CopyObject(const BucketStore& store, std::string_view src_bucket,
                              std::string_view src_name, std::string_view dst_bucket,
                              std::string_view dst_name, std::string_view content_type,
                              const Preconditions& src_pre, const Preconditions& dst_pre);

// Concatenates sources (all in `bucket`) into bucket/dst.
Result<ObjectMeta> ComposeObjects(const BucketStore& store, std::string_view bucket,
                                  const std::vector<std::string>& sources, std::string_view dst,
                                  std::string_view content_type, const Preconditions& dst_pre);

// Replaces the recorded content type of an existing object.
Result<ObjectMeta> SetContentType(const BucketStore& store, std::string_view bucket,
                                  std::string_view name, std::string_view content_type,
                                  const Preconditions& pre);

// Visits the bucket's objects whose names start with `prefix` and sort after `start_after`
// (byte order), in byte order. With collapse_dirs, directories directly below the prefix's
// directory are reported once as a name ending in '/' (is_prefix = true, only if they hold an
// object) instead of being descended. The visitor returns false to stop.
using ObjectVisitor = std::function<bool(const std::string& name, bool is_prefix)>;
Status WalkObjects(const BucketStore& store, std::string_view bucket, std::string_view prefix,
                   std::string_view start_after, bool collapse_dirs, const ObjectVisitor& visit);

struct ListPage {
  std::vector<std::string> names;     // objects, in order
  std::vector<std::string> prefixes;  // "directories" when a delimiter was given, in order
  std::string next_page_token;        // empty on the last page
};
// One page of objects.list: at most max_results names + prefixes together.
Result<ListPage> ListPageOf(const BucketStore& store, std::string_view bucket,
                            std::string_view prefix, std::string_view delimiter,
                            std::string_view page_token, int max_results);

// Folder placeholders: GCS clients create and probe zero-byte objects named "dir/" (TensorFlow's
// makedirs, gcloud checking whether a destination is a folder). Such a name (a valid name plus
// one trailing '/') stands for the directory; it exists once created through MakeFolder (a
// sidecar marks it) and while the directory does. Directories alone are not placeholders.
bool IsFolderName(std::string_view name);
// NOT_FOUND unless the placeholder was created and the directory exists.
Result<ObjectMeta> StatFolder(const BucketStore& store, std::string_view bucket,
                              std::string_view name);
// Creates the directory (and parents); `pre` is checked against the placeholder's state.
Result<ObjectMeta> MakeFolder(const BucketStore& store, std::string_view bucket,
                              std::string_view name, const Preconditions& pre);
// Removes the directory if it is empty (objects below it stay); NOT_FOUND when absent.
Status RemoveFolder(const BucketStore& store, std::string_view bucket, std::string_view name,
                    const Preconditions& pre);

// "application/json" for ".json" and so on; "application/octet-stream" when unknown.
std::string GuessContentType(std::string_view name);

}  // namespace trainyard::storage::internal
