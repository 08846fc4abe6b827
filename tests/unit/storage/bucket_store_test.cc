#include "trainyard/storage/bucket_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hashing.h"
#include "object_meta.h"
#include "test_dir.h"
#include "trainyard/core/util.h"

namespace trainyard::storage {
namespace {

namespace fs = std::filesystem;

void WriteRaw(const std::string& path, const std::string& data) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

std::vector<std::string> Names(const std::vector<ObjectInfo>& infos) {
  std::vector<std::string> out;
  for (const auto& i : infos) out.push_back(i.name);
  return out;
}

class BucketStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_TRUE(store_.CreateBucket("bkt").ok());
  }
  std::string Root() const { return dir_.path() + "/data"; }

  testing::TempDir dir_;
  BucketStore store_{dir_.path() + "/data"};
};

// --- Names and locations ------------------------------------------------------------------------

TEST(BucketNameTest, AcceptsGcsNames) {
  for (const std::string& name :
       std::vector<std::string>{"abc", "my-bucket_1", "a.b.c", "0bucket9", std::string(63, 'a')}) {
    EXPECT_TRUE(ValidateBucketName(name).ok()) << name;
  }
}

TEST(BucketNameTest, RejectsBadNames) {
  for (const char* name : {"ab", "Upper", "-start", "end-", "has space", "a/b", "goog-x", "a..b",
                           ".meta", ".tmp", ""}) {
    Status s = ValidateBucketName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_FALSE(ValidateBucketName(std::string(64, 'a')).ok());
}

TEST(ObjectNameTest, AcceptsOrdinaryNames) {
  for (const char* name : {"a", "dir/file.txt", "a b/c+d", ".hidden", "x/..y/z.", "...", "é/ü"}) {
    EXPECT_TRUE(ValidateObjectName(name).ok()) << name;
  }
}

TEST(ObjectNameTest, RejectsEscapingOrEmptySegments) {
  for (const std::string& name :
       std::vector<std::string>{"", "..", ".", "../x", "a/../b", "a/./b", "a/..", "/abs", "a//b",
                                "a/", std::string("a\0b", 3), "a\nb", "a\rb"}) {
    Status s = ValidateObjectName(name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_FALSE(ValidateObjectName(std::string(1025, 'a')).ok());
  EXPECT_TRUE(ValidateObjectName(std::string(1024, 'a')).ok());
}

TEST(ParseLocationTest, ParsesGcsUris) {
  auto loc = ParseLocation("gs://bkt/dir/obj.tar.gz");
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->kind, Location::Kind::kBucket);
  EXPECT_EQ(loc->bucket, "bkt");
  EXPECT_EQ(loc->object, "dir/obj.tar.gz");

  auto root = ParseLocation("gs://bkt");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->object, "");
  EXPECT_EQ(ParseLocation("gs://bkt/").value().object, "");
  EXPECT_EQ(ParseLocation("gs://bkt/out/").value().object, "out");
}

TEST(ParseLocationTest, ParsesLocalPaths) {
  auto abs = ParseLocation("/tmp/x/../y/");
  ASSERT_TRUE(abs.ok());
  EXPECT_EQ(abs->kind, Location::Kind::kLocal);
  EXPECT_EQ(abs->path, "/tmp/y");
  EXPECT_EQ(ParseLocation("file:///srv/a%20b").value().path, "/srv/a b");
  EXPECT_EQ(ParseLocation("file://localhost/srv").value().path, "/srv");
}

TEST(ParseLocationTest, RejectsBadLocationsNamingTheProblem) {
  auto bad_bucket = ParseLocation("gs://B/x");
  EXPECT_EQ(bad_bucket.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_bucket.status().message().find("bucket name \"B\""), std::string::npos);
  auto escaping = ParseLocation("gs://bkt/a/../../etc");
  EXPECT_EQ(escaping.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(escaping.status().message().find("\"..\""), std::string::npos);
  EXPECT_FALSE(ParseLocation("relative/path").ok());
  EXPECT_FALSE(ParseLocation("file://host/x").ok());
  EXPECT_FALSE(ParseLocation("s3://bkt/x").ok());
  EXPECT_FALSE(ParseLocation("gs://bkt//x").ok());
}

// --- Buckets ------------------------------------------------------------------------------------

TEST_F(BucketStoreTest, CreatesGetsAndListsBuckets) {
  EXPECT_EQ(store_.CreateBucket("bkt").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store_.CreateBucket("Bad").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(store_.CreateBucket("another").ok());
  EXPECT_TRUE(fs::is_directory(Root() + "/bkt"));
  auto got = store_.GetBucket("bkt");
  ASSERT_TRUE(got.ok());
  EXPECT_GT(got->created, 0);
  EXPECT_EQ(store_.GetBucket("nope").status().code(), StatusCode::kNotFound);
  auto list = store_.ListBuckets();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);  // .meta and .tmp are not buckets
  EXPECT_EQ((*list)[0].name, "another");
  EXPECT_EQ((*list)[1].name, "bkt");
  EXPECT_TRUE(store_.BucketExists("bkt"));
  EXPECT_FALSE(store_.BucketExists("nope"));
}

TEST_F(BucketStoreTest, DirectoryMadeByHandIsABucket) {
  fs::create_directories(Root() + "/manual");
  EXPECT_TRUE(store_.BucketExists("manual"));
  auto got = store_.GetBucket("manual");
  ASSERT_TRUE(got.ok());
  EXPECT_GT(got->created, 0);
}

// --- Objects ------------------------------------------------------------------------------------

TEST_F(BucketStoreTest, WritesReadsStatsAndDeletesObjects) {
  auto info = store_.WriteObject("bkt", "dir/a.txt", "hello");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->size, 5);
  EXPECT_GT(info->generation, 0);
  EXPECT_EQ(info->generation, info->updated);
  // The object is the real file at <root>/<bucket>/<name>.
  EXPECT_EQ(ReadFile(Root() + "/bkt/dir/a.txt").value(), "hello");
  EXPECT_EQ(store_.ReadObject("bkt", "dir/a.txt").value(), "hello");
  auto stat = store_.StatObject("bkt", "dir/a.txt");
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->generation, info->generation);

  auto again = store_.WriteObject("bkt", "dir/a.txt", "hello again");
  ASSERT_TRUE(again.ok());
  EXPECT_GT(again->generation, info->generation);

  ASSERT_TRUE(store_.DeleteObject("bkt", "dir/a.txt").ok());
  EXPECT_EQ(store_.StatObject("bkt", "dir/a.txt").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_.DeleteObject("bkt", "dir/a.txt").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_.ReadObject("bkt", "dir/a.txt").status().code(), StatusCode::kNotFound);
}

