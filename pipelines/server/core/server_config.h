// torchinfer-server's configuration: the models, the server's own settings
// and the cameras, from a JSON file at start and (one camera at a time) from
// REST bodies. Both are hostile input: every field is checked for type and
// range, unknown fields are refused, and each error names the field by its
// path ("streams[2].uri") so the operator can find it. No GStreamer here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analytics/analytics_config.h"
#include "common/error.h"
#include "common/field_error.h"
#include "server/core/camera_settings.h"
#include "server/core/codes_spec.h"
#include "server/core/evidence_spec.h"
#include "server/core/inference_settings.h"
#include "server/core/line_spec.h"

namespace torchinfer::server {

// One loaded model shared by every camera that names it (torchinfer's
// model-instance-id is the model's id, so their frames batch together).
struct ModelSpec {
  std::string id;
  std::string path;  // TorchScript file, its sidecar beside it
  int batch_size = 4;
  int batch_timeout_us = 40000;
  int threads = 0;  // 0: torchinfer's default
  int lanes = 0;    // torchinfer lanes: batches run at once; 0: automatic (its default)
};

enum class SourceKind { kFile, kV4l2, kRtsp, kAravis };

struct Roi {
  int x = 0, y = 0, width = 0, height = 0;
};

// A camera. `uri` is one of file:///abs/path, v4l2:///dev/videoN,
// rtsp://host[:port]/path or aravis://NAME (a GigE Vision / USB3 Vision
// camera by the name arv-tool-0.8 lists, or its IP; percent-encode spaces);
// nothing from it is ever parsed as a launch line.
struct StreamSpec {
  std::string id;
  std::string uri;
  SourceKind kind = SourceKind::kFile;
  std::string location;  // file path, device path, the RTSP URL itself, or the camera name
  std::string model;     // a ModelSpec id
  bool loop = true;      // file:// only: start again at the end
  // Unset: the model sidecar's (torchnms's rule), else torchnms's default.
  std::optional<double> confidence_threshold, iou_threshold;
  int inference_interval = 1;
  std::optional<Roi> roi;  // torchinfer crop
  bool track = false;      // torchtrack after torchnms
  bool json = true;        // <output_dir>/<id>.jsonl
  std::string mqtt_topic;  // empty: no MQTT
  // The annotated video as rtsp://<server>/streams/<id> (the server's
  // --rtsp-port; refused when that is 0).
  bool restream = false;
  // aravis:// only (camera.name is `location`).
  CameraSettings camera;
  // Snapshots, crops and clips of new tracks (needs track).
  std::optional<EvidenceSpec> evidence;
  // torchanalytics' lines and zones (server/stream_analytics.h), frame
  // pixels; "track": true only. PUT /streams/{id}/analytics replaces them.
  AnalyticsConfig analytics;
  // One verdict per tracked part (needs track), and those verdicts to a PLC
  // (needs parts): server/line_spec.h.
  std::optional<PartsSpec> parts;
  std::optional<PlcSpec> plc;
  // torchcodes after the tracking (server/codes_spec.h).
  std::optional<CodesSpec> codes;
  // torchinfer's motion gate and tiles (server/inference_settings.h).
  InferenceSettings inference;
};

struct MqttSpec {
  std::string host;  // empty: MQTT off; a stream with a topic is then refused
  int port = 1883;
  int qos = 0;
};

struct ServerConfig {
  std::vector<ModelSpec> models;
  std::vector<StreamSpec> streams;
  std::string output_dir = "out/server";
  MqttSpec mqtt;
  int max_streams = 32;
  std::size_t max_body_bytes = 64 * 1024;
  double drain_timeout_s = 5.0;
  // HTTP: connections served at once (more get 503), and how long one may
  // stay open without being answered (a client that sends nothing).
  int max_connections = 256;
  double idle_timeout_s = 30.0;
  // Many boxes (docs/deployment.md): "shard": "K/N" for this box, or
  // "shards": N in a config shared by N boxes that each get their K from
  // --shard or --shard-from-hostname (server/shard.h). /readyz tolerates a
  // camera starting or reconnecting for ready_grace_s.
  std::string shard;
  int shards = 0;  // 0: not given
  double ready_grace_s = 30.0;
};

// Whole configuration (the file). Throws Error(kConfigInvalid) naming the
// field; `origin` (the file name) starts the message.
ServerConfig parse_server_config(const nlohmann::json& j, const std::string& origin);

// One camera (a REST body or an entry of "streams"); `prefix` is the field
// path of the object ("streams[1]" or "" for a REST body). Models are the
// configured ones the stream may name.
StreamSpec parse_stream_spec(const nlohmann::json& j, const std::vector<ModelSpec>& models,
                             const MqttSpec& mqtt, const std::string& prefix,
                             const std::string& origin);

// The stream as JSON, in the same schema parse_stream_spec reads.
nlohmann::json to_json(const StreamSpec& s);

// What the parsers throw: FieldError (common/field_error.h).

// Stream ids: 1..64 of [A-Za-z0-9_-] (they become file names, MQTT
// defaults, URL path segments and Prometheus label values).
bool valid_stream_id(const std::string& id);

}  // namespace torchinfer::server
