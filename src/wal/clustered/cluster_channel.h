// One connection between a clustered primary and its replica: TCP, with TLS and mutual authentication unless the
// operator chose plaintext explicitly (SKIPPR_CLUSTER_INSECURE). Every call takes a timeout, so a peer that stops
// answering is noticed by the caller, never waited on forever.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/host_port.h"
#include "core/result.h"
#include "wal/clustered/cluster_frame.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace skippr::cluster {

using PeerAddress = HostPort;
inline Result<PeerAddress> parse_peer_address(std::string_view text, std::string_view what) {
  return parse_host_port(text, what);
}

// SKIPPR_CLUSTER_TLS_CERT / _KEY / _CA: this machine's certificate and key, and the CA that signed its peers'.
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string ca;
  bool insecure = false;  // plaintext: only when asked for by name
};

// The TLS side of every connection of one process (a primary's, or the replica's listener).
class TlsContext {
 public:
  // Loads and checks the files; kConfig naming the variable whose file is missing or unusable. With
  // `files.insecure` there is no TLS at all (and nothing is loaded).
  static Result<std::shared_ptr<TlsContext>> make(const TlsFiles& files, bool server);
  ~TlsContext();
  bool plaintext() const { return ctx_ == nullptr; }
  SSL_CTX* ctx() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_ = nullptr;
};

class Channel {
 public:
  // Connects and (with TLS) completes the handshake, checking the peer's certificate against the CA and its name
  // or address. kUnavailable when the peer cannot be reached in time; kConfig when TLS refuses it (a wrong CA, a
  // certificate for another name), which retrying would not change.
  static Result<std::unique_ptr<Channel>> connect(const PeerAddress& peer, std::shared_ptr<TlsContext> tls,
                                                  double timeout_seconds);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // The server's half of the handshake (a client without a certificate the CA signed is refused).
  Status accept_handshake(double timeout_seconds);
  // Whether the client's first bytes are a plaintext frame (a primary with SKIPPR_CLUSTER_INSECURE at a TLS
  // server), looked at without taking them.
  bool sends_plaintext_frames(double timeout_seconds);
  bool tls() const { return !tls_->plaintext(); }
  Status send(FrameType type, std::string_view meta, std::string_view blob, double timeout_seconds);
  Status send(const Frame& frame, double timeout_seconds) {
    return send(frame.type, frame.meta, frame.blob, timeout_seconds);
  }
  // kUnavailable when the peer closed the connection or went quiet past the timeout; kCorruption for a frame that
  // fails its checks.
  Result<Frame> receive(double timeout_seconds);
  // Ends the connection from any thread: a send or receive blocked on it returns at once.
  void shutdown();
  const std::string& peer() const { return peer_; }

 private:
  friend class Listener;
  Channel(int fd, std::shared_ptr<TlsContext> tls, std::string peer);
  enum class Direction { kRead, kWrite };
  Status transfer(Direction direction, char* data, size_t size, double timeout_seconds);
  Status write_all(std::string_view data, double timeout_seconds) {
    return transfer(Direction::kWrite, const_cast<char*>(data.data()), data.size(), timeout_seconds);  // only read
  }

  int fd_ = -1;
  std::shared_ptr<TlsContext> tls_;
  SSL* ssl_ = nullptr;
  std::string peer_;
};

class Listener {
 public:
  // Binds and listens; kConfig when the address is taken or not this machine's.
  static Result<std::unique_ptr<Listener>> listen(const PeerAddress& address, std::shared_ptr<TlsContext> tls);
  ~Listener();
  // The next connection, before its handshake (run accept_handshake on the thread that serves it).
  Result<std::unique_ptr<Channel>> accept();
  // From any thread: a blocked accept() returns (kUnavailable) and no connection is taken any more.
  void shutdown();
  int port() const { return port_; }

 private:
  Listener(int fd, int port, std::shared_ptr<TlsContext> tls) : fd_(fd), port_(port), tls_(std::move(tls)) {}
  int fd_ = -1;
  int port_ = 0;
  std::shared_ptr<TlsContext> tls_;
};

}  // namespace skippr::cluster
