// BackendPoller: `stats` round trips to each backend, parsed for the item counts.
#include "proxy/backend/backend_poller.h"

#include <ctime>

#include "proxy/protocol/request_writer.h"

namespace mcring::core {

class BackendPoller::Probe : public net::ConnectionHandler {
 public:
  Probe(BackendPoller& owner, std::string pool, std::string identity)
      : owner_(owner), pool_(std::move(pool)), identity_(std::move(identity)) {}
  // tls and auth as the workers' connections to the same server (pool_security.h); the
  // authentication's STORED line is skipped with the rest that is not STAT.
  bool start(net::EventLoop& loop, const common::SocketAddress& address, const net::TlsSetup* tls,
             const std::string& auth) {
    tcp_ = net::TcpConnection::connect(loop, address, this, 2000, false, tls);
    if (!tcp_) {
      return false;
    }
    tcp_->output().append(auth);
    protocol::RequestWriter(tcp_->output()).verb(protocol::Command::Stats).end();
    return true;
  }
  void onConnected() override { tcp_->setReadTimeout(2000); }
  void onReadable() override {
    net::Buffer& in = tcp_->input();
    // Replies are small (a few KiB): look at them whole once END arrived.
    std::string_view all = in.contiguous(in.size());
    if (all.size() > 256 * 1024) {
      finish();
      return;
    }
    if (!all.ends_with("END\r\n")) {
      return;
    }
    BackendItems items;
    size_t pos = 0;
    while (pos < all.size()) {
      size_t eol = all.find("\r\n", pos);
      if (eol == std::string_view::npos) {
        break;
      }
      std::string_view line = all.substr(pos, eol - pos);
      pos = eol + 2;
      if (!line.starts_with("STAT ")) {
        continue;
      }
      line.remove_prefix(5);
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos) {
        continue;
      }
      std::string_view name = line.substr(0, sp);
      uint64_t value = std::strtoull(std::string(line.substr(sp + 1)).c_str(), nullptr, 10);
      if (name == "curr_items") {
        items.curr_items = value;
      } else if (name == "bytes") {
        items.bytes = value;
      } else if (name == "evictions") {
        items.evictions = value;
      } else if (name == "limit_maxbytes") {
        items.limit_maxbytes = value;
      }
    }
    items.updated = static_cast<int64_t>(::time(nullptr));
    owner_.store(pool_, identity_, items);
    finish();
  }
  void onClosed(net::CloseReason, int) override { finish(); }
  bool done() const { return done_; }

 private:
  void finish() {
    done_ = true;
    if (tcp_) {
      tcp_->close();
    }
  }
  BackendPoller& owner_;
  std::string pool_;
  std::string identity_;
  std::unique_ptr<net::TcpConnection> tcp_;
  bool done_ = false;
};

BackendPoller::BackendPoller(net::EventLoop& loop, uint32_t interval_s)
    : loop_(loop), interval_s_(interval_s) {
  if (interval_s_ > 0) {
    timer_ = std::make_unique<net::Timer>(loop_, [this] { round(); });
    timer_->start(100);  // a first round soon after start
  }
}

BackendPoller::~BackendPoller() = default;

void BackendPoller::setTopology(std::shared_ptr<const config::Topology> topology,
                                std::shared_ptr<const PoolTlsMap> tls) {
  topology_ = std::move(topology);
  tls_ = std::move(tls);
}

void BackendPoller::round() {
  // Probes of the previous round are over (answered, failed or timed out after 2 s < interval).
  probes_.clear();
  if (topology_) {
    for (const auto& pool : topology_->pools) {
      const std::string auth = serverAuthRequest(*pool);
      PoolTls contexts;
      if (tls_ && tls_->count(pool->config.name)) {
        contexts = tls_->at(pool->config.name);
      }
      for (size_t i = 0; i < pool->config.servers.size(); ++i) {
        auto probe =
            std::make_unique<Probe>(*this, pool->config.name, pool->config.servers[i].identity());
        auto setup = serverTlsSetup(contexts, pool->config, pool->config.servers[i]);
        if (probe->start(loop_, pool->server_addresses[i], setup ? &*setup : nullptr, auth)) {
          probes_.push_back(std::move(probe));
        }
      }
    }
  }
  timer_->start(static_cast<uint64_t>(interval_s_) * 1000);
}

void BackendPoller::store(const std::string& pool, const std::string& identity,
                          const BackendItems& items) {
  std::lock_guard<std::mutex> lock(mutex_);
  items_[{pool, identity}] = items;
}

std::map<std::pair<std::string, std::string>, BackendItems> BackendPoller::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return items_;
}

}  // namespace mcring::core
