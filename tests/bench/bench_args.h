// The `mode --key value ...` command line of the benchmark binaries.
#pragma once

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

class Args {
 public:
  // argv[1] is the mode; the rest are --key value pairs.
  void parse(int argc, char** argv) {
    for (int i = 2; i + 1 < argc; i += 2) values_[std::string(argv[i]).substr(2)] = argv[i + 1];
  }
  bool has(const std::string& k) const { return values_.count(k) != 0; }
  std::string str(const std::string& k, const std::string& def) const {
    auto it = values_.find(k);
    return it == values_.end() ? def : it->second;
  }
  int num(const std::string& k, int def) const {
    return std::atoi(str(k, std::to_string(def)).c_str());
  }
  // "1,2,4" -> {1, 2, 4}
  std::vector<int> nums(const std::string& k, const std::string& def) const {
    std::vector<int> out;
    std::stringstream ss(str(k, def));
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(std::atoi(item.c_str()));
    return out;
  }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace bench
