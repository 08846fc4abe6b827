#include "object_meta.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <utility>

#include "trainyard/core/failpoint.h"
#include "trainyard/core/util.h"

namespace trainyard::storage::internal {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMetageneration = 1;
constexpr char kDefaultContentType[] = "application/octet-stream";
constexpr char kObjectMetaMagic[] = "trainyard-object-meta 1";
constexpr char kBucketMetaMagic[] = "trainyard-bucket-meta 1";

// Serialises check-then-rename sequences (preconditions, generations, sidecars). Commits are a
// rename plus a small file write, so one lock for all stores is cheap.
std::mutex& CommitMutex() {
  static std::mutex mu;
  return mu;
}

std::string ErrnoText(int err) { return std::strerror(err); }

std::string NoSuchObject(std::string_view bucket, std::string_view name) {
  return "No such object: " + std::string(bucket) + "/" + std::string(name);
}

std::string Hex(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xF]);
  }
  return out;
}

std::optional<std::string> Unhex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = val(hex[i]);
    int lo = val(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

int64_t MtimeNanos(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

ObjectInfo InfoFromStat(std::string_view bucket, std::string_view name, const struct stat& st) {
  ObjectInfo info;
  info.bucket = std::string(bucket);
  info.name = std::string(name);
  info.size = static_cast<int64_t>(st.st_size);
  info.generation = MtimeNanos(st) / 1000;
  info.updated = info.generation;
  return info;
}

// True when `path` is `base` or below it (both absolute and normalised).
bool IsWithin(const std::string& base, const std::string& path) {
  if (path == base) return true;
  if (base == "/") return true;
  return path.size() > base.size() && path.compare(0, base.size(), base) == 0 &&
         path[base.size()] == '/';
}

std::string MetaRoot(const BucketStore& store) { return store.root() + "/.meta"; }

std::string BucketSidecarPath(const BucketStore& store, std::string_view bucket) {
  return MetaRoot(store) + "/buckets/" + std::string(bucket);
}

std::string ObjectSidecarDir(const BucketStore& store, std::string_view bucket) {
  return MetaRoot(store) + "/objects/" + std::string(bucket);
}

std::string ObjectSidecarPath(const BucketStore& store, std::string_view bucket,
                              std::string_view name) {
  std::string h = Sha256Hex(name);
  return ObjectSidecarDir(store, bucket) + "/" + h.substr(0, 2) + "/" + h;
}

// Writes a small file via a uniquely named temp file and rename (no fsync: sidecars are either
// re-derivable caches or written right after an fsynced object).
Status WriteSmallFile(const std::string& path, std::string_view data) {
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(fs::path(path).parent_path().string()));
  return WriteFileAtomic(path, data, /*durable=*/false);
}

// key=value lines after a magic first line.
std::optional<std::vector<std::pair<std::string, std::string>>> ReadKeyValues(
    const std::string& path, std::string_view magic) {
  auto text = ReadFile(path);
  if (!text.ok()) return std::nullopt;
  std::vector<std::string> lines = Split(*text, '\n');
  if (lines.empty() || lines[0] != magic) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t eq = lines[i].find('=');
    if (eq == std::string::npos) continue;
    out.emplace_back(lines[i].substr(0, eq), lines[i].substr(eq + 1));
  }
  return out;
}

std::string StripLineBreaks(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '\r' && c != '\n' && c != '\0') out.push_back(c);
  }
  return out;
}

struct ObjectSidecar {
  std::string name;
  int64_t size = -1;
  int64_t mtime_ns = -1;
  uint64_t ino = 0;
  std::string md5;  // raw
  uint32_t crc32c = 0;
  std::string content_type;
};

