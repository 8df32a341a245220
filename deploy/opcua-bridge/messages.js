"use strict";
// Reads one MQTT payload from the network into an update for a station, or
// says why it cannot: {kind: "dropped"|"invalid", reason}. Never throws.
//
// Three kinds of message are understood (pipelines/README.md, docs/elements.md):
//  - torchinfer-qa-line's decision line {"event":"part","part":ID,"class":...,"verdict":...}
//  - its summary line {"event":"summary",...}: the run ended
//  - torchmetaconvert's frame record {"frame":N,"pts":...,"detections":[...]}
//    (torchinfer-server's per-camera mqtt_topic, torchpublish)

const VERDICT_CODES = { pass: 1, reject: 2, incomplete: 3 };

function bad(reason) {
  return { kind: "invalid", reason };
}

function nsOrNull(v) {
  return Number.isSafeInteger(v) ? v : null;
}

// The part's code when a code reader found one: a string, or torchcodes' {text, format}.
function codeOf(v) {
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof v.text === "string") return v.text;
  return null;
}

function part(j) {
  if (!Number.isSafeInteger(j.part) || j.part < 0) return bad("decision without a whole-number 'part' id >= 0");
  if (typeof j.class !== "string" || j.class.length > 256) return bad(`part ${j.part}: 'class' missing or not a string`);
  if (!Object.prototype.hasOwnProperty.call(VERDICT_CODES, j.verdict))
    return bad(`part ${j.part}: 'verdict' must be pass, reject or incomplete`);
  const ev = j.evidence && typeof j.evidence === "object" ? j.evidence : {};
  const code = codeOf(j.code);
  return {
    kind: "part",
    id: j.part,
    cls: j.class,
    verdict: j.verdict,
    verdictCode: VERDICT_CODES[j.verdict],
    // The winning label's score (the vote's mean, or the max rule's confidence); NaN when none.
    score: typeof ev.confidence === "number" && Number.isFinite(ev.confidence) ? ev.confidence : NaN,
    code: code !== null && code.length <= 4096 ? code : null,
    late: !!(j.plc && typeof j.plc === "object" && j.plc.late === true),
    lastPts: nsOrNull(j.last_pts),
  };
}

function frame(j) {
  if (!Number.isSafeInteger(j.frame) || j.frame < 0) return bad("frame record without a whole-number 'frame' >= 0");
  if (j.detections !== undefined && !Array.isArray(j.detections))
    return bad(`frame ${j.frame}: 'detections' is not an array`);
  return {
    kind: "frame",
    frame: j.frame,
    pts: nsOrNull(j.pts),
    detections: Array.isArray(j.detections) ? j.detections.length : 0,
  };
}

// payload: a Buffer; maxBytes: larger payloads are dropped unread.
function parse(payload, maxBytes) {
  if (payload.length > maxBytes)
    return { kind: "dropped", reason: `${payload.length} bytes, more than --max-message-bytes ${maxBytes}` };
  let j;
  try {
    j = JSON.parse(payload.toString("utf8"));
  } catch (e) {
    return bad(`not JSON (${e.message})`);
  }
  if (!j || typeof j !== "object" || Array.isArray(j)) return bad("not a JSON object");
  if (j.event === "part") return part(j);
  if (j.event === "summary") return { kind: "summary", interrupted: j.interrupted === true };
  if (j.event === undefined && j.frame !== undefined) return frame(j);
  return bad(`neither a decision ("event":"part"), a summary nor a frame record (event ${JSON.stringify(j.event)})`);
}

module.exports = { parse, VERDICT_CODES };
