"use strict";
// The OPC UA address space: one object per station under Objects/TorchInfer,
// an instance of OPC 40100-1's VisionSystemType (the companion nodeset that
// node-opcua ships) with its VisionStateMachine, and the results as plain
// typed variables in a ResultManagement-like tree (docs/opcua.md says where
// and why it differs). Every node of ours has a stable string id:
// ns=1;s=TorchInfer.<station>.<path>.

const { DataType, StatusCodes, coerceInt64, coerceUInt64, promoteToStateMachine } = require("node-opcua");

const MACHINE_VISION = "http://opcfoundation.org/UA/MachineVision";

// 40100's VisionStateMachine states for the bridge's station states.
const VISION_STATE = { running: "Operational", stopped: "Halted", disconnected: "Error" };
const STATE_CODES = { stopped: 0, running: 1, disconnected: 2 };

// A variable and its setter. Values start as `initial`, or with
// BadWaitingForInitialData when initial is undefined (no part seen yet).
function variable(ns, parent, id, name, dataType, initial, description) {
  const wrap = (v) => {
    if (dataType === DataType.Int64) return coerceInt64(v);
    if (dataType === DataType.UInt64) return coerceUInt64(v);
    return v;
  };
  const dflt = { Int64: 0, UInt64: 0, UInt32: 0, Int32: 0, Double: 0, String: "", DateTime: new Date(0) };
  const node = ns.addVariable({
    componentOf: parent,
    browseName: name,
    nodeId: `s=${id}.${name}`,
    dataType: DataType[dataType],
    description,
    accessLevel: "CurrentRead",
    userAccessLevel: "CurrentRead",
    minimumSamplingInterval: 0,
  });
  const set = (value, status = StatusCodes.Good) =>
    node.setValueFromSource({ dataType: DataType[dataType], value: wrap(value) }, status, new Date());
  if (initial === undefined) set(dflt[dataType], StatusCodes.BadWaitingForInitialData);
  else set(initial);
  return set;
}

function object(ns, parent, id, name, description) {
  return ns.addObject({ componentOf: parent, browseName: name, nodeId: `s=${id}.${name}`, description });
}

function counters(ns, parent, id, names) {
  const out = {};
  for (const [name, description] of names) out[name] = counter(variable(ns, parent, id, name, "UInt64", 0, description));
  return out;
}

// A UInt64 counter kept as a JS number (exact up to 2^53) and written on each change.
function counter(set) {
  let n = 0;
  return { add: (k = 1) => set((n += k)), get: () => n };
}

function resultNodes(ns, station, id) {
  const rm = object(ns, station, id, "ResultManagement", "The station's decisions (OPC 40100-1 ResultManagement)");
  const rid = `${id}.ResultManagement`;
  const results = object(ns, rm, rid, "Results", "OPC 40100-1 Results: the last result");
  const last = object(ns, results, `${rid}.Results`, "LastResult", "The last part decided");
  const lid = `${rid}.Results.LastResult`;
  const lastResult = {
    partId: variable(ns, last, lid, "PartId", "Int64", undefined, "torchtrack id of the part (the decision's part)"),
    cls: variable(ns, last, lid, "Class", "String", undefined, "the part's class"),
    verdict: variable(ns, last, lid, "Verdict", "String", undefined, "pass, reject or incomplete"),
    resultState: variable(ns, last, lid, "ResultState", "Int32", undefined, "verdict code: 1 pass, 2 reject, 3 incomplete"),
    score: variable(ns, last, lid, "Score", "Double", undefined, "the winning label's score (evidence.confidence); NaN when none"),
    code: variable(ns, last, lid, "Code", "String", undefined, "the part's code (DataMatrix, QR, 1D) when read, else empty"),
    creationTime: variable(ns, last, lid, "CreationTime", "DateTime", undefined, "when the bridge received the decision"),
    lastPts: variable(ns, last, lid, "LastPts", "Int64", undefined, "last_pts of the decision: stream time (ns) the part was last seen; -1 when none"),
  };
  const counts = object(ns, rm, rid, "Counters", "Parts decided since the bridge started");
  const count = counters(ns, counts, `${rid}.Counters`, [
    ["Parts", "decisions received"], ["Passed", "verdict pass"], ["Rejected", "verdict reject"],
    ["Incomplete", "verdict incomplete"], ["Late", "decisions the PLC output marked late (plc.late)"],
  ]);
  const lf = object(ns, rm, rid, "LastFrame", "Frame records (torchinfer-server's mqtt_topic)");
  const fid = `${rid}.LastFrame`;
  const lastFrame = {
    frame: variable(ns, lf, fid, "Frame", "Int64", undefined, "the record's frame number"),
    pts: variable(ns, lf, fid, "Pts", "Int64", undefined, "its pts (ns); -1 when none"),
    detections: variable(ns, lf, fid, "Detections", "UInt32", undefined, "its detections"),
    frames: counter(variable(ns, lf, fid, "Frames", "UInt64", 0, "frame records received")),
  };
  return { lastResult, count, lastFrame };
}

