#include "clients/http/mhd_server.h"

#include <fmt/format.h>
#include <microhttpd.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

namespace skippr::http_server {

// A too-large body is still read and dropped up to this much, so the client gets its 413 instead of a reset (closing a
// socket with unread data sends RST, which can destroy the answer in flight); beyond it the connection is closed.
constexpr size_t kDrainLimit = 1 << 20;
constexpr size_t kReserveLimit = 64 << 10;  // reserved for a body at most, whatever Content-Length claims
// Parsing JSON happens on these threads; waiting (slow clients, commits) does not, so a few are enough.
constexpr unsigned kMaxServerThreads = 4;
constexpr auto kStopGrace = std::chrono::seconds(2);  // for the 503s of held requests to go out at stop()

struct Pending {
  MHD_Connection* connection = nullptr;
  Request request;
  std::optional<Reply> early;  // decided before the body was read (413, 401, 404): the body is read and dropped
  size_t dropped = 0;          // body bytes thrown away
  bool counted = false;        // in answering_
  std::optional<Reply> reply;  // set by answer()
};

Reply error_reply(int status, const std::string& message) {
  Reply r;
  r.status = status;
  r.body =
      R"({"error":)" + nlohmann::json(message).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "}";
  return r;
}

namespace {

Reply too_large_reply(size_t max_body_bytes) {
  Reply r = error_reply(413, fmt::format("the request body is larger than max_body_bytes ({} bytes); send fewer "
                                         "records per request",
                                         max_body_bytes));
  r.headers.emplace_back("Connection", "close");  // the body may not have been read: the connection is not reused
  return r;
}

MHD_Result send_reply(MHD_Connection* connection, const Reply& reply) {
  MHD_Response* response =
      MHD_create_response_from_buffer(reply.body.size(), const_cast<char*>(reply.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, "Content-Type", reply.content_type.c_str());
  for (const auto& [name, value] : reply.headers) MHD_add_response_header(response, name.c_str(), value.c_str());
  const MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned>(reply.status), response);
  MHD_destroy_response(response);
  return queued;
}

std::string header(MHD_Connection* connection, const char* name) {
  const char* value = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
  return value ? value : "";
}

}  // namespace

struct Server::Callbacks {
  // Refusing here closes the socket at once: a client beyond the cap learns it now instead of waiting in the backlog.
  static MHD_Result accept(void* cls, const sockaddr*, socklen_t) {
    auto* s = static_cast<Server*>(cls);
    return s->connections_.load() < s->limits_.max_connections ? MHD_YES : MHD_NO;
  }

  static void connection_event(void* cls, MHD_Connection*, void**, MHD_ConnectionNotificationCode code) {
    auto* s = static_cast<Server*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) ++s->connections_;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) --s->connections_;
  }

  // MHD calls this once the head is in (*con_cls is null), once per piece of body, and then with no data until a reply
  // is queued (again after each resume).
  static MHD_Result access(void* cls, MHD_Connection* connection, const char* url, const char* method, const char*,
                           const char* upload_data, size_t* upload_size, void** con_cls) {
    auto* s = static_cast<Server*>(cls);
    auto* p = static_cast<Pending*>(*con_cls);
    if (p == nullptr) {
      p = new Pending;
      *con_cls = p;
      p->connection = connection;
      p->request.method = method;
      p->request.path = url;
      p->request.authorization = header(connection, "Authorization");
      const std::string length = header(connection, "Content-Length");
      uint64_t declared = 0;
      std::from_chars(length.data(), length.data() + length.size(), declared);
      if (declared > s->limits_.max_body_bytes) {
        p->early = too_large_reply(s->limits_.max_body_bytes);
      } else {
        p->early = s->head_check_(p->request);
        // Grows with what arrives: reserving what a slow client claims would let it claim memory it never sends.
        if (!p->early) p->request.body.reserve(std::min<uint64_t>(declared, kReserveLimit));
      }
      // The client waits for a 100 Continue, or would send more than is worth reading: answer before the body.
      if (p->early && (!header(connection, "Expect").empty() || declared > kDrainLimit)) {
        return send_reply(connection, *p->early);
      }
      return MHD_YES;
    }
    if (*upload_size > 0) {
      std::string& body = p->request.body;
      if (!p->early && body.size() + *upload_size > s->limits_.max_body_bytes) {
        p->early = too_large_reply(s->limits_.max_body_bytes);  // chunked, or more than Content-Length said
        std::string().swap(body);
      }
      if (p->early) {
        p->dropped += *upload_size;
        if (p->dropped > kDrainLimit) return MHD_NO;  // closes the connection
      } else {
        body.append(upload_data, *upload_size);
      }
      *upload_size = 0;
      return MHD_YES;
    }
    if (p->reply) return send_reply(connection, *p->reply);  // resumed
    if (p->early) return send_reply(connection, *p->early);

    // An exception must not cross into libmicrohttpd's C code (it would end the process): the request gets a 500.
    std::optional<Reply> reply;
    try {
      reply = s->handler_(p->request, p);
    } catch (const std::exception& e) {
      reply = error_reply(500, std::string("internal error: ") + e.what());
    }
    if (reply) return send_reply(connection, *reply);
    std::lock_guard lock(s->mu_);
    if (p->reply) return send_reply(connection, *p->reply);  // answered before we got here
    if (s->stopped_) {
      Reply busy = error_reply(503, "the pipeline is stopping; retry after 1 second");
      busy.headers.emplace_back("Retry-After", "1");
      return send_reply(connection, busy);
    }
    // Under mu_, so answer() cannot resume before the suspension (a resume that comes first would be lost).
    s->held_.insert(p);
    MHD_suspend_connection(connection);
    return MHD_YES;
  }

  static void completed(void* cls, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
    auto* p = static_cast<Pending*>(*con_cls);
    if (p == nullptr) return;
    if (p->counted) --static_cast<Server*>(cls)->answering_;
    delete p;
    *con_cls = nullptr;
  }

  static void log(void* cls, const char* format, va_list args) {
    char text[512];
    std::vsnprintf(text, sizeof text, format, args);
    std::string_view line(text);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    spdlog::debug("HttpServer source '{}': {}", static_cast<Server*>(cls)->name_, line);
  }
};

