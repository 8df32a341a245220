#include "qa/qa_line_app.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/file_check.h"

namespace torchinfer::qa::line {

namespace qa = torchinfer::qa;

// Stops the run from a streaming thread: through the bus, since the main
// loop may not run yet (a quit then would be lost).
void stop_from_stream(App& app, const char* why) {
  if (app.pipeline)
    gst_element_post_message(
        app.pipeline,
        gst_message_new_application(GST_OBJECT(app.pipeline), gst_structure_new_empty(why)));
}

// Flushed per line: a line is written when its part is decided, not when a
// buffer fills. A failure stops the run (see App::write_failed). With
// --mqtt-host the line is also published (never blocks; what the broker
// did not get is counted at the end).
void write_line(App& app, const std::string& line) {
  if (app.write_failed) return;
  if (app.mqtt) {
    app.mqtt->publish(app.opt.mqtt_topic, line);
    app.mqtt_messages++;
  }
  if (std::fputs(line.c_str(), app.out) < 0 || std::fputc('\n', app.out) == EOF ||
      std::fflush(app.out) != 0) {
    app.write_error = std::strerror(errno);
    app.write_failed = true;
    g_printerr("qa-line: error: cannot write decisions to %s: %s; stopping\n",
               app.opt.output.empty() ? "stdout" : app.opt.output.c_str(), app.write_error.c_str());
    stop_from_stream(app, "qa-line-write-failed");
  }
}

// Scores only against the truth of this clip: a clip that ended (not one
// stopped by a signal or an error) must have the truth's frame count.
bool truth_fits(App& app) {
  if (!app.scorer) return false;
  std::string why;
  if (app.truth_mismatch) {
    app.rc = 2;
    return false;
  }
  if (app.rc == 0 && !app.info.interrupted) why = app.scorer->other_length(app.info.frames);
  if (why.empty()) return true;
  g_printerr("qa-line: error: %s; no scores\n", why.c_str());
  app.rc = 2;
  return false;
}

// The truth of the clip (--truth), checked against --clip before it runs.
bool open_truth(App& app) {
  if (app.opt.truth.empty()) return true;
  try {
    app.scorer = std::make_unique<qa::Scorer>(app.opt.truth, app.rules.part_classes);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  const std::string why = app.opt.clip.empty() ? "" : app.scorer->other_clip(app.opt.clip);
  if (!why.empty()) g_printerr("qa-line: %s\n", why.c_str());
  return why.empty();
}

// --mqtt-host: a broker that is down is retried; the decisions wait
// (bounded) and what never arrives is counted at the end.
bool open_mqtt(App& app) {
  if (!app.opt.mqtt) return true;
  torchinfer::MqttOptions m;
  m.host = app.opt.mqtt_host;
  m.port = app.opt.mqtt_port;
  m.qos = 1;
  auto on_event = [host = m.host, port = m.port](torchinfer::MqttEvent e, const std::string& why) {
    if (e == torchinfer::MqttEvent::kConnected)
      g_printerr("qa-line: connected to MQTT broker %s:%d\n", host.c_str(), port);
    else
      g_printerr("qa-line: warning: MQTT broker %s:%d: %s\n", host.c_str(), port, why.c_str());
  };
  try {
    if (const std::string why = torchinfer::mqtt_topic_problem(app.opt.mqtt_topic); !why.empty())
      throw std::invalid_argument("--mqtt-topic '" + app.opt.mqtt_topic + "': " + why);
    app.mqtt = std::make_unique<torchinfer::MqttPublisher>(m, on_event);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  return true;
}

// The files the run reads and writes: exit status 1 if one cannot be used.
int open_files(App& app) {
  const qa::Options& o = app.opt;
  if (!o.out_dir.empty() && g_mkdir_with_parents(o.out_dir.c_str(), 0755) != 0) {
    g_printerr("qa-line: cannot create %s: %s\n", o.out_dir.c_str(), g_strerror(errno));
    return 1;
  }
  if (!o.clip.empty() && !g_file_test(o.clip.c_str(), G_FILE_TEST_IS_REGULAR)) {
    g_printerr("qa-line: clip %s not found\n", o.clip.c_str());
    return 1;
  }
  // Without blocking: a FIFO nobody reads fails the run now, naming it.
  try {
    if (!o.output.empty() && o.output != "-")
      app.out = torchinfer::open_output_stream(o.output, "--output");
    if (!o.out_dir.empty())
      app.video_fd = torchinfer::open_output_file(o.out_dir + "/annotated.mkv", "annotated video");
  } catch (const std::exception& e) {
    g_printerr("qa-line: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

// Lines the broker never got make the run fail: they are lost decisions.
void close_mqtt(App& app) {
  if (!app.mqtt) return;
  app.mqtt->stop();
  const auto c = app.mqtt->counters();
  if (c.failed + c.dropped == 0) return;
  g_printerr("qa-line: error: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
             " lines not delivered to MQTT broker %s:%d (topic %s); exit status 1\n",
             static_cast<guint64>(c.failed + c.dropped), static_cast<guint64>(app.mqtt_messages),
             app.opt.mqtt_host.c_str(), app.opt.mqtt_port, app.opt.mqtt_topic.c_str());
  app.rc = 1;
}

void close_output(App& app) {
  if (app.out != stdout ? std::fclose(app.out) != 0 : std::fflush(app.out) != 0) {
    if (!app.write_failed)
      g_printerr("qa-line: error: cannot write decisions to %s: %s\n",
                 app.opt.output.empty() ? "stdout" : app.opt.output.c_str(), g_strerror(errno));
    app.write_failed = true;
  }
  if (app.write_failed) {
    g_printerr("qa-line: error: decisions were lost (output not written); exit status 1\n");
    app.rc = 1;
  }
}

}  // namespace torchinfer::qa::line
