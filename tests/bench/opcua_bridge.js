"use strict";
// The OPC UA bridge's figures (docs/opcua.md, "Figures"): start-up until a
// client's session, MQTT decision -> OPC UA data-change notification latency
// at a given publishing interval, and the decisions per second it applies
// with its CPU time per decision. A figure, not a test.
//   [GAP_MS=5] node tests/bench/opcua_bridge.js [PUBLISHING_MS=50] [LATENCY_N=1000] [FLOOD_N=20000]
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");
const h = require("../deploy/opcua_harness");
const mqtt = createRequire(path.join(h.bridgeDir, "package.json"))("mqtt");

const [publishingMs, latencyN, floodN] = process.argv.slice(2).map(Number);
const PUB = publishingMs || 50, LAT_N = latencyN || 1000, FLOOD_N = floodN || 20000;
const GAP_MS = Number(process.env.GAP_MS || 5); // between the latency phase's decisions
const line = (id) => JSON.stringify({ event: "part", part: id, class: "washer", verdict: id % 3 ? "pass" : "reject",
  evidence: { rule: "vote", confidence: 0.97 }, first_pts: 0, last_pts: id * 33333333 });
const cpuMs = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime, clock ticks of 10 ms
};
const pct = (a, q) => a[Math.min(a.length - 1, Math.floor(q * a.length))];

async function main() {
  const [mqttPort, opcPort] = [await h.freePort(), await h.freePort()];
  const broker = await h.mosquitto(mqttPort);
  const t0 = Date.now();
  const bridge = h.bridge(["--broker", `mqtt://127.0.0.1:${mqttPort}`, "--station", "line1=bench/d", "--port", String(opcPort)]);
  const s = await h.session(opcPort);
  await h.until(async () => (await h.read(s, "Bridge.BrokerState")) === "connected", "broker");
  console.log(`start-up to a connected session: ${Date.now() - t0} ms`);
  const sent = new Map(), lat = [];
  const { sub, seen } = await h.monitor(s, ["line1.ResultManagement.Results.LastResult.PartId"], PUB);
  console.log(`publishing interval: requested ${PUB} ms, revised ${sub.publishingInterval} ms`);
  const items = Object.values(sub.monitoredItems);
  items[0].on("changed", (dv) => { const t = sent.get(dv.value.value[1]); if (t !== undefined) lat.push(performance.now() - t); });
  const pub = mqtt.connect(`mqtt://127.0.0.1:${mqttPort}`);
  await new Promise((r) => pub.once("connect", r));
  for (let id = 1; id <= LAT_N; id++) {
    sent.set(id, performance.now());
    pub.publish("bench/d", line(id), { qos: 1 });
    await h.sleep(GAP_MS);
  }
  await h.until(() => lat.length === LAT_N, "every latency sample");
  lat.sort((a, b) => a - b);
  console.log(`decision -> notification, ${LAT_N} decisions ${GAP_MS} ms apart: p50 ${pct(lat, 0.5).toFixed(1)} ms, ` +
    `p99 ${pct(lat, 0.99).toFixed(1)} ms, max ${lat.at(-1).toFixed(1)} ms`);
  const ids = seen["line1.ResultManagement.Results.LastResult.PartId"], n0 = ids.length;
  const c0 = cpuMs(bridge.pid), f0 = performance.now();
  for (let id = LAT_N + 1; id <= LAT_N + FLOOD_N; id++) pub.publish("bench/d", line(id), { qos: 0 });
  await h.until(async () => (await h.read(s, "line1.ResultManagement.Counters.Parts")) === LAT_N + FLOOD_N, "the flood");
  const secs = (performance.now() - f0) / 1000, cpu = cpuMs(bridge.pid) - c0;
  console.log(`flood of ${FLOOD_N} decisions (QoS 0): ${(FLOOD_N / secs).toFixed(0)} decisions/s applied, ` +
    `bridge CPU ${(cpu / FLOOD_N * 1000).toFixed(0)} us per decision, ${ids.length - n0} of its ${FLOOD_N} PartId changes notified`);
  pub.end(true);
  await s.close();
  await s.client.disconnect();
  bridge.kill("SIGTERM");
  await bridge.done;
  broker.kill("SIGTERM");
  fs.rmSync(h.tmp, { recursive: true, force: true });
}
main().catch((e) => h.fail(e.stack || String(e)));
