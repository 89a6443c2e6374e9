// Credentials in the format of memcached's -Y file: one `user:password` per line.
//
// Loaded with the config (client_auth_file, server_auth_file) into the immutable topology, so a
// reload re-reads them. Nothing here ever formats a password into text: they are not in the
// Config value (only the file's path is), so config diffs, reload records, logs, stats and
// /metrics cannot show one.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcring::config {

struct Credential {
  std::string user;
  std::string password;
};

class Credentials {
 public:
  // As memcached reads its -Y file: every line (up to the last newline, and what follows it)
  // must be `user:password`, split at the first ':', neither part empty; memcached refuses to
  // start on any other line, and so is this a config error (naming the file and the line,
  // never its text).
  static std::shared_ptr<const Credentials> load(const std::string& path, std::string* error);
  static std::shared_ptr<const Credentials> parse(std::string_view text, const std::string& name,
                                                  std::string* error);

  // Whether (user, password) is one of the entries; compares every entry in full, so the time
  // taken does not say how much of a guess was right.
  bool check(std::string_view user, std::string_view password) const;
  const Credential& first() const { return entries_.front(); }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<Credential> entries_;
};

}  // namespace mcring::config
