// The one error of a settings field, for every parser of user settings
// (server config, REST bodies, evidence and analytics settings): an
// Error(kConfigInvalid) reading "<origin>: <field>: <problem>" that also
// carries the field path and the problem alone, so REST replies can put
// the field in {"field": ...} and a caller can add its own origin.
#pragma once

#include <string>

#include "common/error.h"

namespace torchinfer {

class FieldError : public Error {
 public:
  FieldError(const std::string& origin, const std::string& field, const std::string& problem)
      : Error(ErrorKind::kConfigInvalid, (origin.empty() ? "" : origin + ": ") +
                                             (field.empty() ? "" : field + ": ") + problem),
        field_(field),
        problem_(problem) {}
  const std::string& field() const { return field_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string field_, problem_;
};

}  // namespace torchinfer
