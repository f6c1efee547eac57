#include "tests/unit/test_paths.hpp"

// The paths come in as definitions given to this file alone: a definition that names the
// checkout on every test file would make each worktree's build miss the compiler cache.
namespace test {

std::filesystem::path repo_dir() {
  return KEYSHIFT_REPO_DIR;
}

std::filesystem::path rdb_corpus_dir() {
  return std::filesystem::path(KEYSHIFT_SHARED_DIR) / "corpus" / "rdb";
}

}  // namespace test
