#include "migrate/import/checkpoint.hpp"
#include "migrate/import/live_target.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace m = keyshift::migrate;

TEST_SUITE("migrate::import::checkpoint") {
  TEST_CASE("a checkpoint reads back as it was written") {
    m::ImportCheckpoint c;
    c.source = "/srv/dump \"1\".rdb";
    c.target = "unix:/run/valkey.sock";
    c.kind = "scan";
    c.source_size = 51'385'970;
    c.source_mtime_us = 1'796'166'474'380'352;
    c.offset = 123'456;
    c.scans = {{0, "1234", false}, {1, "0", true}};
    c.keys_written = 99;
    auto back = m::parse_checkpoint(m::render_checkpoint(c));
    REQUIRE_MESSAGE(back, back.error());
    CHECK(back->source == c.source);
    CHECK(back->target == c.target);
    CHECK(back->kind == "scan");
    CHECK(back->source_size == c.source_size);
    CHECK(back->source_mtime_us == c.source_mtime_us);
    CHECK(back->offset == c.offset);
    REQUIRE(back->scans.size() == 2);
    CHECK(back->scans[0].cursor == "1234");
    CHECK(back->scans[1].done);
    CHECK(back->keys_written == 99);
    CHECK_FALSE(back->complete);
  }

  TEST_CASE("a cluster scan keeps one cursor per primary, named by its address") {
    m::ImportCheckpoint c;
    c.kind = "scan";
    c.scans = {{0, "17", false, "127.0.0.1:7000"}, {0, "0", true, "127.0.0.1:7001"}, {0, "5"}};
    std::string text = m::render_checkpoint(c);
    auto back = m::parse_checkpoint(text);
    REQUIRE_MESSAGE(back, back.error());
    REQUIRE(back->scans.size() == 3);
    CHECK(back->scans[0].node == "127.0.0.1:7000");
    CHECK(back->scans[0].cursor == "17");
    CHECK(back->scans[1].node == "127.0.0.1:7001");
    CHECK(back->scans[1].done);
    // A single server's position has no node member at all (older checkpoints read as is).
    CHECK(back->scans[2].node.empty());
    CHECK(text.find("\"node\":\"127.0.0.1:7000\"") != std::string::npos);
    CHECK(text.find("{\"db\":0,\"cursor\":\"5\"") != std::string::npos);
  }

  TEST_CASE("a cluster replication keeps one stream position per primary, named by node ID") {
    m::ImportCheckpoint c;
    c.kind = "sync";
    c.streams = {{"a1b2", "127.0.0.1:7000", "id-one", "", 1234, true, 10},
                 {"c3d4", "127.0.0.1:7001", "id-two", "id-old", 0, false, 0}};
    c.keys_written = 10;
    std::string text = m::render_checkpoint(c);
    auto back = m::parse_checkpoint(text);
    REQUIRE_MESSAGE(back, back.error());
    REQUIRE(back->streams.size() == 2);
    CHECK(back->streams[0].node == "a1b2");
    CHECK(back->streams[0].address == "127.0.0.1:7000");
    CHECK(back->streams[0].replid == "id-one");
    CHECK(back->streams[0].repl_offset == 1234);
    CHECK(back->streams[0].synced);
    CHECK(back->streams[0].keys_written == 10);
    CHECK(back->streams[1].replid2 == "id-old");
    CHECK_FALSE(back->streams[1].synced);
    // One server's sync checkpoint has no streams member (older checkpoints read as is).
    c.streams.clear();
    CHECK(m::render_checkpoint(c).find("streams") == std::string::npos);
    // A stream position missing a member is refused, naming what a position needs.
    std::string cut = text;
    std::string member = ",\"keys_written\":10}";
    REQUIRE(cut.find(member) != std::string::npos);
    cut.replace(cut.find(member), member.size(), "}");
    auto refused = m::parse_checkpoint(cut);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().find("stream position") != std::string::npos);
  }

  TEST_CASE("a damaged or foreign checkpoint is refused with the reason") {
    auto broken = m::parse_checkpoint("{\"format\":\"keyshift-import-checkpoint\",");
    REQUIRE_FALSE(broken);
    CHECK(broken.error().find("at byte") != std::string::npos);
    auto foreign = m::parse_checkpoint("{\"format\":\"other\",\"version\":1}");
    REQUIRE_FALSE(foreign);
    CHECK(foreign.error().find("not a keyshift import checkpoint") != std::string::npos);
    m::ImportCheckpoint c;
    c.kind = "file";
    std::string text = m::render_checkpoint(c);
    text.replace(text.find("\"version\":1"), 11, "\"version\":9");
    auto future = m::parse_checkpoint(text);
    REQUIRE_FALSE(future);
    CHECK(future.error().find("version 9") != std::string::npos);
    std::string no_offset = m::render_checkpoint(c);
    no_offset.replace(no_offset.find("\"offset\""), 8, "\"offsex\"");
    CHECK_FALSE(m::parse_checkpoint(no_offset));
  }

  TEST_CASE("a missing checkpoint file is no checkpoint; a saved one loads") {
    char tmpl[] = "/tmp/keyshift-ckpt-XXXXXX";
    std::filesystem::path dir = ::mkdtemp(tmpl);
    std::string path = (dir / "import.checkpoint").string();
    auto none = m::load_checkpoint(path);
    REQUIRE(none);
    CHECK_FALSE(none->has_value());
    m::ImportCheckpoint c;
    c.kind = "file";
    c.offset = 7;
    CHECK_FALSE(m::save_checkpoint(path, c));
    auto loaded = m::load_checkpoint(path);
    REQUIRE(loaded);
    REQUIRE(loaded->has_value());
    CHECK((*loaded)->offset == 7);
    std::ofstream(path) << "garbage";
    auto bad = m::load_checkpoint(path);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().find(path) == 0);
    std::filesystem::remove_all(dir);
  }
}

