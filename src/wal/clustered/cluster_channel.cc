#include "wal/clustered/cluster_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace skippr::cluster {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

int millis_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// The newest OpenSSL error as one line (the queue is emptied: later calls start clean).
std::string openssl_error() {
  std::string text;
  unsigned long code = 0;
  while ((code = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    text = buf;
  }
  return text.empty() ? std::string("no detail from OpenSSL") : text;
}

bool is_ip_literal(const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

void tune_socket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // an ack is a few bytes; never hold it back
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::make(const TlsFiles& files, bool server) {
  if (files.insecure) return std::shared_ptr<TlsContext>(new TlsContext(nullptr));
  struct Need {
    const std::string& file;
    const char* variable;
  };
  for (const Need& need : {Need{files.cert, "SKIPPR_CLUSTER_TLS_CERT"}, Need{files.key, "SKIPPR_CLUSTER_TLS_KEY"},
                           Need{files.ca, "SKIPPR_CLUSTER_TLS_CA"}}) {
    if (need.file.empty()) {
      return fail(ErrorKind::kConfig,
                  fmt::format("clustered mode talks TLS with mutual authentication and needs {} (with "
                              "SKIPPR_CLUSTER_TLS_CERT, _KEY and _CA); for a plaintext test setup set "
                              "SKIPPR_CLUSTER_INSECURE=yes",
                              need.variable));
    }
  }
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return fail(ErrorKind::kInternal, "OpenSSL could not make a TLS context: " + openssl_error());
  std::shared_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  auto refuse = [&](const char* variable, const std::string& file) {
    return fail(ErrorKind::kConfig, fmt::format("{}={} cannot be used: {}", variable, file, openssl_error()));
  };
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return refuse("SKIPPR_CLUSTER_TLS_CERT", files.cert);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return refuse("SKIPPR_CLUSTER_TLS_KEY", files.key);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fail(ErrorKind::kConfig, "SKIPPR_CLUSTER_TLS_KEY does not belong to SKIPPR_CLUSTER_TLS_CERT");
  }
  if (SSL_CTX_load_verify_locations(ctx, files.ca.c_str(), nullptr) != 1) {
    return refuse("SKIPPR_CLUSTER_TLS_CA", files.ca);
  }
  // Both sides prove who they are: the replica only keeps copies for primaries the cluster's CA signed.
  SSL_CTX_set_verify(ctx, server ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER, nullptr);
  return out;
}

TlsContext::~TlsContext() {
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

Channel::Channel(int fd, std::shared_ptr<TlsContext> tls, std::string peer)
    : fd_(fd), tls_(std::move(tls)), peer_(std::move(peer)) {}

Channel::~Channel() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (fd_ >= 0) ::close(fd_);
}

void Channel::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Result<std::unique_ptr<Channel>> Channel::connect(const PeerAddress& peer, std::shared_ptr<TlsContext> tls,
                                                  double timeout_seconds) {
  const auto deadline = deadline_after(timeout_seconds);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(peer.port);
  if (int rc = getaddrinfo(peer.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("the peer {} cannot be resolved: {}", peer.str(), gai_strerror(rc)));
  }
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    set_nonblocking(fd);
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, millis_left(deadline));
      int err = 0;
      socklen_t len = sizeof(err);
      if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        rc = 0;
      } else {
        errno = rc == 0 ? ETIMEDOUT : (err != 0 ? err : errno);
        rc = -1;
      }
    }
    if (rc != 0) {
      last_error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return fail(ErrorKind::kUnavailable, fmt::format("the peer {} cannot be reached: {}", peer.str(), last_error));
  }
  tune_socket(fd);
  std::unique_ptr<Channel> channel(new Channel(fd, tls, peer.str()));
  if (tls->plaintext()) return channel;

  channel->ssl_ = SSL_new(tls->ctx());
  SSL_set_fd(channel->ssl_, fd);
  // The peer must hold a certificate for the name or address it was reached at, signed by the cluster's CA.
  X509_VERIFY_PARAM* param = SSL_get0_param(channel->ssl_);
  if (is_ip_literal(peer.host)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, peer.host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, peer.host.c_str(), 0);
    SSL_set_tlsext_host_name(channel->ssl_, peer.host.c_str());
  }
  while (true) {
    ERR_clear_error();
    const int rc = SSL_connect(channel->ssl_);
    if (rc == 1) break;
    const int err = SSL_get_error(channel->ssl_, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      pollfd p{fd, static_cast<short>(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      if (::poll(&p, 1, millis_left(deadline)) <= 0) {
        return fail(ErrorKind::kUnavailable, fmt::format("the peer {} did not finish the TLS handshake within {} s",
                                                         peer.str(), timeout_seconds));
      }
      continue;
    }
    const long verify = SSL_get_verify_result(channel->ssl_);
    if (verify != X509_V_OK) {
      return fail(ErrorKind::kConfig,
                  fmt::format("the peer {} is not trusted: its certificate fails verification against "
                              "SKIPPR_CLUSTER_TLS_CA ({}); give both machines certificates from the same CA, for "
                              "the name or address in SKIPPR_PEERS",
                              peer.str(), X509_verify_cert_error_string(verify)));
    }
    if (err == SSL_ERROR_SSL) {
      return fail(ErrorKind::kConfig, fmt::format("the TLS handshake with the peer {} failed: {}; check "
                                                  "SKIPPR_CLUSTER_TLS_CERT, _KEY and _CA on both machines",
                                                  peer.str(), openssl_error()));
    }
    return fail(ErrorKind::kUnavailable,
                fmt::format("the peer {} closed the connection during the TLS handshake (a replica started with "
                            "--insecure speaks plaintext: both sides must agree)",
                            peer.str()));
  }
  return channel;
}

bool Channel::sends_plaintext_frames(double timeout_seconds) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, millis_left(deadline_after(timeout_seconds))) != 1) return false;
  char first[4];
  if (::recv(fd_, first, sizeof(first), MSG_PEEK) != static_cast<ssize_t>(sizeof(first))) return false;
  return std::string_view(first, 4) == kFrameMagicBytes;
}

