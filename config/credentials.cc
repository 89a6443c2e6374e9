// Credentials: the -Y file's parser and the check.
#include "config/credentials.h"

#include "config/config_file.h"

namespace mcring::config {

namespace {

// Constant-time in the contents (not the lengths, which a password's length may reveal anyway).
bool sameBytes(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace

std::shared_ptr<const Credentials> Credentials::load(const std::string& path, std::string* error) {
  std::string bytes;
  std::string why;
  if (!readConfigFile(path, &bytes, &why)) {
    *error = path + ": " + why;
    return nullptr;
  }
  return parse(bytes, path, error);
}

std::shared_ptr<const Credentials> Credentials::parse(std::string_view text,
                                                      const std::string& name, std::string* error) {
  auto out = std::make_shared<Credentials>();
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == line.size()) {
      *error = name + ": line " + std::to_string(line_no) +
               " is not 'user:password' (memcached -Y format)";
      return nullptr;
    }
    out->entries_.push_back(
        {std::string(line.substr(0, colon)), std::string(line.substr(colon + 1))});
  }
  if (out->entries_.empty()) {
    *error = name + ": no 'user:password' line";
    return nullptr;
  }
  return out;
}

bool Credentials::check(std::string_view user, std::string_view password) const {
  bool found = false;
  for (const Credential& c : entries_) {
    found |= sameBytes(c.user, user) & sameBytes(c.password, password);
  }
  return found;
}

}  // namespace mcring::config
