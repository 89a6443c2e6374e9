#include "proxy/dispatch/stats_detail.h"

namespace mcring::core {

using protocol::Command;

void countDetail(PoolRuntime& pool, Command command, std::string_view key) {
  switch (command) {
    case Command::Get:
    case Command::Gets:
    case Command::Gat:
    case Command::Gats:
      pool.countDetail(key, stats::PrefixOp::Get);
      return;
    case Command::Set:
    case Command::Add:
    case Command::Replace:
    case Command::Append:
    case Command::Prepend:
    case Command::Cas:
      pool.countDetail(key, stats::PrefixOp::Set);
      return;
    case Command::Delete:
      pool.countDetail(key, stats::PrefixOp::Delete);
      return;
    default:
      return;
  }
}

bool answerStatsDetail(PoolRuntime& pool, std::string_view args, std::string* out) {
  constexpr std::string_view kDetail = "detail";
  if (!args.starts_with(kDetail) || (args.size() > kDetail.size() && args[kDetail.size()] != ' ')) {
    return false;
  }
  std::string_view rest = args.substr(kDetail.size());
  while (!rest.empty() && rest.front() == ' ') {
    rest.remove_prefix(1);
  }
  const std::string_view word = rest.substr(0, rest.find(' '));
  if (word == "on" || word == "off") {
    if (pool.detail) {
      pool.detail->setEnabled(word == "on");
    }
    *out = "OK\r\n";
  } else if (word == "dump") {
    *out = pool.detail ? pool.detail->dump() : std::string("END\r\n");
  } else {
    *out = "CLIENT_ERROR usage: stats detail on|off|dump\r\n";
  }
  return true;
}

}  // namespace mcring::core