TEST_SUITE("migrate::import::live_target") {
  TEST_CASE("INFO server names the server and the RDB it reads") {
    auto redis70 =
        m::identify_server("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n");
    REQUIRE(redis70);
    CHECK(redis70->name == "redis");
    CHECK(redis70->rdb == m::RdbTarget::redis_7_0);
    auto redis8 = m::identify_server("redis_version:8.0.2\r\n");
    REQUIRE(redis8);
    CHECK(redis8->rdb == m::RdbTarget::redis_8_0);
    // A release newer than every known line reads what the newest known one reads.
    auto redis_next = m::identify_server("redis_version:8.6.1\r\n");
    REQUIRE(redis_next);
    CHECK(redis_next->rdb == m::RdbTarget::redis_8_4);
    auto valkey81 = m::identify_server("valkey_version:8.1.4\r\n");
    REQUIRE(valkey81);
    CHECK(valkey81->rdb == m::RdbTarget::valkey_8_1);
    auto valkey_next = m::identify_server("valkey_version:10.0.0\r\n");
    REQUIRE(valkey_next);
    CHECK(valkey_next->rdb == m::RdbTarget::valkey_9_2);
    auto valkey =
        m::identify_server("redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n");
    REQUIRE(valkey);
    CHECK(valkey->name == "valkey");
    CHECK(valkey->version == "8.0.1");
    CHECK(valkey->rdb == m::RdbTarget::valkey_8_0);
    auto keyshift = m::identify_server(
        "redis_version:7.2.4\r\nvalkey_version:8.0.1\r\nkeyshift_version:0.1.0\r\n");
    REQUIRE(keyshift);
    CHECK(keyshift->name == "keyshift");
    auto valkey9 = m::identify_server("valkey_version:9.0.0\r\n");
    REQUIRE(valkey9);
    CHECK(valkey9->rdb == m::RdbTarget::valkey_9_0);
    auto old = m::identify_server("redis_version:6.2.14\r\n");
    REQUIRE_FALSE(old);
    CHECK(old.error().find("6.2.14") != std::string::npos);
    CHECK_FALSE(m::identify_server("# Server\r\n"));
  }
}