std::optional<ObjectSidecar> ReadObjectSidecar(const BucketStore& store, std::string_view bucket,
                                               std::string_view name) {
  auto kv = ReadKeyValues(ObjectSidecarPath(store, bucket, name), kObjectMetaMagic);
  if (!kv) return std::nullopt;
  ObjectSidecar sc;
  try {
    for (const auto& [k, v] : *kv) {
      if (k == "name")
        sc.name = v;
      else if (k == "size")
        sc.size = std::stoll(v);
      else if (k == "mtime_ns")
        sc.mtime_ns = std::stoll(v);
      else if (k == "ino")
        sc.ino = std::stoull(v);
      else if (k == "md5")
        sc.md5 = Unhex(v).value_or("");
      else if (k == "crc32c")
        sc.crc32c = static_cast<uint32_t>(std::stoul(v));
      else if (k == "content_type")
        sc.content_type = v;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (sc.name != name || sc.md5.size() != 16) return std::nullopt;
  return sc;
}

Status WriteObjectSidecar(const BucketStore& store, std::string_view bucket,
                          const ObjectSidecar& sc) {
  std::string text =
      std::string(kObjectMetaMagic) + "\nname=" + sc.name + "\nsize=" + std::to_string(sc.size) +
      "\nmtime_ns=" + std::to_string(sc.mtime_ns) + "\nino=" + std::to_string(sc.ino) +
      "\nmd5=" + Hex(sc.md5) + "\ncrc32c=" + std::to_string(sc.crc32c) +
      "\ncontent_type=" + StripLineBreaks(sc.content_type) + "\n";
  return WriteSmallFile(ObjectSidecarPath(store, bucket, sc.name), text);
}

bool SidecarMatches(const ObjectSidecar& sc, const struct stat& st) {
  return sc.size == static_cast<int64_t>(st.st_size) && sc.mtime_ns == MtimeNanos(st) &&
         sc.ino == static_cast<uint64_t>(st.st_ino);
}

// Stats bucket/name. NOT_FOUND when absent (or not a regular file).
Result<struct stat> StatObjectFile(const BucketStore& store, std::string_view bucket,
                                   std::string_view name, std::string* path_out) {
  auto path = ObjectPath(store, bucket, name);
  if (!path.ok()) return path.status();
  struct stat st {};
  if (::stat(path->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound(NoSuchObject(bucket, name));
  }
  if (path_out != nullptr) *path_out = *path;
  return st;
}

// The current object as far as preconditions care (no hashes), nullopt when absent.
Result<std::optional<ObjectMeta>> CurrentForPreconditions(const BucketStore& store,
                                                          std::string_view bucket,
                                                          std::string_view name) {
  auto st = StatObjectFile(store, bucket, name, nullptr);
  if (!st.ok()) {
    if (st.status().code() == StatusCode::kNotFound && BucketDir(store, bucket).ok()) {
      return std::optional<ObjectMeta>();
    }
    return st.status();
  }
  ObjectMeta m;
  m.info = InfoFromStat(bucket, name, *st);
  return std::optional<ObjectMeta>(std::move(m));
}

Status WriteAll(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Internal("cannot write " + path + ": " + ErrnoText(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Appends a whole file to an upload.
Status AppendFile(UploadFile& out, const std::string& src) {
  int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Internal("cannot open " + src + ": " + ErrnoText(errno));
  std::vector<char> buf(1 << 17);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Internal("cannot read " + src + ": " + ErrnoText(err));
    }
    if (n == 0) break;
    Status s = out.Append(buf.data(), static_cast<size_t>(n));
    if (!s.ok()) {
      ::close(fd);
      return s;
    }
  }
  ::close(fd);
  return Status::Ok();
}

bool HasAnyObject(const std::string& dir, const std::string& real_bucket, int depth);

struct DirEntry {
  std::string key;  // name, plus '/' for directories
  std::string name;
  bool is_dir = false;
};

// Lists a directory's entries usable as objects or subdirectories, sorted by key. Symlinks are
// followed only to regular files inside the bucket; symlinked directories are skipped.
std::vector<DirEntry> ReadDirEntries(const std::string& dir, const std::string& real_bucket) {
  std::vector<DirEntry> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name.find_first_of("\r\n") != std::string::npos) continue;
    std::string full = dir + "/" + name;
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat lst {};
      if (::lstat(full.c_str(), &lst) != 0) continue;
      type = S_ISDIR(lst.st_mode)   ? DT_DIR
             : S_ISREG(lst.st_mode) ? DT_REG
             : S_ISLNK(lst.st_mode) ? DT_LNK
                                    : DT_UNKNOWN;
    }
    if (type == DT_LNK) {
      std::error_code ec;
      fs::path real = fs::canonical(full, ec);
      struct stat st {};
      if (ec || ::stat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
          !IsWithin(real_bucket, real.string())) {
        continue;
      }
      type = DT_REG;
    }
    if (type == DT_REG) {
      out.push_back({name, name, false});
    } else if (type == DT_DIR) {
      out.push_back({name + "/", name, true});
    }
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.key < b.key; });
  return out;
}

constexpr int kMaxDepth = 512;

