"use strict";
// The OPC UA bridge (deploy/opcua-bridge, docs/opcua.md) against a real
// mosquitto and a real node-opcua client subscribed to its nodes.
//   node opcua_bridge_test.js demo QA_LINE_BINARY
//     torchinfer-qa-line runs the demo clip publishing to the broker: the
//     subscription sees its 13 parts, the counters are 4 passed / 9 rejected,
//     the last part's nodes equal the app's last decision line.
//   node opcua_bridge_test.js hostile
//     bad configurations are refused (exit 2, named); malformed MQTT payloads
//     are counted as invalid or dropped and the bridge keeps serving; the
//     broker going away and back is seen in the station state and counted.

const fs = require("fs");
const path = require("path");
const h = require("./opcua_harness");

const LAST = "line1.ResultManagement.Results.LastResult";
const COUNT = "line1.ResultManagement.Counters";
const DIAG = "line1.Diagnostics";

async function setup(extraArgs = []) {
  const [mqttPort, opcPort] = [await h.freePort(), await h.freePort()];
  const broker = await h.mosquitto(mqttPort);
  const bridge = h.bridge(["--broker", `mqtt://127.0.0.1:${mqttPort}`, "--station", "line1=qa-line/decisions",
    "--port", String(opcPort), "--stopped-after-s", "0", ...extraArgs]);
  const s = await h.session(opcPort);
  await h.until(async () => (await h.read(s, "Bridge.BrokerState")) === "connected", "the bridge's broker connection");
  return { mqttPort, opcPort, broker, bridge, s };
}

async function demo(qaLine) {
  const env = await setup(["--station", "cam0=line1/cam0"]);
  const fields = ["PartId", "Class", "Verdict", "ResultState", "Score", "Code", "LastPts", "CreationTime"];
  const { seen } = await h.monitor(env.s, [...fields.map((f) => `${LAST}.${f}`), `${COUNT}.Parts`, "line1.State"]);
  const out = path.join(h.tmp, "qa.jsonl");
  const started = new Date();
  const app = h.start(qaLine, ["--clip", "models/demo/line.mkv", "--output", out, "--quiet", "--mqtt-host", "127.0.0.1",
    "--mqtt-port", String(env.mqttPort), "--mqtt-topic", "qa-line/decisions"], "qa-line.log", { cwd: h.root });
  const rc = await app.done;
  if (rc !== 0) h.fail(`torchinfer-qa-line exited ${rc}: ${fs.readFileSync(app.logFile, "utf8").slice(-3000)}`);
  // The summary, the app's last message, stops the station: every decision before it was applied.
  await h.until(() => seen["line1.State"].includes("running") && seen["line1.State"].at(-1) === "stopped",
    "the station to run and stop");
  await h.until(() => seen[`${COUNT}.Parts`].at(-1) === 13, "13 parts counted");
  const lines = fs.readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const parts = lines.filter((l) => l.event === "part");
  h.equal(parts.length, 13, "decision lines of the app");
  h.equal(seen[`${LAST}.PartId`], parts.map((p) => p.part), "part ids seen by the subscription, in order");
  h.equal(seen[`${COUNT}.Parts`], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], "Parts counter notifications");
  for (const [node, want] of [["Passed", 4], ["Rejected", 9], ["Incomplete", 0], ["Late", 0], ["Parts", 13]])
    h.equal(await h.read(env.s, `${COUNT}.${node}`), want, `Counters.${node}`);
  const last = parts.at(-1);
  const want = { PartId: last.part, Class: last.class, Verdict: last.verdict,
    ResultState: { pass: 1, reject: 2, incomplete: 3 }[last.verdict], Score: last.evidence.confidence, Code: "",
    LastPts: last.last_pts };
  for (const [f, v] of Object.entries(want)) {
    h.equal(await h.read(env.s, `${LAST}.${f}`), v, `LastResult.${f} (last decision line)`);
    h.equal(seen[`${LAST}.${f}`].at(-1), v, `LastResult.${f} last notification`);
  }
  const t = await h.read(env.s, `${LAST}.CreationTime`);
  h.check(t >= started && t <= new Date(), `CreationTime ${t.toISOString()} within the run`);
  h.equal(seen[`${LAST}.CreationTime`].length, 13, "CreationTime notifications");
  for (const [node, want] of [["MessagesReceived", 14], ["MessagesInvalid", 0], ["MessagesDropped", 0]])
    h.equal(await h.read(env.s, `${DIAG}.${node}`), want, `Diagnostics.${node}`);
  h.equal(await h.visionState(env.s, "line1"), "Halted", "line1's 40100 VisionStateMachine.CurrentState");
  await frames(env);
  return env;
}

