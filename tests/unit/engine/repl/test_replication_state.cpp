#include "engine/repl/replication_state.hpp"

#include <doctest/doctest.h>

#include <string>

using keyshift::engine::repl_link_state_name;
using keyshift::engine::ReplicationState;
using keyshift::engine::ReplLinkState;

namespace {

const std::string k_own(40, 'a');
const std::string k_primary(40, 'b');
const std::string k_new(40, 'c');

}  // namespace

TEST_SUITE("ReplicationState") {
  TEST_CASE("a new server is a primary of its own history at offset 0") {
    ReplicationState r(k_own);
    CHECK_FALSE(r.is_replica());
    CHECK(r.state() == ReplLinkState::none);
    CHECK(r.replid() == k_own);
    CHECK(r.replid2() == std::string(40, '0'));
    CHECK(r.second_offset() == -1);
    CHECK(r.offset() == 0);
  }

  TEST_CASE(
      "REPLICAOF sets the primary, waits to dial, and a second identical one changes "
      "nothing") {
    ReplicationState r(k_own);
    CHECK(r.follow("10.0.0.1", 6379));
    CHECK(r.is_replica());
    CHECK(r.primary_host() == "10.0.0.1");
    CHECK(r.primary_port() == 6379);
    CHECK(r.state() == ReplLinkState::connect);
    uint64_t generation = r.generation();
    CHECK_FALSE(r.follow("10.0.0.1", 6379));
    CHECK(r.generation() == generation);
    CHECK(r.follow("10.0.0.1", 6380));
    CHECK(r.generation() != generation);
    // The history held as a primary is offered to PSYNC.
    CHECK(r.has_history());
  }

  TEST_CASE("a full sync takes the primary's history and connects once the payload is loaded") {
    ReplicationState r(k_own);
    r.follow("h", 1);
    r.on_connecting();
    CHECK(r.state() == ReplLinkState::connecting);
    r.on_psync(true, k_primary, 1000);
    CHECK(r.state() == ReplLinkState::sync);
    CHECK_FALSE(r.sync_loading());  // the old data is served until the payload starts
    r.on_sync_progress(-1, 0);
    CHECK(r.sync_loading());
    r.on_sync_progress(-1, 4096);
    CHECK(r.sync_total() == -1);
    CHECK(r.sync_read() == 4096);
    CHECK(r.replid() == k_primary);
    CHECK(r.offset() == 1000);
    r.on_loaded();
    CHECK(r.state() == ReplLinkState::connected);
    CHECK_FALSE(r.sync_loading());
    r.on_applied(1050);
    r.on_read(1070);
    CHECK(r.offset() == 1050);
    CHECK(r.read_offset() == 1070);
  }

  TEST_CASE("a dropped link keeps the history and offset for a continuation") {
    ReplicationState r(k_own);
    r.follow("h", 1);
    r.on_psync(true, k_primary, 10);
    r.on_loaded();
    r.on_applied(500);
    r.on_link_lost(123000);
    CHECK(r.state() == ReplLinkState::connect);
    CHECK(r.down_since_ms() == 123000);
    CHECK(r.has_history());
    CHECK(r.replid() == k_primary);
    CHECK(r.offset() == 500);
    r.on_connecting();
    r.on_psync(false, k_primary, 500);
    CHECK(r.state() == ReplLinkState::connected);
    CHECK(r.down_since_ms() == 0);
    CHECK(r.replid() == k_primary);
    CHECK(r.second_offset() == -1);
  }

  TEST_CASE("a continuation under a new primary ID moves the old one to replid2") {
    ReplicationState r(k_own);
    r.follow("h", 1);
    r.on_psync(true, k_primary, 0);
    r.on_loaded();
    r.on_applied(700);
    r.on_link_lost(1);
    r.on_psync(false, k_new, 700);
    CHECK(r.replid() == k_new);
    CHECK(r.replid2() == k_primary);
    CHECK(r.second_offset() == 701);
  }

  TEST_CASE("a link lost during the payload forces a full sync next time") {
    ReplicationState r(k_own);
    r.follow("h", 1);
    r.on_psync(true, k_primary, 0);
    r.on_link_lost(5);
    CHECK(r.state() == ReplLinkState::connect);
    CHECK_FALSE(r.has_history());
  }

  TEST_CASE("REPLICAOF NO ONE keeps the offset under a new ID, the old one as replid2") {
    ReplicationState r(k_own);
    CHECK_FALSE(r.promote(k_new));  // already a primary: nothing to do
    CHECK(r.replid() == k_own);
    r.follow("h", 1);
    r.on_psync(true, k_primary, 0);
    r.on_loaded();
    r.on_applied(42);
    uint64_t generation = r.generation();
    CHECK(r.promote(k_new));
    CHECK_FALSE(r.is_replica());
    CHECK(r.state() == ReplLinkState::none);
    CHECK(r.generation() != generation);
    CHECK(r.replid() == k_new);
    CHECK(r.replid2() == k_primary);
    CHECK(r.second_offset() == 43);
    CHECK(r.offset() == 42);
  }

  TEST_CASE("ROLE names the link states as Valkey does") {
    CHECK(repl_link_state_name(ReplLinkState::none) == "none");
    CHECK(repl_link_state_name(ReplLinkState::connect) == "connect");
    CHECK(repl_link_state_name(ReplLinkState::connecting) == "connecting");
    CHECK(repl_link_state_name(ReplLinkState::sync) == "sync");
    CHECK(repl_link_state_name(ReplLinkState::connected) == "connected");
  }
}