bool HasAnyObject(const std::string& dir, const std::string& real_bucket, int depth) {
  if (depth > kMaxDepth) return false;
  for (const DirEntry& e : ReadDirEntries(dir, real_bucket)) {
    if (!e.is_dir) return true;
    if (HasAnyObject(dir + "/" + e.name, real_bucket, depth + 1)) return true;
  }
  return false;
}

struct WalkState {
  std::string real_bucket;
  std::string prefix;
  std::string start_after;
  bool collapse = false;
  const ObjectVisitor* visit = nullptr;
};

// Returns false when the visitor asked to stop.
bool WalkDir(const WalkState& w, const std::string& dir, const std::string& rel, bool top,
             int depth) {
  if (depth > kMaxDepth) return true;
  for (const DirEntry& e : ReadDirEntries(dir, w.real_bucket)) {
    std::string key = rel + e.key;
    if (top && !StartsWith(key, w.prefix)) continue;
    if (!e.is_dir) {
      if (key <= w.start_after) continue;
      if (!ValidateObjectName(key).ok()) continue;
      if (!(*w.visit)(key, false)) return false;
      continue;
    }
    if (w.collapse && top) {
      if (key <= w.start_after) continue;
      if (!HasAnyObject(dir + "/" + e.name, w.real_bucket, depth + 1)) continue;
      if (!(*w.visit)(key, true)) return false;
      continue;
    }
    // Every name below `key` starts with it; skip the subtree when all of them sort first.
    if (key < w.start_after && !StartsWith(w.start_after, key)) continue;
    if (!WalkDir(w, dir + "/" + e.name, key, false, depth + 1)) return false;
  }
  return true;
}

}  // namespace

Result<std::string> BucketDir(const BucketStore& store, std::string_view bucket) {
  TRAINYARD_RETURN_IF_ERROR(ValidateBucketName(bucket));
  std::string dir = store.root() + "/" + std::string(bucket);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return NotFound("bucket \"" + std::string(bucket) + "\" does not exist");
  }
  return dir;
}

Result<std::string> ObjectPath(const BucketStore& store, std::string_view bucket,
                               std::string_view name) {
  TRAINYARD_RETURN_IF_ERROR(ValidateBucketName(bucket));
  TRAINYARD_RETURN_IF_ERROR(ValidateObjectName(name));
  auto dir = BucketDir(store, bucket);
  if (!dir.ok()) return dir.status();
  std::string path = *dir + "/" + std::string(name);
  std::error_code ec;
  fs::path real_bucket = fs::canonical(*dir, ec);
  if (ec) return Internal("cannot resolve " + *dir + ": " + ec.message());
  fs::path real = fs::weakly_canonical(path, ec);
  if (ec) return Internal("cannot resolve " + path + ": " + ec.message());
  if (!IsWithin(real_bucket.string(), real.string())) {
    return InvalidArgument("object \"" + std::string(name) + "\" resolves outside bucket \"" +
                           std::string(bucket) + "\"");
  }
  return path;
}

Status CheckPreconditions(const std::optional<ObjectMeta>& current, const Preconditions& pre) {
  const Status failed =
      FailedPrecondition("At least one of the pre-conditions you specified did not hold.");
  const int64_t gen = current ? current->info.generation : 0;
  if (pre.if_generation_match && *pre.if_generation_match != gen) return failed;
  if (pre.if_generation_not_match && *pre.if_generation_not_match == gen) return failed;
  if (pre.if_metageneration_match &&
      (!current || *pre.if_metageneration_match != kMetageneration)) {
    return failed;
  }
  if (pre.if_metageneration_not_match && current &&
      *pre.if_metageneration_not_match == kMetageneration) {
    return failed;
  }
  return Status::Ok();
}

UploadFile::~UploadFile() {
  Close();
  if (!path_.empty()) ::unlink(path_.c_str());
}

UploadFile::UploadFile(UploadFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::exchange(other.path_, {})),
      size_(other.size_),
      md5_(std::move(other.md5_)),
      crc_(other.crc_) {}

UploadFile& UploadFile::operator=(UploadFile&& other) noexcept {
  if (this != &other) {
    Close();
    if (!path_.empty()) ::unlink(path_.c_str());
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::exchange(other.path_, {});
    size_ = other.size_;
    md5_ = std::move(other.md5_);
    crc_ = other.crc_;
  }
  return *this;
}

void UploadFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<UploadFile> UploadFile::Create(const BucketStore& store) {
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(store.TempDir()));
  UploadFile f;
  std::string templ = store.TempDir() + "/upload-XXXXXX";
  f.fd_ = ::mkostemp(templ.data(), O_CLOEXEC);
  if (f.fd_ < 0)
    return Internal("cannot create a temp file in " + store.TempDir() + ": " + ErrnoText(errno));
  // mkostemp makes it 0600: objects are the users' data, readable by the daemon's user only.
  f.path_ = templ;
  return f;
}

Status UploadFile::Append(const char* data, size_t size) {
  if (fd_ < 0) return Internal("upload file is closed");
  TRAINYARD_RETURN_IF_ERROR(WriteAll(fd_, data, size, path_));
  md5_.Update(data, size);
  crc_.Update(data, size);
  size_ += static_cast<int64_t>(size);
  return Status::Ok();
}

Result<FileDigest> UploadFile::Finish() {
  if (fd_ < 0) return Internal("upload file is closed");
  if (::fdatasync(fd_) != 0) {
    int err = errno;
    Close();
    return Internal("cannot sync " + path_ + ": " + ErrnoText(err));
  }
  Close();
  FileDigest d;
  d.size = size_;
  d.md5 = md5_.Finish();
  d.crc32c = crc_.value();
  return d;
}

Result<std::string> NewTempPath(const BucketStore& store, std::string_view suffix) {
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(store.TempDir()));
  std::string templ = store.TempDir() + "/session-XXXXXX" + std::string(suffix);
  int fd = ::mkostemps(templ.data(), static_cast<int>(suffix.size()), O_CLOEXEC);
  if (fd < 0) return Internal("cannot create a temp file: " + ErrnoText(errno));
  ::close(fd);
  return templ;
}

Result<BucketMeta> CreateBucketMeta(BucketStore& store, std::string_view name,
                                    std::string_view project) {
  TRAINYARD_RETURN_IF_ERROR(ValidateBucketName(name));
  TRAINYARD_RETURN_IF_ERROR(MakeDirs(store.root()));
  std::string dir = store.root() + "/" + std::string(name);
  std::lock_guard<std::mutex> lock(CommitMutex());
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (errno == EEXIST)
      return AlreadyExists("bucket \"" + std::string(name) + "\" already exists");
    return Internal("cannot create " + dir + ": " + ErrnoText(errno));
  }
  BucketMeta meta;
  meta.info.name = std::string(name);
  meta.info.created = NowMicros();
  meta.project = StripLineBreaks(project);
  // Stale object sidecars of an earlier bucket with the same name must not be trusted.
  std::error_code ec;
  fs::remove_all(ObjectSidecarDir(store, name), ec);
  std::string text = std::string(kBucketMetaMagic) +
                     "\ncreated_us=" + std::to_string(meta.info.created) +
                     "\nproject=" + meta.project + "\n";
  TRAINYARD_RETURN_IF_ERROR(WriteSmallFile(BucketSidecarPath(store, name), text));
  return meta;
}

Result<BucketMeta> GetBucketMeta(const BucketStore& store, std::string_view name) {
  auto dir = BucketDir(store, name);
  if (!dir.ok()) return dir.status();
  BucketMeta meta;
  meta.info.name = std::string(name);
  if (auto kv = ReadKeyValues(BucketSidecarPath(store, name), kBucketMetaMagic)) {
    for (const auto& [k, v] : *kv) {
      if (k == "created_us") meta.info.created = std::strtoll(v.c_str(), nullptr, 10);
      if (k == "project") meta.project = v;
    }
  }
  if (meta.info.created == 0) {
    // A directory made by hand: its change time is the best creation time there is.
    struct stat st {};
    if (::stat(dir->c_str(), &st) == 0) {
      meta.info.created =
          static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000 + st.st_ctim.tv_nsec / 1000;
    }
  }
  return meta;
}