// Moves the VisionStateMachine along 40100's transitions: the automatic one
// where there are two (the bridge is not an operator), and through
// Preoperational where 40100 has no direct one (Halted to Operational or Error).
function moveTo(sm, target) {
  const name = (n) => n && n.browseName.name;
  // node-opcua asks this only when several transitions lead there.
  const auto = (transitions) => transitions.find((t) => /Auto$/.test(name(t))) || transitions[0];
  const direct = (from, to) =>
    sm.getTransitions().some((t) => name(t.fromStateNode) === from && name(t.toStateNode) === to);
  const from = name(sm.currentStateNode);
  if (from === target) return;
  if (!direct(from, target) && direct(from, "Preoperational")) sm.setState("Preoperational", auto);
  sm.setState(target, auto);
}

function stationNodes(ns, visionSystemType, folder, name) {
  const id = `TorchInfer.${name}`;
  const station = visionSystemType.instantiate({
    organizedBy: folder, browseName: name, nodeId: `s=${id}`,
    description: "A camera or QA station (OPC 40100-1 VisionSystemType)",
  });
  // 40100's states: Operational (running), Halted (stopped), Error (disconnected from the broker).
  const sm = promoteToStateMachine(station.getComponentByName("VisionStateMachine"));
  sm.setState("Halted");
  const state = {
    current: (s) => moveTo(sm, s),
    state: variable(ns, station, id, "State", "String", "stopped", "running, stopped or disconnected"),
    code: variable(ns, station, id, "StateCode", "UInt32", 0, "0 stopped, 1 running, 2 disconnected"),
  };
  const diag = object(ns, station, id, "Diagnostics", "This station's MQTT messages");
  const did = `${id}.Diagnostics`;
  const diagnostics = counters(ns, diag, did, [
    ["MessagesReceived", "messages on the station's topic"],
    ["MessagesInvalid", "not JSON, not an object, missing or mistyped fields"],
    ["MessagesDropped", "larger than --max-message-bytes, dropped unread"],
  ]);
  diagnostics.lastError = variable(ns, diag, did, "LastError", "String", "", "why the last bad message was refused");
  return { state, diagnostics, ...resultNodes(ns, station, id) };
}

// Builds the nodes; returns {stations: {name: nodes}, bridge: nodes}.
function build(addressSpace, stationNames) {
  const ns = addressSpace.getOwnNamespace();
  const visionSystemType = addressSpace.findObjectType("VisionSystemType", addressSpace.getNamespaceIndex(MACHINE_VISION));
  if (!visionSystemType) throw new Error(`the OPC 40100 nodeset (${MACHINE_VISION}) did not load`);
  const folder = ns.addFolder(addressSpace.rootFolder.objects, { browseName: "TorchInfer", nodeId: "s=TorchInfer" });
  const stations = {};
  for (const name of stationNames) stations[name] = stationNodes(ns, visionSystemType, folder, name);
  const b = object(ns, folder, "TorchInfer", "Bridge", "The bridge's MQTT connection");
  const bridge = {
    brokerState: variable(ns, b, "TorchInfer.Bridge", "BrokerState", "String", "connecting",
      "connecting, connected or reconnecting"),
    ...counters(ns, b, "TorchInfer.Bridge", [
      ["Reconnects", "connections to the broker lost and retried"],
      ["MessagesInvalid", "invalid messages, all stations"], ["MessagesDropped", "oversized messages, all stations"],
    ]),
  };
  return { stations, bridge };
}

module.exports = { build, VISION_STATE, STATE_CODES };