Status Channel::accept_handshake(double timeout_seconds) {
  if (tls_->plaintext()) return ok();
  const auto deadline = deadline_after(timeout_seconds);
  ssl_ = SSL_new(tls_->ctx());
  SSL_set_fd(ssl_, fd_);
  while (true) {
    ERR_clear_error();
    const int rc = SSL_accept(ssl_);
    if (rc == 1) return ok();
    const int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      pollfd p{fd_, static_cast<short>(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      if (::poll(&p, 1, millis_left(deadline)) <= 0) {
        return fail(ErrorKind::kUnavailable, fmt::format("{} did not finish the TLS handshake", peer_));
      }
      continue;
    }
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
      return fail(ErrorKind::kConfig, fmt::format("refused {}: its certificate fails verification against "
                                                  "SKIPPR_CLUSTER_TLS_CA ({})",
                                                  peer_, X509_verify_cert_error_string(verify)));
    }
    return fail(ErrorKind::kConfig, fmt::format("refused {}: TLS handshake failed: {}", peer_, openssl_error()));
  }
}

Status Channel::transfer(Direction direction, char* data, size_t size, double timeout_seconds) {
  const auto deadline = deadline_after(timeout_seconds);
  const bool reading = direction == Direction::kRead;
  while (size > 0) {
    short wait_for = reading ? POLLIN : POLLOUT;
    ssize_t n = 0;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int chunk = static_cast<int>(std::min<size_t>(size, 1 << 30));
      const int rc = reading ? SSL_read(ssl_, data, chunk) : SSL_write(ssl_, data, chunk);
      if (rc > 0) {
        n = rc;
      } else {
        const int err = SSL_get_error(ssl_, rc);
        if (err == SSL_ERROR_WANT_READ) {
          wait_for = POLLIN;
        } else if (err == SSL_ERROR_WANT_WRITE) {
          wait_for = POLLOUT;
        } else if (err == SSL_ERROR_ZERO_RETURN) {
          return fail(ErrorKind::kUnavailable, fmt::format("{} closed the connection", peer_));
        } else if (err == SSL_ERROR_SSL) {
          const std::string detail = openssl_error();
          // TLS 1.3 tells a client that its certificate was refused only after the handshake, with an alert.
          const bool certificate_alert =
              detail.find("alert") != std::string::npos &&
              (detail.find("certificate") != std::string::npos || detail.find("unknown ca") != std::string::npos);
          if (certificate_alert) {
            return fail(ErrorKind::kConfig,
                        fmt::format("{} refused this machine's TLS certificate ({}); SKIPPR_CLUSTER_TLS_CERT must "
                                    "be signed by the CA the peer trusts",
                                    peer_, detail));
          }
          return fail(ErrorKind::kUnavailable, fmt::format("TLS error with {}: {}", peer_, detail));
        } else {
          return fail(ErrorKind::kUnavailable,
                      fmt::format("the connection to {} broke: {}", peer_, errno ? std::strerror(errno) : "EOF"));
        }
      }
    } else {
      n = reading ? ::recv(fd_, data, size, 0) : ::send(fd_, data, size, MSG_NOSIGNAL);
      if (n == 0 && reading) return fail(ErrorKind::kUnavailable, fmt::format("{} closed the connection", peer_));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          return fail(ErrorKind::kUnavailable,
                      fmt::format("the connection to {} broke: {}", peer_, std::strerror(errno)));
        }
        n = 0;
      }
    }
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    pollfd p{fd_, wait_for, 0};
    const int ready = ::poll(&p, 1, millis_left(deadline));
    if (ready == 0) {
      return fail(ErrorKind::kUnavailable, fmt::format("{} did not {} within {} s", peer_,
                                                       reading ? "answer" : "take the data", timeout_seconds));
    }
    if (ready < 0 && errno != EINTR) {
      return fail(ErrorKind::kUnavailable, fmt::format("waiting for {} failed: {}", peer_, std::strerror(errno)));
    }
  }
  return ok();
}

