#!/usr/bin/python3
"""The PLC of the line simulator (docs/line-io.md, "Simulator"): a Modbus TCP
server (pymodbus, independent of the libmodbus client under test) on
127.0.0.1 with a belt encoder whose speed varies +-50 % over time, which
records every rising edge of a coil with the encoder count at which it
arrived and the count at which the actuator acts (lead later). It also runs
the shift-register program of the queue mode: it reads the part queue the
app writes and fires its own ejector when the belt reaches a part's count.

The belt's position is an exact function of CLOCK_MONOTONIC (written to
--params at start), so the analysis (line_sim.py) knows where every part
truly was at any time. Stops on SIGTERM/SIGINT.
"""
import argparse
import asyncio
import json
import math
import os
import random
import signal
import sys
import time

from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)
from pymodbus.server import StartAsyncTcpServer


class Belt:
    """speed(t) = v0 * (1 + sum c_k cos(w_k t + p_k)), sum |c_k| = vary."""

    def __init__(self, v0, vary, seed, t0_ns):
        rng = random.Random(seed)
        periods = [rng.uniform(2.0, 9.0) for _ in range(3)]
        weights = [rng.uniform(0.5, 1.0) for _ in range(3)]
        total = sum(weights)
        self.v0, self.t0_ns = v0, t0_ns
        self.parts = [(vary * w / total, 2 * math.pi / p, rng.uniform(0, 2 * math.pi))
                      for w, p in zip(weights, periods)]

    def params(self):
        return {"v0": self.v0, "t0_ns": self.t0_ns, "components": self.parts}

    def count(self, t_ns):
        t = (t_ns - self.t0_ns) * 1e-9
        x = self.v0 * t
        for c, w, p in self.parts:
            x += self.v0 * c / w * (math.sin(w * t + p) - math.sin(p))
        return x


class EncoderBlock(ModbusSequentialDataBlock):
    """Input registers: the encoder's count, read live (16 or 32 bits)."""

    def __init__(self, plc):
        super().__init__(0, [0] * 1024)
        self.plc = plc

    def getValues(self, address, count=1):
        values = super().getValues(address, count)
        raw = int(math.floor(self.plc.belt.count(time.monotonic_ns())))
        reg = self.plc.args.encoder_register
        words = ([(raw >> 16) & 0xFFFF, raw & 0xFFFF] if self.plc.args.encoder_bits == 32
                 else [raw & 0xFFFF])
        for i, wv in enumerate(words):
            if address <= reg + i < address + count:
                values[reg + i - address] = wv
        return values


class CoilBlock(ModbusSequentialDataBlock):
    """Coils: every rising edge recorded with the belt's count."""

    def __init__(self, plc):
        super().__init__(0, [False] * 1024)
        self.plc = plc

    def setValues(self, address, values):
        if not isinstance(values, list):
            values = [values]
        t = time.monotonic_ns()
        for i, v in enumerate(values):
            if v and not self.values[address + i]:
                self.plc.record("coil", address + i, t)
        super().setValues(address, values)


class Plc:
    def __init__(self, args):
        self.args = args
        self.belt = Belt(args.speed, args.vary, args.seed, time.monotonic_ns())
        if args.resume:
            # A PLC restarted on the same belt: its encoder goes on counting.
            with open(args.resume, encoding="utf-8") as f:
                p = json.load(f)
            self.belt.v0, self.belt.t0_ns, self.belt.parts = p["v0"], p["t0_ns"], p["components"]
        self.out = open(args.record, "w", encoding="utf-8")
        self.lead_ns = int(args.lead_ms * 1e6)
        self.hr = ModbusSequentialDataBlock(0, [0] * 4096)
        self.shift = []  # (unwrapped target count, verdict)
        self.seen_seq = {}

    def record(self, source, coil, t_ns, target=None):
        line = {"source": source, "coil": coil, "t_ns": t_ns,
                "arrival_count": self.belt.count(t_ns),
                "act_count": self.belt.count(t_ns + self.lead_ns)}
        if target is not None:
            line["target"] = target
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    async def scan(self):
        """The queue mode's PLC program, one scan a millisecond: new queue
        entries (sequence changed) go into the shift register; a part's
        output fires when the belt a lead ahead reaches its count."""
        a = self.args
        while a.queue_base >= 0:
            now = time.monotonic_ns()
            here = self.belt.count(now)
            for slot in range(a.queue_slots):
                base = a.queue_base + 4 * slot
                hi, lo, verdict, seq = self.hr.getValues(base, 4)
                if seq and self.seen_seq.get(slot) != seq:
                    self.seen_seq[slot] = seq
                    wrapped = (hi << 16) | lo
                    # The 32-bit count nearest the belt's own.
                    target = wrapped + round((here - wrapped) / 2**32) * 2**32
                    self.shift.append((target, verdict))
            ahead = self.belt.count(now + self.lead_ns)
            for item in [s for s in self.shift if s[0] <= ahead]:
                self.shift.remove(item)
                self.record("queue", 0 if item[1] == 2 else 1, now, item[0])
            await asyncio.sleep(0.001)


async def main(args):
    plc = Plc(args)
    with open(args.params, "w", encoding="utf-8") as f:
        json.dump(plc.belt.params(), f)
    slave = ModbusSlaveContext(co=CoilBlock(plc), ir=EncoderBlock(plc), hr=plc.hr,
                               di=ModbusSequentialDataBlock(0, [False] * 16), zero_mode=True)
    context = ModbusServerContext(slaves=slave, single=True)
    server = await StartAsyncTcpServer(context, address=("127.0.0.1", args.port),
                                       defer_start=True, allow_reuse_address=True)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    serve = asyncio.create_task(server.serve_forever())
    scan = asyncio.create_task(plc.scan())
    await server.serving
    print("listening", flush=True)
    await stop.wait()
    scan.cancel()
    await server.shutdown()
    serve.cancel()
    plc.out.close()


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--speed", type=float, default=1000.0, help="nominal counts per second")
    p.add_argument("--vary", type=float, default=0.5, help="speed change, fraction (0.5: +-50 %%)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lead-ms", type=float, default=20.0, help="actuator lead")
    p.add_argument("--encoder-register", type=int, default=0)
    p.add_argument("--encoder-bits", type=int, default=16, choices=(16, 32))
    p.add_argument("--queue-base", type=int, default=-1)
    p.add_argument("--queue-slots", type=int, default=16)
    p.add_argument("--record", required=True, help="JSON lines: one per pulse")
    p.add_argument("--params", required=True, help="the belt's function (JSON)")
    p.add_argument("--resume", help="a --params file of a PLC before: the same belt goes on")
    p.add_argument("--realtime", action="store_true",
                   help="run SCHED_FIFO (priority 20) where allowed: a real PLC is a real-time "
                   "device, a busy test machine should not delay its scan; said on stderr if refused")
    return p.parse_args()


def go_realtime():
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
    except (PermissionError, OSError) as e:
        print(f"line_sim_plc: real-time priority refused ({e}); running without it",
              file=sys.stderr)


if __name__ == "__main__":
    logging_quiet = __import__("logging")
    logging_quiet.getLogger("pymodbus").setLevel(logging_quiet.CRITICAL)
    ARGS = parse()
    if ARGS.realtime:
        go_realtime()
    asyncio.run(main(ARGS))
    sys.exit(0)
