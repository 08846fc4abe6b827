#include "trainyard/storage/storage_http.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "hashing.h"
#include "test_dir.h"
#include "trainyard/core/util.h"

namespace trainyard::storage {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class StorageHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_TRUE(store_.CreateBucket("bkt").ok());
    RegisterStorageRoutes(server_, store_, "test-project");
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_TRUE(server_.is_running());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(30, 0);
  }

  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  std::string Root() const { return dir_.path() + "/data"; }

  static json Json(const httplib::Result& r) {
    if (!r) return json();
    return json::parse(r->body, nullptr, false);
  }

  // Asserts GCS's error shape and returns the reason.
  static std::string ErrorReason(const httplib::Result& r, int code) {
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, code) << r->body;
    json j = Json(r);
    EXPECT_TRUE(j.contains("error")) << r->body;
    if (!j.contains("error")) return {};
    EXPECT_EQ(j["error"]["code"], code);
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_EQ(j["error"]["errors"][0]["domain"], "global");
    EXPECT_EQ(j["error"]["errors"][0]["message"], j["error"]["message"]);
    return j["error"]["errors"][0]["reason"].get<std::string>();
  }

  json UploadMedia(const std::string& name_enc, const std::string& data,
                   const std::string& type = "text/plain") {
    auto r = client_->Post("/upload/storage/v1/b/bkt/o?uploadType=media&name=" + name_enc, data,
                           type.c_str());
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return Json(r);
  }

  testing::TempDir dir_;
  BucketStore store_{dir_.path() + "/data"};
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

// --- Buckets ------------------------------------------------------------------------------------

