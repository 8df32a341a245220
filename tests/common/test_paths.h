// Where the build put the generated test models (set by meson's test env).
#pragma once

#include <cstdlib>
#include <string>

namespace torchinfer::test {

inline std::string models_dir() {
  const char* d = std::getenv("TORCHINFER_TEST_MODELS");
  return d ? d : "tests";
}

inline std::string model_path(const std::string& name) {
  return models_dir() + "/" + name;
}

}  // namespace torchinfer::test
