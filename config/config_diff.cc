// diffConfigs: pool- and server-level differences between two validated configs.
#include "config/config_diff.h"

#include <map>

namespace mcring::config {
namespace {

void keyChange(std::vector<std::string>* out, const char* key, const std::string& a,
               const std::string& b) {
  if (a != b) {
    out->push_back(std::string(key) + " " + a + "->" + b);
  }
}

std::string str(bool b) {
  return b ? "true" : "false";
}
template <typename T>
std::string str(T v) {
  return std::to_string(v);
}

std::string showAddress(const PoolConfig& p) {
  return p.listens ? p.listen.toString() : "none";
}

std::string routeLabel(const RouteConfig& r) {
  return r.is_default ? "route default" : "route '" + r.prefix + "'";
}

std::string showShadow(const std::optional<ShadowConfig>& s) {
  if (!s) {
    return "none";
  }
  return s->pool + " " + std::to_string(s->percent) + "%" + (s->writes_only ? " writes_only" : "");
}

std::string showFailover(const std::vector<std::string>& pools) {
  std::string out = "[";
  for (size_t i = 0; i < pools.size(); ++i) {
    out += (i ? "," : "") + pools[i];
  }
  return out + "]";
}

std::string showRateLimit(const std::optional<RateLimitConfig>& r) {
  if (!r) {
    return "none";
  }
  return std::to_string(r->requests_per_second) + "/s burst " + std::to_string(r->burst);
}

std::string showTtl(uint32_t ttl) {
  return ttl == 0 ? "none" : std::to_string(ttl);
}

// Routes are matched by prefix (the default with the default): their order does not matter.
void diffRoutes(const PoolConfig& a, const PoolConfig& b, std::vector<std::string>* out) {
  auto find = [](const PoolConfig& p, const RouteConfig& like) -> const RouteConfig* {
    for (const RouteConfig& r : p.routes) {
      if (r.is_default == like.is_default && r.prefix == like.prefix) {
        return &r;
      }
    }
    return nullptr;
  };
  for (const RouteConfig& after : b.routes) {
    const RouteConfig* before = find(a, after);
    const std::string label = routeLabel(after);
    if (before == nullptr) {
      out->push_back("+" + label + " -> " + after.pool);
      continue;
    }
    auto change = [&](const char* what, const std::string& x, const std::string& y) {
      if (x != y) {
        out->push_back(label + " " + what + " " + x + "->" + y);
      }
    };
    change("pool", before->pool, after.pool);
    change("shadow", showShadow(before->shadow), showShadow(after.shadow));
    change("max_ttl", showTtl(before->max_ttl), showTtl(after.max_ttl));
    change("failover", showFailover(before->failover), showFailover(after.failover));
    change("failover_on_miss", str(before->failover_on_miss), str(after.failover_on_miss));
    change("rate_limit", showRateLimit(before->rate_limit), showRateLimit(after.rate_limit));
  }
  for (const RouteConfig& before : a.routes) {
    if (find(b, before) == nullptr) {
      out->push_back("-" + routeLabel(before));
    }
  }
}

PoolDiff diffPool(const PoolConfig& a, const PoolConfig& b) {
  PoolDiff d;
  d.pool = a.name;
  std::map<std::string, const ServerConfig*> before;
  std::map<std::string, const ServerConfig*> after;
  for (const auto& s : a.servers) {
    before[s.identity()] = &s;
  }
  for (const auto& s : b.servers) {
    after[s.identity()] = &s;
  }
  for (const auto& [id, s] : after) {
    auto it = before.find(id);
    if (it == before.end()) {
      d.servers_added.push_back(id);
      continue;
    }
    if (it->second->spec.weight != s->spec.weight) {
      d.servers_reweighted.push_back(id + " weight " + str(it->second->spec.weight) + "->" +
                                     str(s->spec.weight));
    }
    if (it->second->spec.name != s->spec.name) {
      d.servers_renamed.push_back(id + " name '" + it->second->spec.name + "'->'" + s->spec.name +
                                  "'");
    }
  }
  for (const auto& [id, s] : before) {
    if (!after.count(id)) {
      d.servers_removed.push_back(id);
    }
  }
  if (d.servers_added.empty() && d.servers_removed.empty()) {
    for (size_t i = 0; i < a.servers.size(); ++i) {
      if (a.servers[i].identity() != b.servers[i].identity()) {
        d.server_order_changed = true;
        break;
      }
    }
  }
  auto& k = d.keys_changed;
  keyChange(&k, "listen", showAddress(a), showAddress(b));
  keyChange(&k, "hash", std::string(routing::hashFunctionName(a.routing.hash)),
            std::string(routing::hashFunctionName(b.routing.hash)));
  keyChange(&k, "distribution", std::string(routing::distributionName(a.routing.distribution)),
            std::string(routing::distributionName(b.routing.distribution)));
  keyChange(&k, "ketama_compat", std::string(routing::ketamaCompatName(a.routing.ketama_compat)),
            std::string(routing::ketamaCompatName(b.routing.ketama_compat)));
  keyChange(&k, "hash_tag", a.routing.hash_tag, b.routing.hash_tag);
  keyChange(&k, "replicas", str(a.routing.replicas), str(b.routing.replicas));
  keyChange(&k, "replica_write_reply", a.replica_write_all ? "all" : "primary",
            b.replica_write_all ? "all" : "primary");
  keyChange(&k, "read_failover_on_miss", str(a.read_failover_on_miss),
            str(b.read_failover_on_miss));
  keyChange(&k, "return_flush", str(a.return_flush), str(b.return_flush));
  keyChange(&k, "return_window", str(a.return_window_ms), str(b.return_window_ms));
  keyChange(&k, "timeout", str(a.timeout_ms), str(b.timeout_ms));
  keyChange(&k, "server_connections", str(a.server_connections), str(b.server_connections));
  keyChange(&k, "client_connections", str(a.client_connections), str(b.client_connections));
  keyChange(&k, "auto_eject_hosts", str(a.auto_eject_hosts), str(b.auto_eject_hosts));
  keyChange(&k, "server_retry_timeout", str(a.server_retry_timeout_ms),
            str(b.server_retry_timeout_ms));
  keyChange(&k, "server_failure_limit", str(a.server_failure_limit), str(b.server_failure_limit));
  keyChange(&k, "item_size_max", str(a.item_size_max), str(b.item_size_max));
  keyChange(&k, "allow_flush_all", str(a.allow_flush_all), str(b.allow_flush_all));
  keyChange(&k, "allow_dump", str(a.allow_dump), str(b.allow_dump));
  keyChange(&k, "allow_watch", str(a.allow_watch), str(b.allow_watch));
  keyChange(&k, "slow_request_ms", str(a.slow_request_ms), str(b.slow_request_ms));
  keyChange(&k, "log_keys", std::string(logKeysName(a.log_keys)),
            std::string(logKeysName(b.log_keys)));
  keyChange(&k, "coalesce_gets", str(a.coalesce_gets), str(b.coalesce_gets));
  keyChange(&k, "unavailable_reads", std::string(unavailableReadsName(a.unavailable_reads)),
            std::string(unavailableReadsName(b.unavailable_reads)));
  keyChange(&k, "unavailable_writes", std::string(unavailableWritesName(a.unavailable_writes)),
            std::string(unavailableWritesName(b.unavailable_writes)));
  keyChange(&k, "max_multiget_keys", str(a.max_multiget_keys), str(b.max_multiget_keys));
  keyChange(&k, "client_buffer_limit", str(a.client_buffer_limit), str(b.client_buffer_limit));
  keyChange(&k, "buffer_limit", str(a.buffer_limit), str(b.buffer_limit));
  keyChange(&k, "reuseport", str(a.reuseport), str(b.reuseport));
  keyChange(&k, "client_idle_timeout", str(a.client_idle_timeout_ms),
            str(b.client_idle_timeout_ms));
  keyChange(&k, "client_request_timeout", str(a.client_request_timeout_ms),
            str(b.client_request_timeout_ms));
  keyChange(&k, "tls_handshake_timeout", str(a.tls_handshake_timeout_ms),
            str(b.tls_handshake_timeout_ms));
  auto showOptional = [](const std::optional<Address>& x) {
    return x ? x->toString() : std::string("none");
  };
  keyChange(&k, "servers_dns", showOptional(a.servers_dns), showOptional(b.servers_dns));
  keyChange(&k, "servers_srv", a.servers_srv.empty() ? "none" : a.servers_srv,
            b.servers_srv.empty() ? "none" : b.servers_srv);
  keyChange(&k, "dns_resolver", showOptional(a.dns_resolver), showOptional(b.dns_resolver));
  keyChange(&k, "dns_interval", str(a.dns_interval_ms), str(b.dns_interval_ms));
  keyChange(&k, "dns_remove_after", str(a.dns_remove_after), str(b.dns_remove_after));
  keyChange(&k, "warmup_window", str(a.warmup_window_ms), str(b.warmup_window_ms));
  keyChange(&k, "warmup_max_inflight", str(a.warmup_max_inflight), str(b.warmup_max_inflight));
  keyChange(&k, "hot_keys", str(a.hot_keys), str(b.hot_keys));
  keyChange(&k, "hot_key_capacity", str(a.hot_key_capacity), str(b.hot_key_capacity));
  keyChange(&k, "hot_key_event_percent", str(a.hot_key_event_percent),
            str(b.hot_key_event_percent));
  keyChange(&k, "hot_key_min_rate", str(a.hot_key_min_rate), str(b.hot_key_min_rate));
  keyChange(&k, "prefix_delimiter", std::string(1, a.prefix_delimiter),
            std::string(1, b.prefix_delimiter));
  keyChange(&k, "detail_max_prefixes", str(a.detail_max_prefixes), str(b.detail_max_prefixes));
  keyChange(&k, "hot_key_spread", str(a.hot_key_spread), str(b.hot_key_spread));
  keyChange(&k, "hot_key_copy_ttl", str(a.hot_key_copy_ttl_ms), str(b.hot_key_copy_ttl_ms));
  keyChange(&k, "hot_key_metrics", std::string(hotKeyMetricsName(a.hot_key_metrics)),
            std::string(hotKeyMetricsName(b.hot_key_metrics)));
  keyChange(&k, "backlog", str(a.backlog), str(b.backlog));
  keyChange(&k, "preconnect", str(a.preconnect), str(b.preconnect));
  keyChange(&k, "tcpkeepalive", str(a.tcpkeepalive), str(b.tcpkeepalive));
  // TLS and authentication: paths and switches only (a file's content is never shown).
  keyChange(&k, "listen_tls", str(a.listen_tls), str(b.listen_tls));
  keyChange(&k, "tls_listen", a.tls_listen ? a.tls_listen->toString() : "",
            b.tls_listen ? b.tls_listen->toString() : "");
  keyChange(&k, "tls_cert", a.tls_cert, b.tls_cert);
  keyChange(&k, "tls_key", a.tls_key, b.tls_key);
  keyChange(&k, "tls_ca", a.tls_ca, b.tls_ca);
  keyChange(&k, "tls_verify_client", str(a.tls_verify_client), str(b.tls_verify_client));
  keyChange(&k, "tls_min_version", a.tls_min_version, b.tls_min_version);
  keyChange(&k, "tls_ciphers", a.tls_ciphers, b.tls_ciphers);
  keyChange(&k, "server_tls", str(a.server_tls), str(b.server_tls));
  keyChange(&k, "server_tls_ca", a.server_tls_ca, b.server_tls_ca);
  keyChange(&k, "server_tls_cert", a.server_tls_cert, b.server_tls_cert);
  keyChange(&k, "server_tls_key", a.server_tls_key, b.server_tls_key);
  keyChange(&k, "server_tls_name", a.server_tls_name, b.server_tls_name);
  keyChange(&k, "server_tls_verify", str(a.server_tls_verify), str(b.server_tls_verify));
  keyChange(&k, "client_auth_file", a.client_auth_file, b.client_auth_file);
  keyChange(&k, "server_auth_file", a.server_auth_file, b.server_auth_file);
  diffRoutes(a, b, &d.routes_changed);
  return d;
}

void appendList(std::string* out, const char* label, const std::vector<std::string>& items) {
  if (items.empty()) {
    return;
  }
  if (!out->empty() && out->back() != ' ') {
    out->append(", ");
  }
  out->append(label);
  out->append(std::to_string(items.size()));
  out->append(" (");
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) {
      out->append(", ");
    }
    out->append(items[i]);
  }
  out->append(")");
}

}  // namespace

