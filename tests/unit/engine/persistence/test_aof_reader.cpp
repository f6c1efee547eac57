#include "engine/engine.hpp"
#include "engine/persistence/aof_reader.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/util/clock.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using keyshift::engine::AofCommand;
using keyshift::engine::AofFileInfo;
using keyshift::engine::AofFileType;
using keyshift::engine::AofManifest;
using keyshift::engine::AofReadOptions;
using keyshift::engine::AofVisitor;
using keyshift::engine::Engine;
using keyshift::engine::EngineConfig;
using keyshift::engine::format_aof_manifest;
using keyshift::engine::ManualClock;
using keyshift::engine::parse_aof_manifest;
using keyshift::engine::RdbKey;
using keyshift::engine::RdbVisitor;
using keyshift::engine::RdbWriteOptions;
using keyshift::engine::read_aof;
using keyshift::engine::read_aof_bytes;
using keyshift::engine::save_rdb;

namespace {

namespace fs = std::filesystem;

std::string resp(std::vector<std::string> argv) {
  std::string out = "*" + std::to_string(argv.size()) + "\r\n";
  for (const std::string& a : argv) {
    out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  }
  return out;
}

struct Recorder : AofVisitor, RdbVisitor {
  std::vector<std::string> commands;  // "file@offset: a b c"
  std::vector<std::string> keys;
  std::vector<std::string> files;
  void on_file(const AofFileInfo& f) override { files.push_back(f.name); }
  RdbVisitor* rdb_visitor() override { return this; }
  bool on_key(RdbKey& k) override {
    keys.push_back(k.key);
    return true;
  }
  bool on_command(const AofCommand& c) override {
    std::string line = c.file->name + "@" + std::to_string(c.offset) + ":";
    for (std::string_view a : c.argv) {
      line += " ";
      line += a;
    }
    commands.push_back(line);
    return true;
  }
};

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("ks-aof-reader-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return (path / name).string();
  }
};

// An RDB file holding keys k1 and k2, as the base of a multi-part AOF.
std::string small_rdb(const TempDir& dir) {
  ManualClock clock(1'700'000'000'000);
  Engine engine(EngineConfig{}, clock);
  engine.run({"SET", "k1", "v1"});
  engine.run({"RPUSH", "k2", "a", "b"});
  std::string path = (dir.path / "tmp.rdb").string();
  REQUIRE(save_rdb(engine, path, RdbWriteOptions{}));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(path);
  return bytes;
}

}  // namespace

