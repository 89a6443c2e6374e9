// Proxy: startup, accept hand-off, reload, graceful shutdown.
#include "proxy/core/proxy.h"

#include <signal.h>
#include <unistd.h>

#include <thread>

#include "config/config.h"
#include "proxy/common/log.h"

namespace mcring::core {

Proxy::Proxy(ProxyOptions options) : options_(std::move(options)) {}

Proxy::~Proxy() {
  listeners_.clear();
  for (auto& w : workers_) {
    w->join();
  }
}

bool Proxy::start() {
  config::LoadResult loaded = config::loadConfigFile(options_.config_path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) {
      MCRING_LOG(Error, "%s", e.toString().c_str());
    }
    return false;
  }
  std::vector<std::string> errors;
  topology_ = config::Topology::build(*loaded.config, ++generation_, &errors);
  if (!topology_) {
    for (const auto& e : errors) {
      MCRING_LOG(Error, "%s: %s", options_.config_path.c_str(), e.c_str());
    }
    return false;
  }
  if (!syncListeners(*topology_)) {
    return false;
  }
  int threads = options_.threads > 0 ? options_.threads
                                     : static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) {
    threads = 1;
  }
  for (int i = 0; i < threads; ++i) {
    workers_.push_back(std::make_unique<Worker>(i, reporter_));
    reporter_.addWorker(&workers_.back()->counters());
  }
  for (auto& w : workers_) {
    w->start(topology_);
  }
  signals_.push_back(std::make_unique<net::SignalWatcher>(loop_, SIGTERM, [this] { shutdown(); }));
  signals_.push_back(std::make_unique<net::SignalWatcher>(loop_, SIGINT, [this] { shutdown(); }));
  signals_.push_back(
      std::make_unique<net::SignalWatcher>(loop_, SIGHUP, [this] { reload("signal"); }));
  for (const auto& pool : topology_->pools) {
    MCRING_LOG(Notice, "pool '%s' listening on %s, %zu servers, %s/%s", pool->config.name.c_str(),
               pool->listen_address.toString().c_str(), pool->config.servers.size(),
               std::string(routing::distributionName(pool->config.routing.distribution)).c_str(),
               std::string(routing::hashFunctionName(pool->config.routing.hash)).c_str());
  }
  MCRING_LOG(Notice, "mcring started: %d worker thread(s), config %s", threads,
             options_.config_path.c_str());
  return true;
}

// Opens listeners for new pools (and pools whose address changed) before closing old ones, so
// a listen change never leaves a window with nothing listening.
bool Proxy::syncListeners(const config::Topology& topology) {
  std::map<std::string, ListenerEntry> next;
  for (const auto& pool : topology.pools) {
    const std::string& name = pool->config.name;
    std::string address = pool->listen_address.toString();
    auto old = listeners_.find(name);
    if (old != listeners_.end() && old->second.address == address) {
      next[name] = std::move(old->second);
      listeners_.erase(old);
      continue;
    }
    std::string error;
    auto listener = net::Listener::open(
        loop_, pool->listen_address, pool->config.backlog, pool->config.reuseport,
        pool->config.listen.unix_mode, [this, name](int fd) { onAccept(name, fd); }, &error);
    if (!listener) {
      MCRING_LOG(Error, "pool '%s': %s", name.c_str(), error.c_str());
      // Put back what we moved so the old listeners keep serving.
      for (auto& [n, entry] : next) {
        if (!listeners_.count(n)) {
          listeners_[n] = std::move(entry);
        }
      }
      return false;
    }
    next[name] = ListenerEntry{address, std::move(listener)};
  }
  listeners_ = std::move(next);  // listeners of removed pools close here
  return true;
}

void Proxy::onAccept(const std::string& pool, int fd) {
  if (stopping_ || workers_.empty()) {
    ::close(fd);
    return;
  }
  Worker& w = *workers_[next_worker_++ % workers_.size()];
  w.postClient(fd, pool);
}

void Proxy::reload(const char* source) {
  if (stopping_) {
    return;
  }
  config::LoadResult loaded = config::loadConfigFile(options_.config_path);
  if (!loaded.ok()) {
    MCRING_LOG(Error, "reload (%s) rejected, keeping generation %llu:", source,
               static_cast<unsigned long long>(topology_->generation));
    for (const auto& e : loaded.errors) {
      MCRING_LOG(Error, "  %s", e.toString().c_str());
    }
    return;
  }
  if (loaded.config->digest == topology_->digest) {
    MCRING_LOG(Notice, "reload (%s): file unchanged, nothing to do", source);
    return;
  }
  std::vector<std::string> errors;
  auto next = config::Topology::build(*loaded.config, generation_ + 1, &errors);
  if (!next) {
    MCRING_LOG(Error, "reload (%s) rejected, keeping generation %llu:", source,
               static_cast<unsigned long long>(topology_->generation));
    for (const auto& e : errors) {
      MCRING_LOG(Error, "  %s", e.c_str());
    }
    return;
  }
  if (!syncListeners(*next)) {
    MCRING_LOG(Error, "reload (%s) rejected: cannot open listeners", source);
    return;
  }
  ++generation_;
  topology_ = next;
  for (auto& w : workers_) {
    w->postTopology(next);
  }
  MCRING_LOG(Notice, "reload (%s): generation %llu applied", source,
             static_cast<unsigned long long>(generation_));
}

void Proxy::shutdown() {
  if (stopping_) {
    MCRING_LOG(Warn, "second signal: exiting now");
    _exit(0);
  }
  stopping_ = true;
  MCRING_LOG(Notice, "shutting down: no new connections, finishing in-flight requests");
  listeners_.clear();
  for (auto& w : workers_) {
    w->postShutdown(options_.shutdown_grace_ms);
  }
  // Workers stop their loops when drained (or at the end of the grace period).
  exit_timer_ = std::make_unique<net::Timer>(loop_, [this] {
    for (auto& w : workers_) {
      if (!w->finished()) {
        return;
      }
    }
    loop_.stop();
  });
  exit_timer_->start(20, /*periodic=*/true);
}

int Proxy::run() {
  loop_.run();
  for (auto& w : workers_) {
    w->join();
  }
  MCRING_LOG(Notice, "mcring stopped");
  return 0;
}

}  // namespace mcring::core
