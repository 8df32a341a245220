#include "server/core/exposition.h"

#include <prometheus/text_serializer.h>

#include <stdexcept>

namespace torchinfer::server {

Labels operator+(Labels a, const Labels& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void Exposition::family(const std::string& name, const char* type, const std::string& help) {
  const std::string t = type;
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = t == "counter"   ? prometheus::MetricType::Counter
           : t == "gauge"   ? prometheus::MetricType::Gauge
           : t == "summary" ? prometheus::MetricType::Summary
                            : prometheus::MetricType::Untyped;
  families_.push_back(std::move(f));
}

void Exposition::sample(const std::string& name, const Labels& labels, double v) {
  // A sample under another family's header would be a wrong exposition.
  if (families_.empty() || families_.back().name != name)
    throw std::logic_error("metric sample " + name + " outside its family");
  prometheus::ClientMetric m;
  m.label = labels;
  m.counter.value = m.gauge.value = m.untyped.value = v;
  families_.back().metric.push_back(std::move(m));
}

void Exposition::summary(const Labels& labels, std::vector<std::pair<double, double>> quantiles,
                         std::uint64_t count, double sum) {
  prometheus::ClientMetric m;
  m.label = labels;
  for (const auto& [q, v] : quantiles) m.summary.quantile.push_back({q, v});
  m.summary.sample_count = count;
  m.summary.sample_sum = sum;
  families_.back().metric.push_back(std::move(m));
}

std::string Exposition::str() const {
  return prometheus::TextSerializer().Serialize(families_);
}

}  // namespace torchinfer::server
