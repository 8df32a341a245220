"use strict";
// What tests/deploy/opcua_bridge_test.js runs: a mosquitto broker on a free
// 127.0.0.1 port, the bridge, and a real node-opcua client (the one
// scripts/setup.sh installed under deploy/opcua-bridge/node_modules).

const { spawn, spawnSync } = require("child_process");
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");
const { createRequire } = require("module");

const root = process.env.TORCHINFER_SOURCE_ROOT || path.resolve(__dirname, "../..");
const bridgeDir = path.join(root, "deploy/opcua-bridge");
if (!fs.existsSync(path.join(bridgeDir, "node_modules/node-opcua"))) {
  console.error(`FAIL: ${bridgeDir}/node_modules has no node-opcua: run scripts/setup.sh (it runs npm ci there)`);
  process.exit(1);
}
const opcua = createRequire(path.join(bridgeDir, "package.json"))("node-opcua");
const { OPCUAClient, ClientSubscription, ClientMonitoredItem, AttributeIds, TimestampsToReturn } = opcua;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "opcua-bridge-test-"));
const children = [];
const LIMIT_MS = 240000; // a wait that never ends fails the test instead of hanging it

function fail(msg) {
  console.error(`FAIL: ${msg}`);
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  process.exit(1);
}

function check(cond, msg) {
  if (!cond) fail(msg);
  console.log(`ok: ${msg}`);
}

function equal(actual, expected, what) {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  if (a !== e) fail(`${what}: got ${a}, expected ${e}`);
  console.log(`ok: ${what} = ${e}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls pred() (no timing is asserted: only the overall limit fails).
async function until(pred, what) {
  const end = Date.now() + LIMIT_MS;
  while (!(await pred())) {
    if (Date.now() > end) fail(`waited ${LIMIT_MS / 1000} s for ${what}`);
    await sleep(50);
  }
}

function start(cmd, args, logName, opts = {}) {
  const out = fs.openSync(path.join(tmp, logName), "w");
  const c = spawn(cmd, args, { stdio: ["ignore", out, out], ...opts });
  c.logFile = path.join(tmp, logName);
  c.done = new Promise((resolve) => c.on("exit", (code, sig) => resolve(code === null ? sig : code)));
  children.push(c);
  return c;
}

async function mosquitto(port) {
  const conf = path.join(tmp, "mosquitto.conf");
  fs.writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
  const m = start("mosquitto", ["-c", conf], `mosquitto-${Date.now()}.log`);
  await until(() => new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1", () => { s.destroy(); resolve(true); });
    s.on("error", () => resolve(m.exitCode !== null ? fail(`mosquitto exited: ${fs.readFileSync(m.logFile)}`) : false));
  }), `mosquitto on 127.0.0.1:${port}`);
  return m;
}

function publish(port, topic, message) {
  const args = ["-h", "127.0.0.1", "-p", String(port), "-q", "1", "-t", topic];
  const r = spawnSync("mosquitto_pub", message === null ? [...args, "-n"] : [...args, "-s"], { input: message || "" });
  if (r.status !== 0) fail(`mosquitto_pub to ${topic} exited ${r.status}: ${r.stderr}`);
}

function bridge(args, logName = "bridge.log") {
  return start(process.execPath, [path.join(bridgeDir, "bridge.js"), ...args], logName);
}

// A session on the bridge; connects once the bridge listens.
async function session(port) {
  const client = OPCUAClient.create({
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 1000, initialDelay: 100, maxDelay: 500 },
  });
  await client.connect(`opc.tcp://127.0.0.1:${port}`);
  const s = await client.createSession();
  s.client = client;
  return s;
}

const id = (p) => `ns=1;s=TorchInfer.${p}`;

// Int64/UInt64 arrive as [high, low] (high unsigned: Int64's sign is its top bit).
function plain(variant) {
  const v = variant.value;
  if (!Array.isArray(v) || v.length !== 2) return v;
  const high = variant.dataType === opcua.DataType.Int64 && v[0] >= 0x80000000 ? v[0] - 4294967296 : v[0];
  return high * 4294967296 + v[1];
}

async function read(s, p) {
  const dv = await s.read({ nodeId: id(p), attributeId: AttributeIds.Value });
  if (!dv.statusCode.isGood()) fail(`${id(p)}: status ${dv.statusCode.toString()}`);
  return plain(dv.value);
}

// The station's 40100 VisionStateMachine state (a LocalizedText) found by browse path.
async function visionState(s, station) {
  const r = await s.translateBrowsePath(opcua.makeBrowsePath(id(station), "/3:VisionStateMachine/CurrentState"));
  if (!r.statusCode.isGood()) fail(`${station}/3:VisionStateMachine/CurrentState: ${r.statusCode.toString()}`);
  const dv = await s.read({ nodeId: r.targets[0].targetId, attributeId: AttributeIds.Value });
  return dv.value.value.text;
}

// Monitors the nodes: every good change, in order, lands in seen[path].
async function monitor(s, paths, publishingMs = 50) {
  const sub = ClientSubscription.create(s, {
    requestedPublishingInterval: publishingMs, requestedLifetimeCount: 6000, requestedMaxKeepAliveCount: 20,
    maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1,
  });
  const seen = {};
  for (const p of paths) {
    seen[p] = [];
    const item = ClientMonitoredItem.create(sub, { nodeId: id(p), attributeId: AttributeIds.Value },
      { samplingInterval: 0, discardOldest: false, queueSize: 10000 }, TimestampsToReturn.Both);
    await new Promise((resolve, reject) => { item.once("initialized", resolve); item.once("err", reject); });
    item.on("changed", (dv) => { if (dv.statusCode.isGood()) seen[p].push(plain(dv.value)); });
  }
  return { sub, seen };
}

module.exports = {
  root, tmp, fail, check, equal, freePort, until, start, mosquitto, publish, bridge, session, read, monitor, sleep, visionState,
  children, bridgeDir,
};
