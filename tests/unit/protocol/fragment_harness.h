// Test harness: feeds bytes to a parser in chunks, accumulating and reparsing like a session does,
// and describes each outcome as a line of text so that any fragmentation can be compared to whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/reply_parser.h"
#include "proxy/protocol/request_parser.h"

namespace mcring::protocol::testing {

// Printable form of bytes: control and high bytes as \xNN, so expectations stay readable.
std::string escape(std::string_view bytes);

// One line per framed request, e.g. "set keys=k data=5 noreply=[ noreply] len=20", or for a
// rejected one "!set bad_command_line noreply len=20".
std::string describeRequest(ParseStatus status, const Request& req, std::string_view input,
                            uint64_t consumed);
// One line per framed reply, e.g. "VALUE key=k data=4 len=16", or "!invalid".
std::string describeReply(ParseStatus status, const Reply& reply, std::string_view input,
                          uint64_t consumed);

// Chunk boundaries: feeding `input` in pieces ending at these offsets (the last is input.size()).
std::vector<size_t> chunksOf(size_t input_size, size_t chunk);
std::vector<size_t> splitAt(size_t input_size, size_t at);

// Feeds `input` piece by piece to frameRequest()/frameReply(), consuming each whole unit and
// discarding rejected bytes that arrive later, until the input ends, the client must be closed or
// (replies) the backend lost framing. The last line describes what is left: "rest=<buffered>
// discard=<still to drop>".
std::vector<std::string> feedRequests(const RequestParser& parser, std::string_view input,
                                      const std::vector<size_t>& cuts);
std::vector<std::string> feedReplies(std::string_view input, const std::vector<size_t>& cuts);

// The lines joined with "\n", for comparisons that print readably when they fail.
std::string joinLines(const std::vector<std::string>& lines);

// Every fragmentation the tests use: whole, split at each byte, and chunks of 1, 2, 5, 10, 100.
std::vector<std::vector<size_t>> allFragmentations(size_t input_size);

}  // namespace mcring::protocol::testing