Status Channel::send(FrameType type, std::string_view meta, std::string_view blob, double timeout_seconds) {
  SKIPPR_TRY(write_all(encode_frame_header(type, meta, blob), timeout_seconds));
  SKIPPR_TRY(write_all(meta, timeout_seconds));
  return write_all(blob, timeout_seconds);
}

Result<Frame> Channel::receive(double timeout_seconds) {
  std::string header(kFrameHeaderBytes, '\0');
  SKIPPR_TRY(transfer(Direction::kRead, header.data(), header.size(), timeout_seconds));
  auto decoded = decode_frame_header(header);
  if (!decoded) return std::unexpected(decoded.error());
  std::string meta(decoded->meta_bytes, '\0');
  std::string blob(decoded->blob_bytes, '\0');
  SKIPPR_TRY(transfer(Direction::kRead, meta.data(), meta.size(), timeout_seconds));
  SKIPPR_TRY(transfer(Direction::kRead, blob.data(), blob.size(), timeout_seconds));
  return finish_frame(*decoded, std::move(meta), std::move(blob));
}

Result<std::unique_ptr<Listener>> Listener::listen(const PeerAddress& address, std::shared_ptr<TlsContext> tls) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return fail(ErrorKind::kConfig, fmt::format("cannot listen on {}: {}", address.str(), gai_strerror(rc)));
  }
  const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool bound = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 64) == 0;
  const std::string why = std::strerror(errno);
  freeaddrinfo(found);
  if (!bound) {
    if (fd >= 0) ::close(fd);
    return fail(ErrorKind::kConfig, fmt::format("cannot listen on {}: {}", address.str(), why));
  }
  sockaddr_storage actual{};
  socklen_t len = sizeof(actual);
  getsockname(fd, reinterpret_cast<sockaddr*>(&actual), &len);
  const int actual_port = ntohs(actual.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&actual)->sin6_port
                                                             : reinterpret_cast<sockaddr_in*>(&actual)->sin_port);
  return std::unique_ptr<Listener>(new Listener(fd, actual_port, std::move(tls)));
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

void Listener::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Result<std::unique_ptr<Channel>> Listener::accept() {
  while (true) {
    sockaddr_storage from{};
    socklen_t len = sizeof(from);
    const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return fail(ErrorKind::kUnavailable, fmt::format("accept failed: {}", std::strerror(errno)));
    }
    char host[NI_MAXHOST] = "?";
    char serv[NI_MAXSERV] = "?";
    getnameinfo(reinterpret_cast<sockaddr*>(&from), len, host, sizeof(host), serv, sizeof(serv),
                NI_NUMERICHOST | NI_NUMERICSERV);
    set_nonblocking(fd);
    tune_socket(fd);
    return std::unique_ptr<Channel>(new Channel(fd, tls_, fmt::format("{}:{}", host, serv)));
  }
}

}  // namespace skippr::cluster