TEST_F(BucketStoreTest, RejectsUnsafeNamesAndMissingBuckets) {
  EXPECT_EQ(store_.WriteObject("bkt", "../escape", "x").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.WriteObject("bkt", "/abs", "x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.WriteObject("nope", "a", "x").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(Root() + "/escape"));
}

TEST_F(BucketStoreTest, RefusesSymlinksLeavingTheBucket) {
  testing::TempDir outside;
  WriteRaw(outside.path() + "/secret", "s3cret");
  fs::create_directory_symlink(outside.path(), Root() + "/bkt/link");
  fs::create_symlink(outside.path() + "/secret", Root() + "/bkt/file-link");
  EXPECT_EQ(store_.ReadObject("bkt", "link/secret").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.ReadObject("bkt", "file-link").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.WriteObject("bkt", "link/new", "x").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(outside.path() + "/new"));
  EXPECT_FALSE(store_.LocalPathForUri("gs://bkt/link/secret").ok());
  auto list = store_.ListObjects("bkt", "", "", 0);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
}

TEST_F(BucketStoreTest, FollowsSymlinksInsideTheBucket) {
  WriteRaw(Root() + "/bkt/real.txt", "data");
  fs::create_symlink(Root() + "/bkt/real.txt", Root() + "/bkt/alias.txt");
  EXPECT_EQ(store_.ReadObject("bkt", "alias.txt").value(), "data");
  EXPECT_EQ(Names(store_.ListObjects("bkt", "", "", 0).value()),
            (std::vector<std::string>{"alias.txt", "real.txt"}));
}

TEST_F(BucketStoreTest, ListsInByteOrderWithPrefixStartAfterAndLimit) {
  for (const char* name : {"a/b", "a-c", "a/c/d", "b", "a0", "ab/x"}) {
    ASSERT_TRUE(store_.WriteObject("bkt", name, name).ok()) << name;
  }
  EXPECT_EQ(Names(store_.ListObjects("bkt", "", "", 0).value()),
            (std::vector<std::string>{"a-c", "a/b", "a/c/d", "a0", "ab/x", "b"}));
  EXPECT_EQ(Names(store_.ListObjects("bkt", "a/", "", 0).value()),
            (std::vector<std::string>{"a/b", "a/c/d"}));
  EXPECT_EQ(Names(store_.ListObjects("bkt", "a", "a/b", 0).value()),
            (std::vector<std::string>{"a/c/d", "a0", "ab/x"}));
  EXPECT_EQ(Names(store_.ListObjects("bkt", "", "", 2).value()),
            (std::vector<std::string>{"a-c", "a/b"}));
  EXPECT_TRUE(store_.ListObjects("bkt", "zzz/", "", 0).value().empty());
  EXPECT_EQ(store_.ListObjects("nope", "", "", 0).status().code(), StatusCode::kNotFound);
}

TEST_F(BucketStoreTest, EmptyDirectoriesAreNotObjects) {
  fs::create_directories(Root() + "/bkt/empty/deeper");
  EXPECT_TRUE(store_.ListObjects("bkt", "", "", 0).value().empty());
  EXPECT_EQ(store_.StatObject("bkt", "empty").status().code(), StatusCode::kNotFound);
}

TEST_F(BucketStoreTest, CommitsStreamedTempFile) {
  std::string temp = store_.TempDir() + "/upload-test";
  WriteRaw(temp, "streamed");
  auto info = store_.CommitObjectFile("bkt", "pkg/trainer.tar.gz", temp);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(store_.ReadObject("bkt", "pkg/trainer.tar.gz").value(), "streamed");
}

// A daemon killed mid-upload leaves its temp file; the next one removes such files at start
// and keeps resumable sessions, which a client may still finish (issue 17).
TEST_F(BucketStoreTest, RemovesAbandonedUploadsAndKeepsResumableSessions) {
  WriteRaw(store_.TempDir() + "/upload-a1b2c3", "half an upload");
  WriteRaw(store_.TempDir() + "/upload-d4e5f6", "another");
  WriteRaw(store_.TempDir() + "/session-0123.json", "{}");
  WriteRaw(store_.TempDir() + "/session-0123.data", "resumable bytes");
  ASSERT_TRUE(store_.WriteObject("bkt", "upload-kept", "an object, not a temp file").ok());
  EXPECT_EQ(store_.RemoveAbandonedUploads(), 2);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(store_.TempDir())) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"session-0123.data", "session-0123.json"}));
  EXPECT_EQ(store_.ReadObject("bkt", "upload-kept").value(), "an object, not a temp file");
  EXPECT_EQ(store_.RemoveAbandonedUploads(), 0);
}

