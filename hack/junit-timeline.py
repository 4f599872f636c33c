#!/usr/bin/env python3
"""Prints, from a nextest JUnit report, when each test started (seconds after the first one
started), how long it ran and when it ended, so that a test that started late and stretched a
run is visible (docs/testing.md).

    hack/junit-timeline.py target/nextest/default/junit.xml            # every test, by start
    hack/junit-timeline.py --slowest 15 target/nextest/default/junit.xml
    hack/junit-timeline.py --steps target/nextest/default/junit.xml    # and what each printed

The last line names the run's span and the test that ended last.
"""
import argparse
import sys
import xml.etree.ElementTree as ET
from datetime import datetime


def cases(path):
    """(name, start, seconds, status, printed) of every test case in the report."""
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        stamp = case.get("timestamp")
        if stamp is None:
            continue
        start = datetime.fromisoformat(stamp).timestamp()
        status = "PASS"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                status = tag.upper()
        printed = "".join((case.findtext(tag) or "") for tag in ("system-out", "system-err"))
        yield case.get("classname", "") + " " + case.get("name", ""), start, float(case.get("time", 0)), status, printed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--slowest", type=int, help="only the N longest tests")
    parser.add_argument("--steps", action="store_true", help="the lines each test printed with a duration in them")
    args = parser.parse_args()
    try:
        rows = list(cases(args.report))
    except (OSError, ET.ParseError) as e:
        sys.exit(f"junit-timeline: cannot read {args.report}: {e}")
    if not rows:
        sys.exit(f"junit-timeline: {args.report} has no test case with a start time")
    first = min(r[1] for r in rows)
    last = max(rows, key=lambda r: r[1] + r[2])
    shown = sorted(rows, key=lambda r: -r[2])[: args.slowest] if args.slowest else sorted(rows, key=lambda r: r[1])
    print(f"{'start':>7} {'seconds':>8} {'end':>7}  status  test")
    for name, start, seconds, status, printed in shown:
        print(f"{start - first:7.0f} {seconds:8.1f} {start - first + seconds:7.0f}  {status:<6}  {name}")
        if args.steps:
            for line in printed.splitlines():
                # A case's step reports are short lines naming a duration ("... took 12.3s",
                # "... after 4.5s"); long lines are dumps that happen to contain the words.
                if len(line) <= 300 and (" took " in line or " after " in line):
                    print(f"{'':27}{line.strip()[:160]}")
    print(f"span {last[1] + last[2] - first:.0f} s; ended last: {last[0]} (started at {last[1] - first:.0f} s, ran {last[2]:.0f} s)")


if __name__ == "__main__":
    main()