TEST_F(StorageHttpTest, BucketInsertGetListDelete) {
  auto created = client_->Post("/storage/v1/b?project=p", R"({"name":"newb"})", "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 200) << created->body;
  EXPECT_EQ(Json(created)["kind"], "storage#bucket");
  EXPECT_EQ(Json(created)["name"], "newb");
  EXPECT_TRUE(fs::is_directory(Root() + "/newb"));

  EXPECT_EQ(
      ErrorReason(
          client_->Post("/storage/v1/b?project=p", R"({"name":"newb"})", "application/json"), 409),
      "conflict");
  EXPECT_EQ(ErrorReason(client_->Post("/storage/v1/b?project=p", R"({"name":"Bad Name"})",
                                      "application/json"),
                        400),
            "invalid");

  auto got = client_->Get("/storage/v1/b/newb?alt=json&prettyPrint=false");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(Json(got)["id"], "newb");
  EXPECT_EQ(ErrorReason(client_->Get("/storage/v1/b/missing"), 404), "notFound");

  // Buckets are listed per project; one made without a project is the default project's.
  auto list = client_->Get("/storage/v1/b?project=p");
  ASSERT_TRUE(list);
  json items = Json(list)["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["name"], "newb");
  auto defaults = client_->Get("/storage/v1/b");
  ASSERT_TRUE(defaults);
  ASSERT_EQ(Json(defaults)["items"].size(), 1u);
  EXPECT_EQ(Json(defaults)["items"][0]["name"], "bkt");

  ASSERT_TRUE(store_.WriteObject("newb", "x", "1").ok());
  EXPECT_EQ(ErrorReason(client_->Delete("/storage/v1/b/newb"), 409), "conflict");
  ASSERT_TRUE(store_.DeleteObject("newb", "x").ok());
  auto deleted = client_->Delete("/storage/v1/b/newb");
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 204);
  EXPECT_FALSE(store_.BucketExists("newb"));
}

// --- Uploads ------------------------------------------------------------------------------------

TEST_F(StorageHttpTest, MediaUploadReturnsObjectResource) {
  json obj = UploadMedia("dir%2Fa.txt", "hello");
  EXPECT_EQ(obj["kind"], "storage#object");
  EXPECT_EQ(obj["name"], "dir/a.txt");
  EXPECT_EQ(obj["bucket"], "bkt");
  EXPECT_EQ(obj["size"], "5");
  EXPECT_EQ(obj["contentType"], "text/plain");
  EXPECT_EQ(obj["metageneration"], "1");
  EXPECT_EQ(obj["storageClass"], "STANDARD");
  EXPECT_EQ(obj["md5Hash"], internal::GcsMd5(internal::Md5Of("hello")));
  EXPECT_EQ(obj["crc32c"], internal::GcsCrc32c(internal::Crc32cOf("hello")));
  ASSERT_TRUE(obj["generation"].is_string());
  EXPECT_EQ(obj["id"], "bkt/dir/a.txt/" + obj["generation"].get<std::string>());
  EXPECT_NE(obj["selfLink"].get<std::string>().find("/storage/v1/b/bkt/o/dir%2Fa.txt"),
            std::string::npos);
  EXPECT_NE(obj["mediaLink"].get<std::string>().find("alt=media"), std::string::npos);
  // RFC 3339 with milliseconds.
  std::string created = obj["timeCreated"];
  ASSERT_EQ(created.size(), 24u) << created;
  EXPECT_EQ(created[19], '.');
  EXPECT_EQ(created.back(), 'Z');
  // The bytes are the real file.
  EXPECT_EQ(ReadFile(Root() + "/bkt/dir/a.txt").value(), "hello");

  auto meta = client_->Get("/storage/v1/b/bkt/o/dir%2Fa.txt");
  ASSERT_TRUE(meta);
  EXPECT_EQ(meta->status, 200);
  EXPECT_EQ(Json(meta)["md5Hash"], obj["md5Hash"]);
  EXPECT_EQ(Json(meta)["generation"], obj["generation"]);
}

TEST_F(StorageHttpTest, MultipartUploadAsApitoolsSendsIt) {
  const std::string media("tar\0bytes\n--", 12);
  const std::string body =
      "--===============7330845974216740156==\nContent-Type: application/json\n"
      "MIME-Version: 1.0\n\n{\"name\": \"staging/job1/pkg.tar.gz\"}\n"
      "--===============7330845974216740156==\nContent-Type: application/x-tar\n"
      "MIME-Version: 1.0\nContent-Transfer-Encoding: binary\n\n" +
      media + "\n--===============7330845974216740156==--";
  auto r = client_->Post("/upload/storage/v1/b/bkt/o?alt=json&uploadType=multipart", body,
                         "multipart/related; boundary='===============7330845974216740156=='");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json obj = Json(r);
  EXPECT_EQ(obj["name"], "staging/job1/pkg.tar.gz");
  EXPECT_EQ(obj["contentType"], "application/x-tar");
  EXPECT_EQ(obj["size"], std::to_string(media.size()));
  EXPECT_EQ(obj["md5Hash"], internal::GcsMd5(internal::Md5Of(media)));
  EXPECT_EQ(store_.ReadObject("bkt", "staging/job1/pkg.tar.gz").value(), media);
}

TEST_F(StorageHttpTest, MultipartUploadWithCrlfAndChecksumMismatch) {
  auto body = [](const std::string& md5) {
    return "--b1\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
           "{\"name\":\"m.bin\",\"contentType\":\"application/x-thing\",\"md5Hash\":\"" +
           md5 + "\"}\r\n--b1\r\n\r\npayload\r\n--b1--\r\n";
  };
  auto ok = client_->Post("/upload/storage/v1/b/bkt/o?uploadType=multipart",
                          body(internal::GcsMd5(internal::Md5Of("payload"))),
                          "multipart/related; boundary=b1");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(Json(ok)["contentType"], "application/x-thing");
  EXPECT_EQ(Json(ok)["size"], "7");
  EXPECT_EQ(
      ErrorReason(client_->Post("/upload/storage/v1/b/bkt/o?uploadType=multipart",
                                body("AAAAAAAAAAAAAAAAAAAAAA=="), "multipart/related; boundary=b1"),
                  400),
      "invalid");
}

TEST_F(StorageHttpTest, ResumableUploadInTwoChunks) {
  std::string data(300 * 1024, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 + 7);
  httplib::Headers init_headers = {{"X-Upload-Content-Type", "application/octet-stream"},
                                   {"X-Upload-Content-Length", std::to_string(data.size())},
                                   {"Authorization", "Bearer ignored"}};
  auto init = client_->Post("/upload/storage/v1/b/bkt/o?uploadType=resumable", init_headers,
                            R"({"name":"big/blob.bin"})", "application/json; charset=UTF-8");
  ASSERT_TRUE(init);
  ASSERT_EQ(init->status, 200) << init->body;
  std::string location = init->get_header_value("Location");
  ASSERT_NE(location.find("upload_id="), std::string::npos) << location;
  std::string prefix = "http://127.0.0.1:" + std::to_string(port_);
  ASSERT_TRUE(StartsWith(location, prefix)) << location;
  std::string session = location.substr(prefix.size());

  const size_t first = 256 * 1024;
  auto chunk1 =
      client_->Put(session, {{"Content-Range", "bytes 0-" + std::to_string(first - 1) + "/*"}},
                   data.substr(0, first), "application/octet-stream");
  ASSERT_TRUE(chunk1);
  EXPECT_EQ(chunk1->status, 308);
  EXPECT_EQ(chunk1->get_header_value("Range"), "bytes=0-" + std::to_string(first - 1));

  auto query = client_->Put(session, {{"Content-Range", "bytes */*"}}, "", "text/plain");
  ASSERT_TRUE(query);
  EXPECT_EQ(query->status, 308);
  EXPECT_EQ(query->get_header_value("Range"), "bytes=0-" + std::to_string(first - 1));

  std::string range = "bytes " + std::to_string(first) + "-" + std::to_string(data.size() - 1) +
                      "/" + std::to_string(data.size());
  auto chunk2 = client_->Put(session, {{"Content-Range", range}}, data.substr(first),
                             "application/octet-stream");
  ASSERT_TRUE(chunk2);
  ASSERT_EQ(chunk2->status, 200) << chunk2->body;
  json obj = Json(chunk2);
  EXPECT_EQ(obj["name"], "big/blob.bin");
  EXPECT_EQ(obj["size"], std::to_string(data.size()));
  EXPECT_EQ(obj["md5Hash"], internal::GcsMd5(internal::Md5Of(data)));
  EXPECT_EQ(obj["crc32c"], internal::GcsCrc32c(internal::Crc32cOf(data)));
  EXPECT_EQ(store_.ReadObject("bkt", "big/blob.bin").value(), data);

  // A retried final request gets the same answer.
  auto again = client_->Put(session, {{"Content-Range", "bytes */" + std::to_string(data.size())}},
                            "", "text/plain");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(Json(again)["generation"], obj["generation"]);
}

TEST_F(StorageHttpTest, ResumableUploadSkipsResentBytesAndRejectsGaps) {
  auto init = client_->Post("/upload/storage/v1/b/bkt/o?uploadType=resumable&name=r.txt", "",
                            "application/json");
  ASSERT_TRUE(init);
  ASSERT_EQ(init->status, 200);
  std::string location = init->get_header_value("Location");
  std::string session = location.substr(location.find("/upload/"));
  auto c1 = client_->Put(session, {{"Content-Range", "bytes 0-3/*"}}, "abcd", "text/plain");
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->status, 308);
  EXPECT_EQ(ErrorReason(
                client_->Put(session, {{"Content-Range", "bytes 6-7/*"}}, "gh", "text/plain"), 400),
            "invalid");
  // A range ending at INT64_MAX (its length would overflow) is refused before the body is read;
  // what was received stays.
  EXPECT_EQ(ErrorReason(client_->Put(session, {{"Content-Range", "bytes 0-9223372036854775807/*"}},
                                     "abcd", "text/plain"),
                        400),
            "invalid");
  auto c2 = client_->Put(session, {{"Content-Range", "bytes 2-5/6"}}, "cdef", "text/plain");
  ASSERT_TRUE(c2);
  ASSERT_EQ(c2->status, 200) << c2->body;
  EXPECT_EQ(store_.ReadObject("bkt", "r.txt").value(), "abcdef");
  EXPECT_EQ(ErrorReason(client_->Put("/upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id="
                                     "0123456789abcdef0123456789abcdef",
                                     {{"Content-Range", "bytes */*"}}, "", "text/plain"),
                        404),
            "notFound");
}

