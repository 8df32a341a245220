#!/usr/bin/env node
"use strict";
// torchinfer OPC UA bridge: subscribes to the MQTT topics torchinfer-qa-line
// and torchinfer-server publish, and serves each station's results as typed
// OPC UA nodes for MES/SCADA (docs/opcua.md). Not for timing: the PLC output
// (docs/line-io.md) fires rejects; this is for supervision.
//
//   node deploy/opcua-bridge/bridge.js --broker mqtt://127.0.0.1:1883 --station line1=qa-line/decisions
//
// Exit status: 0 stopped by SIGINT/SIGTERM, 1 could not serve (port taken), 2 bad configuration.

const config = require("./config");
const messages = require("./messages");
// Loaded once the configuration is good (node-opcua takes seconds to load).
let space, mqtt, opcua;

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30000;
const LOG_FIRST_BAD = 20; // then one line per 1000 bad messages of a station

function log(msg) {
  process.stderr.write(`opcua-bridge: ${msg}\n`);
}

// One station: its nodes, its state, and what its messages do to them.
class Station {
  constructor(name, topic, nodes, bridgeNodes, stoppedAfterS) {
    Object.assign(this, { name, topic, nodes, bridgeNodes, stoppedAfterS });
    this.stateName = "stopped";
    this.timer = null;
    this.bad = 0;
  }

  setState(s) {
    if (s === this.stateName) return;
    this.stateName = s;
    this.nodes.state.state(s);
    this.nodes.state.code(space.STATE_CODES[s]);
    log(`station ${this.name}: ${s}`);
    try {
      this.nodes.state.current(space.VISION_STATE[s]);
    } catch (e) {
      log(`station ${this.name}: VisionStateMachine not moved to ${space.VISION_STATE[s]}: ${e.message}`);
    }
  }

  // A station that sends nothing for stoppedAfterS is stopped (a camera that
  // ended sends no summary).
  alive() {
    this.setState("running");
    if (this.timer) clearTimeout(this.timer);
    if (this.stoppedAfterS > 0) this.timer = setTimeout(() => this.setState("stopped"), this.stoppedAfterS * 1000);
  }

  refuse(u) {
    const d = this.nodes.diagnostics;
    (u.kind === "dropped" ? d.MessagesDropped : d.MessagesInvalid).add();
    (u.kind === "dropped" ? this.bridgeNodes.MessagesDropped : this.bridgeNodes.MessagesInvalid).add();
    d.lastError(u.reason);
    this.bad++;
    if (this.bad <= LOG_FIRST_BAD || this.bad % 1000 === 0)
      log(`station ${this.name}: topic ${this.topic}: message ${u.kind}: ${u.reason} ` +
        `(${d.MessagesInvalid.get()} invalid, ${d.MessagesDropped.get()} dropped so far)`);
  }

  part(u) {
    const r = this.nodes.lastResult;
    r.partId(u.id);
    r.cls(u.cls);
    r.verdict(u.verdict);
    r.resultState(u.verdictCode);
    r.score(u.score);
    r.code(u.code === null ? "" : u.code);
    r.creationTime(new Date());
    r.lastPts(u.lastPts === null ? -1 : u.lastPts);
    const c = this.nodes.count;
    c.Parts.add();
    ({ pass: c.Passed, reject: c.Rejected, incomplete: c.Incomplete })[u.verdict].add();
    if (u.late) c.Late.add();
  }

  frame(u) {
    const f = this.nodes.lastFrame;
    f.frame(u.frame);
    f.pts(u.pts === null ? -1 : u.pts);
    f.detections(u.detections);
    f.frames.add();
  }

  onMessage(payload, maxBytes) {
    this.nodes.diagnostics.MessagesReceived.add();
    const u = messages.parse(payload, maxBytes);
    if (u.kind === "dropped" || u.kind === "invalid") return this.refuse(u);
    if (u.kind === "summary") {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      return this.setState("stopped");
    }
    this.alive();
    if (u.kind === "part") this.part(u);
    else this.frame(u);
  }
}

