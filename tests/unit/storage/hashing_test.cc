#include "hashing.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "test_dir.h"

namespace trainyard::storage::internal {
namespace {

TEST(Crc32cTest, MatchesCheckValue) { EXPECT_EQ(Crc32cOf("123456789"), 0xE3069283u); }

TEST(Crc32cTest, MatchesRfc3720Vectors) {
  EXPECT_EQ(Crc32cOf(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32cOf(std::string(32, '\xff')), 0x62A8AB43u);
  std::string inc;
  for (int i = 0; i < 32; ++i) inc.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc32cOf(inc), 0x46DD794Eu);
}

TEST(Crc32cTest, IncrementalEqualsOneShotAtEveryAlignment) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  const uint32_t whole = Crc32cOf(data);
  for (size_t split = 0; split < 40; ++split) {
    Crc32c c;
    c.Update(std::string_view(data).substr(0, split));
    c.Update(std::string_view(data).substr(split));
    EXPECT_EQ(c.value(), whole) << "split at " << split;
  }
}

TEST(GcsEncodingTest, EmptyObjectChecksums) {
  EXPECT_EQ(GcsCrc32c(Crc32cOf("")), "AAAAAA==");
  EXPECT_EQ(GcsMd5(Md5Of("")), "1B2M2Y8AsgTpgAmY7PhCfg==");
}

TEST(GcsEncodingTest, CrcIsBigEndian) {
  // 0xE3069283 -> bytes e3 06 92 83.
  EXPECT_EQ(GcsCrc32c(0xE3069283u), "4waSgw==");
}

TEST(Md5Test, KnownVector) {
  EXPECT_EQ(GcsMd5(Md5Of("The quick brown fox jumps over the lazy dog")),
            "nhB9nTcrtoJr2B01QqQZ1g==");
  Md5 m;
  m.Update("The quick brown ");
  m.Update("fox jumps over the lazy dog");
  EXPECT_EQ(m.Finish(), Md5Of("The quick brown fox jumps over the lazy dog"));
}

TEST(DigestFileTest, HashesWholeFile) {
  testing::TempDir dir;
  std::string path = dir.path() + "/f";
  std::string data(300000, 'x');
  std::ofstream(path, std::ios::binary) << data;
  auto d = DigestFile(path);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->size, 300000);
  EXPECT_EQ(d->md5, Md5Of(data));
  EXPECT_EQ(d->crc32c, Crc32cOf(data));
  EXPECT_FALSE(DigestFile(dir.path() + "/missing").ok());
}

}  // namespace
}  // namespace trainyard::storage::internal