// A camera's frame records as torchinfer-server sends them: torchpublish
// after torchmetaconvert (the same line in the file and on the topic).
async function frames(env) {
  const out = path.join(h.tmp, "frames.jsonl");
  const gst = h.start("gst-launch-1.0", ["-q", "filesrc", "location=models/demo/line.mkv", "!", "matroskademux", "!",
    "jpegdec", "!", "videoconvert", "!", "identity", "eos-after=6", "!", "torchinfer", "model=models/demo/parts_detector.pt",
    "!", "torchnms", "!", "torchmetaconvert", `location=${out}`, "!", "torchpublish", "host=127.0.0.1",
    `port=${env.mqttPort}`, "topic=line1/cam0", "qos=1", "!", "fakesink"], "gst.log", { cwd: h.root });
  const rc = await gst.done;
  if (rc !== 0) h.fail(`gst-launch-1.0 exited ${rc}: ${fs.readFileSync(gst.logFile, "utf8").slice(-3000)}`);
  const lines = fs.readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  h.equal(lines.length, 5, "frame records written");
  const lf = "cam0.ResultManagement.LastFrame";
  await h.until(async () => (await h.read(env.s, `${lf}.Frames`)) === 5, "cam0's 5 frame records");
  const last = lines.at(-1);
  for (const [f, v] of [["Frame", last.frame], ["Pts", last.pts], ["Detections", last.detections.length]])
    h.equal(await h.read(env.s, `${lf}.${f}`), v, `cam0 LastFrame.${f} (last frame record)`);
  h.equal(await h.read(env.s, "cam0.Diagnostics.MessagesInvalid"), 0, "cam0 invalid messages");
  h.equal(await h.read(env.s, "cam0.State"), "running", "cam0.State");
}

async function configErrors() {
  const cases = [
    [[], "no broker: give --broker mqtt://HOST[:PORT]"],
    [["--broker", "http://x", "--station", "a=b"], "--broker: 'http://x' must be mqtt://HOST[:PORT]"],
    [["--broker", "mqtt://x", "--station", "a=line/#"], "has a wildcard (+ or #)"],
    [["--broker", "mqtt://x", "--station", "a=t", "--port", "70000"], "--port: '70000' is not a whole number in 1..65535"],
    [["--broker", "mqtt://x"], "no station: give --station NAME=TOPIC"],
    [["--broker", "mqtt://x", "--station", "a=t", "--station", "a=u"], "station 'a' is given twice"],
    [["--config", path.join(h.tmp, "none.json")], "cannot read it (ENOENT)"],
    [["--config", h.tmp], "not a regular file"],
    [["--config", "bad.json"], "unknown field 'stations_'; the fields are broker, port, stations"],
    [["--bogus"], "unknown option '--bogus'"],
  ];
  fs.writeFileSync(path.join(h.tmp, "bad.json"), JSON.stringify({ broker: "mqtt://x", stations_: [] }));
  for (const [args, msg] of cases) {
    const b = h.start(process.execPath, [path.join(h.root, "deploy/opcua-bridge/bridge.js"),
      ...args.map((a) => (a === "bad.json" ? path.join(h.tmp, a) : a))], "config.log");
    const rc = await b.done;
    const log = fs.readFileSync(b.logFile, "utf8");
    h.check(rc === 2 && log.includes(msg), `${JSON.stringify(args)} exits 2 saying "${msg}" (got ${rc}: ${log.split("\n")[0]})`);
  }
}