TEST_SUITE("aof_reader") {
  TEST_CASE("a single RESP file yields each command with its byte offset") {
    TempDir dir;
    std::string a = resp({"SELECT", "0"});
    std::string b = resp({"SET", "k", "v\r\nwith crlf"});
    std::string path =
        dir.write("appendonly.aof", a + b + "#TS:1700000000\r\n" + resp({"DEL", "k"}));
    Recorder r;
    auto s = read_aof(path, r);
    REQUIRE(s);
    CHECK_FALSE(s->truncated);
    CHECK(s->commands == 3);
    REQUIRE(r.commands.size() == 3);
    CHECK(r.commands[0] == "appendonly.aof@0: SELECT 0");
    CHECK(r.commands[1] == "appendonly.aof@" + std::to_string(a.size()) + ": SET k v\r\nwith crlf");
    CHECK(r.commands[2].starts_with("appendonly.aof@" + std::to_string(a.size() + b.size() + 16) +
                                    ": DEL k"));
  }

  TEST_CASE("an RDB preamble goes to the RDB visitor and the RESP tail follows it") {
    TempDir dir;
    std::string rdb = small_rdb(dir);
    std::string path = dir.write("appendonly.aof", rdb + resp({"INCR", "n"}));
    Recorder r;
    auto s = read_aof(path, r);
    REQUIRE(s);
    CHECK(s->rdb_base);
    CHECK(r.keys.size() == 2);
    REQUIRE(r.commands.size() == 1);
    CHECK(r.commands[0] == "appendonly.aof@" + std::to_string(rdb.size()) + ": INCR n");
  }

  TEST_CASE("a directory is read through its manifest: base, then incr files, history skipped") {
    TempDir dir;
    dir.write("appendonly.aof.1.base.rdb", small_rdb(dir));
    dir.write("appendonly.aof.1.incr.aof", resp({"SET", "a", "1"}));
    dir.write("appendonly.aof.2.incr.aof", resp({"SET", "b", "2"}) + resp({"SET", "c", "3"}));
    dir.write("appendonly.aof.3.incr.aof", "");
    dir.write("old.aof", "garbage that must not be read");
    dir.write("appendonly.aof.manifest",
              "file appendonly.aof.1.base.rdb seq 1 type b\n"
              "file old.aof seq 1 type h\n"
              "file appendonly.aof.1.incr.aof seq 1 type i\n"
              "file appendonly.aof.2.incr.aof seq 2 type i\n"
              "file appendonly.aof.3.incr.aof seq 3 type i\n");
    Recorder r;
    auto s = read_aof(dir.path.string(), r);
    REQUIRE(s);
    CHECK(r.files ==
          std::vector<std::string>{"appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof",
                                   "appendonly.aof.2.incr.aof", "appendonly.aof.3.incr.aof"});
    CHECK(r.keys.size() == 2);
    REQUIRE(r.commands.size() == 3);
    CHECK(r.commands[0] == "appendonly.aof.1.incr.aof@0: SET a 1");
    CHECK(r.commands[2] == "appendonly.aof.2.incr.aof@" +
                               std::to_string(resp({"SET", "b", "2"}).size()) + ": SET c 3");
    CHECK(s->files.back().last);
    CHECK_FALSE(s->files.front().last);
  }

  TEST_CASE("a directory whose manifest has another appendfilename is still found") {
    TempDir dir;
    dir.write("cache.aof.1.incr.aof", resp({"SET", "a", "1"}));
    dir.write("cache.aof.manifest", "file cache.aof.1.incr.aof seq 1 type i\n");
    Recorder r;
    REQUIRE(read_aof(dir.path.string(), r));
    CHECK(r.commands.size() == 1);
  }

  TEST_CASE("a partial command at the end of the last file is a truncated tail") {
    TempDir dir;
    std::string whole = resp({"SET", "a", "1"});
    std::string path = dir.write("appendonly.aof", whole + resp({"SET", "b", "2"}).substr(0, 15));
    Recorder r;
    auto s = read_aof(path, r);
    REQUIRE(s);
    CHECK(s->truncated);
    CHECK(s->truncated_file == path);
    CHECK(s->truncated_at == whole.size());
    CHECK(r.commands.size() == 1);

    AofReadOptions strict;
    strict.allow_truncated = false;
    Recorder r2;
    auto e = read_aof(path, r2, strict);
    REQUIRE_FALSE(e);
    CHECK(e.error().file == path);
    CHECK(e.error().offset == whole.size());
    CHECK(e.error().describe().find("aof-load-truncated") != std::string::npos);
  }

  TEST_CASE("a partial command in an incr file that is not the last is an error") {
    TempDir dir;
    dir.write("appendonly.aof.1.incr.aof", resp({"SET", "a", "1"}) + "*3\r\n$3\r\nSE");
    dir.write("appendonly.aof.2.incr.aof", resp({"SET", "b", "2"}));
    dir.write("appendonly.aof.manifest",
              "file appendonly.aof.1.incr.aof seq 1 type i\n"
              "file appendonly.aof.2.incr.aof seq 2 type i\n");
    Recorder r;
    auto e = read_aof(dir.path.string(), r);
    REQUIRE_FALSE(e);
    CHECK(e.error().file == (dir.path / "appendonly.aof.1.incr.aof").string());
    CHECK(e.error().offset == resp({"SET", "a", "1"}).size());
  }

  TEST_CASE("a MULTI without EXEC at the end is dropped whole and truncated before MULTI") {
    std::string before = resp({"SET", "a", "1"});
    std::string bytes = before + resp({"MULTI"}) + resp({"INCR", "x"}) + resp({"INCR", "y"});
    AofFileInfo info;
    info.path = info.name = "t.aof";
    info.last = true;
    Recorder r;
    auto s = read_aof_bytes(bytes, info, r);
    REQUIRE(s);
    CHECK(s->truncated);
    CHECK(s->truncated_at == before.size());
    CHECK(r.commands.size() == 1);

    Recorder r2;
    auto whole = read_aof_bytes(bytes + resp({"EXEC"}), info, r2);
    REQUIRE(whole);
    CHECK_FALSE(whole->truncated);
    REQUIRE(r2.commands.size() == 5);
    CHECK(r2.commands[1] == "t.aof@" + std::to_string(before.size()) + ": MULTI");
    CHECK(r2.commands[4].ends_with(": EXEC"));
  }

  TEST_CASE("a corrupt byte is an error naming the file and its offset") {
    std::string good = resp({"SET", "a", "1"});
    AofFileInfo info;
    info.path = info.name = "bad.aof";
    info.last = true;
    Recorder r;
    std::string bytes = good + "+OK\r\n" + good;
    auto e = read_aof_bytes(bytes, info, r);
    REQUIRE_FALSE(e);
    CHECK(e.error().offset == good.size());
    CHECK(e.error().describe() == "bad.aof: byte " + std::to_string(good.size()) +
                                      ": bad file format: expected '*' (a command), found '+'");

    std::string bad_len = good;
    bad_len[5] = 'x';  // "$3" -> "$x"
    Recorder r2;
    auto e2 = read_aof_bytes(bad_len, info, r2);
    REQUIRE_FALSE(e2);
    CHECK(e2.error().offset == 5);

    std::string no_crlf = good;
    no_crlf[good.size() - 2] = '!';
    Recorder r3;
    auto e3 = read_aof_bytes(no_crlf, info, r3);
    REQUIRE_FALSE(e3);
    CHECK(e3.error().offset == good.size() - 2);
  }

  TEST_CASE("a broken RDB base names the file and the offset inside it") {
    TempDir dir;
    std::string rdb = small_rdb(dir);
    rdb[rdb.size() - 3] ^= 0x55;  // inside the CRC64
    std::string path = dir.write("appendonly.aof.1.base.rdb", rdb);
    dir.write("appendonly.aof.manifest", "file appendonly.aof.1.base.rdb seq 1 type b\n");
    Recorder r;
    auto e = read_aof(dir.path.string(), r);
    REQUIRE_FALSE(e);
    CHECK(e.error().file == path);
    CHECK(e.error().message.find("RDB preamble") != std::string::npos);
  }

  TEST_CASE("a file the manifest names but that is missing is an error") {
    TempDir dir;
    dir.write("appendonly.aof.manifest", "file appendonly.aof.1.incr.aof seq 1 type i\n");
    Recorder r;
    auto e = read_aof(dir.path.string(), r);
    REQUIRE_FALSE(e);
    CHECK(e.error().file == (dir.path / "appendonly.aof.1.incr.aof").string());
  }

  TEST_CASE("manifests are checked as Valkey checks them") {
    CHECK_FALSE(parse_aof_manifest("", "m"));
    auto dup = parse_aof_manifest("file a seq 1 type b\nfile b seq 2 type b\n", "m");
    REQUIRE_FALSE(dup);
    CHECK(dup.error().line == 2);
    CHECK(dup.error().message == "found duplicate base file information");
    CHECK_FALSE(parse_aof_manifest("file a seq 2 type i\nfile b seq 2 type i\n", "m"));
    CHECK_FALSE(parse_aof_manifest("file dir/a seq 1 type i\n", "m"));
    CHECK_FALSE(parse_aof_manifest("file a seq 1 type x\n", "m"));
    CHECK_FALSE(parse_aof_manifest("file a seq 1\n", "m"));
    CHECK_FALSE(parse_aof_manifest("file a seq 1 type i", "m"));  // no newline
    auto ok = parse_aof_manifest(
        "# comment\nfile a seq 1 type b future 7\nfile \"with space\" seq 3 type i\n", "m");
    REQUIRE(ok);
    REQUIRE(ok->entries.size() == 2);
    CHECK(ok->base()->name == "a");
    CHECK(ok->incrs().front()->name == "with space");
  }

  TEST_CASE("a formatted manifest lists base, history, incr and reads back the same") {
    AofManifest m;
    m.entries.push_back({"x.2.incr.aof", 2, AofFileType::incr});
    m.entries.push_back({"x.1.base.rdb", 1, AofFileType::base});
    m.entries.push_back({"x.0 old", 1, AofFileType::history});
    std::string text = format_aof_manifest(m);
    CHECK(text ==
          "file x.1.base.rdb seq 1 type b\nfile \"x.0 old\" seq 1 type h\n"
          "file x.2.incr.aof seq 2 type i\n");
    auto back = parse_aof_manifest(text, "m");
    REQUIRE(back);
    CHECK(back->entries[1].name == "x.0 old");
  }
}
