#include "multipart.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainyard::storage::internal {
namespace {

struct Parsed {
  std::vector<MultipartParser::Headers> headers;
  std::vector<std::string> bodies;
  Status status;
};

// Feeds `body` in pieces of `chunk` bytes.
Parsed Parse(const std::string& boundary, const std::string& body, size_t chunk) {
  Parsed p;
  MultipartParser parser(
      boundary,
      [&](size_t part, const MultipartParser::Headers& h) {
        EXPECT_EQ(part, p.headers.size());
        p.headers.push_back(h);
        p.bodies.emplace_back();
        return Status::Ok();
      },
      [&](size_t part, const char* data, size_t size) {
        p.bodies.at(part).append(data, size);
        return Status::Ok();
      });
  for (size_t off = 0; off < body.size() && p.status.ok(); off += chunk) {
    p.status = parser.Feed(body.data() + off, std::min(chunk, body.size() - off));
  }
  if (p.status.ok()) p.status = parser.Finish();
  return p;
}

TEST(MultipartTest, ParsesCrlfBodyInAnyChunking) {
  const std::string media = "line1\r\nline2\r\n--not-the-boundary\r\n\r\nend";
  const std::string body =
      "--xyz\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{\"name\":\"a/b\"}\r\n"
      "--xyz\r\nContent-Type: text/plain\r\n\r\n" +
      media + "\r\n--xyz--\r\n";
  for (size_t chunk : {1u, 2u, 3u, 7u, 16u, 1000u}) {
    Parsed p = Parse("xyz", body, chunk);
    ASSERT_TRUE(p.status.ok()) << p.status.ToString() << " chunk " << chunk;
    ASSERT_EQ(p.bodies.size(), 2u);
    EXPECT_EQ(p.bodies[0], "{\"name\":\"a/b\"}");
    EXPECT_EQ(p.bodies[1], media) << "chunk " << chunk;
    EXPECT_EQ(p.headers[1].at("content-type"), "text/plain");
  }
}

TEST(MultipartTest, ParsesBareLfBodyAsPythonWritesIt) {
  const std::string media("BYTES\n\0\xff\r", 9);
  const std::string body =
      "--===============1234==\nContent-Type: application/json\nMIME-Version: 1.0\n\n"
      "{\"name\": \"pkg.tar.gz\"}\n--===============1234==\nContent-Type: application/x-tar\n"
      "MIME-Version: 1.0\nContent-Transfer-Encoding: binary\n\n" +
      media + "\n\n--===============1234==--";
  Parsed p = Parse("===============1234==", body, 5);
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  ASSERT_EQ(p.bodies.size(), 2u);
  EXPECT_EQ(p.bodies[0], "{\"name\": \"pkg.tar.gz\"}");
  EXPECT_EQ(p.bodies[1], media + "\n");
  EXPECT_EQ(p.headers[1].at("content-transfer-encoding"), "binary");
}

TEST(MultipartTest, RejectsTruncatedBody) {
  Parsed p = Parse("b", "--b\r\n\r\n{}\r\n--b\r\n\r\ndata", 4);
  EXPECT_EQ(p.status.code(), StatusCode::kInvalidArgument);
}

TEST(MultipartTest, ExtractsQuotedBoundary) {
  EXPECT_EQ(MultipartBoundary("multipart/related; boundary='===abc=='").value(), "===abc==");
  EXPECT_EQ(MultipartBoundary("multipart/related; boundary=\"q r\"; x=y").value(), "q r");
  EXPECT_EQ(MultipartBoundary("multipart/related; BOUNDARY=plain").value(), "plain");
  EXPECT_FALSE(MultipartBoundary("multipart/related").ok());
}

}  // namespace
}  // namespace trainyard::storage::internal