async function hostile() {
  await configErrors();
  const env = await setup(["--max-message-bytes", "1024", "--station", "cam0=line1/cam0"]);
  const { seen } = await h.monitor(env.s, [`${LAST}.PartId`, "line1.State", "Bridge.BrokerState"]);
  const bad = ["garbage", "[1,2]", "{\"event\":\"part\"}", "{\"event\":\"part\",\"part\":1,\"class\":\"washer\",\"verdict\":\"maybe\"}",
    "{\"event\":\"bogus\"}", null, "{\"event\":\"part\",\"part\":-3,\"class\":\"washer\",\"verdict\":\"pass\"}"];
  for (const m of bad) h.publish(env.mqttPort, "qa-line/decisions", m);
  h.publish(env.mqttPort, "qa-line/decisions", JSON.stringify({ event: "part", part: 2, class: "x".repeat(1100), verdict: "pass" }));
  h.publish(env.mqttPort, "qa-line/decisions", "{\"event\":\"part\",\"part\":7,\"class\":\"washer\",\"verdict\":\"pass\"," +
    "\"evidence\":{\"confidence\":0.75},\"code\":{\"text\":\"SN-0042\",\"format\":\"DataMatrix\"},\"plc\":{\"late\":true}}");
  await h.until(() => seen[`${LAST}.PartId`].at(-1) === 7, "part 7 after the malformed messages");
  h.equal(await h.read(env.s, `${DIAG}.MessagesInvalid`), 7, "Diagnostics.MessagesInvalid");
  h.equal(await h.read(env.s, `${DIAG}.MessagesDropped`), 1, "Diagnostics.MessagesDropped (larger than 1024 bytes)");
  h.equal(await h.read(env.s, `${DIAG}.MessagesReceived`), 9, "Diagnostics.MessagesReceived");
  h.equal(await h.read(env.s, "Bridge.MessagesInvalid"), 7, "Bridge.MessagesInvalid");
  h.equal(seen[`${LAST}.PartId`], [7], "the only part applied");
  for (const [f, v] of [["Class", "washer"], ["Verdict", "pass"], ["ResultState", 1], ["Score", 0.75], ["Code", "SN-0042"], ["LastPts", -1]])
    h.equal(await h.read(env.s, `${LAST}.${f}`), v, `LastResult.${f}`);
  h.equal(await h.read(env.s, `${COUNT}.Late`), 1, "Counters.Late (plc.late)");
  h.equal(await h.read(env.s, `${COUNT}.Passed`), 1, "Counters.Passed");
  h.publish(env.mqttPort, "line1/cam0", "{\"frame\":5,\"pts\":166666666,\"detections\":[{},{}]}");
  await h.until(async () => (await h.read(env.s, "cam0.ResultManagement.LastFrame.Frames")) === 1, "cam0's frame");
  for (const [f, v] of [["Frame", 5], ["Pts", 166666666], ["Detections", 2]])
    h.equal(await h.read(env.s, `cam0.ResultManagement.LastFrame.${f}`), v, `cam0 LastFrame.${f}`);
  h.equal(await h.read(env.s, "cam0.State"), "running", "cam0.State");
  h.equal(await h.visionState(env.s, "cam0"), "Operational", "cam0's 40100 VisionStateMachine.CurrentState");
  const w = await env.s.write({ nodeId: `ns=1;s=TorchInfer.${COUNT}.Passed`, attributeId: 13,
    value: { value: { dataType: "UInt64", arrayType: "Scalar", value: [0, 99] } } });
  h.check(!w.isGood(), `a client's write to Counters.Passed is refused (${w.toString()})`);
  h.equal(await h.read(env.s, `${COUNT}.Passed`), 1, "Counters.Passed after the refused write");
  h.check(env.bridge.exitCode === null, "the bridge still runs");
  await brokerLoss(env, seen);
  await configFileAndSilence(env.mqttPort);
  return env;
}

