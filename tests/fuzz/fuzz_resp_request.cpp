// libFuzzer target for the server's request parser (RESP multibulk and inline commands, with
// Valkey's limits): any bytes, fed in pieces of any size as a socket delivers them, are read
// as commands or refused with a protocol error, never crash, hang or read outside the buffer.
// The first byte picks the piece size and whether the client is authenticated (tighter
// limits before AUTH). Built by tests/fuzz/fuzz.sh.
#include "engine/resp/request_parser.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using keyshift::engine::RequestLimits;
using keyshift::engine::RequestParser;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const size_t piece = 1 + (data[0] & 0x3F);
  RequestLimits limits;
  limits.auth_required = (data[0] & 0x40) != 0;
  limits.proto_max_bulk_len = (data[0] & 0x80) != 0 ? 64 : limits.proto_max_bulk_len;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  // The server's buffer: bytes arrive at the end, a finished command is cut from the front.
  std::string buffer;
  std::vector<std::string_view> args;
  RequestParser parser;
  size_t fed = 0;
  while (true) {
    auto status = parser.parse(buffer.data(), buffer.size(), limits);
    if (status == RequestParser::Status::error) {
      if (parser.error().empty()) {
        __builtin_trap();  // a refusal must say why
      }
      break;
    }
    if (status == RequestParser::Status::need_more) {
      if (fed == input.size()) {
        break;
      }
      size_t n = std::min(piece, input.size() - fed);
      buffer.append(input.substr(fed, n));
      fed += n;
      continue;
    }
    if (parser.consumed() == 0 || parser.consumed() > buffer.size()) {
      __builtin_trap();  // a command takes bytes, and only those it was given
    }
    if (status == RequestParser::Status::ready) {
      args.clear();
      parser.args(buffer.data(), args);
      // Every argument's bytes must be readable (ASan checks), wherever they live.
      volatile unsigned sum = 0;
      for (std::string_view a : args) {
        for (char c : a) {
          sum = sum + static_cast<unsigned char>(c);
        }
      }
    }
    buffer.erase(0, parser.consumed());
    parser.reset();
  }
  return 0;
}
