#include "hashing.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "trainyard/core/util.h"

namespace trainyard::storage::internal {
namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1u) ? kCastagnoliReflected : 0u);
    t[0][i] = crc;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

EVP_MD_CTX* Ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

}  // namespace

void Crc32c::Update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t crc = state_;
  while (size >= 8) {
    uint32_t lo = crc ^ (static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24);
    crc = kTables[7][lo & 0xFFu] ^ kTables[6][(lo >> 8) & 0xFFu] ^ kTables[5][(lo >> 16) & 0xFFu] ^
          kTables[4][lo >> 24] ^ kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^
          kTables[0][p[7]];
    p += 8;
    size -= 8;
  }
  while (size-- > 0) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xFFu];
  state_ = crc;
}

uint32_t Crc32cOf(std::string_view data) {
  Crc32c c;
  c.Update(data);
  return c.value();
}

Md5::Md5() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(Ctx(ctx_), EVP_md5(), nullptr); }

Md5::~Md5() { EVP_MD_CTX_free(Ctx(ctx_)); }

Md5::Md5(Md5&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Md5& Md5::operator=(Md5&& other) noexcept {
  if (this != &other) {
    EVP_MD_CTX_free(Ctx(ctx_));
    ctx_ = std::exchange(other.ctx_, nullptr);
  }
  return *this;
}

void Md5::Update(const void* data, size_t size) {
  if (ctx_ != nullptr && size > 0) EVP_DigestUpdate(Ctx(ctx_), data, size);
}

std::string Md5::Finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (ctx_ == nullptr || EVP_DigestFinal_ex(Ctx(ctx_), md, &len) != 1) return {};
  return std::string(reinterpret_cast<const char*>(md), len);
}

std::string Md5Of(std::string_view data) {
  Md5 m;
  m.Update(data);
  return m.Finish();
}

std::string GcsMd5(std::string_view raw_md5) { return Base64Encode(raw_md5); }

std::string GcsCrc32c(uint32_t crc) {
  const char be[4] = {static_cast<char>(crc >> 24), static_cast<char>(crc >> 16),
                      static_cast<char>(crc >> 8), static_cast<char>(crc)};
  return Base64Encode(std::string_view(be, 4));
}

Result<FileDigest> DigestFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound("cannot open " + path + ": " + std::strerror(errno));
  FileDigest d;
  Md5 md5;
  Crc32c crc;
  std::vector<char> buf(1 << 17);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Internal("cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    md5.Update(buf.data(), static_cast<size_t>(n));
    crc.Update(buf.data(), static_cast<size_t>(n));
    d.size += n;
  }
  ::close(fd);
  d.md5 = md5.Finish();
  d.crc32c = crc.value();
  return d;
}

}  // namespace trainyard::storage::internal
