// Load generation: autocannon on loopback. Targets are measured in alternating rounds
// (A B C A B C ...) so that drift in the shared machine's load hits each of them alike.
import autocannon from "autocannon";

/**
 * One run of a target. A target may add autocannon options per run (`prepare(seconds)`, e.g.
 * a fixed `amount` and `requests` with a setupRequest) and see or correct each result
 * (`after` may return a replacement).
 */
async function once(target, seconds) {
  const extra = target.prepare ? await target.prepare(seconds) : {};
  const result = await new Promise((resolve, reject) => {
    autocannon(
      {
        url: target.url,
        headers: target.headers ?? {},
        connections: target.connections,
        duration: seconds,
        timeout: 30,
        ...extra,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
  return target.after?.(result) ?? result;
}

/**
 * Runs every target for `rounds` rounds of `seconds` each, after one warm-up second each.
 * Returns per target: completed requests per second over all rounds, p50/p99 latency of the
 * last round, and the failures (non-2xx responses and socket errors) over all rounds.
 */
export async function measureAlternating(targets, { rounds, seconds }) {
  for (const t of targets) await once(t, 1);
  const acc = new Map(targets.map((t) => [t.name, { requests: 0, seconds: 0, failures: 0, p50: 0, p99: 0 }]));
  for (let r = 0; r < rounds; r++) {
    for (const t of targets) {
      const res = await once(t, seconds);
      const a = acc.get(t.name);
      a.requests += res.requests.total;
      a.seconds += res.duration;
      a.failures += res.non2xx + res.errors + res.timeouts;
      a.p50 = res.latency.p50;
      a.p99 = res.latency.p99;
    }
  }
  return Object.fromEntries(
    [...acc].map(([name, a]) => [
      name,
      { rps: a.requests / a.seconds, requests: a.requests, failures: a.failures, p50: a.p50, p99: a.p99 },
    ]),
  );
}