Status DeleteBucket(BucketStore& store, std::string_view name) {
  auto dir = BucketDir(store, name);
  if (!dir.ok()) return dir.status();
  std::lock_guard<std::mutex> lock(CommitMutex());
  std::error_code ec;
  std::string real = fs::canonical(*dir, ec).string();
  if (ec) return Internal("cannot resolve " + *dir + ": " + ec.message());
  if (HasAnyObject(*dir, real, 0)) {
    return FailedPrecondition("The bucket you tried to delete is not empty.");
  }
  // Only empty directories remain; a symlinked bucket loses just its link.
  struct stat lst {};
  if (::lstat(dir->c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    ::unlink(dir->c_str());
  } else {
    fs::remove_all(*dir, ec);
    if (ec) return Internal("cannot remove " + *dir + ": " + ec.message());
  }
  fs::remove_all(ObjectSidecarDir(store, name), ec);
  ::unlink(BucketSidecarPath(store, name).c_str());
  return Status::Ok();
}

Result<ObjectMeta> StatObjectMeta(const BucketStore& store, std::string_view bucket,
                                  std::string_view name, bool want_hashes) {
  std::string path;
  auto st = StatObjectFile(store, bucket, name, &path);
  if (!st.ok()) return st.status();
  ObjectMeta meta;
  meta.info = InfoFromStat(bucket, name, *st);
  std::optional<ObjectSidecar> sc = ReadObjectSidecar(store, bucket, name);
  if (sc && SidecarMatches(*sc, *st)) {
    meta.has_hashes = true;
    meta.md5 = sc->md5;
    meta.crc32c = sc->crc32c;
    meta.content_type = sc->content_type.empty() ? kDefaultContentType : sc->content_type;
    return meta;
  }
  meta.content_type = GuessContentType(name);
  if (!want_hashes) return meta;
  auto digest = DigestFile(path);
  if (!digest.ok()) return digest.status();
  struct stat after {};
  if (::stat(path.c_str(), &after) != 0) return NotFound(NoSuchObject(bucket, name));
  meta.info = InfoFromStat(bucket, name, after);
  meta.has_hashes = true;
  meta.md5 = digest->md5;
  meta.crc32c = digest->crc32c;
  // Cache only if the file did not change while it was read (a trainer may still be writing).
  if (after.st_size == st->st_size && MtimeNanos(after) == MtimeNanos(*st) &&
      digest->size == static_cast<int64_t>(after.st_size)) {
    ObjectSidecar fresh{std::string(name), static_cast<int64_t>(after.st_size),
                        MtimeNanos(after), static_cast<uint64_t>(after.st_ino),
                        meta.md5,          meta.crc32c,
                        meta.content_type};
    (void)WriteObjectSidecar(store, bucket, fresh);
  }
  return meta;
}

Result<ObjectMeta> CommitFile(const BucketStore& store, std::string_view bucket,
                              std::string_view name, const std::string& temp_file,
                              std::string_view content_type,
                              const std::optional<FileDigest>& digest, const Preconditions& pre) {
  auto path = ObjectPath(store, bucket, name);
  if (!path.ok()) return path.status();
  FileDigest d;
  if (digest) {
    d = *digest;
  } else {
    auto computed = DigestFile(temp_file);
    if (!computed.ok()) return computed.status();
    d = std::move(computed).value();
  }
  std::lock_guard<std::mutex> lock(CommitMutex());
  auto current = CurrentForPreconditions(store, bucket, name);
  if (!current.ok()) return current.status();
  struct stat existing {};
  if (!*current && ::stat(path->c_str(), &existing) == 0 && S_ISDIR(existing.st_mode)) {
    return AlreadyExists("cannot store object \"" + std::string(name) +
                         "\": a directory of that name holds other objects");
  }
  TRAINYARD_RETURN_IF_ERROR(CheckPreconditions(*current, pre));
  Status made = MakeDirs(fs::path(*path).parent_path().string());
  if (!made.ok()) {
    return AlreadyExists("cannot store object \"" + std::string(name) +
                         "\": a parent of it is an object");
  }
  // The generation is the file's mtime in microseconds; keep it increasing per object.
  int64_t gen = NowMicros();
  if (*current && (*current)->info.generation >= gen) gen = (*current)->info.generation + 1;
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_NOW;
  times[1].tv_sec = static_cast<time_t>(gen / 1000000);
  times[1].tv_nsec = static_cast<long>(gen % 1000000) * 1000;
  if (::utimensat(AT_FDCWD, temp_file.c_str(), times, 0) != 0) {
    return Internal("cannot set the time of " + temp_file + ": " + ErrnoText(errno));
  }
  // Its bytes reach the disk before it becomes the object. UploadFile::Finish synced most
  // callers' files already (then this costs nothing); a resumable session's data file was
  // written by many requests and never synced.
  {
    const int fd = ::open(temp_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fdatasync(fd) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      return Internal("cannot sync " + temp_file + ": " + ErrnoText(err));
    }
    ::close(fd);
  }
  TY_FAILPOINT("storage.commit.before_rename");  // upload complete in the temp dir
  if (::rename(temp_file.c_str(), path->c_str()) != 0) {
    int err = errno;
    if (err == ENOTDIR || err == EISDIR) {
      return AlreadyExists("cannot store object \"" + std::string(name) +
                           "\": it conflicts with an object or directory of a parent name");
    }
    if (err == EXDEV) {
      // Not in TempDir: copy into place through a temp file on the right filesystem.
      auto copy = UploadFile::Create(store);
      if (!copy.ok()) return copy.status();
      TRAINYARD_RETURN_IF_ERROR(AppendFile(*copy, temp_file));
      if (auto fin = copy->Finish(); !fin.ok()) return fin.status();
      if (::utimensat(AT_FDCWD, copy->path().c_str(), times, 0) != 0 ||
          ::rename(copy->path().c_str(), path->c_str()) != 0) {
        return Internal("cannot move upload into place at " + *path + ": " + ErrnoText(errno));
      }
      copy->Release();
      ::unlink(temp_file.c_str());
    } else {
      return Internal("cannot move upload into place at " + *path + ": " + ErrnoText(err));
    }
  }
  TY_FAILPOINT("storage.commit.after_rename");  // object in place, its metadata not yet
  struct stat st {};
  if (::stat(path->c_str(), &st) != 0) {
    return Internal("cannot stat " + *path + ": " + ErrnoText(errno));
  }
  ObjectMeta meta;
  meta.info = InfoFromStat(bucket, name, st);
  meta.has_hashes = true;
  meta.md5 = d.md5;
  meta.crc32c = d.crc32c;
  meta.content_type =
      content_type.empty() ? std::string(kDefaultContentType) : StripLineBreaks(content_type);
  ObjectSidecar sc{std::string(name), static_cast<int64_t>(st.st_size),
                   MtimeNanos(st),    static_cast<uint64_t>(st.st_ino),
                   meta.md5,          meta.crc32c,
                   meta.content_type};
  (void)WriteObjectSidecar(store, bucket, sc);
  return meta;
}

Status DeleteObjectIf(const BucketStore& store, std::string_view bucket, std::string_view name,
                      const Preconditions& pre) {
  std::string path;
  std::lock_guard<std::mutex> lock(CommitMutex());
  auto st = StatObjectFile(store, bucket, name, &path);
  if (!st.ok()) return st.status();
  ObjectMeta current;
  current.info = InfoFromStat(bucket, name, *st);
  TRAINYARD_RETURN_IF_ERROR(CheckPreconditions(current, pre));
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return NotFound(NoSuchObject(bucket, name));
    return Internal("cannot delete " + path + ": " + ErrnoText(errno));
  }
  ::unlink(ObjectSidecarPath(store, bucket, name).c_str());
  return Status::Ok();
}

