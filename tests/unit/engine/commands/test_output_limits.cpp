#include "tests/unit/engine/commands/conn_test_util.hpp"

#include "engine/engine.hpp"
#include "engine/server/config_table.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace keyshift::engine::conn_test;
using keyshift::engine::ClientClass;
using keyshift::engine::EngineConfig;
using keyshift::engine::k_session_close_asap;
using keyshift::engine::OutputBufferLimit;
using keyshift::engine::Session;
using keyshift::engine::SessionHost;

namespace {

// A host that only remembers whom the engine woke: sessions with a host are the ones the
// output limits apply to (in-process sessions have nobody to drop them).
class CountingHost final : public SessionHost {
 public:
  void wake(Session& session) override {
    (void)session;
    ++wakes;
  }
  void request_shutdown() override {}
  int wakes = 0;
};

EngineConfig with_pubsub_limit(OutputBufferLimit limit) {
  EngineConfig config;
  config.client_output_buffer_limits[static_cast<size_t>(ClientClass::pubsub)] = limit;
  return config;
}

// Publishes `count` messages of `size` bytes on channel "c".
void publish(Fixture& f, Session& publisher, int count, size_t size) {
  std::string payload(size, 'x');
  for (int i = 0; i < count; ++i) {
    f.run(publisher, {"PUBLISH", "c", payload});
  }
}

}  // namespace