bool ConfigDiff::serversChanged() const {
  if (!pools_added.empty() || !pools_removed.empty()) {
    return true;
  }
  for (const auto& p : pools_changed) {
    if (!p.servers_added.empty() || !p.servers_removed.empty() || !p.servers_reweighted.empty() ||
        !p.servers_renamed.empty() || p.server_order_changed) {
      return true;
    }
  }
  return false;
}

std::string ConfigDiff::summary() const {
  if (empty()) {
    return "no change";
  }
  std::string out;
  for (const auto& p : pools_changed) {
    if (!out.empty()) {
      out.append("; ");
    }
    out.append("pool '" + p.pool + "': ");
    size_t start = out.size();
    std::string body;
    appendList(&body, "+servers ", p.servers_added);
    appendList(&body, "-servers ", p.servers_removed);
    appendList(&body, "reweighted ", p.servers_reweighted);
    appendList(&body, "renamed ", p.servers_renamed);
    if (p.server_order_changed) {
      body.append(body.empty() ? "" : ", ");
      body.append("server order changed");
    }
    appendList(&body, "keys ", p.keys_changed);
    for (const std::string& r : p.routes_changed) {
      body.append(body.empty() ? "" : ", ");
      body.append(r);
    }
    out.insert(start, body);
  }
  for (const auto& name : pools_added) {
    out.append(out.empty() ? "" : "; ");
    out.append("pool '" + name + "' added");
  }
  for (const auto& name : pools_removed) {
    out.append(out.empty() ? "" : "; ");
    out.append("pool '" + name + "' removed");
  }
  return out;
}

ConfigDiff diffConfigs(const Config& before, const Config& after) {
  ConfigDiff diff;
  std::map<std::string, const PoolConfig*> a;
  for (const auto& p : before.pools) {
    a[p.name] = &p;
  }
  for (const auto& p : after.pools) {
    auto it = a.find(p.name);
    if (it == a.end()) {
      diff.pools_added.push_back(p.name);
      continue;
    }
    PoolDiff d = diffPool(*it->second, p);
    if (!d.empty()) {
      diff.pools_changed.push_back(std::move(d));
    }
    a.erase(it);
  }
  for (const auto& [name, p] : a) {
    diff.pools_removed.push_back(name);
  }
  return diff;
}

}  // namespace mcring::config