Result<ObjectMeta> CopyObject(const BucketStore& store, std::string_view src_bucket,
                              std::string_view src_name, std::string_view dst_bucket,
                              std::string_view dst_name, std::string_view content_type,
                              const Preconditions& src_pre, const Preconditions& dst_pre) {
  auto src = StatObjectMeta(store, src_bucket, src_name, /*want_hashes=*/false);
  if (!src.ok()) return src.status();
  TRAINYARD_RETURN_IF_ERROR(CheckPreconditions(*src, src_pre));
  if (auto dst = ObjectPath(store, dst_bucket, dst_name); !dst.ok()) return dst.status();
  auto out = UploadFile::Create(store);
  if (!out.ok()) return out.status();
  auto src_path = ObjectPath(store, src_bucket, src_name);
  if (!src_path.ok()) return src_path.status();
  TRAINYARD_RETURN_IF_ERROR(AppendFile(*out, *src_path));
  auto digest = out->Finish();
  if (!digest.ok()) return digest.status();
  auto meta = CommitFile(store, dst_bucket, dst_name, out->path(),
                         content_type.empty() ? std::string_view(src->content_type) : content_type,
                         *digest, dst_pre);
  if (meta.ok()) out->Release();
  return meta;
}

Result<ObjectMeta> ComposeObjects(const BucketStore& store, std::string_view bucket,
                                  const std::vector<std::string>& sources, std::string_view dst,
                                  std::string_view content_type, const Preconditions& dst_pre) {
  if (sources.empty()) return InvalidArgument("compose needs at least one source object");
  if (sources.size() > 32) return InvalidArgument("compose takes at most 32 source objects");
  if (auto dst_path = ObjectPath(store, bucket, dst); !dst_path.ok()) return dst_path.status();
  auto out = UploadFile::Create(store);
  if (!out.ok()) return out.status();
  for (const std::string& s : sources) {
    std::string path;
    auto st = StatObjectFile(store, bucket, s, &path);
    if (!st.ok()) return st.status();
    TRAINYARD_RETURN_IF_ERROR(AppendFile(*out, path));
  }
  auto digest = out->Finish();
  if (!digest.ok()) return digest.status();
  auto meta = CommitFile(store, bucket, dst, out->path(), content_type, *digest, dst_pre);
  if (meta.ok()) out->Release();
  return meta;
}