TEST_F(StorageHttpTest, LargeObjectRoundTripsQuickly) {
  std::string data(20 * 1024 * 1024, '\0');
  for (size_t i = 0; i < data.size(); i += 4096) data[i] = static_cast<char>(i / 4096);
  auto start = std::chrono::steady_clock::now();
  json obj = UploadMedia("large.bin", data, "application/octet-stream");
  EXPECT_EQ(obj["size"], std::to_string(data.size()));
  EXPECT_EQ(obj["md5Hash"], internal::GcsMd5(internal::Md5Of(data)));
  auto down = client_->Get("/download/storage/v1/b/bkt/o/large.bin?alt=media");
  ASSERT_TRUE(down);
  ASSERT_EQ(down->status, 200);
  EXPECT_EQ(down->body.size(), data.size());
  EXPECT_TRUE(down->body == data);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(20));
}

// --- Downloads ----------------------------------------------------------------------------------

TEST_F(StorageHttpTest, MediaDownloadWithRanges) {
  UploadMedia("r.txt", "0123456789");
  auto full = client_->Get("/storage/v1/b/bkt/o/r.txt?alt=media");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 200);
  EXPECT_EQ(full->body, "0123456789");
  EXPECT_EQ(full->get_header_value("Content-Type"), "text/plain");
  EXPECT_EQ(full->get_header_value("X-Goog-Hash"),
            "crc32c=" + internal::GcsCrc32c(internal::Crc32cOf("0123456789")) +
                ",md5=" + internal::GcsMd5(internal::Md5Of("0123456789")));

  auto part = client_->Get("/storage/v1/b/bkt/o/r.txt?alt=media", {{"Range", "bytes=2-5"}});
  ASSERT_TRUE(part);
  EXPECT_EQ(part->status, 206);
  EXPECT_EQ(part->body, "2345");
  EXPECT_EQ(part->get_header_value("Content-Range"), "bytes 2-5/10");

  auto tail = client_->Get("/download/storage/v1/b/bkt/o/r.txt?alt=media", {{"Range", "bytes=-3"}});
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->status, 206);
  EXPECT_EQ(tail->body, "789");

  auto open_end = client_->Get("/storage/v1/b/bkt/o/r.txt?alt=media", {{"Range", "bytes=7-"}});
  ASSERT_TRUE(open_end);
  EXPECT_EQ(open_end->status, 206);
  EXPECT_EQ(open_end->body, "789");

  auto beyond = client_->Get("/storage/v1/b/bkt/o/r.txt?alt=media", {{"Range", "bytes=20-30"}});
  ASSERT_TRUE(beyond);
  EXPECT_EQ(beyond->status, 416);
  EXPECT_EQ(beyond->get_header_value("Content-Range"), "bytes */10");
  EXPECT_EQ(Json(beyond)["error"]["message"], "The requested range cannot be satisfied.");
  // Several ranges: the whole object, as GCS answers (no multipart/byteranges).
  auto multi = client_->Get("/storage/v1/b/bkt/o/r.txt?alt=media", {{"Range", "bytes=0-1,4-5,-2"}});
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->status, 200);
  EXPECT_EQ(multi->body, "0123456789");
  EXPECT_FALSE(multi->has_header("Content-Range"));
  UploadMedia("empty", "");
  auto empty = client_->Get("/storage/v1/b/bkt/o/empty?alt=media");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 200);
  EXPECT_EQ(empty->body, "");
  auto head = client_->Head("/storage/v1/b/bkt/o/r.txt?alt=media");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->get_header_value("Content-Length"), "10");
}

