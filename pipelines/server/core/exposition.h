// The Prometheus text exposition (format 0.0.4) through prometheus-cpp
// (Debian's prometheus-cpp-dev): families built in the order they are
// declared, written by its TextSerializer (value formatting, label and help
// escaping). The server's figures are gathered at scrape time, so no
// registry keeps state: each scrape builds its families anew
// (metrics_text.h, line_metrics.h).
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchinfer::server {

using Labels = std::vector<prometheus::ClientMetric::Label>;
Labels operator+(Labels a, const Labels& b);

class Exposition {
 public:
  // type: "counter", "gauge" or "summary".
  void family(const std::string& name, const char* type, const std::string& help);
  // A sample of the family declared last (`name` must be its name).
  void sample(const std::string& name, const Labels& labels, double v);
  void sample(const std::string& name, const Labels& labels, std::uint64_t v) {
    sample(name, labels, static_cast<double>(v));
  }
  // A summary's quantiles, count and sum (the family declared last).
  void summary(const Labels& labels, std::vector<std::pair<double, double>> quantiles,
               std::uint64_t count, double sum);
  std::string str() const;

 private:
  std::vector<prometheus::MetricFamily> families_;
};

}  // namespace torchinfer::server
