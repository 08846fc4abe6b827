// Self-signed certificate for the TLS listener, made with OpenSSL's API.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "trainyard/api/api_server.h"
#include "trainyard/core/util.h"

namespace trainyard::api {

namespace {

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free_all(b); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertDeleter {
  void operator()(X509* c) const { X509_free(c); }
};
struct ExtDeleter {
  void operator()(X509_EXTENSION* e) const { X509_EXTENSION_free(e); }
};

bool Exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

Status AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtDeleter> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return Internal(std::string("cannot add the certificate extension ") + value);
  }
  return Status::Ok();
}

// Writes `write(bio)` to `path` (created with `mode`), replacing it atomically.
template <typename Fn>
Status WritePem(const std::string& path, mode_t mode, Fn write) {
  std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  FILE* f = std::fopen(tmp.c_str(), "wx");
  if (f == nullptr) return Internal("cannot create " + tmp);
  ::fchmod(::fileno(f), mode);
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new_fp(f, BIO_CLOSE));
  if (!bio) {
    std::fclose(f);
    return Internal("cannot write " + tmp);
  }
  bool ok = write(bio.get()) == 1;
  bio.reset();  // closes f
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Internal("cannot write " + path);
  }
  return Status::Ok();
}

}  // namespace

Status EnsureSelfSignedCertificate(const std::string& cert_path, const std::string& key_path) {
  if (Exists(cert_path) && Exists(key_path)) return Status::Ok();
  std::string dir = cert_path.substr(0, cert_path.rfind('/'));
  if (!dir.empty() && dir != cert_path) TRAINYARD_RETURN_IF_ERROR(MakeDirs(dir));

  std::unique_ptr<EVP_PKEY, KeyDeleter> key(EVP_EC_gen("P-256"));
  if (!key) return Internal("cannot generate a P-256 key");
  std::unique_ptr<X509, CertDeleter> cert(X509_new());
  if (!cert) return Internal("cannot allocate a certificate");
  X509_set_version(cert.get(), 2);  // v3
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), static_cast<long>(::time(nullptr)));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("Trainyard"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  TRAINYARD_RETURN_IF_ERROR(
      AddExtension(cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1"));
  TRAINYARD_RETURN_IF_ERROR(AddExtension(cert.get(), NID_basic_constraints, "critical,CA:TRUE"));
  TRAINYARD_RETURN_IF_ERROR(
      AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign"));
  TRAINYARD_RETURN_IF_ERROR(AddExtension(cert.get(), NID_ext_key_usage, "serverAuth"));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return Internal("cannot sign the certificate");
  }
  TRAINYARD_RETURN_IF_ERROR(WritePem(key_path, 0600, [&](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  }));
  return WritePem(cert_path, 0644, [&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); });
}

}  // namespace trainyard::api
