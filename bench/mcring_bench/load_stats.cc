// Names of load errors, the error a reply counts as, and summing counters.
#include "bench/mcring_bench/load_stats.h"

namespace mcring::bench {

std::string_view loadErrorName(LoadError e) {
  switch (e) {
#define MCRING_X(id, name, text) \
  case LoadError::id:            \
    return name;
    MCRING_LOAD_ERRORS(MCRING_X)
#undef MCRING_X
  }
  return "?";
}

std::string_view loadErrorText(LoadError e) {
  switch (e) {
#define MCRING_X(id, name, text) \
  case LoadError::id:            \
    return text;
    MCRING_LOAD_ERRORS(MCRING_X)
#undef MCRING_X
  }
  return "?";
}

LoadError loadErrorOfReply(protocol::ReplyKind kind) {
  switch (kind) {
    case protocol::ReplyKind::ServerError:
      return LoadError::ServerError;
    case protocol::ReplyKind::ClientError:
      return LoadError::ClientError;
    default:
      return LoadError::Error;
  }
}

void LoadCounters::add(const LoadCounters& other) {
  requests += other.requests;
  replies += other.replies;
  gets += other.gets;
  get_keys += other.get_keys;
  hits += other.hits;
  sets += other.sets;
  not_stored += other.not_stored;
  for (size_t i = 0; i < kLoadErrorCount; ++i) {
    errors[i] += other.errors[i];
  }
}

}  // namespace mcring::bench
