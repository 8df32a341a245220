"use strict";
// The bridge's configuration: command-line flags, optionally on top of a JSON
// file (--config). Everything is checked before anything starts; a bad value
// throws a ConfigError whose message names the flag or field and the fix.

const fs = require("fs");

const MAX_CONFIG_BYTES = 1 << 20;
const NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;
const FIELDS = ["broker", "port", "stations", "max_message_bytes", "stopped_after_s", "client_id"];

class ConfigError extends Error {}

const USAGE = `usage: bridge.js --broker mqtt://HOST[:PORT] --station NAME=TOPIC [--station ...]
                 [--port 4840] [--max-message-bytes 262144] [--stopped-after-s 30]
                 [--client-id ID] [--config FILE.json]
  --station NAME=TOPIC  one station (camera, QA line) per MQTT topic; NAME is its
                        OPC UA object (letters, digits, _ and -). A bare TOPIC
                        names the station after the topic ('/' becomes '_').
  --config FILE.json    {"broker": "...", "port": 4840, "stations": [{"name": "...", "topic": "..."}],
                         "max_message_bytes": N, "stopped_after_s": S, "client_id": "..."};
                        flags given as well override its values.`;

function intIn(value, lo, hi, what) {
  const n = typeof value === "number" ? value : Number(String(value).trim());
  if (!Number.isInteger(n) || n < lo || n > hi || String(value).trim() === "")
    throw new ConfigError(`${what}: '${value}' is not a whole number in ${lo}..${hi}`);
  return n;
}

function checkBroker(url, what) {
  let u;
  try {
    u = new URL(String(url));
  } catch (e) {
    throw new ConfigError(`${what}: '${url}' is not a URL; give mqtt://HOST[:PORT] (e.g. mqtt://127.0.0.1:1883)`);
  }
  if (!["mqtt:", "mqtts:", "tcp:"].includes(u.protocol) || u.hostname === "")
    throw new ConfigError(`${what}: '${url}' must be mqtt://HOST[:PORT] or mqtts://HOST[:PORT]`);
  if (u.port !== "") intIn(u.port, 1, 65535, `${what} port`);
  return String(url);
}

function checkTopic(topic, what) {
  if (typeof topic !== "string" || topic === "" || topic.length > 256)
    throw new ConfigError(`${what}: the topic must be 1..256 characters`);
  if (/[+#\u0000]/.test(topic))
    throw new ConfigError(`${what}: topic '${topic}' has a wildcard (+ or #) or NUL; give one exact topic per station`);
  return topic;
}

function station(spec, what) {
  let name, topic;
  if (typeof spec === "string") {
    const eq = spec.indexOf("=");
    topic = eq < 0 ? spec : spec.slice(eq + 1);
    name = eq < 0 ? spec.replace(/\//g, "_") : spec.slice(0, eq);
  } else if (spec && typeof spec === "object" && !Array.isArray(spec)) {
    const extra = Object.keys(spec).filter((k) => k !== "name" && k !== "topic");
    if (extra.length) throw new ConfigError(`${what}: unknown field '${extra[0]}'; the fields are name, topic`);
    ({ name, topic } = spec);
  } else {
    throw new ConfigError(`${what}: give {"name": ..., "topic": ...} or NAME=TOPIC`);
  }
  checkTopic(topic, what);
  if (typeof name !== "string" || !NAME_RE.test(name))
    throw new ConfigError(`${what}: station name '${name}' must be 1..64 letters, digits, _ or -`);
  return { name, topic };
}

function readConfigFile(file) {
  let st;
  try {
    st = fs.statSync(file);
  } catch (e) {
    throw new ConfigError(`--config ${file}: cannot read it (${e.code}); give an existing JSON file`);
  }
  if (!st.isFile()) throw new ConfigError(`--config ${file}: not a regular file`);
  if (st.size > MAX_CONFIG_BYTES)
    throw new ConfigError(`--config ${file}: ${st.size} bytes, more than ${MAX_CONFIG_BYTES}; is it the right file?`);
  let j;
  try {
    j = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    throw new ConfigError(`--config ${file}: not valid JSON (${e.message})`);
  }
  if (!j || typeof j !== "object" || Array.isArray(j)) throw new ConfigError(`--config ${file}: must be a JSON object`);
  const unknown = Object.keys(j).filter((k) => !FIELDS.includes(k));
  if (unknown.length)
    throw new ConfigError(`--config ${file}: unknown field '${unknown[0]}'; the fields are ${FIELDS.join(", ")}`);
  if (j.stations !== undefined && !Array.isArray(j.stations))
    throw new ConfigError(`--config ${file}: stations must be an array`);
  return j;
}

function parseFlags(argv) {
  const flags = { stations: [] };
  const names = {
    "--broker": "broker", "--port": "port", "--config": "config", "--client-id": "client_id",
    "--max-message-bytes": "max_message_bytes", "--stopped-after-s": "stopped_after_s",
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i], value;
    if (arg === "-h" || arg === "--help") return { help: true };
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0) [arg, value] = [arg.slice(0, eq), arg.slice(eq + 1)];
    if (arg !== "--station" && !names[arg]) throw new ConfigError(`unknown option '${argv[i]}'\n${USAGE}`);
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new ConfigError(`${arg} needs a value\n${USAGE}`);
      value = argv[++i];
    }
    if (arg === "--station") flags.stations.push(value);
    else flags[names[arg]] = value;
  }
  return flags;
}

// argv: the arguments after the script. Returns the checked configuration.
function load(argv) {
  const flags = parseFlags(argv);
  if (flags.help) return { help: true, usage: USAGE };
  const file = flags.config !== undefined ? readConfigFile(flags.config) : {};
  const where = (key, flag) => (flags[key] !== undefined ? flag : `--config ${flags.config}: ${key}`);
  const pick = (key) => (flags[key] !== undefined ? flags[key] : file[key]);
  if (pick("broker") === undefined) throw new ConfigError(`no broker: give --broker mqtt://HOST[:PORT]\n${USAGE}`);
  const specs = flags.stations.length ? flags.stations : file.stations || [];
  if (!specs.length) throw new ConfigError(`no station: give --station NAME=TOPIC (one per topic)\n${USAGE}`);
  const stations = specs.map((s, i) =>
    station(s, flags.stations.length ? `--station '${s}'` : `--config ${flags.config}: stations[${i}]`));
  const seen = new Map();
  for (const s of stations) {
    if (seen.has(s.name)) throw new ConfigError(`station '${s.name}' is given twice; names must differ`);
    if ([...seen.values()].includes(s.topic)) throw new ConfigError(`topic '${s.topic}' is given to two stations`);
    seen.set(s.name, s.topic);
  }
  const opt = (key, flag, dflt, lo, hi) =>
    (pick(key) === undefined ? dflt : intIn(pick(key), lo, hi, where(key, flag)));
  const clientId = pick("client_id");
  if (clientId !== undefined && (typeof clientId !== "string" || clientId.length > 64))
    throw new ConfigError(`${where("client_id", "--client-id")}: give a string of at most 64 characters`);
  return {
    broker: checkBroker(pick("broker"), where("broker", "--broker")),
    port: opt("port", "--port", 4840, 1, 65535),
    stations,
    maxMessageBytes: opt("max_message_bytes", "--max-message-bytes", 256 * 1024, 64, 16 << 20),
    stoppedAfterS: opt("stopped_after_s", "--stopped-after-s", 30, 0, 86400),
    clientId: clientId || `torchinfer-opcua-${process.pid}`,
  };
}

module.exports = { load, ConfigError, USAGE };
