// The memcached text-protocol commands mcring understands, and how each one is proxied.
#pragma once

#include <cstdint>
#include <string_view>

namespace mcring::protocol {

// How the proxy handles a command; decides routing and reply framing.
enum class CommandClass : uint8_t {
  Retrieval,   // get gets gat gats: one or more keys, split per backend, VALUE... END
  Storage,     // set add replace append prepend cas: one key, a data block follows
  Keyed,       // delete incr decr touch: one key, one reply line
  Meta,        // mg ms md ma me: one key, passed through with all flags
  MetaNoop,    // mn: answered by the proxy, in order
  Local,       // version verbosity quit stats: answered by the proxy
  Broadcast,   // flush_all: sent to every backend of the pool
};

// X-macro: one table for enum, wire name and class.
#define MCRING_COMMANDS(X)                      \
  X(Get, "get", Retrieval)                      \
  X(Gets, "gets", Retrieval)                    \
  X(Gat, "gat", Retrieval)                      \
  X(Gats, "gats", Retrieval)                    \
  X(Set, "set", Storage)                        \
  X(Add, "add", Storage)                        \
  X(Replace, "replace", Storage)                \
  X(Append, "append", Storage)                  \
  X(Prepend, "prepend", Storage)                \
  X(Cas, "cas", Storage)                        \
  X(Delete, "delete", Keyed)                    \
  X(Incr, "incr", Keyed)                        \
  X(Decr, "decr", Keyed)                        \
  X(Touch, "touch", Keyed)                      \
  X(MetaGet, "mg", Meta)                        \
  X(MetaSet, "ms", Meta)                        \
  X(MetaDelete, "md", Meta)                     \
  X(MetaArithmetic, "ma", Meta)                 \
  X(MetaDebug, "me", Meta)                      \
  X(MetaNoop, "mn", MetaNoop)                   \
  X(Version, "version", Local)                  \
  X(Verbosity, "verbosity", Local)              \
  X(Quit, "quit", Local)                        \
  X(Stats, "stats", Local)                      \
  X(FlushAll, "flush_all", Broadcast)

enum class Command : uint8_t {
#define MCRING_X(id, name, cls) id,
  MCRING_COMMANDS(MCRING_X)
#undef MCRING_X
};

inline constexpr int kCommandCount = 0
#define MCRING_X(id, name, cls) +1
    MCRING_COMMANDS(MCRING_X)
#undef MCRING_X
    ;

constexpr std::string_view commandName(Command c) {
  switch (c) {
#define MCRING_X(id, name, cls) \
  case Command::id:             \
    return name;
    MCRING_COMMANDS(MCRING_X)
#undef MCRING_X
  }
  return "?";
}

constexpr CommandClass commandClass(Command c) {
  switch (c) {
#define MCRING_X(id, name, cls) \
  case Command::id:             \
    return CommandClass::cls;
    MCRING_COMMANDS(MCRING_X)
#undef MCRING_X
  }
  return CommandClass::Local;
}

}  // namespace mcring::protocol
