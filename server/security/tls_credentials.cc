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

struct Identity {
  std::string cert_pem;
  std::string key_pem;
};

// A certificate chain and its key, read and checked: the chain parses, its leaf is valid now, and
// the key is an unencrypted one that belongs to it.
absl::StatusOr<Identity> LoadIdentity(const std::string& cert_file, const std::string& key_file,
                                      const std::string& cert_flag, const std::string& key_flag) {
  ASSIGN_OR_RETURN(std::string cert_pem, ReadSmallFile(cert_file, cert_flag, kMaxPemBytes));
  ASSIGN_OR_RETURN(std::string key_pem, ReadSmallFile(key_file, key_flag, kMaxPemBytes));
  ASSIGN_OR_RETURN(std::vector<X509Ptr> chain, ParseCertificates(cert_pem, cert_flag, cert_file));
  RETURN_IF_ERROR(CheckValidNow(chain.front().get(), cert_flag, cert_file));
  auto bio = MemoryBio(key_pem);
  std::unique_ptr<EVP_PKEY, KeyDeleter> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key) {
    return absl::InvalidArgumentError(
        absl::StrCat(key_flag, ": ", key_file, " holds no unencrypted PEM private key"));
  }
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        key_flag, ": the key in ", key_file, " does not belong to the certificate in ", cert_flag));
  }
  return Identity{std::move(cert_pem), std::move(key_pem)};
}

// The CA certificates of `file`, read and checked to hold at least one.
absl::StatusOr<std::string> LoadCa(const std::string& file, const std::string& flag) {
  ASSIGN_OR_RETURN(std::string ca_pem, ReadSmallFile(file, flag, kMaxPemBytes));
  RETURN_IF_ERROR(ParseCertificates(ca_pem, flag, file).status());
  return ca_pem;
}

}  // namespace

absl::StatusOr<MutualTls> LoadMutualTls(const std::string& cert_file, const std::string& key_file,
                                        const std::string& ca_file,
                                        const std::string& flag_prefix) {
  const std::string cert_flag = flag_prefix + "cert_file";
  const std::string key_flag = flag_prefix + "key_file";
  const std::string ca_flag = flag_prefix + "ca_file";
  if (cert_file.empty() && key_file.empty() && ca_file.empty()) return MutualTls{};
  // Each missing one named, with what asked for it.
  const std::string given = !cert_file.empty() ? cert_flag : !key_file.empty() ? key_flag : ca_flag;
  if (cert_file.empty()) return absl::InvalidArgumentError(cert_flag + ": required with " + given);
  if (key_file.empty()) return absl::InvalidArgumentError(key_flag + ": required with " + given);
  if (ca_file.empty()) return absl::InvalidArgumentError(ca_flag + ": required with " + given);
  ASSIGN_OR_RETURN(Identity identity, LoadIdentity(cert_file, key_file, cert_flag, key_flag));
  ASSIGN_OR_RETURN(std::string ca_pem, LoadCa(ca_file, ca_flag));
  return MutualTls{std::move(identity.cert_pem), std::move(identity.key_pem), std::move(ca_pem)};
}

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
  ASSIGN_OR_RETURN(Identity identity, LoadIdentity(files.cert_file, files.key_file,
                                                   "--tls_cert_file", "--tls_key_file"));
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({std::move(identity.key_pem), std::move(identity.cert_pem)});
  if (files.client_ca_file.empty()) {
    options.client_certificate_request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  } else {
    ASSIGN_OR_RETURN(std::string ca_pem, LoadCa(files.client_ca_file, "--tls_client_ca_file"));
    options.pem_root_certs = std::move(ca_pem);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace distarray
