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

/** Starts profiling `worker`; the answer stops it and writes the profile to BENCH_CPUPROFILE. */
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
    return CPUPROFILE;
  };
}
