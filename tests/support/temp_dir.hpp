// temp_dir: a fresh directory of this process's own under the system's temporary directory,
// removed with everything in it when the object goes. `path` is empty if it could not be made:
// the caller checks (REQUIRE in a single-process test, all_ranks in an MPI test, so no rank
// leaves a test case alone).
#pragma once

#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <string>
#include <system_error>

namespace meshpp_test {

struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "meshpp_XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace meshpp_test
