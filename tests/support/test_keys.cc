#include "support/test_keys.h"

#include "support/process.h"

namespace skippr::test {

std::string make_rsa_key(const std::filesystem::path& dir, const std::string& name) {
  const auto key = dir / (name + ".pem");
  run_or_throw({program_path("openssl"), "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                key.string()},
               dir);
  run_or_throw(
      {program_path("openssl"), "pkey", "-in", key.string(), "-pubout", "-out", (dir / (name + ".pub")).string()}, dir);
  return read_text(key);
}

TlsFiles make_tls_files(const std::filesystem::path& dir) {
  const std::string openssl = program_path("openssl");
  TlsFiles files{dir / "ca.pem", dir / "server.pem", dir / "server.key"};
  const auto ca_key = dir / "ca.key", csr = dir / "server.csr", ext = dir / "server.ext";
  run_or_throw({openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key.string(), "-out",
                files.ca.string(), "-days", "2", "-subj", "/CN=skippr test CA"},
               dir);
  run_or_throw({openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", files.key.string(), "-out", csr.string(),
                "-subj", "/CN=localhost"},
               dir);
  write_text(ext, "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  run_or_throw({openssl, "x509", "-req", "-in", csr.string(), "-CA", files.ca.string(), "-CAkey", ca_key.string(),
                "-CAcreateserial", "-out", files.cert.string(), "-days", "2", "-extfile", ext.string()},
               dir);
  return files;
}

}  // namespace skippr::test