TEST_F(BucketStoreTest, ObjectAndDirectoryOfTheSameNameConflict) {
  ASSERT_TRUE(store_.WriteObject("bkt", "a/b", "x").ok());
  EXPECT_EQ(store_.WriteObject("bkt", "a", "y").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store_.WriteObject("bkt", "a/b/c", "y").status().code(), StatusCode::kAlreadyExists);
}

TEST_F(BucketStoreTest, LocalPathForUriMapsPackageObjectsOnly) {
  ASSERT_TRUE(store_.WriteObject("bkt", "x/pkg.tar.gz", "p").ok());
  EXPECT_EQ(store_.LocalPathForUri("gs://bkt/x/pkg.tar.gz").value(), Root() + "/bkt/x/pkg.tar.gz");
  EXPECT_EQ(store_.LocalPathForUri("gs://bkt/x/missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_.LocalPathForUri("gs://nobucket/x").status().code(), StatusCode::kNotFound);
  // A "folder" and the bucket itself are not package files.
  EXPECT_FALSE(store_.LocalPathForUri("gs://bkt/x").ok());
  EXPECT_EQ(store_.LocalPathForUri("gs://bkt").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(BucketStoreTest, LocalPathForUriNeverReachesHostFiles) {
  // Host paths are refused before anything is looked at, with the same answer whether the file
  // exists or not (a create must not reveal /etc/shadow).
  for (const char* uri : {"/dev/zero", "/etc/shadow", "/no/such/file", "file:///etc/passwd",
                          "file:///no/such/file", "relative/path"}) {
    auto r = store_.LocalPathForUri(uri);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << uri;
    EXPECT_EQ(r.status().message(), "\"" + std::string(uri) + "\" is not a gs:// URI");
  }
}

// --- Sidecar metadata
// -----------------------------------------------------------------------------

TEST_F(BucketStoreTest, FilesWrittenOnDiskGetChecksumsLazily) {
  WriteRaw(Root() + "/bkt/job/model.json", "{\"w\":1}");
  auto meta = internal::StatObjectMeta(store_, "bkt", "job/model.json");
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_TRUE(meta->has_hashes);
  EXPECT_EQ(meta->md5, internal::Md5Of("{\"w\":1}"));
  EXPECT_EQ(meta->crc32c, internal::Crc32cOf("{\"w\":1}"));
  EXPECT_EQ(meta->content_type, "application/json");
  // Cached: a second stat without hashing still reports them.
  auto cached = internal::StatObjectMeta(store_, "bkt", "job/model.json", false);
  ASSERT_TRUE(cached.ok());
  EXPECT_TRUE(cached->has_hashes);

  // Rewritten in place by a trainer: the cache no longer applies.
  WriteRaw(Root() + "/bkt/job/model.json", "{\"w\":22}");
  struct timespec times[2] = {{0, UTIME_NOW}, {1, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (Root() + "/bkt/job/model.json").c_str(), times, 0), 0);
  auto stale = internal::StatObjectMeta(store_, "bkt", "job/model.json", false);
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->has_hashes);
  auto fresh = internal::StatObjectMeta(store_, "bkt", "job/model.json");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->md5, internal::Md5Of("{\"w\":22}"));
  EXPECT_EQ(fresh->info.generation, 1000000);
}

TEST_F(BucketStoreTest, PreconditionsGuardCommits) {
  auto first = internal::UploadFile::Create(store_);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->Append("v1", 2).ok());
  auto d1 = first->Finish();
  ASSERT_TRUE(d1.ok());
  internal::Preconditions must_not_exist;
  must_not_exist.if_generation_match = 0;
  auto created =
      internal::CommitFile(store_, "bkt", "obj", first->path(), "text/plain", *d1, must_not_exist);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  first->Release();
  EXPECT_EQ(created->content_type, "text/plain");

  std::string temp = store_.TempDir() + "/second";
  WriteRaw(temp, "v2");
  auto refused = internal::CommitFile(store_, "bkt", "obj", temp, "", std::nullopt, must_not_exist);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  internal::Preconditions match;
  match.if_generation_match = created->info.generation;
  auto replaced = internal::CommitFile(store_, "bkt", "obj", temp, "", std::nullopt, match);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_EQ(replaced->content_type, "application/octet-stream");
  EXPECT_EQ(replaced->md5, internal::Md5Of("v2"));

  EXPECT_EQ(internal::DeleteObjectIf(store_, "bkt", "obj", match).code(),
            StatusCode::kFailedPrecondition);
  match.if_generation_match = replaced->info.generation;
  EXPECT_TRUE(internal::DeleteObjectIf(store_, "bkt", "obj", match).ok());
}

TEST_F(BucketStoreTest, DeleteBucketOnlyWhenEmpty) {
  ASSERT_TRUE(store_.WriteObject("bkt", "a/b", "x").ok());
  EXPECT_EQ(internal::DeleteBucket(store_, "bkt").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_.DeleteObject("bkt", "a/b").ok());
  EXPECT_TRUE(internal::DeleteBucket(store_, "bkt").ok());
  EXPECT_FALSE(store_.BucketExists("bkt"));
  EXPECT_EQ(internal::DeleteBucket(store_, "bkt").code(), StatusCode::kNotFound);
}

TEST_F(BucketStoreTest, PagesWithDelimiter) {
  for (const char* name : {"top1", "d1/x", "d1/y/z", "d2/x", "top2", "e/"}) {
    if (std::string(name) == "e/") {
      fs::create_directories(Root() + "/bkt/e");  // empty: no prefix
      continue;
    }
    ASSERT_TRUE(store_.WriteObject("bkt", name, "x").ok());
  }
  std::vector<std::string> names, prefixes;
  std::string token;
  int pages = 0;
  do {
    auto page = internal::ListPageOf(store_, "bkt", "", "/", token, 2);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_LE(page->names.size() + page->prefixes.size(), 2u);
    names.insert(names.end(), page->names.begin(), page->names.end());
    prefixes.insert(prefixes.end(), page->prefixes.begin(), page->prefixes.end());
    token = page->next_page_token;
    ASSERT_LT(++pages, 10);
  } while (!token.empty());
  EXPECT_EQ(names, (std::vector<std::string>{"top1", "top2"}));
  EXPECT_EQ(prefixes, (std::vector<std::string>{"d1/", "d2/"}));
  EXPECT_EQ(pages, 2);

  // A delimiter other than "/" groups on the fly.
  auto dash = internal::ListPageOf(store_, "bkt", "d", "1", "", 0);
  ASSERT_TRUE(dash.ok());
  EXPECT_EQ(dash->prefixes, (std::vector<std::string>{"d1"}));
  EXPECT_EQ(dash->names, (std::vector<std::string>{"d2/x"}));
  EXPECT_EQ(internal::ListPageOf(store_, "bkt", "", "", "zz", 0).status().code(),
            StatusCode::kInvalidArgument);
}

// --- Job dirs
// -------------------------------------------------------------------------------------

TEST_F(BucketStoreTest, ValidateJobDirAcceptsBucketLocationsWithoutCreatingAnything) {
  EXPECT_TRUE(store_.ValidateJobDir("gs://bkt/jobs/out/").ok());
  EXPECT_TRUE(store_.ValidateJobDir("gs://bkt").ok());
  fs::create_directories(Root() + "/bkt/existing");
  EXPECT_TRUE(store_.ValidateJobDir("gs://bkt/existing/run1").ok());
  // No directory and no probe file: the check runs before the create is accepted.
  EXPECT_FALSE(fs::exists(Root() + "/bkt/jobs"));
  EXPECT_TRUE(fs::is_empty(Root() + "/bkt/existing"));
}

TEST_F(BucketStoreTest, ValidateJobDirRefusesHostPathsWithoutTouchingThem) {
  std::string local = dir_.path() + "/local/job";
  for (const std::string& uri :
       {local, "file://" + local, std::string("/sys/fs/cgroup/x"), std::string("relative")}) {
    Status s = store_.ValidateJobDir(uri);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << uri;
    EXPECT_EQ(s.message(), "jobDir " + uri + ": must be a gs:// URI (gs://BUCKET/PATH)");
  }
  EXPECT_FALSE(fs::exists(dir_.path() + "/local"));
}

TEST_F(BucketStoreTest, LocalJobDirsOnlyBelowTheConfiguredRoots) {
  // As the daemon lays it out: <data dir>/buckets, job-dir roots elsewhere.
  BucketStore store(dir_.path() + "/dd/buckets");
  fs::create_directories(dir_.path() + "/dd/buckets/bkt");
  const std::string roots = dir_.path() + "/roots";
  const std::string allowed = roots + "/allowed";
  fs::create_directories(allowed);
  store.SetLocalJobDirRoots({allowed});
  // Below a root: accepted, nothing created (the launcher makes it when replicas start).
  EXPECT_TRUE(store.ValidateJobDir(allowed + "/run1/out").ok());
  EXPECT_TRUE(store.ValidateJobDir("file://" + allowed + "/run2").ok());
  EXPECT_TRUE(store.ValidateJobDir(allowed).ok());
  EXPECT_FALSE(fs::exists(allowed + "/run1"));
  // Outside every root, also through "..": refused with one message whether the path exists.
  for (const std::string& uri : {std::string("/etc/shadow"), std::string("/sys/fs/cgroup/x"),
                                 roots + "/other", allowed + "/../other"}) {
    Status s = store.ValidateJobDir(uri);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << uri;
    EXPECT_NE(s.message().find("job-dir roots"), std::string::npos) << s.message();
  }
  EXPECT_EQ(store.ValidateJobDir("relative").code(), StatusCode::kInvalidArgument);
  // A symlink below a root that leads outside it is refused.
  fs::create_directories(roots + "/outside");
  fs::create_directory_symlink(roots + "/outside", allowed + "/escape");
  EXPECT_EQ(store.ValidateJobDir(allowed + "/escape/out").code(), StatusCode::kInvalidArgument);
  // A file in the way.
  std::ofstream(allowed + "/file") << "x";
  Status in_way = store.ValidateJobDir(allowed + "/file/out");
  EXPECT_NE(in_way.message().find("a file is in the way"), std::string::npos) << in_way.message();
  // The daemon's data dir (the bucket store's parent) is never a job dir, even below a root.
  store.SetLocalJobDirRoots({dir_.path()});
  Status data = store.ValidateJobDir(dir_.path() + "/dd/buckets/bkt/x");
  EXPECT_NE(data.message().find("data directory"), std::string::npos) << data.message();
}

TEST_F(BucketStoreTest, ValidateJobDirNamesTheProblem) {
  Status missing = store_.ValidateJobDir("gs://nobucket/out");
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message(), "jobDir gs://nobucket/out: bucket \"nobucket\" does not exist");

  Status bad = store_.ValidateJobDir("gs://bkt/../x");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(StartsWith(bad.message(), "jobDir gs://bkt/../x: ")) << bad.message();

  ASSERT_TRUE(store_.WriteObject("bkt", "file", "x").ok());
  Status not_dir = store_.ValidateJobDir("gs://bkt/file");
  EXPECT_EQ(not_dir.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(not_dir.message(), "jobDir gs://bkt/file: an object has this name");
  Status under_file = store_.ValidateJobDir("gs://bkt/file/out");
  EXPECT_EQ(under_file.message(),
            "jobDir gs://bkt/file/out: an object is in the way (gs://bkt/file)");

  if (::geteuid() != 0) {  // root can write anywhere
    std::string ro = Root() + "/bkt/ro";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    Status not_writable = store_.ValidateJobDir("gs://bkt/ro/out");
    EXPECT_EQ(not_writable.code(), StatusCode::kInvalidArgument);
    fs::permissions(ro, fs::perms::owner_all);
  }
}

}  // namespace
}  // namespace trainyard::storage
