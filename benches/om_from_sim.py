#!/usr/bin/env python3
"""OpenMetrics for a Prometheus backfill (promtool tsdb create-blocks-from openmetrics) with the
simulator's metric set: every series of every engine of a running `kvtop sim`, scraped twice;
gauges keep the first value, counters (and histogram buckets, counts and sums) grow at the rate
seen between the two scrapes. Each engine's series get the labels Prometheus would add (pod,
namespace, instance, job).

    om_from_sim.py SIM_LISTING START SECONDS STEP OUT
"""
import math
import re
import sys
import time
import urllib.request
from collections import defaultdict

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)')


def scrape(url):
    series = {}
    types = {}
    with urllib.request.urlopen(url, timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith('# TYPE '):
                _, _, name, kind = line.split(None, 3)
                types[name] = kind
                continue
            if not line or line.startswith('#'):
                continue
            m = SAMPLE.match(line)
            if not m:
                continue
            try:
                value = float(m.group(3))
            except ValueError:
                continue
            if math.isfinite(value):
                series[(m.group(1), (m.group(2) or '{}')[1:-1])] = value
    return series, types


def growing(name, types):
    for suffix in ('_total', '_bucket', '_count', '_sum', ''):
        base = name[: -len(suffix)] if suffix and name.endswith(suffix) else name
        if types.get(base) in ('counter', 'histogram') or types.get(name) == 'counter':
            return True
    return False


def main():
    listing, start, seconds, step, out = sys.argv[1:6]
    start, seconds, step = int(start), int(seconds), int(step)
    engines = []
    for line in open(listing):
        fields = line.split()
        urls = [f for f in fields if f.startswith('http://')]
        if urls and not fields[0].startswith('dcgm'):
            engines.append((fields[0], urls[0]))
    # An engine the simulator serves as down (connection refused) has no series, as live.
    answering = []
    for pod, url in engines:
        try:
            scrape(url)
            answering.append((pod, url))
        except OSError:
            pass
    engines = answering
    first = [scrape(url) for _, url in engines]
    gap = 10.0
    time.sleep(gap)
    second = [scrape(url) for _, url in engines]
    families = defaultdict(list)
    times = list(range(start, start + seconds + 1, step))
    for (pod, url), (s0, types), (s1, _) in zip(engines, first, second):
        instance = url.split('/')[2]
        extra = f'pod="{pod}",namespace="llm",instance="{instance}",job="vllm"'
        for (name, labels), v0 in s0.items():
            rate = max(0.0, (s1.get((name, labels), v0) - v0) / gap) if growing(name, types) else 0.0
            labelset = f'{labels},{extra}' if labels else extra
            families[name].append((labelset, v0, rate))
    with open(out, 'w') as f:
        for name, series in families.items():
            f.write(f'# TYPE {name} unknown\n')
            for labelset, v0, rate in series:
                for t in times:
                    f.write(f'{name}{{{labelset}}} {v0 + rate * (t - start):.6g} {t}\n')
        f.write('# EOF\n')
    print(f'{len(engines)} engines, {sum(len(s) for s in families.values())} series, '
          f'{len(times)} samples each', file=sys.stderr)


main()
