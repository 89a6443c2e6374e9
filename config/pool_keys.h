// The pool keys: one table from which parsing, validation and docs/configuration.md all come.
//
// Adding a key = one row in pool_keys.cc (and a field in config.h); the loader, the unknown-key
// suggestions and the docs table pick it up. The table never sees yaml-cpp: a key's setter reads
// its value through ValueReader, which the loader implements over YAML nodes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace mcring::config {

// One YAML value as a key's setter sees it. Errors it reports carry the value's position and
// the context of the key ("pool 'alpha': timeout", or "pool 'alpha': servers[2]" for elements).
class ValueReader {
 public:
  virtual ~ValueReader() = default;

  // The scalar's text. On a list, mapping or empty value reports "expected <what>, got ..."
  // and returns nullopt.
  virtual std::optional<std::string> scalar(std::string_view what) = 0;

  // A list's elements, each reporting under "<key>[i]" at its own position. On anything else
  // reports "expected <what>, got ..." and returns nullopt.
  virtual std::optional<std::vector<std::unique_ptr<ValueReader>>> sequence(
      std::string_view what) = 0;

  // A mapping's entries in file order, each value reporting under "<context>: <key>". A key
  // that is not a scalar is reported and skipped. On anything else reports "expected <what>,
  // got ..." and returns nullopt.
  struct Entry {
    std::string key;
    Mark key_mark;
    std::unique_ptr<ValueReader> value;
  };
  virtual std::optional<std::vector<Entry>> mapping(std::string_view what) = 0;

  virtual Mark mark() const = 0;
  virtual std::string context() const = 0;
  virtual void error(std::string message) = 0;
};

enum class KeyOrigin : uint8_t { Twemproxy, Mcring };

struct PoolKey {
  std::string_view name;
  std::string_view type;  // as the docs show it: "bool", "integer (ms)", "size", ...
  KeyOrigin origin;
  bool required = false;
  std::string_view meaning;  // for the docs; choices() are appended to it
  // Accepted names for enumerated keys (hash, distribution, ...), else nullptr.
  std::vector<std::string_view> (*choices)() = nullptr;
  // Parses and validates the value into `pool`, reporting every problem through `value`.
  void (*apply)(ValueReader& value, PoolConfig& pool) = nullptr;
  // The field as it would be written in YAML; the docs' default column is show(PoolConfig{}),
  // so documented defaults cannot drift from config.h. nullptr: no default to show.
  std::string (*show)(const PoolConfig& pool) = nullptr;
};

std::span<const PoolKey> poolKeys();
const PoolKey* findPoolKey(std::string_view name);

// The candidate closest to `name` if it is close enough to be a typo of it, else empty.
std::string_view closestName(std::string_view name, std::span<const std::string_view> candidates);

// The reference table of pool keys, as it appears in docs/configuration.md.
std::string poolKeyReferenceMarkdown();

}  // namespace mcring::config