Server::Server(std::string name, Limits limits, HeadCheck head_check, Handler handler)
    : name_(std::move(name)), limits_(limits), head_check_(std::move(head_check)), handler_(std::move(handler)) {}

Server::~Server() { stop(); }

Status Server::listen(const std::string& host, int port) {
  // "[::1]" is how an IPv6 address is written in host:port; getaddrinfo wants it bare.
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  int bind_errno = 0;   // the last address's failure
  bool in_use = false;  // any address of the name was taken (localhost: 127.0.0.1 taken, ::1 not set up)
  if (getaddrinfo(bare.c_str(), std::to_string(port).c_str(), &hints, &found) == 0) {
    for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      const int yes = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
        listen_fd_ = fd;
      } else {
        bind_errno = errno;
        in_use = in_use || bind_errno == EADDRINUSE;
        close(fd);
      }
    }
    freeaddrinfo(found);
  }
  // A port another process holds is usually free again soon (the previous instance still stopping): retry later.
  // An address that is not this machine's, or that cannot be resolved, is a mistake in the configuration.
  if (listen_fd_ < 0 && in_use) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("cannot listen on {}:{}: another process is listening there; stop it or choose another "
                            "address (this run ends with 'retry later')",
                            host, port));
  }
  if (listen_fd_ < 0) {
    return fail(ErrorKind::kConfig,
                fmt::format("cannot listen on {}:{}: {}; use an address of this machine", host, port,
                            bind_errno != 0 ? std::strerror(bind_errno) : "the host name does not resolve"));
  }
  return ok();
}

Status Server::start() {
  if (daemon_ != nullptr) return ok();
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxServerThreads);
  // MHD's own cap is a backstop above ours: at it, MHD stops accepting and new clients wait in the backlog unanswered.
  daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0,
      &Callbacks::accept, this, &Callbacks::access, this, MHD_OPTION_LISTEN_SOCKET, listen_fd_,
      MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, limits_.max_connections + threads,
      MHD_OPTION_CONNECTION_TIMEOUT, limits_.client_timeout_seconds, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      size_t{64 << 10}, MHD_OPTION_NOTIFY_COMPLETED, &Callbacks::completed, this, MHD_OPTION_NOTIFY_CONNECTION,
      &Callbacks::connection_event, this, MHD_OPTION_EXTERNAL_LOGGER, &Callbacks::log, this, MHD_OPTION_END);
  if (daemon_ == nullptr) {
    return fail(ErrorKind::kInternal, fmt::format("HttpServer source '{}': the HTTP server did not start", name_));
  }
  listen_fd_ = -1;  // the daemon closes it
  return ok();
}

void Server::answer(Pending* pending, Reply reply) {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    pending->reply = std::move(reply);
    if (held_.erase(pending) == 0) return;  // not suspended yet: access() sends it
    pending->counted = true;
    ++answering_;
  }
  MHD_resume_connection(pending->connection);
}

void Server::stop() {
  if (daemon_ == nullptr) {
    if (listen_fd_ >= 0) close(listen_fd_);
    listen_fd_ = -1;
    return;
  }
  std::vector<Pending*> held;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;  // from here access() answers 503 instead of holding, and answer() does nothing
    for (Pending* p : held_) {
      Reply busy = error_reply(503, "the pipeline is stopping; retry after 1 second");
      busy.headers.emplace_back("Retry-After", "1");
      p->reply = std::move(busy);
      p->counted = true;
      ++answering_;
      held.push_back(p);
    }
    held_.clear();
  }
  for (Pending* p : held) MHD_resume_connection(p->connection);
  // MHD must not stop with suspended connections, and a resumed one needs a moment to send its answer.
  const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
  while (answering_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  MHD_stop_daemon(daemon_);
  daemon_ = nullptr;
}

}  // namespace skippr::http_server
