// A small event-driven HTTP/1.1 server on GNU libmicrohttpd, for the HttpServer source and the metrics endpoint. Every
// connection is a socket in epoll, not a thread: a client that sends its request 1 byte a second, or a request that
// waits for its commit (suspended, see hold()), costs one socket and no thread, so neither can starve other clients.
// Connections beyond max_connections are closed at once; a connection idle for client_timeout_seconds is closed.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/result.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace skippr::http_server {

struct Reply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string content_type = "application/json";
};

// {"error": message} with `status`.
Reply error_reply(int status, const std::string& message);

struct Request {
  std::string method;
  std::string path;
  std::string authorization;  // the Authorization header, "" when absent
  std::string body;           // whole, at most max_body_bytes; empty in a HeadCheck
};

// A request whose answer comes later (Server::answer); valid until it is answered.
struct Pending;

struct Limits {
  size_t max_body_bytes = 0;
  unsigned max_connections = 0;
  unsigned client_timeout_seconds = 0;
};

class Server {
 public:
  // Called on a server thread once a request (head and body) is complete. Returns the reply, or nullopt to hold the
  // request: the handler must then call answer(pending, ...) exactly once, from any thread.
  using Handler = std::function<std::optional<Reply>(const Request&, Pending* pending)>;

  // Called on a server thread once the head is in. A reply refuses the request: its body is read and dropped (not
  // kept in memory), then the reply is sent.
  using HeadCheck = std::function<std::optional<Reply>(const Request&)>;

  Server(std::string name, Limits limits, HeadCheck head_check, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens (connections wait in the backlog). A port another process holds is kUnavailable (retry
  // later: usually the previous instance still stopping); an address that is not this machine's is kConfig.
  Status listen(const std::string& host, int port);
  // Starts answering the connections.
  Status start();
  // Answers a held request.
  void answer(Pending* pending, Reply reply);
  // Answers every request still held with 503, gives those answers a moment to go out, then closes everything.
  void stop();

 private:
  struct Callbacks;  // the C callbacks MHD calls, friends of this class

  std::string name_;
  Limits limits_;
  HeadCheck head_check_;
  Handler handler_;
  int listen_fd_ = -1;
  MHD_Daemon* daemon_ = nullptr;
  std::atomic<unsigned> connections_ = 0;  // open connections, counted to refuse those beyond max_connections

  std::mutex mu_;                      // orders suspend (on a server thread) before resume (from answer())
  std::unordered_set<Pending*> held_;  // suspended and not yet answered
  bool stopped_ = false;               // answer() is ignored from here on
  std::atomic<size_t> answering_ = 0;  // answered after being held, the answer not yet sent
};

}  // namespace skippr::http_server
