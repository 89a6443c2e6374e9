// planSpread: hot keys in, the workers' next spread set out.
#include "proxy/admin/hot_spread_plan.h"

#include <algorithm>
#include <vector>

#include "proxy/routing/spread_copies.h"

namespace mcring::core {

namespace {

// The key's copies, distinct by server identity (a server listed twice is one server: a write
// sent to it twice would apply twice, an incr for one).
std::shared_ptr<SpreadEntry> freshEntry(const config::PoolTopology& pool, const std::string& key) {
  const config::PoolConfig& cfg = pool.config;
  // Fills name the key in a text `mg`/`ms` line: a key only base64 meta commands can carry
  // (spaces, control bytes) or longer than memcached's 250 bytes is not spread.
  if (key.empty() || key.size() > 250 || std::any_of(key.begin(), key.end(), [](char c) {
        return static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) == 0x7f;
      })) {
    return nullptr;
  }
  std::vector<uint32_t> copies;
  std::vector<std::string> identities;
  for (uint32_t i : routing::spreadCopies(*pool.router, key, cfg.hot_key_spread)) {
    if (i >= cfg.servers.size()) {
      continue;
    }
    std::string id = cfg.servers[i].identity();
    if (std::find(identities.begin(), identities.end(), id) == identities.end()) {
      identities.push_back(std::move(id));
      copies.push_back(i);
    }
  }
  if (copies.size() < 2) {
    return nullptr;  // nowhere to spread it (a hash tag, too few servers)
  }
  return std::make_shared<SpreadEntry>(key, std::move(copies), cfg.hot_key_copy_ttl_ms);
}

}  // namespace

bool spreadsHotKeys(const config::PoolTopology& pool) {
  const config::PoolConfig& cfg = pool.config;
  return cfg.hot_key_spread >= 2 && cfg.hot_keys && cfg.hot_key_event_percent > 0 &&
         pool.router != nullptr && cfg.servers.size() >= 2 &&
         cfg.routing.distribution != routing::Distribution::Random;
}

std::shared_ptr<SpreadSet> planSpread(const std::shared_ptr<const config::PoolTopology>& pool,
                                      const std::set<std::string>& hot, const SpreadSet* current,
                                      int workers) {
  const bool spreads = spreadsHotKeys(*pool);
  const bool same = current != nullptr && current->topology == pool;
  auto next = std::make_shared<SpreadSet>();
  next->topology = pool;
  next->workers = workers > 0 ? workers : 1;
  // Longer than a backend request may take (the pool's timeout), so that a write a worker sent
  // to the primary alone before it applied the set is answered before any fill reads the primary.
  const uint32_t timeout = pool->config.timeout_ms == 0 ? 5000 : pool->config.timeout_ms;
  next->settle_ms = timeout + 250;
  bool changed = current == nullptr ? false : !same;
  std::set<std::string> kept;
  if (same) {
    for (const auto& e : current->entries) {
      const bool is_hot = spreads && hot.count(e->key) != 0;
      const SpreadPhase phase = e->phase.load();
      if (phase == SpreadPhase::Spreading) {
        if (!is_hot) {
          e->phase.store(SpreadPhase::Collapsing);
          changed = true;
        }
        next->entries.push_back(e);
        kept.insert(e->key);
      } else if (is_hot) {
        // Heats again: a fresh entry, nothing filled (its copies may hold values of an earlier
        // period; a fill overwrites each before it is read).
        if (auto fresh = freshEntry(*pool, e->key)) {
          next->entries.push_back(std::move(fresh));
          kept.insert(e->key);
        }
        changed = true;
      } else if (!current->allAcked()) {
        next->entries.push_back(e);  // some worker may still read a copy: writes go to all
        kept.insert(e->key);
      } else {
        changed = true;  // every worker reads it from the primary only: writes may stop too
      }
    }
  }
  if (spreads) {
    for (const std::string& key : hot) {
      if (kept.count(key) != 0) {
        continue;
      }
      if (auto fresh = freshEntry(*pool, key)) {
        next->entries.push_back(std::move(fresh));
        changed = true;
      }
    }
  }
  if (current == nullptr && next->entries.empty()) {
    return nullptr;  // never spread anything: nothing to publish
  }
  return changed ? next : nullptr;
}

}  // namespace mcring::core
