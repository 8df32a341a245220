#include "common/memory_error.h"

#include <new>
#include <regex>
#include <string>

namespace torchinfer {

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return true;
  const std::string w = e.what();
  return w.find("can't allocate memory") != std::string::npos ||
         w.find("std::bad_alloc") != std::string::npos;
}

Error input_too_large(int width, int height, int channels, int batch, int bytes_per_value,
                      const std::exception& cause, const std::string& stage) {
  const std::uint64_t input =
      static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height) *
      static_cast<std::uint64_t>(channels) * static_cast<std::uint64_t>(batch) *
      static_cast<std::uint64_t>(bytes_per_value);
  std::string asked;
  std::smatch m;
  const std::string w = cause.what();
  if (std::regex_search(w, m, std::regex("allocate ([0-9]+) bytes")))
    asked = "; an allocation of " + m[1].str() + " bytes failed";
  return Error(ErrorKind::kConfigInvalid,
               "out of memory at " + stage + ": input_width " + std::to_string(width) +
                   " x input_height " + std::to_string(height) + " x batch-size " +
                   std::to_string(batch) + " (" + std::to_string(channels) + " channels) needs " +
                   std::to_string(input) + " bytes for the input batch alone" + asked +
                   "; lower batch-size or input_width/input_height");
}

}  // namespace torchinfer
