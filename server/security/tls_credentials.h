// The API port's transport credentials from PEM files: plaintext, TLS, or mutual TLS. Every file
// is read and checked here, at start-up, with OpenSSL (a certificate that does not parse, a key
// that does not match it, an expired certificate), because gRPC itself would only fail at the
// first handshake, long after the daemon reported itself ready.
#ifndef DISTARRAY_SERVER_SECURITY_TLS_CREDENTIALS_H_
#define DISTARRAY_SERVER_SECURITY_TLS_CREDENTIALS_H_

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"

namespace distarray {

struct TlsFiles {
  std::string cert_file;       // --tls_cert_file: the server's certificate chain (PEM)
  std::string key_file;        // --tls_key_file: its private key (PEM)
  std::string client_ca_file;  // --tls_client_ca_file: when set, clients must present a
                               // certificate signed by one of these CAs (mutual TLS)
  bool enabled() const {
    return !cert_file.empty() || !key_file.empty() || !client_ca_file.empty();
  }
};

// The PEM contents of a mutual-TLS identity between peers that are both clients and servers (the
// daemons of a cluster): each presents `cert_pem` (with `key_pem`) and accepts only peers whose
// certificate a CA of `ca_pem` signed.
struct MutualTls {
  std::string cert_pem;
  std::string key_pem;
  std::string ca_pem;
  bool enabled() const { return !cert_pem.empty(); }
};

// Reads and checks the three files of a MutualTls, named in errors as the flags
// `<flag_prefix>cert_file`, `<flag_prefix>key_file` and `<flag_prefix>ca_file`: all three or none
// (none: a MutualTls that is not enabled). INVALID_ARGUMENT naming the flag as for the API port.
absl::StatusOr<MutualTls> LoadMutualTls(const std::string& cert_file, const std::string& key_file,
                                        const std::string& ca_file, const std::string& flag_prefix);

// Insecure credentials when no file is given; TLS with a cert and key; mutual TLS with a client
// CA as well. INVALID_ARGUMENT naming the flag when a file is missing, unreadable or unusable, or
// a flag is given without its partner.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ApiServerCredentialsFromFiles(
    const TlsFiles& files);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SECURITY_TLS_CREDENTIALS_H_