TEST_F(StorageHttpTest, FilesWrittenOnDiskAreServed) {
  fs::create_directories(Root() + "/bkt/job/out");
  std::ofstream(Root() + "/bkt/job/out/metrics.json") << "{\"loss\":0.5}";
  auto meta = client_->Get("/storage/v1/b/bkt/o/job%2Fout%2Fmetrics.json");
  ASSERT_TRUE(meta);
  ASSERT_EQ(meta->status, 200) << meta->body;
  EXPECT_EQ(Json(meta)["md5Hash"], internal::GcsMd5(internal::Md5Of("{\"loss\":0.5}")));
  EXPECT_EQ(Json(meta)["contentType"], "application/json");
  auto media = client_->Get("/storage/v1/b/bkt/o/job%2Fout%2Fmetrics.json?alt=media");
  ASSERT_TRUE(media);
  EXPECT_EQ(media->body, "{\"loss\":0.5}");
  auto list = client_->Get("/storage/v1/b/bkt/o?prefix=job/");
  ASSERT_TRUE(list);
  ASSERT_EQ(Json(list)["items"].size(), 1u);
  EXPECT_EQ(Json(list)["items"][0]["name"], "job/out/metrics.json");
}

// --- Listing ------------------------------------------------------------------------------------

TEST_F(StorageHttpTest, ListWithPrefixDelimiterAndPaging) {
  for (const char* name : {"a.txt", "d/1", "d/2", "d/sub/3", "e/4", "z.txt"}) {
    ASSERT_TRUE(store_.WriteObject("bkt", name, "x").ok());
  }
  auto all = client_->Get("/storage/v1/b/bkt/o");
  ASSERT_TRUE(all);
  json j = Json(all);
  EXPECT_EQ(j["kind"], "storage#objects");
  ASSERT_EQ(j["items"].size(), 6u);
  EXPECT_FALSE(j.contains("prefixes"));
  EXPECT_FALSE(j.contains("nextPageToken"));

  auto top = client_->Get("/storage/v1/b/bkt/o?delimiter=%2F");
  ASSERT_TRUE(top);
  j = Json(top);
  EXPECT_EQ(j["prefixes"], json({"d/", "e/"}));
  ASSERT_EQ(j["items"].size(), 2u);
  EXPECT_EQ(j["items"][0]["name"], "a.txt");
  EXPECT_EQ(j["items"][1]["name"], "z.txt");

  auto under = client_->Get("/storage/v1/b/bkt/o?prefix=d%2F&delimiter=%2F");
  ASSERT_TRUE(under);
  j = Json(under);
  EXPECT_EQ(j["prefixes"], json({"d/sub/"}));
  ASSERT_EQ(j["items"].size(), 2u);

  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = client_->Get("/storage/v1/b/bkt/o?maxResults=4&pageToken=" + token);
    ASSERT_TRUE(page);
    ASSERT_EQ(page->status, 200) << page->body;
    j = Json(page);
    for (const auto& item : j["items"]) seen.push_back(item["name"]);
    token = j.value("nextPageToken", "");
    ASSERT_LT(++pages, 5);
  } while (!token.empty());
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(seen, (std::vector<std::string>{"a.txt", "d/1", "d/2", "d/sub/3", "e/4", "z.txt"}));

  auto empty = client_->Get("/storage/v1/b/bkt/o?prefix=nothing");
  ASSERT_TRUE(empty);
  EXPECT_EQ(Json(empty), json({{"kind", "storage#objects"}}));

  // fields without hashes: no checksum work needed, none reported.
  auto light = client_->Get("/storage/v1/b/bkt/o?fields=items(name,size),nextPageToken");
  ASSERT_TRUE(light);
  EXPECT_EQ(Json(light)["items"].size(), 6u);
  EXPECT_EQ(ErrorReason(client_->Get("/storage/v1/b/nobucket/o"), 404), "notFound");
}