TEST_SUITE("engine::output_buffer_limits") {
  TEST_CASE("a subscriber is classed pubsub and other clients normal") {
    Fixture f;
    Session& s = f.client();
    CHECK(f.engine.client_class(s) == ClientClass::normal);
    f.send(s, {"SUBSCRIBE", "c"});
    CHECK(f.engine.client_class(s) == ClientClass::pubsub);
    f.send(s, {"UNSUBSCRIBE"});
    CHECK(f.engine.client_class(s) == ClientClass::normal);
  }

  TEST_CASE("the 16 KiB reply buffer is not counted against the limit") {
    Fixture f(with_pubsub_limit({1024, 0, 0}));
    CountingHost host;
    Session& sub = f.engine.open_session(&host);
    Session& pub = f.client();
    f.send(sub, {"SUBSCRIBE", "c"});
    sub.out.clear();
    publish(f, pub, 10, 1000);  // about 10 KB: all in the reply buffer
    CHECK(sub.reply_list_bytes() == 0);
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    CHECK_FALSE(sub.has(k_session_close_asap));
  }

  TEST_CASE("a subscriber at its hard limit is closed, counted, and gets nothing more") {
    Fixture f(with_pubsub_limit({64 * 1024, 0, 0}));
    CountingHost host;
    Session& sub = f.engine.open_session(&host);
    Session& pub = f.client();
    f.send(sub, {"SUBSCRIBE", "c"});
    publish(f, pub, 100, 1000);
    REQUIRE(sub.reply_list_bytes() >= 64 * 1024);
    auto line = f.engine.enforce_output_buffer_limit(sub);
    REQUIRE(line.has_value());
    CHECK(line->find("id=" + std::to_string(sub.id())) == 0);
    CHECK(line->find("flags=P") != std::string::npos);
    CHECK(line->find("sub=1") != std::string::npos);
    CHECK(sub.has(k_session_close_asap));
    CHECK(f.engine.stats().client_output_buffer_limit_disconnections == 1);
    // Further messages still count the subscriber as a receiver but add no bytes.
    size_t held = sub.out.size();
    CHECK(is_int(f.run(pub, {"PUBLISH", "c", "more"}), 1));
    CHECK(sub.out.size() == held);
    // A client being closed is not counted twice.
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    CHECK(f.engine.stats().client_output_buffer_limit_disconnections == 1);
    auto info = f.run(pub, {"INFO", "stats"});
    CHECK(info.str.find("client_output_buffer_limit_disconnections:1\r\n") != std::string::npos);
  }

  TEST_CASE("the soft limit closes a client only after it was exceeded for the soft seconds") {
    Fixture f(with_pubsub_limit({0, 32 * 1024, 10}));
    CountingHost host;
    Session& sub = f.engine.open_session(&host);
    Session& pub = f.client();
    f.send(sub, {"SUBSCRIBE", "c"});
    publish(f, pub, 60, 1000);
    // First seen over the soft limit: the clock starts.
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    f.clock.advance_ms(10'000);
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    f.clock.advance_ms(1'000);
    CHECK(f.engine.enforce_output_buffer_limit(sub).has_value());
    CHECK(f.engine.stats().client_output_buffer_limit_disconnections == 1);
  }

  TEST_CASE("dropping under the soft limit restarts its clock") {
    Fixture f(with_pubsub_limit({0, 32 * 1024, 5}));
    CountingHost host;
    Session& sub = f.engine.open_session(&host);
    Session& pub = f.client();
    f.send(sub, {"SUBSCRIBE", "c"});
    publish(f, pub, 60, 1000);
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    f.clock.advance_ms(4'000);
    sub.out.resize(20 * 1024);  // the peer read most of it
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    CHECK(sub.obuf_soft_limit_since_s == 0);
    publish(f, pub, 60, 1000);
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    f.clock.advance_ms(5'000);
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    f.clock.advance_ms(1'000);
    CHECK(f.engine.enforce_output_buffer_limit(sub).has_value());
  }

  TEST_CASE("normal clients have no limit by default and follow their own class when set") {
    EngineConfig config;
    CHECK(config.client_output_buffer_limits[0].hard_bytes == 0);
    Fixture unlimited;
    CountingHost host;
    Session& a = unlimited.engine.open_session(&host);
    a.out.assign(1024 * 1024, 'x');
    CHECK_FALSE(unlimited.engine.enforce_output_buffer_limit(a).has_value());

    config.client_output_buffer_limits[static_cast<size_t>(ClientClass::normal)] = {512 * 1024, 0,
                                                                                    0};
    Fixture limited(config);
    Session& b = limited.engine.open_session(&host);
    b.out.assign(1024 * 1024, 'x');
    CHECK(limited.engine.enforce_output_buffer_limit(b).has_value());
    // The pubsub limit does not apply to a normal client.
    Fixture pubsub_only(with_pubsub_limit({1024, 0, 0}));
    Session& c = pubsub_only.engine.open_session(&host);
    c.out.assign(1024 * 1024, 'x');
    CHECK_FALSE(pubsub_only.engine.enforce_output_buffer_limit(c).has_value());
  }

  TEST_CASE("in-process sessions are never closed for their output") {
    Fixture f(with_pubsub_limit({1024, 0, 0}));
    Session& sub = f.client();
    Session& pub = f.client();
    f.send(sub, {"SUBSCRIBE", "c"});
    publish(f, pub, 100, 1000);
    CHECK_FALSE(f.engine.enforce_output_buffer_limit(sub).has_value());
    CHECK_FALSE(sub.has(k_session_close_asap));
  }

  TEST_CASE("MONITOR lines stop once the monitor is being closed") {
    Fixture f;
    CountingHost host;
    Session& monitor = f.engine.open_session(&host);
    Session& other = f.client();
    f.send(monitor, {"MONITOR"});
    monitor.out.clear();
    f.run(other, {"PING"});
    CHECK_FALSE(monitor.out.empty());
    monitor.out.clear();
    monitor.set(k_session_close_asap);
    f.run(other, {"PING"});
    CHECK(monitor.out.empty());
  }

  TEST_CASE("CONFIG SET client-output-buffer-limit changes the named classes only") {
    Fixture f;
    Session& s = f.client();
    CHECK(is_ok(f.run(s, {"CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0"})));
    auto got = f.run(s, {"CONFIG", "GET", "client-output-buffer-limit"});
    REQUIRE(got.elements.size() == 2);
    CHECK(got.elements[1].str == "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 0 0");
    const OutputBufferLimit& pubsub =
        f.engine.config().client_output_buffer_limits[static_cast<size_t>(ClientClass::pubsub)];
    CHECK(pubsub.hard_bytes == 1048576);
    CHECK(pubsub.soft_bytes == 0);
    CHECK(is_ok(f.run(s, {"CONFIG", "SET", "client-output-buffer-limit",
                          "normal 10mb 5mb 30 replica 1gb 512mb 120"})));
    got = f.run(s, {"CONFIG", "GET", "client-output-buffer-limit"});
    CHECK(got.elements[1].str ==
          "normal 10485760 5242880 30 slave 1073741824 536870912 120 pubsub 1048576 0 0");
    CHECK(f.engine.config().client_output_buffer_limits[0].soft_seconds == 30);
    CHECK(is_err(f.run(s, {"CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0"}),
                 "ERR CONFIG SET failed (possibly related to argument "
                 "'client-output-buffer-limit') - Wrong number of arguments in buffer limit "
                 "configuration."));
  }
}
