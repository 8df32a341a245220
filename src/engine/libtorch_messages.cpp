#include "engine/libtorch_messages.h"

#include <c10/util/Exception.h>

namespace torchinfer {

std::string message_of(const std::exception& e) {
  auto* ce = dynamic_cast<const c10::Error*>(&e);
  std::string raw = ce ? ce->what_without_backtrace() : e.what();
  // Interpreter errors quote the TorchScript graph first; the cause is last.
  if (raw.find("Traceback of TorchScript") != std::string::npos) {
    while (!raw.empty() && (raw.back() == '\n' || raw.back() == ' ')) raw.pop_back();
    raw = raw.substr(raw.find_last_of('\n') + 1);
  }
  std::string out;
  for (char c : raw) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string load_failure(const std::string& path, std::string why) {
  const std::string file = "model file '" + path + "'";
  const std::string export_hint =
      "export it with models/export.py, or torch.jit.trace/torch.jit.script + torch.jit.save";
  if (why.find("required keyword attribute") != std::string::npos)
    return file +
           " was saved after torch.jit.optimize_for_inference (or torch.jit.freeze) in Python, "
           "which libtorch cannot load: save the traced or scripted model before optimising it "
           "(torchinfer optimises at load) (libtorch: " +
           why + ")";
  if (why.find("constants.pkl") != std::string::npos)
    return file + " is not TorchScript (a torch.save() file?): " + export_hint +
           " (libtorch: " + why + ")";
  if (why.find("INTERNAL ASSERT FAILED") != std::string::npos) {
    // libtorch asks the user to report a bug; the file is what is wrong.
    const auto cut = why.find("please report a bug");
    if (cut != std::string::npos) why = why.substr(0, cut);
    while (!why.empty() && (why.back() == ' ' || why.back() == '.')) why.pop_back();
    return file + " is damaged or was not written by torch.jit.save, so libtorch cannot read it: " +
           export_hint + " again (libtorch: " + why + ")";
  }
  return file + " could not be loaded as TorchScript: " + export_hint + " (libtorch: " + why + ")";
}

}  // namespace torchinfer