// MQTT with a doubling reconnect delay, said in the log while it happens;
// every station is `disconnected` while the broker is away.
function connectBroker(cfg, stations, bridgeNodes) {
  const byTopic = new Map(stations.map((s) => [s.topic, s]));
  let wasConnected = false, lostAt = null;
  const client = mqtt.connect(cfg.broker, {
    clientId: cfg.clientId, clean: true, reconnectPeriod: BACKOFF_MIN_MS, connectTimeout: 10000, resubscribe: false,
  });
  client.on("connect", () => {
    client.options.reconnectPeriod = BACKOFF_MIN_MS;
    client.subscribe(stations.map((s) => s.topic), { qos: 1 }, (err) => {
      if (err) return log(`subscribing on ${cfg.broker} failed: ${err.message}`);
      log(`connected to ${cfg.broker}${lostAt ? ` after ${((Date.now() - lostAt) / 1000).toFixed(1)} s` : ""}; ` +
        `subscribed to ${stations.map((s) => s.topic).join(", ")}`);
      lostAt = null;
      wasConnected = true;
      bridgeNodes.brokerState("connected");
      for (const s of stations) s.setState(s.beforeLoss || "stopped");
    });
  });
  client.on("close", () => {
    if (wasConnected) {
      wasConnected = false;
      lostAt = Date.now();
      bridgeNodes.Reconnects.add();
      for (const s of stations) {
        s.beforeLoss = s.stateName === "disconnected" ? s.beforeLoss : s.stateName;
        s.setState("disconnected");
      }
    }
    bridgeNodes.brokerState(lostAt || bridgeNodes.Reconnects.get() ? "reconnecting" : "connecting");
    // mqtt.js scheduled this retry before this handler ran; the next one waits twice as long.
    const period = client.options.reconnectPeriod;
    log(`broker ${cfg.broker} not connected; retrying in ${(period / 1000).toFixed(1)} s`);
    client.options.reconnectPeriod = Math.min(BACKOFF_MAX_MS, period * 2);
  });
  client.on("error", (err) => log(`broker ${cfg.broker}: ${err.message}`));
  client.on("message", (topic, payload) => {
    const s = byTopic.get(topic);
    if (!s) return;
    try {
      s.onMessage(payload, cfg.maxMessageBytes);
    } catch (e) {
      s.refuse({ kind: "invalid", reason: `could not be applied (${e.message})` });
    }
  });
  return client;
}

async function serve(cfg) {
  const server = new opcua.OPCUAServer({
    port: cfg.port,
    nodeset_filename: [opcua.nodesets.standard, opcua.nodesets.di, opcua.nodesets.machineVision],
    buildInfo: { productName: "torchinfer OPC UA bridge", manufacturerName: "torchinfer", softwareVersion: "1.0.0" },
    allowAnonymous: true,
  });
  // Loading the 40100 nodeset warns about its abstract ResultContent field
  // (node-opcua types it BaseDataType, which is right): said once, not dumped.
  let quiet = 0;
  opcua.setWarningLogger(() => quiet++);
  await server.initialize();
  opcua.setWarningLogger((...a) => log(`node-opcua: ${a.filter((x) => typeof x !== "object").join(" ")}`));
  if (quiet) log(`node-opcua: ${quiet} warning lines while loading the nodesets (OPC 40100's abstract ResultContent) not shown`);
  const built = space.build(server.engine.addressSpace, cfg.stations.map((s) => s.name));
  await server.start();
  log(`serving opc.tcp://0.0.0.0:${cfg.port} (stations ${cfg.stations.map((s) => `${s.name}=${s.topic}`).join(", ")})`);
  return { server, built };
}

async function main() {
  let cfg;
  try {
    cfg = config.load(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof config.ConfigError)) throw e;
    log(`error: ${e.message}`);
    process.exit(2);
  }
  if (cfg.help) return process.stdout.write(`${cfg.usage}\n`);
  [space, mqtt, opcua] = [require("./address_space"), require("mqtt"), require("node-opcua")];
  let served;
  try {
    served = await serve(cfg);
  } catch (e) {
    log(`error: cannot serve OPC UA on port ${cfg.port}: ${e.message} (is another server on it? give --port)`);
    process.exit(1);
  }
  const { server, built } = served;
  const stations = cfg.stations.map((s) =>
    new Station(s.name, s.topic, built.stations[s.name], built.bridge, cfg.stoppedAfterS));
  const client = connectBroker(cfg, stations, built.bridge);
  const stop = async (sig) => {
    log(`${sig}: stopping`);
    client.removeAllListeners("close");
    client.end(true);
    await server.shutdown(0);
    process.exit(0);
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
}

main().catch((e) => {
  log(`error: ${e.stack || e}`);
  process.exit(1);
});
