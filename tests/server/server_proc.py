"""torchinfer-server as a process on 127.0.0.1 for the Python server tests
(server_plc_test.py, server_codes_test.py): a config with the demo
detector (and its classifier), the REST API, /metrics samples."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

SRC = os.environ.get("TORCHINFER_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
SERVER = os.environ.get("TORCHINFER_SERVER", "build/pipelines/server/torchinfer-server")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(p, sig=signal.SIGTERM):
    p.send_signal(sig)
    p.wait(timeout=60)


def metric(text, name, labels):
    """The sample name{labels}, or None."""
    m = re.search("^" + re.escape(name + ("{" + labels + "}" if labels else "")) + r" (\S+)$",
                  text, re.M)
    return float(m.group(1)) if m else None


class Server:
    def __init__(self, work, classifier=False):
        self.port = free_port()
        models = [{"id": "parts", "path": os.path.join(SRC, "models", "demo", "parts_detector.pt")}]
        if classifier:
            models.append({"id": "classifier",
                           "path": os.path.join(SRC, "models", "demo", "defect_classifier.pt")})
        config = {"models": models, "output_dir": os.path.join(work, "out"),
                  "drain_timeout_s": 30}
        path = os.path.join(work, "server.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(config, f)
        self.log = open(os.path.join(work, "server.log"), "w", encoding="utf-8")
        self.proc = subprocess.Popen([SERVER, "--config", path, "--listen",
                                      f"127.0.0.1:{self.port}", "--rtsp-port", "0"],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=SRC)
        self.work = work
        self.wait(lambda: self.call("GET", "/readyz")[0] == 200, 120, "the server is not ready")

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read().decode()
                return r.status, text
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

    def json(self, path):
        status, text = self.call("GET", path)
        return json.loads(text) if status == 200 else None

    def wait(self, cond, timeout, why):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            if cond():
                return
            time.sleep(0.2)
        self.close()
        with open(os.path.join(self.work, "server.log"), encoding="utf-8") as f:
            sys.exit(why + "; server log:\n" + f.read()[-3000:])

    def close(self):
        if self.proc.poll() is None:
            stop(self.proc)
        self.log.close()




def promtool_problems(text):
    """What `promtool check metrics` says of the exposition ('' when clean:
    it prints lint problems and still exits 0)."""
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    return (r.stdout + r.stderr).strip() or ("" if r.returncode == 0 else f"exit {r.returncode}")


def refusal_problem(server, body, field, *words):
    """'' when POST /streams answers 400 naming `field`, with each of `words`
    in its error; otherwise what it answered."""
    status, text = server.call("POST", "/streams", body)
    j = json.loads(text) if text.startswith("{") else {}
    if status != 400 or j.get("field") != field or not all(w in j.get("error", "") for w in words):
        return f"{json.dumps(body)}: {status} {text}, want 400 naming {field} {words}"
    return ""