// A bridge configured by a JSON file; its station stops after 1 s of silence.
async function configFileAndSilence(mqttPort) {
  const file = path.join(h.tmp, "bridge.json");
  const opcPort = await h.freePort();
  fs.writeFileSync(file, JSON.stringify({ broker: `mqtt://127.0.0.1:${mqttPort}`, port: opcPort,
    stations: [{ name: "lineA", topic: "qa/a" }], stopped_after_s: 1, client_id: "opcua-test-file" }));
  const bridge = h.bridge(["--config", file], "bridge-file.log");
  const s = await h.session(opcPort);
  await h.until(async () => (await h.read(s, "Bridge.BrokerState")) === "connected", "the second bridge's broker");
  const { seen } = await h.monitor(s, ["lineA.State", "lineA.ResultManagement.Results.LastResult.PartId"]);
  h.publish(mqttPort, "qa/a", "{\"event\":\"part\",\"part\":3,\"class\":\"bracket\",\"verdict\":\"pass\"}");
  await h.until(() => seen["lineA.State"].length === 3, "lineA to run, then stop after 1 s without messages");
  h.equal(seen["lineA.State"], ["stopped", "running", "stopped"], "lineA.State notifications (--config stopped_after_s 1)");
  h.equal(seen["lineA.ResultManagement.Results.LastResult.PartId"], [3], "lineA's part");
  await s.close();
  await s.client.disconnect();
  bridge.kill("SIGINT");
  h.equal(await bridge.done, 0, "the second bridge's exit status on SIGINT");
}

// The broker goes away and comes back on the same port.
async function brokerLoss(env, seen) {
  env.broker.kill("SIGTERM");
  await env.broker.done;
  await h.until(() => seen["line1.State"].at(-1) === "disconnected", "line1 disconnected");
  await h.until(() => seen["Bridge.BrokerState"].at(-1) === "reconnecting", "BrokerState reconnecting");
  h.equal(await h.visionState(env.s, "line1"), "Error", "line1's VisionStateMachine while the broker is away");
  env.broker = await h.mosquitto(env.mqttPort);
  await h.until(() => seen["Bridge.BrokerState"].at(-1) === "connected", "BrokerState connected again");
  h.equal(seen["line1.State"].slice(-2), ["disconnected", "running"], "line1.State back to its state before the loss");
  h.equal(await h.read(env.s, "Bridge.Reconnects"), 1, "Bridge.Reconnects");
  h.equal(await h.visionState(env.s, "line1"), "Operational", "line1's VisionStateMachine after the loss");
  h.publish(env.mqttPort, "qa-line/decisions", "{\"event\":\"part\",\"part\":8,\"class\":\"bracket\",\"verdict\":\"reject\"}");
  await h.until(() => seen[`${LAST}.PartId`].at(-1) === 8, "part 8 after the broker came back");
  h.equal(await h.read(env.s, `${COUNT}.Rejected`), 1, "Counters.Rejected");
  const log = fs.readFileSync(env.bridge.logFile, "utf8");
  h.check(/not connected; retrying in \d+\.\d s/.test(log), "the bridge said it was retrying");
}

async function main() {
  const [mode, qaLine] = process.argv.slice(2);
  let env;
  if (mode === "demo" && qaLine) env = await demo(qaLine);
  else if (mode === "hostile") env = await hostile();
  else h.fail("usage: opcua_bridge_test.js demo QA_LINE_BINARY | hostile");
  await env.s.close();
  await env.s.client.disconnect();
  env.bridge.kill("SIGTERM");
  h.equal(await env.bridge.done, 0, "the bridge's exit status on SIGTERM");
  env.broker.kill("SIGTERM");
  fs.rmSync(h.tmp, { recursive: true, force: true });
  console.log("PASS");
}

main().catch((e) => h.fail(e.stack || String(e)));
