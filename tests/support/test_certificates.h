// PEM files made by openssl at test time, for the TLS tests of the API port and of the cluster
// port: P-256 keys (quick to make), each certificate valid for a day from now.
#ifndef DISTARRAY_TESTS_SUPPORT_TEST_CERTIFICATES_H_
#define DISTARRAY_TESTS_SUPPORT_TEST_CERTIFICATES_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/support/run_command.h"

namespace distarray::testing {

inline constexpr char kTestKeyOptions[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

// sh commands making the self-signed CA `name`.crt and `name`.key for common name `cn`.
inline std::string SelfSignedCa(const std::string& name, const std::string& cn) {
  return absl::StrCat("openssl req -x509 ", kTestKeyOptions, " -keyout ", name, ".key -out ", name,
                      ".crt -days 1 -subj /CN=", cn, "; ");
}

// sh commands making `name`.crt and `name`.key for common name `cn`, signed by the CA `ca`, with
// the X.509 extensions of the file `extensions`.
inline std::string SignedBy(const std::string& ca, const std::string& name, const std::string& cn,
                            const std::string& extensions) {
  return absl::StrCat("openssl req ", kTestKeyOptions, " -keyout ", name, ".key -out ", name,
                      ".csr -subj /CN=", cn, "; openssl x509 -req -in ", name, ".csr -CA ", ca,
                      ".crt -CAkey ", ca, ".key -CAcreateserial -days 1 -extfile ", extensions,
                      " -out ", name, ".crt; ");
}

// A whole (PEM) file, or empty when it cannot be read.
inline std::string ReadPem(const std::string& path) {
  std::stringstream contents;
  contents << std::ifstream(path).rdbuf();
  return contents.str();
}

// Runs `commands` (sh) in a new temporary directory named after `prefix` and returns it; a
// failure fails the calling test with openssl's output.
inline std::string MakeCertificates(const std::string& prefix, const std::string& commands) {
  std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat(prefix, "-XXXXXX")).string();
  dir = mkdtemp(dir.data());
  // Written to a script file: no quoting through popen's shell.
  std::ofstream(dir + "/make-certs.sh") << "set -e; cd " << dir << "; " << commands << "\n";
  const CommandResult made = RunCommand(absl::StrCat("sh ", dir, "/make-certs.sh"));
  EXPECT_EQ(made.exit_code, 0) << made.output;
  return dir;
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_TEST_CERTIFICATES_H_
