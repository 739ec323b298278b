// Certificates for the server's TLS tests, made with the openssl command (P-256 keys: quick):
// a CA, the server's certificate for 127.0.0.1 signed by it, a client certificate it signed
// (subject CN "kube-scheduler"), and a client certificate of another CA (CN "stranger").
#pragma once

#include <cstdlib>
#include <string>

namespace gpufit::serve::testing {

struct TestTls {
  std::string ca, server_cert, server_key, client_cert, client_key, stranger_cert, stranger_key;
  bool ok = false;  // every openssl command succeeded
};

inline TestTls MakeTestTls(const std::string& dir) {
  TestTls t{.ca = dir + "/ca.crt",
            .server_cert = dir + "/server.crt",
            .server_key = dir + "/server.key",
            .client_cert = dir + "/client.crt",
            .client_key = dir + "/client.key",
            .stranger_cert = dir + "/stranger.crt",
            .stranger_key = dir + "/stranger.key"};
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  auto run = [](const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; };
  auto signed_by = [&](const std::string& ca, const std::string& ca_key, const std::string& name,
                       const std::string& cn, const std::string& ext) {
    return run("openssl req " + key + " -keyout " + dir + "/" + name + ".key -out " + dir + "/" + name +
               ".csr -subj /CN=" + cn) &&
           run("printf '" + ext + "\\n' > " + dir + "/" + name + ".ext") &&
           run("openssl x509 -req -in " + dir + "/" + name + ".csr -CA " + ca + " -CAkey " + ca_key +
               " -CAcreateserial -out " + dir + "/" + name + ".crt -days 2 -extfile " + dir + "/" + name + ".ext");
  };
  t.ok = run("openssl req -x509 " + key + " -keyout " + dir + "/ca.key -out " + t.ca + " -days 2 -subj /CN=test-ca") &&
         run("openssl req -x509 " + key + " -keyout " + dir + "/other-ca.key -out " + dir +
             "/other-ca.crt -days 2 -subj /CN=other-ca") &&
         signed_by(t.ca, dir + "/ca.key", "server", "gpufit-serve", "subjectAltName=IP:127.0.0.1,DNS:localhost") &&
         signed_by(t.ca, dir + "/ca.key", "client", "kube-scheduler", "extendedKeyUsage=clientAuth") &&
         signed_by(dir + "/other-ca.crt", dir + "/other-ca.key", "stranger", "stranger", "extendedKeyUsage=clientAuth");
  return t;
}

}  // namespace gpufit::serve::testing
