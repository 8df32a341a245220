#include "common/json_file.h"

#include "common/error.h"
#include "common/file_check.h"
#include "common/utf8.h"

namespace torchinfer {

nlohmann::json parse_json(const std::string& text, const std::string& origin, int max_depth) {
  using nlohmann::json;
  // The callback sees each object/array start with its depth before the
  // parser descends; throwing stops the parse there.
  struct TooDeep {};
  const json::parser_callback_t limit = [max_depth](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth)
      throw TooDeep{};
    return true;
  };
  try {
    return json::parse(text, limit);
  } catch (const TooDeep&) {
    throw Error(ErrorKind::kConfigInvalid, origin + ": nested deeper than " +
                                               std::to_string(max_depth) +
                                               " levels; this is not a configuration file");
  } catch (const json::exception& e) {
    // nlohmann quotes the bytes it choked on, which may not be UTF-8.
    throw Error(ErrorKind::kConfigInvalid,
                origin + ": not valid JSON (" + printable(e.what(), 240) + ")");
  }
}

nlohmann::json read_json_file(const std::string& path, const std::string& what,
                              std::size_t max_bytes, int max_depth) {
  return parse_json(read_regular_file(path, what, max_bytes), what + " '" + path + "'", max_depth);
}

}  // namespace torchinfer