// --- Errors, preconditions, delete --------------------------------------------------------------

TEST_F(StorageHttpTest, ErrorShapes) {
  auto missing = client_->Get("/storage/v1/b/bkt/o/nope");
  EXPECT_EQ(ErrorReason(missing, 404), "notFound");
  EXPECT_EQ(Json(missing)["error"]["message"], "No such object: bkt/nope");
  EXPECT_EQ(Json(client_->Get("/storage/v1/b/nobkt/o/x"))["error"]["message"],
            "The specified bucket does not exist.");
  EXPECT_EQ(ErrorReason(client_->Post("/upload/storage/v1/b/bkt/o?uploadType=media&name=a%2F..%2Fb",
                                      "x", "text/plain"),
                        400),
            "invalid");
  EXPECT_EQ(
      ErrorReason(client_->Post("/upload/storage/v1/b/bkt/o?uploadType=media", "x", "text/plain"),
                  400),
      "required");
  EXPECT_FALSE(fs::exists(Root() + "/b"));
}

TEST_F(StorageHttpTest, NamesAreDecodedFromTheRawPath) {
  json obj = UploadMedia("100%25%20done%2B%C3%A9", "x");
  EXPECT_EQ(obj["name"], "100% done+\xC3\xA9");
  auto got = client_->Get("/storage/v1/b/bkt/o/100%25%20done%2B%C3%A9");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200) << got->body;
  EXPECT_TRUE(fs::exists(Root() + "/bkt/100% done+\xC3\xA9"));
}

