#include "server/cluster/cluster_credentials.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

namespace distarray::cluster {

// Transfers between daemons move 8 MiB pieces and up to 64 MiB messages.
constexpr int kMaxClusterMessageBytes = int{64} << 20;

std::shared_ptr<grpc::ServerCredentials> ClusterServerCredentials(const ClusterOptions& options) {
  if (!options.tls.enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_root_certs = options.tls.ca_pem;
  ssl.pem_key_cert_pairs.push_back({options.tls.key_pem, options.tls.cert_pem});
  ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  return grpc::SslServerCredentials(ssl);
}

std::shared_ptr<grpc::Channel> ClusterChannel(const std::string& address,
                                              const ClusterOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxClusterMessageBytes);
  args.SetMaxSendMessageSize(kMaxClusterMessageBytes);
  if (!options.tls.enabled()) {
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = options.tls.ca_pem;
  ssl.pem_private_key = options.tls.key_pem;
  ssl.pem_cert_chain = options.tls.cert_pem;
  // Peers are dialled by address (a pod IP), while one certificate names every daemon: the
  // check is against that name.
  if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
}

}  // namespace distarray::cluster
