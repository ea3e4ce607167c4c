#!/usr/bin/env python3
"""Splits RunGraph calls and held do-nothing calls into their legs on the host's monotonic clock.

    trace_legs.py LOOP_BENCH_OUTPUT DAEMON_LOG

LOOP_BENCH_OUTPUT is `loop_bench --trace_calls`'s stdout ("trace RunGraph t0 t3 device_ns" and
"trace held t0 entered left t3" lines); DAEMON_LOG is the daemon's log at --log_level=debug, whose
"RunGraph ok in ... (monotonic A to B ns)" lines give each call's handler span. Client and daemon
run on one host, where every process reads the same monotonic clock. Prints the median of each
leg: the request's (send to handler entry), the handler's, the answer's (handler exit to
receive), and for RunGraph the handler's time beyond the device time it reports.
"""
import re
import statistics
import sys


def median_us(values):
    return statistics.median(values) / 1e3 if values else float("nan")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs, held = [], []
    with open(sys.argv[1]) as bench:
        for line in bench:
            fields = line.split()
            if line.startswith("trace RunGraph ") and len(fields) == 5:
                runs.append((int(fields[2]), int(fields[3]), float(fields[4])))
            elif line.startswith("trace held ") and len(fields) == 6:
                held.append(tuple(int(f) for f in fields[2:6]))
    spans = []
    pattern = re.compile(r"RunGraph ok in [0-9.]+ ms \(monotonic (\d+) to (\d+) ns\)")
    with open(sys.argv[2]) as log:
        for line in log:
            match = pattern.search(line)
            if match:
                spans.append((int(match.group(1)), int(match.group(2))))
    request, handler, beyond, answer = [], [], [], []
    for sent, received, device_ns in runs:
        inside = [s for s in spans if sent <= s[0] and s[1] <= received]
        if len(inside) != 1:
            continue
        entered, left = inside[0]
        request.append(entered - sent)
        handler.append(left - entered)
        beyond.append(left - entered - device_ns)
        answer.append(received - left)
    print(f"RunGraph calls matched: {len(request)} of {len(runs)}")
    print(f"  request leg {median_us(request):.1f} us, handler {median_us(handler):.1f} us "
          f"(beyond device time {median_us(beyond):.1f} us), answer leg {median_us(answer):.1f} us")
    if held:
        print(f"held calls: {len(held)}")
        print(f"  request leg {median_us([e - s for s, e, _, _ in held]):.1f} us, handler "
              f"{median_us([l - e for _, e, l, _ in held]):.1f} us, answer leg "
              f"{median_us([r - l for _, _, l, r in held]):.1f} us")


if __name__ == "__main__":
    main()