TEST_F(StorageHttpTest, UnreadBodiesDoNotBreakKeepAlive) {
  client_->set_keep_alive(true);
  std::string body(1 << 20, 'z');
  EXPECT_EQ(ErrorReason(client_->Post("/upload/storage/v1/b/nobucket/o?uploadType=media&name=x",
                                      body, "application/octet-stream"),
                        404),
            "notFound");
  auto next = client_->Get("/storage/v1/b/bkt");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

TEST_F(StorageHttpTest, IfGenerationMatchPreconditions) {
  json obj = UploadMedia("p.txt", "one");
  auto again =
      client_->Post("/upload/storage/v1/b/bkt/o?uploadType=media&name=p.txt&ifGenerationMatch=0",
                    "two", "text/plain");
  EXPECT_EQ(ErrorReason(again, 412), "conditionNotMet");
  EXPECT_EQ(store_.ReadObject("bkt", "p.txt").value(), "one");

  auto fresh =
      client_->Post("/upload/storage/v1/b/bkt/o?uploadType=media&name=q.txt&ifGenerationMatch=0",
                    "new", "text/plain");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->status, 200);

  std::string gen = obj["generation"];
  auto matched = client_->Post(
      "/upload/storage/v1/b/bkt/o?uploadType=media&name=p.txt&ifGenerationMatch=" + gen, "two",
      "text/plain");
  ASSERT_TRUE(matched);
  EXPECT_EQ(matched->status, 200);
  EXPECT_EQ(ErrorReason(client_->Delete("/storage/v1/b/bkt/o/p.txt?ifGenerationMatch=" + gen), 412),
            "conditionNotMet");
  EXPECT_EQ(ErrorReason(client_->Get("/storage/v1/b/bkt/o/p.txt?generation=" + gen), 404),
            "notFound");
}

TEST_F(StorageHttpTest, FolderPlaceholdersMapToDirectories) {
  // gcloud probes "dir/" before copying into it; absent folders are simply not found.
  EXPECT_EQ(ErrorReason(client_->Get("/storage/v1/b/bkt/o/up%2F?alt=json"), 404), "notFound");
  EXPECT_EQ(ErrorReason(client_->Get("/storage/v1/b/bkt/o/a%2F..%2Fb"), 404), "notFound");

  // TensorFlow's makedirs uploads an empty "dir/" object.
  json folder = UploadMedia("logs%2Ftrain%2F", "");
  EXPECT_EQ(folder["name"], "logs/train/");
  EXPECT_EQ(folder["size"], "0");
  EXPECT_EQ(folder["crc32c"], "AAAAAA==");
  EXPECT_TRUE(fs::is_directory(Root() + "/bkt/logs/train"));
  auto stat = client_->Get("/storage/v1/b/bkt/o/logs%2Ftrain%2F");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->status, 200);
  EXPECT_EQ(ErrorReason(client_->Post("/upload/storage/v1/b/bkt/o?uploadType=media&name=d%2F",
                                      "not empty", "text/plain"),
                        400),
            "invalid");
  auto del = client_->Delete("/storage/v1/b/bkt/o/logs%2Ftrain%2F");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 204);
  EXPECT_FALSE(fs::exists(Root() + "/bkt/logs/train"));

  // A directory made by writing objects is not a placeholder object.
  UploadMedia("made%2Fby%2Fobject", "x");
  EXPECT_EQ(ErrorReason(client_->Get("/storage/v1/b/bkt/o/made%2F"), 404), "notFound");
}

TEST_F(StorageHttpTest, DeleteObject) {
  UploadMedia("d%2Fx", "x");
  auto del = client_->Delete("/storage/v1/b/bkt/o/d%2Fx");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 204);
  EXPECT_FALSE(fs::exists(Root() + "/bkt/d/x"));
  EXPECT_EQ(ErrorReason(client_->Delete("/storage/v1/b/bkt/o/d%2Fx"), 404), "notFound");
}

// --- Copy, rewrite, compose, patch --------------------------------------------------------------

