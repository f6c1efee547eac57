// libFuzzer target for DUMP payloads through RESTORE, the way a client (or MIGRATE from
// another server) hands them to the engine: any payload is restored or refused with an error
// reply, never crash; a value that was restored must answer every read command of its type,
// DUMP back to a payload that RESTOREs to the same digest. The first byte picks RESTORE's
// options and whether the payload's trailer (RDB version + CRC64) is made right first, so
// the fuzzer gets past the checksum into the value decoder. Built by tests/fuzz/fuzz.sh.
#include "engine/engine.hpp"
#include "engine/persistence/crc64.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace ks = keyshift::engine;

struct Target {
  ks::ManualClock clock;
  ks::Engine engine;
  ks::Session& session;
  Target() : engine(config(), clock), session(engine.open_session(nullptr)) {}
  static ks::EngineConfig config() {
    ks::EngineConfig c;
    c.enable_debug_command = ks::EnableMode::yes;
    c.dir = "/nonexistent-keyshift-fuzz";  // nothing is ever saved
    return c;
  }
  ks::RespValue run(std::vector<std::string_view> argv) { return engine.run(session, argv); }
};

Target& target() {
  static Target* t = new Target();
  return *t;
}

// The payload with its last 10 bytes replaced by RDB version `version` and the right CRC64.
std::string with_trailer(std::string_view body, uint8_t version) {
  std::string out(body.substr(0, body.size() >= 10 ? body.size() - 10 : 0));
  out.push_back(static_cast<char>(version));
  out.push_back('\0');
  uint64_t crc = ks::crc64(0, out);
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  }
  return out;
}

// Reads the whole value through the commands of every type (the wrong ones just refuse).
void read_back(Target& t) {
  static const std::vector<std::vector<std::string_view>> k_reads = {
      {"GET", "k"},
      {"STRLEN", "k"},
      {"LRANGE", "k", "0", "-1"},
      {"LLEN", "k"},
      {"HGETALL", "k"},
      {"HLEN", "k"},
      {"SMEMBERS", "k"},
      {"SCARD", "k"},
      {"ZRANGE", "k", "0", "-1", "WITHSCORES"},
      {"ZCARD", "k"},
      {"XRANGE", "k", "-", "+"},
      {"XINFO", "STREAM", "k", "FULL"},
      {"XINFO", "GROUPS", "k"},
      {"PFCOUNT", "k"},
      {"OBJECT", "ENCODING", "k"},
      {"MEMORY", "USAGE", "k"},
      {"HRANDFIELD", "k", "-5"},
      {"SRANDMEMBER", "k", "-5"},
      {"ZRANDMEMBER", "k", "-5"},
      {"TYPE", "k"},
      {"PTTL", "k"},
  };
  for (const auto& argv : k_reads) {
    (void)t.run(argv);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  Target& t = target();
  const uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string payload =
      (mode & 1) != 0 ? with_trailer(rest, 11 + ((mode >> 1) & 1)) : std::string(rest);
  std::vector<std::string_view> argv = {"RESTORE", "k", (mode & 4) != 0 ? "1000" : "0", payload,
                                        "REPLACE"};
  if ((mode & 8) != 0) {
    argv.insert(argv.end(), {"IDLETIME", "5"});
  }
  ks::RespValue restored = t.run(argv);
  if (restored.type == ks::RespValue::Type::simple && restored.str == "OK") {
    read_back(t);
    ks::RespValue dumped = t.run({"DUMP", "k"});
    // With the same TTL: DEBUG DIGEST-VALUE mixes in whether a key has one, as Valkey's does.
    ks::RespValue again = t.run({"RESTORE", "k2", argv[2], dumped.str, "REPLACE"});
    if (again.type != ks::RespValue::Type::simple) {
      __builtin_trap();  // what DUMP wrote, RESTORE takes
    }
    ks::RespValue d1 = t.run({"DEBUG", "DIGEST-VALUE", "k"});
    ks::RespValue d2 = t.run({"DEBUG", "DIGEST-VALUE", "k2"});
    if (d1.to_display() != d2.to_display()) {
      std::fprintf(stderr, "DUMP and RESTORE changed the value: %s vs %s\n  type %s\n",
                   d1.to_display().c_str(), d2.to_display().c_str(),
                   t.run({"TYPE", "k"}).to_display().c_str());
      for (std::string_view key : {"k", "k2"}) {
        std::string v = t.run({"GET", key}).str;
        std::fprintf(stderr, "  %zu bytes:", v.size());
        for (unsigned char c : v) {
          std::fprintf(stderr, " %02x", c);
        }
        std::fprintf(stderr, "\n");
      }
      std::abort();
    }
  }
  (void)t.run({"FLUSHALL"});
  return 0;
}
