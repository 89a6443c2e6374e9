// Discovery: one resolver and one timer per discovered pool, on the main loop.
#include "proxy/control/discovery.h"

#include <algorithm>

#include "config/parse.h"
#include "proxy/common/log.h"

namespace mcring::core {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    out += (out.empty() ? "" : " ") + s;
  }
  return out;
}

// "servers_dns name:port" or "servers_srv name", for logs and errors.
std::string describe(const config::PoolConfig& pool) {
  return pool.servers_dns ? "servers_dns " + pool.servers_dns->toString()
                          : "servers_srv " + pool.servers_srv;
}

}  // namespace

std::string Discovery::keyOf(const config::PoolConfig& pool) {
  return pool.name + '\t' + describe(pool) + '\t' +
         (pool.dns_resolver ? pool.dns_resolver->toString() : std::string()) + '\t' +
         std::to_string(pool.dns_interval_ms) + '\t' + std::to_string(pool.dns_remove_after);
}

void Discovery::add(const config::Config& config) {
  for (const config::PoolConfig& p : config.pools) {
    if (!p.discovered()) {
      continue;
    }
    std::string key = keyOf(p);
    if (pools_.count(key) > 0) {
      continue;
    }
    auto pool = std::make_unique<Pool>(p.dns_remove_after);
    pool->name = p.name;
    pool->what = describe(p);
    if (p.servers_dns) {
      pool->target = *p.servers_dns;
    }
    pool->srv = p.servers_srv;
    std::string error;
    // One try waits at most the interval (2 s at most): an answer is due before the next query.
    const uint32_t timeout_ms = std::min<uint32_t>(p.dns_interval_ms, 2000);
    pool->resolver = net::DnsResolver::create(
        loop_, p.dns_resolver ? p.dns_resolver->toString() : std::string(), timeout_ms, &error);
    if (!pool->resolver) {
      // Reported like a failed answer: the pool waits for its first one.
      pool->last_error = error;
      MCRING_LOG(Error, "pool '%s': %s: %s", p.name.c_str(), pool->what.c_str(), error.c_str());
    } else {
      pool->timer = std::make_unique<net::Timer>(loop_, [this, key] { resolve(key); });
      pool->timer->start(p.dns_interval_ms, /*periodic=*/true);
    }
    pools_[key] = std::move(pool);
    resolve(key);
  }
}

void Discovery::retain(const config::Config& config) {
  for (auto it = pools_.begin(); it != pools_.end();) {
    bool keep = false;
    for (const config::PoolConfig& p : config.pools) {
      keep = keep || (p.discovered() && keyOf(p) == it->first);
    }
    it = keep ? std::next(it) : pools_.erase(it);
  }
}

bool Discovery::fill(config::Config& config, std::vector<std::string>* errors) const {
  bool ok = true;
  for (config::PoolConfig& p : config.pools) {
    if (!p.discovered()) {
      continue;
    }
    auto it = pools_.find(keyOf(p));
    if (it == pools_.end() || !it->second->servers.resolved()) {
      const std::string why = it == pools_.end() || it->second->last_error.empty()
                                  ? std::string("no answer yet")
                                  : "no good answer yet (last: " + it->second->last_error + ")";
      errors->push_back("pool '" + p.name + "': " + describe(p) + ": " + why);
      ok = false;
      continue;
    }
    p.servers.clear();
    for (const std::string& identity : it->second->servers.servers()) {
      std::string error;
      // The same parse as a `servers:` entry of weight 1, so the server is exactly that entry.
      auto weight = it->second->weights.find(identity);
      const uint32_t w = weight == it->second->weights.end() ? 1 : weight->second;
      auto server = config::parseServer(identity + ":" + std::to_string(w), &error);
      if (!server) {
        errors->push_back("pool '" + p.name + "': discovered server " + identity + ": " + error);
        ok = false;
        continue;
      }
      p.servers.push_back(std::move(*server));
    }
  }
  return ok;
}

size_t Discovery::unanswered() const {
  size_t n = 0;
  for (const auto& [key, pool] : pools_) {
    n += pool->answered ? 0 : 1;
  }
  return n;
}

