#pragma once

#include <filesystem>

namespace test {

/// The source tree the tests were built from (for fixtures under tests/data).
std::filesystem::path repo_dir();

/// The real RDB corpus beside the repository (../shared/corpus/rdb).
std::filesystem::path rdb_corpus_dir();

}  // namespace test
