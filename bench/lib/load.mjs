// Load generation: autocannon on loopback. Targets are measured in alternating rounds
// (A B C A B C ...) so that drift in the shared machine's load hits each of them alike.
import { readdirSync, readFileSync } from "node:fs";
import autocannon from "autocannon";

/** Linux clock ticks per second (`getconf CLK_TCK`), the unit of /proc/<pid>/stat's CPU times. */
const CLK_TCK = 100;

/**
 * CPU seconds (user + system) used so far by this process's workerd children, read from
 * /proc; null where there is no /proc. Every Worker of a run, local D1, R2 and the objects
 * included, lives in that one process, so its CPU per request is what a request costs, and
 * other processes' load on the machine barely moves it (unlike req/s).
 */
export function workerdCpuSeconds() {
  let ticks = 0;
  let found = false;
  try {
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      let stat;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      } catch {
        continue;
      }
      const close = stat.lastIndexOf(")");
      const fields = stat.slice(close + 2).split(" ");
      // After "pid (comm) ": state, ppid, ..., utime at 11 and stime at 12.
      if (stat.slice(stat.indexOf("(") + 1, close) !== "workerd" || Number(fields[1]) !== process.pid) continue;
      ticks += Number(fields[11]) + Number(fields[12]);
      found = true;
    }
  } catch {
    return null;
  }
  return found ? ticks / CLK_TCK : null;
}

/**
 * One run of a target. A target may add autocannon options per run (`prepare(seconds)`, e.g.
 * a fixed `amount` and `requests` with a setupRequest) and see or correct each result
 * (`after` may return a replacement). The result carries the workerd CPU seconds the run
 * took (`cpu`), its preparation left out and `settleMs` after it counted.
 */
async function once(target, seconds) {
  const extra = target.prepare ? await target.prepare(seconds) : {};
  const cpuBefore = workerdCpuSeconds();
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
  // Work a request leaves for after its answer (the audit delivery) is its own: the CPU is read
  // once it had time to finish, before the next target's run.
  if (target.settleMs) await new Promise((resolve) => setTimeout(resolve, target.settleMs));
  const cpuAfter = workerdCpuSeconds();
  const cpu = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore;
  return { ...(target.after?.(result) ?? result), cpu };
}

/**
 * Runs every target for `rounds` rounds of `seconds` each, after one warm-up second each.
 * Returns per target: completed requests per second over all rounds, p50/p99 latency of the
 * last round, the failures (non-2xx responses and socket errors) over all rounds, and the
 * workerd CPU per completed request over all rounds (see `workerdCpuSeconds`).
 */
export async function measureAlternating(targets, { rounds, seconds }) {
  for (const t of targets) await once(t, 1);
  const acc = new Map(targets.map((t) => [t.name, { requests: 0, seconds: 0, failures: 0, p50: 0, p99: 0, cpu: 0 }]));
  for (let r = 0; r < rounds; r++) {
    for (const t of targets) {
      const res = await once(t, seconds);
      const a = acc.get(t.name);
      a.cpu = res.cpu === null || a.cpu === null ? null : a.cpu + res.cpu;
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
      {
        rps: a.requests / a.seconds,
        requests: a.requests,
        failures: a.failures,
        p50: a.p50,
        p99: a.p99,
        // CPU of the workerd process per completed request, in µs (null without /proc).
        cpuUs: a.cpu === null ? null : (a.cpu * 1e6) / a.requests,
      },
    ]),
  );
}
