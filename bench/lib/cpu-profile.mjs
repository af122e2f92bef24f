// Opt-in V8 CPU profile of one Worker's isolate (its Durable Objects run in it too), through
// workerd's inspector: `BENCH_CPUPROFILE=<file>` with a suite that supports it (turn).
import { writeFileSync } from "node:fs";
import WebSocket from "ws";

export const CPUPROFILE = process.env.BENCH_CPUPROFILE || null;
/** The inspector port Miniflare opens when profiling (any free one would do). */
const PORT = Number(process.env.BENCH_INSPECTOR_PORT || 9329);

/** Miniflare options that expose `worker`'s isolate to the inspector (nothing when not profiling). */
export const inspectorOptions = () => (CPUPROFILE ? { inspectorPort: PORT } : {});
export const inspectedWorker = (worker) => (CPUPROFILE ? { ...worker, unsafeInspectorProxy: true } : worker);

/** Starts profiling `worker`; the answer stops it, writes the profile to BENCH_CPUPROFILE and gives it back. */
export async function startProfile(worker) {
  if (!CPUPROFILE) return async () => null;
  const ws = new WebSocket(`ws://127.0.0.1:${PORT}/${worker}`, { headers: { origin: "http://127.0.0.1" } });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let id = 0;
  const pending = new Map();
  ws.on("message", (data) => {
    const msg = JSON.parse(String(data));
    if (msg.id && pending.has(msg.id)) {
      pending.get(msg.id)(msg);
      pending.delete(msg.id);
    }
  });
  const send = (method, params = {}) =>
    new Promise((resolve) => {
      const n = ++id;
      pending.set(n, resolve);
      ws.send(JSON.stringify({ id: n, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 200 });
  await send("Profiler.start");
  return async () => {
    const { result } = await send("Profiler.stop");
    ws.close();
    writeFileSync(CPUPROFILE, JSON.stringify(result.profile));
    return result.profile;
  };
}

/** V8's names for the samples that ran no function of the isolate. */
const V8_STATES = new Map([
  ["(program)", "V8 itself"],
  ["(garbage collector)", "garbage collector"],
  ["(idle)", "idle"],
]);

/**
 * A profile's samples per unit of work (a turn), by where they fell: a script of the Worker
 * (its bundle, or a `node:` / `cloudflare-internal:` module of workerd), the runtime (builtins
 * such as streams, fetch and SQL `exec`, which have no script, and workerd's own work in the
 * isolate: RPC, I/O), or V8 itself. V8 keeps a sample only while the isolate runs, so on one
 * machine two profiles' samples per turn compare the work of their isolates (not of local D1,
 * which runs in an isolate of its own).
 */
export function samplesPer(profile, units) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const counts = { "the Worker's scripts": 0, "the runtime": 0 };
  for (const name of V8_STATES.values()) counts[name] = 0;
  for (const id of profile.samples) {
    const { url, functionName } = byId.get(id);
    const key = V8_STATES.get(functionName) ?? (url ? "the Worker's scripts" : "the runtime");
    counts[key]++;
  }
  const per = (n) => (n / units).toFixed(1);
  const busy = profile.samples.length - counts.idle;
  return `${per(busy)} samples a turn (${Object.entries(counts)
    .filter(([k]) => k !== "idle")
    .map(([k, n]) => `${k} ${per(n)}`)
    .join(", ")})`;
}
