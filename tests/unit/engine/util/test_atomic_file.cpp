#include "engine/util/atomic_file.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using keyshift::engine::atomic_temp_path;
using keyshift::engine::AtomicFile;
using keyshift::engine::remove_stale_temps;
using keyshift::engine::write_file_atomically;

namespace {

struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "keyshift-atomic-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t entries(const std::string& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_SUITE("engine::atomic_file") {
  TEST_CASE("the temporary file is hidden, beside the target and named after the writer") {
    CHECK(atomic_temp_path("/srv/conf/valkey.conf", 42) == "/srv/conf/.valkey.conf.tmp-42");
    CHECK(atomic_temp_path("dump.rdb", 7) == ".dump.rdb.tmp-7");
  }

  TEST_CASE("write_file_atomically replaces the file and leaves nothing else behind") {
    TempDir dir;
    std::string path = dir.path + "/a.conf";
    std::ofstream(path) << "old";
    REQUIRE_FALSE(write_file_atomically(path, "new text\n", 0640).has_value());
    CHECK(slurp(path) == "new text\n");
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0640);
    CHECK(entries(dir.path) == 1);
  }

  TEST_CASE("an uncommitted file never reaches the target and its temp file is removed") {
    TempDir dir;
    std::string path = dir.path + "/dump.rdb";
    std::ofstream(path) << "old";
    {
      auto file = AtomicFile::create(path);
      REQUIRE(file.has_value());
      CHECK(fs::exists(file->temp_path()));
      REQUIRE_FALSE(file->write("half").has_value());
      CHECK(slurp(path) == "old");
    }
    CHECK(slurp(path) == "old");
    CHECK(entries(dir.path) == 1);
  }

  TEST_CASE("a missing directory is an error naming the temporary file and the reason") {
    TempDir dir;
    std::string path = dir.path + "/missing/x.json";
    auto file = AtomicFile::create(path);
    REQUIRE_FALSE(file.has_value());
    CHECK(file.error().message().find("cannot create " + dir.path + "/missing/.x.json.tmp-") == 0);
    CHECK(file.error().message().find("No such file or directory") != std::string::npos);
  }

  TEST_CASE("a failed rename leaves the target untouched and removes the temporary file") {
    TempDir dir;
    // A non-empty directory cannot be replaced by a file.
    std::string path = dir.path + "/taken";
    fs::create_directory(path);
    std::ofstream(path + "/inside") << "x";
    auto error = write_file_atomically(path, "bytes");
    REQUIRE(error.has_value());
    CHECK(error->what.find("cannot rename") == 0);
    CHECK(fs::is_directory(path));
    CHECK(entries(dir.path) == 1);
  }

  TEST_CASE("a killed writer's temporary file goes and a running writer's stays") {
    TempDir dir;
    std::string path = dir.path + "/dump.rdb";
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::_exit(0);
    }
    ::waitpid(child, nullptr, 0);  // its pid now names nobody, as a kill -9 leaves it
    std::ofstream(atomic_temp_path(path, child)) << "half";
    std::ofstream(atomic_temp_path(path, ::getppid())) << "a living writer's";
    std::ofstream(dir.path + "/.other.rdb.tmp-" + std::to_string(child)) << "not ours";
    remove_stale_temps(path);
    CHECK_FALSE(fs::exists(atomic_temp_path(path, child)));
    CHECK(fs::exists(atomic_temp_path(path, ::getppid())));
    CHECK(fs::exists(dir.path + "/.other.rdb.tmp-" + std::to_string(child)));
  }
}
