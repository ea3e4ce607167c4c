#include "server/security/tls_credentials.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <grpcpp/security/server_credentials.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/security/read_file.h"

namespace distarray {
namespace {

// PEM files are small; this only stops a wrong path from being read whole.
constexpr int64_t kMaxPemBytes = int64_t{1} << 20;

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Deleter {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

std::unique_ptr<BIO, BioDeleter> MemoryBio(const std::string& pem) {
  return std::unique_ptr<BIO, BioDeleter>(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate in `pem`, in order. INVALID_ARGUMENT naming `flag` when there is none.
absl::StatusOr<std::vector<X509Ptr>> ParseCertificates(const std::string& pem,
                                                       const std::string& flag,
                                                       const std::string& path) {
  std::vector<X509Ptr> certs;
  auto bio = MemoryBio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the loop ends on "no start line", which is not an error here
  if (certs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", path, " holds no PEM certificate (-----BEGIN CERTIFICATE-----)"));
  }
  return certs;
}

absl::Status CheckValidNow(const X509* cert, const std::string& flag, const std::string& path) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": the certificate in ", path, " has expired"));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": the certificate in ", path, " is not valid yet"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ApiServerCredentialsFromFiles(
    const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  if (files.cert_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_cert_file: required with ",
                     files.key_file.empty() ? "--tls_client_ca_file" : "--tls_key_file"));
  }
  if (files.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_key_file: required with --tls_cert_file");
  }
  ASSIGN_OR_RETURN(std::string cert_pem,
                   ReadSmallFile(files.cert_file, "--tls_cert_file", kMaxPemBytes));
  ASSIGN_OR_RETURN(std::string key_pem,
                   ReadSmallFile(files.key_file, "--tls_key_file", kMaxPemBytes));
  ASSIGN_OR_RETURN(std::vector<X509Ptr> chain,
                   ParseCertificates(cert_pem, "--tls_cert_file", files.cert_file));
  RETURN_IF_ERROR(CheckValidNow(chain.front().get(), "--tls_cert_file", files.cert_file));
  {
    auto bio = MemoryBio(key_pem);
    std::unique_ptr<EVP_PKEY, KeyDeleter> key(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    ERR_clear_error();
    if (!key) {
      return absl::InvalidArgumentError(absl::StrCat("--tls_key_file: ", files.key_file,
                                                     " holds no unencrypted PEM private key"));
    }
    if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError(
          absl::StrCat("--tls_key_file: the key in ", files.key_file,
                       " does not belong to the certificate in --tls_cert_file"));
    }
  }

  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({std::move(key_pem), std::move(cert_pem)});
  if (files.client_ca_file.empty()) {
    options.client_certificate_request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  } else {
    ASSIGN_OR_RETURN(std::string ca_pem,
                     ReadSmallFile(files.client_ca_file, "--tls_client_ca_file", kMaxPemBytes));
    RETURN_IF_ERROR(
        ParseCertificates(ca_pem, "--tls_client_ca_file", files.client_ca_file).status());
    options.pem_root_certs = std::move(ca_pem);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace distarray
