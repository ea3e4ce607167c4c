#include "server/graph/program_digest.h"

#include <openssl/sha.h>

#include <array>
#include <cstdint>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "absl/strings/escaping.h"

namespace distarray {

std::string Sha256Hex(absl::string_view bytes) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data());
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

namespace {

std::string DeterministicBytes(const v1::Program& program) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  program.SerializeToCodedStream(&coded);
  return bytes;
}

}  // namespace

std::string ProgramBytesDigest(const v1::Program& program) {
  return Sha256Hex(DeterministicBytes(program));
}

std::string ProgramDigest(const v1::Program& program) {
  // A copy, since the request is not ours to change; it lives only while hashing.
  v1::Program known = program;
  known.DiscardUnknownFields();
  return Sha256Hex(DeterministicBytes(known));
}

}  // namespace distarray
