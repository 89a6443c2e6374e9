// Parsers for the scalar forms config values take: numbers, sizes, booleans, addresses, servers.
//
// Pure functions of a string, no YAML: the key table (pool_keys.cc) calls them, and so may tools
// that take an address on the command line. Each returns nullopt and sets *error (a short phrase
// without location) when the text does not parse.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"

namespace mcring::config {

// twemproxy's booleans: exactly "true" or "false".
std::optional<bool> parseBool(std::string_view text, std::string* error);

// Decimal digits only (twemproxy's nc_atoi: no sign, no hex), within [min, max].
std::optional<uint64_t> parseUint(std::string_view text, uint64_t min, uint64_t max,
                                  std::string* error);

// Bytes, or a number with a 1024-based suffix k, m or g (any case, optional trailing "b"):
// "1048576", "512k", "1m", "1MB". Within [min, max] bytes.
std::optional<uint64_t> parseSize(std::string_view text, uint64_t min, uint64_t max,
                                  std::string* error);

// A listen address: "host:port", "[v6]:port", or an absolute unix socket path with an optional
// octal mode, "/var/run/mcring.sock 0666" (twemproxy). No name resolution happens here.
std::optional<Address> parseListenAddress(std::string_view text, std::string* error);

// One `servers:` entry: "host:port:weight [name]" or "/path/sock:weight [name]" (twemproxy).
// The weight is required, as in twemproxy. A last token "tls=on" or "tls=off" sets tls (mcring).
// Fills address, spec and tls; leaves mark alone.
std::optional<ServerConfig> parseServer(std::string_view text, std::string* error);

// servers_dns: "name:port", a DNS name (not an IP address: that is a `servers` entry).
std::optional<Address> parseDnsTarget(std::string_view text, std::string* error);

// servers_srv: an SRV name, "_service._proto.name" (no port: each record has its own).
std::optional<std::string> parseSrvName(std::string_view text, std::string* error);

// dns_resolver: "address:port", "[v6]:port" or an address alone (port 53). An IP address: the
// resolver of names cannot itself be found by name.
std::optional<Address> parseNameserver(std::string_view text, std::string* error);

// Server weights: twemproxy parses them as a positive C int.
inline constexpr uint64_t kMaxWeight = 2147483647;

// sockaddr_un::sun_path holds 108 bytes including the terminating NUL.
inline constexpr size_t kMaxUnixPathLength = 107;

}  // namespace mcring::config
