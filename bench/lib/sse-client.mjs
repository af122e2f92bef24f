// A minimal SSE client for the turn suite, on node:http so that every request opens a
// connection of its own (a client that reconnects opens a new one) and `drop()` cuts it the
// way a lost network does.
import http from "node:http";
import { performance } from "node:perf_hooks";

/** One event: its `id:` (or null), its `data:` and when it arrived (performance.now()). */
function parseEvent(block, at) {
  let id = null;
  let data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("id: ")) id = line.slice(4);
    else if (line.startsWith("data: ")) data += line.slice(6);
  }
  return { id, data, at };
}

/**
 * Sends the request and answers once the response head is in: `{ status, started, next(),
 * rest(), text(), drop() }`. `next()` answers the next event (null at the end), `text()` the
 * whole body (for an answer that is not a stream), `drop()` destroys the connection.
 */
export function openSse(url, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(url, {
      method,
      headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
      agent: false,
    });
    req.on("error", reject);
    req.on("response", (res) => {
      res.setEncoding("utf8");
      const events = [];
      let raw = "";
      let buffer = "";
      let ended = false;
      let wake = null;
      const notify = () => {
        const w = wake;
        wake = null;
        w?.();
      };
      res.on("data", (text) => {
        raw += text;
        buffer += text;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          events.push(parseEvent(buffer.slice(0, end), performance.now()));
          buffer = buffer.slice(end + 2);
        }
        notify();
      });
      const finish = () => {
        ended = true;
        notify();
      };
      res.on("end", finish);
      res.on("close", finish);
      res.on("error", finish);
      const next = async () => {
        while (events.length === 0 && !ended) await new Promise((r) => (wake = r));
        return events.shift() ?? null;
      };
      resolve({
        status: res.statusCode,
        started,
        next,
        async rest() {
          const out = [];
          for (let e = await next(); e; e = await next()) out.push(e);
          return out;
        },
        async text() {
          while (!ended) await new Promise((r) => (wake = r));
          return raw;
        },
        drop() {
          req.destroy();
          finish();
        },
      });
    });
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