TEST_F(StorageHttpTest, CopyRewriteComposeAndPatch) {
  ASSERT_TRUE(store_.CreateBucket("other").ok());
  UploadMedia("src%2Fa", "AAA");
  UploadMedia("src%2Fb", "BB");

  auto copy =
      client_->Post("/storage/v1/b/bkt/o/src%2Fa/copyTo/b/other/o/dst%2Fa", "", "application/json");
  ASSERT_TRUE(copy);
  ASSERT_EQ(copy->status, 200) << copy->body;
  EXPECT_EQ(Json(copy)["bucket"], "other");
  EXPECT_EQ(Json(copy)["contentType"], "text/plain");
  EXPECT_EQ(store_.ReadObject("other", "dst/a").value(), "AAA");

  auto rewrite =
      client_->Post("/storage/v1/b/bkt/o/src%2Fb/rewriteTo/b/bkt/o/c", "{}", "application/json");
  ASSERT_TRUE(rewrite);
  ASSERT_EQ(rewrite->status, 200) << rewrite->body;
  json rw = Json(rewrite);
  EXPECT_EQ(rw["kind"], "storage#rewriteResponse");
  EXPECT_EQ(rw["done"], true);
  EXPECT_EQ(rw["totalBytesRewritten"], "2");
  EXPECT_EQ(rw["objectSize"], "2");
  EXPECT_EQ(rw["resource"]["name"], "c");

  auto compose = client_->Post("/storage/v1/b/bkt/o/joined/compose",
                               R"({"sourceObjects":[{"name":"src/a"},{"name":"src/b"}],)"
                               R"("destination":{"contentType":"text/x"}})",
                               "application/json");
  ASSERT_TRUE(compose);
  ASSERT_EQ(compose->status, 200) << compose->body;
  EXPECT_EQ(store_.ReadObject("bkt", "joined").value(), "AAABB");
  EXPECT_EQ(Json(compose)["md5Hash"], internal::GcsMd5(internal::Md5Of("AAABB")));

  auto patch = client_->Patch("/storage/v1/b/bkt/o/joined", R"({"contentType":"text/csv"})",
                              "application/json");
  ASSERT_TRUE(patch);
  ASSERT_EQ(patch->status, 200) << patch->body;
  EXPECT_EQ(Json(client_->Get("/storage/v1/b/bkt/o/joined"))["contentType"], "text/csv");

  EXPECT_EQ(
      ErrorReason(
          client_->Post("/storage/v1/b/bkt/o/nope/copyTo/b/bkt/o/x", "", "application/json"), 404),
      "notFound");
}

}  // namespace
}  // namespace trainyard::storage

namespace trainyard::storage {
namespace {

// Every operation of the table is what its example request classifies as, and the gate sees it
// before the handler runs (a refusing gate leaves the store untouched).
TEST(StorageGate, EveryOperationExampleReachesTheGateAsItself) {
  testing::TempDir dir;
  BucketStore store(dir.path() + "/data");
  ASSERT_TRUE(store.CreateBucket("bucket").ok());
  const StorageOperation* seen = nullptr;
  StorageAccess access;
  httplib::Server server;
  RegisterStorageRoutes(server, store, "P",
                        [&](const httplib::Request&, httplib::Response& res, const StorageAccess& a,
                            const std::function<void()>&) {
                          seen = a.operation;
                          access = a;
                          WriteStorageError(res, 403, "forbidden", "refused");
                        });
  int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::yield();
  httplib::Client client("127.0.0.1", port);
  for (const StorageOperation& op : StorageOperations()) {
    seen = nullptr;
    httplib::Request req;
    req.method = op.method;
    req.path = op.example;
    for (size_t at; (at = req.path.find("BUCKET")) != std::string::npos;) {
      req.path.replace(at, 6, "bucket");
    }
    if (std::string(op.method) != "GET" && std::string(op.method) != "DELETE") req.body = "{}";
    auto r = client.send(req);
    ASSERT_TRUE(r) << op.name << " " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 403) << op.method << " " << op.example;
    EXPECT_EQ(seen, &op) << op.method << " " << op.example;
    if (std::string_view(op.example).find("BUCKET") != std::string_view::npos) {
      EXPECT_EQ(access.bucket, "bucket") << op.example;
    } else {
      EXPECT_EQ(access.project, "P") << op.example;
    }
    if (op.source_permission != nullptr) {
      EXPECT_EQ(access.source_bucket, "bucket");
    }
  }
  EXPECT_FALSE(store.StatObject("bucket", "x").ok());
  server.stop();
  thread.join();
}

}  // namespace
}  // namespace trainyard::storage
