// The memcached text-protocol commands mcring understands, and how each one is proxied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mcring::protocol {

// How the proxy handles a command; decides routing and reply framing.
enum class CommandClass : uint8_t {
  Retrieval,  // get gets gat gats: one or more keys, split per backend, VALUE... END
  Storage,    // set add replace append prepend cas: one key, a data block follows
  Keyed,      // delete incr decr touch: one key, one reply line
  Meta,       // mg ms md ma me: one key, passed through with all flags
  MetaNoop,   // mn: answered by the proxy, in order
  Local,      // version verbosity quit stats lru_crawler watch: answered by the proxy
  Broadcast,  // flush_all: sent to every backend of the pool
};

// What a command does to its item, for the per-worker and per-backend counters (which count
// `mg` with the gets and `ms` with the stores, whatever their class).
// The order is that of the counter tables indexed by it (client_session.cc).
enum class CommandEffect : uint8_t { Read, Store, Delete, Touch, Other };

// X-macro: one table for enum, wire name, class and effect.
#define MCRING_COMMANDS(X)                   \
  X(Get, "get", Retrieval, Read)             \
  X(Gets, "gets", Retrieval, Read)           \
  X(Gat, "gat", Retrieval, Read)             \
  X(Gats, "gats", Retrieval, Read)           \
  X(Set, "set", Storage, Store)              \
  X(Add, "add", Storage, Store)              \
  X(Replace, "replace", Storage, Store)      \
  X(Append, "append", Storage, Store)        \
  X(Prepend, "prepend", Storage, Store)      \
  X(Cas, "cas", Storage, Store)              \
  X(Delete, "delete", Keyed, Delete)         \
  X(Incr, "incr", Keyed, Other)              \
  X(Decr, "decr", Keyed, Other)              \
  X(Touch, "touch", Keyed, Touch)            \
  X(MetaGet, "mg", Meta, Read)               \
  X(MetaSet, "ms", Meta, Store)              \
  X(MetaDelete, "md", Meta, Delete)          \
  X(MetaArithmetic, "ma", Meta, Other)       \
  X(MetaDebug, "me", Meta, Other)            \
  X(MetaNoop, "mn", MetaNoop, Other)         \
  X(Version, "version", Local, Other)        \
  X(Verbosity, "verbosity", Local, Other)    \
  X(Quit, "quit", Local, Other)              \
  X(Stats, "stats", Local, Other)            \
  X(LruCrawler, "lru_crawler", Local, Other) \
  X(Watch, "watch", Local, Other)            \
  X(FlushAll, "flush_all", Broadcast, Other)

enum class Command : uint8_t {
#define MCRING_X(id, name, cls, effect) id,
  MCRING_COMMANDS(MCRING_X)
#undef MCRING_X
};

// Everything the table says about one command, indexed by Command.
struct CommandInfo {
  std::string_view name;
  CommandClass cls;
  CommandEffect effect;
};

inline constexpr CommandInfo kCommandInfo[] = {
#define MCRING_X(id, name, cls, effect) {name, CommandClass::cls, CommandEffect::effect},
    MCRING_COMMANDS(MCRING_X)
#undef MCRING_X
};

constexpr std::string_view commandName(Command c) {
  return kCommandInfo[static_cast<size_t>(c)].name;
}
constexpr CommandClass commandClass(Command c) {
  return kCommandInfo[static_cast<size_t>(c)].cls;
}
constexpr CommandEffect commandEffect(Command c) {
  return kCommandInfo[static_cast<size_t>(c)].effect;
}

}  // namespace mcring::protocol
