// Object checksums as Cloud Storage reports them: MD5 and CRC32C (Castagnoli), both computed
// incrementally while bytes stream in. Private to the storage module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trainyard/core/status.h"

namespace trainyard::storage::internal {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8.
class Crc32c {
 public:
  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  uint32_t value() const { return ~state_; }

 private:
  uint32_t state_ = 0xFFFFFFFFu;
};

uint32_t Crc32cOf(std::string_view data);

// MD5 through OpenSSL's EVP interface. Movable, not copyable.
class Md5 {
 public:
  Md5();
  ~Md5();
  Md5(Md5&& other) noexcept;
  Md5& operator=(Md5&& other) noexcept;
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // The raw 16-byte digest. The hasher must not be updated afterwards.
  std::string Finish();

 private:
  void* ctx_ = nullptr;  // EVP_MD_CTX*
};

std::string Md5Of(std::string_view data);

// GCS's encodings: md5Hash is base64 of the raw digest, crc32c is base64 of the big-endian value.
std::string GcsMd5(std::string_view raw_md5);
std::string GcsCrc32c(uint32_t crc);

// Hashes of a whole file (raw MD5 and CRC32C) in one pass.
struct FileDigest {
  int64_t size = 0;
  std::string md5;  // raw 16 bytes
  uint32_t crc32c = 0;
};
Result<FileDigest> DigestFile(const std::string& path);

}  // namespace trainyard::storage::internal