void Discovery::resolve(const std::string& key) {
  auto it = pools_.find(key);
  if (it == pools_.end()) {
    return;
  }
  Pool& pool = *it->second;
  if (!pool.resolver) {
    // No resolver could be made: counts as an answer (failed), so startup does not wait on it.
    pool.answered = true;
    notify(pool.name, false);
    return;
  }
  if (pool.resolver->busy()) {
    return;  // the previous query is still out (its timeout is shorter than the interval)
  }
  bool started =
      !pool.srv.empty()
          ? pool.resolver->resolveSrv(
                pool.srv, [this, key](net::SrvAnswer srv) { onSrvAnswer(key, std::move(srv)); })
          : pool.resolver->resolve(pool.target.host, [this, key](net::DnsAnswer answer) {
              onAnswer(key, std::move(answer));
            });
  if (!started) {
    loop_.post([this, key] { onResult(key, false, {}, {}, "cannot start a DNS query"); });
  }
}

void Discovery::onAnswer(const std::string& key, net::DnsAnswer answer) {
  auto it = pools_.find(key);
  if (it == pools_.end()) {
    return;
  }
  std::vector<std::string> identities;
  for (const std::string& address : answer.addresses) {
    config::Address a;
    a.host = address;
    a.port = it->second->target.port;
    identities.push_back(a.toString());
  }
  onResult(key, answer.ok, std::move(identities), {}, answer.error);
}

void Discovery::onSrvAnswer(const std::string& key, net::SrvAnswer answer) {
  std::vector<std::string> identities;
  std::map<std::string, uint32_t> weights;
  for (const net::SrvServer& s : answer.servers) {
    config::Address a;
    a.host = s.address;
    a.port = s.port;
    identities.push_back(a.toString());
    weights[identities.back()] = s.weight == 0 ? 1 : s.weight;  // servers weigh 1 or more
  }
  onResult(key, answer.ok, std::move(identities), std::move(weights), answer.error);
}

void Discovery::onResult(const std::string& key, bool ok, std::vector<std::string> identities,
                         std::map<std::string, uint32_t> weights, const std::string& error) {
  auto it = pools_.find(key);
  if (it == pools_.end()) {
    return;
  }
  Pool& pool = *it->second;
  const std::string name = pool.name;  // the handler may retain() this pool away
  const std::string target = pool.what;
  pool.answered = true;
  if (!ok) {
    ++pool.failures;
    pool.last_error = error;
    if (!pool.failing) {
      MCRING_LOG(Warn, "pool '%s': %s: no usable answer (%s); keeping %zu server(s)", name.c_str(),
                 target.c_str(), error.c_str(), pool.servers.servers().size());
    }
    pool.failing = true;
    notify(name, false);
    return;
  }
  if (pool.failing) {
    MCRING_LOG(Notice, "pool '%s': %s answers again (%llu failed answers)", name.c_str(),
               target.c_str(), static_cast<unsigned long long>(pool.failures));
  }
  pool.failing = false;
  pool.failures = 0;
  pool.last_error.clear();
  DiscoveredServers::Step step = pool.servers.onAnswer(identities);
  // SRV weights apply at once to the servers in force (a weight is not a membership change).
  bool reweighted = false;
  for (const std::string& s : pool.servers.servers()) {
    auto w = weights.find(s);
    if (w != weights.end() && pool.weights[s] != w->second) {
      const bool added = std::find(step.added.begin(), step.added.end(), s) != step.added.end();
      reweighted = reweighted || (!added && pool.weights.count(s) > 0);
      pool.weights[s] = w->second;
    }
  }
  if (!step.held.empty()) {
    MCRING_LOG(Warn,
               "pool '%s': %s: this answer would remove %zu of %zu servers (%s); "
               "held until an answer repeats it",
               name.c_str(), target.c_str(), step.held.size(), pool.servers.servers().size(),
               joined(step.held).c_str());
  }
  if (step.changed()) {
    MCRING_LOG(Notice, "pool '%s': %s: %s%s%s%s", name.c_str(), target.c_str(),
               step.added.empty() ? "" : "added ", joined(step.added).c_str(),
               step.added.empty() || step.removed.empty() ? "" : "; ",
               step.removed.empty() ? "" : ("removed " + joined(step.removed)).c_str());
  }
  if (reweighted) {
    MCRING_LOG(Notice, "pool '%s': %s: SRV weights changed", name.c_str(), target.c_str());
  }
  notify(name, step.changed() || reweighted);
}

// On the loop's next turn, not inside the resolver's callback: the handler may reload, and a
// reload may destroy this pool's resolver.
void Discovery::notify(const std::string& pool, bool changed) {
  loop_.post([this, pool, changed] { handler_(pool, changed); });
}

}  // namespace mcring::core