Result<ObjectMeta> SetContentType(const BucketStore& store, std::string_view bucket,
                                  std::string_view name, std::string_view content_type,
                                  const Preconditions& pre) {
  auto meta = StatObjectMeta(store, bucket, name, /*want_hashes=*/true);
  if (!meta.ok()) return meta.status();
  std::lock_guard<std::mutex> lock(CommitMutex());
  TRAINYARD_RETURN_IF_ERROR(CheckPreconditions(*meta, pre));
  std::string path;
  auto st = StatObjectFile(store, bucket, name, &path);
  if (!st.ok()) return st.status();
  if (MtimeNanos(*st) / 1000 != meta->info.generation) {
    return Aborted("object \"" + std::string(name) + "\" changed during the update");
  }
  meta->content_type =
      content_type.empty() ? std::string(kDefaultContentType) : StripLineBreaks(content_type);
  ObjectSidecar sc{std::string(name), static_cast<int64_t>(st->st_size),
                   MtimeNanos(*st),   static_cast<uint64_t>(st->st_ino),
                   meta->md5,         meta->crc32c,
                   meta->content_type};
  TRAINYARD_RETURN_IF_ERROR(WriteObjectSidecar(store, bucket, sc));
  return meta;
}

Status WalkObjects(const BucketStore& store, std::string_view bucket, std::string_view prefix,
                   std::string_view start_after, bool collapse_dirs, const ObjectVisitor& visit) {
  auto dir = BucketDir(store, bucket);
  if (!dir.ok()) return dir.status();
  std::error_code ec;
  WalkState w;
  w.real_bucket = fs::canonical(*dir, ec).string();
  if (ec) return Internal("cannot resolve " + *dir + ": " + ec.message());
  w.prefix = std::string(prefix);
  w.start_after = std::string(start_after);
  w.collapse = collapse_dirs;
  w.visit = &visit;
  // Start in the deepest directory the prefix names; a prefix that cannot be a path holds
  // nothing.
  size_t slash = w.prefix.rfind('/');
  std::string rel = slash == std::string::npos ? std::string() : w.prefix.substr(0, slash + 1);
  if (!rel.empty()) {
    std::string rel_dir = rel.substr(0, rel.size() - 1);
    if (!ValidateObjectName(rel_dir).ok()) return Status::Ok();
    auto start = ObjectPath(store, bucket, rel_dir);
    if (!start.ok()) return Status::Ok();
    struct stat st {};
    if (::stat(start->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return Status::Ok();
    WalkDir(w, *start, rel, /*top=*/true, 0);
    return Status::Ok();
  }
  WalkDir(w, *dir, rel, /*top=*/true, 0);
  return Status::Ok();
}

Result<ListPage> ListPageOf(const BucketStore& store, std::string_view bucket,
                            std::string_view prefix, std::string_view delimiter,
                            std::string_view page_token, int max_results) {
  std::string start_after;
  if (!page_token.empty()) {
    auto decoded = Unhex(page_token);
    if (!decoded) return InvalidArgument("Invalid page token: " + std::string(page_token));
    start_after = std::move(*decoded);
  }
  if (max_results <= 0 || max_results > 1000) max_results = 1000;
  const bool collapse = delimiter == "/";
  ListPage page;
  int count = 0;
  std::string last_prefix;
  std::string resume_after;
  auto add = [&](const std::string& entry, bool is_prefix) {
    if (count == max_results) {
      page.next_page_token = Hex(resume_after);
      return false;
    }
    ++count;
    if (is_prefix) {
      page.prefixes.push_back(entry);
      // Names under a reported prefix all sort below prefix + "\xff" (UTF-8 has no 0xFF byte).
      resume_after = entry + "\xff";
    } else {
      page.names.push_back(entry);
      resume_after = entry;
    }
    return true;
  };
  Status s = WalkObjects(store, bucket, prefix, start_after, collapse,
                         [&](const std::string& name, bool is_prefix) {
                           if (is_prefix || delimiter.empty() || collapse) {
                             return add(name, is_prefix);
                           }
                           size_t pos = name.find(delimiter, prefix.size());
                           if (pos == std::string::npos) return add(name, false);
                           std::string p = name.substr(0, pos + delimiter.size());
                           if (p == last_prefix) return true;
                           last_prefix = p;
                           return add(p, true);
                         });
  if (!s.ok()) return s;
  return page;
}

bool IsFolderName(std::string_view name) {
  return name.size() >= 2 && name.back() == '/' &&
         ValidateObjectName(name.substr(0, name.size() - 1)).ok();
}

Result<ObjectMeta> StatFolder(const BucketStore& store, std::string_view bucket,
                              std::string_view name) {
  if (!IsFolderName(name)) return NotFound(NoSuchObject(bucket, name));
  auto path = ObjectPath(store, bucket, name.substr(0, name.size() - 1));
  if (!path.ok()) return path.status();
  struct stat st {};
  if (::stat(path->c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      !ReadObjectSidecar(store, bucket, name)) {
    return NotFound(NoSuchObject(bucket, name));
  }
  ObjectMeta meta;
  meta.info = InfoFromStat(bucket, name, st);
  meta.info.size = 0;
  meta.has_hashes = true;
  meta.md5 = Md5Of("");
  meta.crc32c = 0;
  meta.content_type = kDefaultContentType;
  return meta;
}

Result<ObjectMeta> MakeFolder(const BucketStore& store, std::string_view bucket,
                              std::string_view name, const Preconditions& pre) {
  if (!IsFolderName(name)) return InvalidArgument("\"" + std::string(name) + "\" is not a folder");
  auto path = ObjectPath(store, bucket, name.substr(0, name.size() - 1));
  if (!path.ok()) return path.status();
  std::lock_guard<std::mutex> lock(CommitMutex());
  std::optional<ObjectMeta> current;
  if (auto cur = StatFolder(store, bucket, name); cur.ok()) current = *cur;
  TRAINYARD_RETURN_IF_ERROR(CheckPreconditions(current, pre));
  struct stat st {};
  if (Status s = MakeDirs(*path);
      !s.ok() || ::stat(path->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return AlreadyExists("cannot create folder \"" + std::string(name) +
                         "\": an object of that name exists");
  }
  // The sidecar marks the placeholder as created (a directory alone is not a "dir/" object).
  ObjectSidecar marker{std::string(name), 0, 0, 0, Md5Of(""), 0, kDefaultContentType};
  TRAINYARD_RETURN_IF_ERROR(WriteObjectSidecar(store, bucket, marker));
  return StatFolder(store, bucket, name);
}

Status RemoveFolder(const BucketStore& store, std::string_view bucket, std::string_view name,
                    const Preconditions& pre) {
  std::lock_guard<std::mutex> lock(CommitMutex());
  auto cur = StatFolder(store, bucket, name);
  if (!cur.ok()) return cur.status();
  TRAINYARD_RETURN_IF_ERROR(CheckPreconditions(*cur, pre));
  std::string path =
      store.root() + "/" + std::string(bucket) + "/" + std::string(name.substr(0, name.size() - 1));
  ::rmdir(path.c_str());  // fails harmlessly while objects remain below it
  ::unlink(ObjectSidecarPath(store, bucket, name).c_str());
  return Status::Ok();
}

std::string GuessContentType(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {".json", "application/json"},  {".txt", "text/plain"},
      {".log", "text/plain"},         {".csv", "text/csv"},
      {".html", "text/html"},         {".yaml", "application/x-yaml"},
      {".yml", "application/x-yaml"}, {".tar.gz", "application/x-tar"},
      {".tgz", "application/x-tar"},  {".gz", "application/gzip"},
      {".tar", "application/x-tar"},  {".zip", "application/zip"},
      {".whl", "application/zip"},    {".png", "image/png"},
      {".jpg", "image/jpeg"},         {".jpeg", "image/jpeg"},
      {".py", "text/x-python"},       {".pb", "application/octet-stream"},
  };
  for (const auto& [ext, type] : kTypes) {
    if (EndsWith(name, ext)) return std::string(type);
  }
  return kDefaultContentType;
}

}  // namespace trainyard::storage::internal
