#include "proxy/stats/client_table.h"

#include <algorithm>
#include <cstring>

namespace mcring::stats {

namespace {

using Words = std::array<uint64_t, 8>;

Words encode(const std::string& address) {
  Words w{};
  std::memcpy(w.data(), address.data(), std::min(address.size(), ClientTable::kMaxAddress));
  return w;
}

Words load(const ClientSlot& s) {
  Words w{};
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = s.address[i].load(std::memory_order_relaxed);
  }
  return w;
}

std::string decode(const Words& w) {
  char text[sizeof(Words) + 1] = {};
  std::memcpy(text, w.data(), sizeof(Words));
  return std::string(text);
}

}  // namespace

ClientRef ClientTable::acquire(const std::string& address) {
  const Words want = encode(address);
  for (size_t i = 0; i < used_; ++i) {
    if (owners_[i] == want) {
      ++slots_[i].sessions;
      return {&slots_[i], slots_[i].seq.load(std::memory_order_relaxed)};
    }
  }
  ClientSlot* s = nullptr;
  if (used_ < kSlots) {
    s = &slots_[used_++];
  } else {
    // Full: the idle address with the fewest requests gives its slot, else the least active one.
    auto fewer = [](const ClientSlot& a, const ClientSlot& b) {
      if ((a.sessions == 0) != (b.sessions == 0)) {
        return a.sessions == 0;
      }
      return a.requests.load(std::memory_order_relaxed) <
             b.requests.load(std::memory_order_relaxed);
    };
    s = &*std::min_element(slots_.begin(), slots_.end(), fewer);
  }
  owners_[static_cast<size_t>(s - slots_.data())] = want;
  const uint64_t seq = s->seq.load(std::memory_order_relaxed);
  s->seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < want.size(); ++i) {
    s->address[i].store(want[i], std::memory_order_relaxed);
  }
  s->requests.store(0, std::memory_order_relaxed);
  s->bytes_in.store(0, std::memory_order_relaxed);
  s->bytes_out.store(0, std::memory_order_relaxed);
  s->seq.store(seq + 2, std::memory_order_release);
  s->sessions = 1;
  return {s, seq + 2};
}

void ClientTable::release(const ClientRef& ref) {
  if (ref.current() && ref.slot->sessions > 0) {
    --ref.slot->sessions;
  }
}

void ClientTable::read(std::map<std::string, ClientTotals>* out) const {
  for (size_t i = 0; i < kSlots; ++i) {
    const ClientSlot& s = slots_[i];
    // A few tries: the worker reassigns a slot in a few stores, and rarely.
    for (int attempt = 0; attempt < 4; ++attempt) {
      const uint64_t before = s.seq.load(std::memory_order_acquire);
      if (before == 0) {
        break;  // never used
      }
      if (before % 2 == 1) {
        continue;
      }
      const Words w = load(s);
      ClientTotals t;
      t.requests = s.requests.load(std::memory_order_relaxed);
      t.bytes_in = s.bytes_in.load(std::memory_order_relaxed);
      t.bytes_out = s.bytes_out.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.seq.load(std::memory_order_relaxed) != before) {
        continue;
      }
      ClientTotals& sum = (*out)[decode(w)];
      sum.requests += t.requests;
      sum.bytes_in += t.bytes_in;
      sum.bytes_out += t.bytes_out;
      break;
    }
  }
}

std::vector<ClientRate> topClients(const std::map<std::string, ClientTotals>& now,
                                   const std::map<std::string, ClientTotals>& previous,
                                   double seconds, size_t n) {
  std::vector<ClientRate> rows;
  rows.reserve(now.size());
  const double s = seconds > 0 ? seconds : 1;
  for (const auto& [address, t] : now) {
    ClientTotals before;
    auto it = previous.find(address);
    // A slot reassigned meanwhile restarted from 0: its counts are all new.
    if (it != previous.end() && it->second.requests <= t.requests &&
        it->second.bytes_in <= t.bytes_in && it->second.bytes_out <= t.bytes_out) {
      before = it->second;
    }
    ClientRate r;
    r.address = address;
    r.totals = t;
    r.requests_per_s = static_cast<double>(t.requests - before.requests) / s;
    r.bytes_in_per_s = static_cast<double>(t.bytes_in - before.bytes_in) / s;
    r.bytes_out_per_s = static_cast<double>(t.bytes_out - before.bytes_out) / s;
    rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end(), [](const ClientRate& a, const ClientRate& b) {
    if (a.requests_per_s != b.requests_per_s) {
      return a.requests_per_s > b.requests_per_s;
    }
    const double ba = a.bytes_in_per_s + a.bytes_out_per_s;
    const double bb = b.bytes_in_per_s + b.bytes_out_per_s;
    return ba != bb ? ba > bb : a.address < b.address;
  });
  if (rows.size() > n) {
    rows.resize(n);
  }
  return rows;
}

}  // namespace mcring::stats
