// Baseline for the resume figure of bench/suites/turn.mjs: a bare SSE replay. A Worker hands
// the request to a Durable Object that holds a stored SSE body as rows (seq, event) in its
// SQLite and answers the events after the Last-Event-ID's seq, then `data: [DONE]`. No
// authentication, no participant check, no turn lookup: what any resumable stream kept in an
// object costs at least (the hop to the object, one read, the response).
//
//   PUT /replay/{name}   body: an SSE stream as the service sent it (events with `id: <turn>:<seq>`)
//   GET /replay/{name}   Last-Event-ID: <turn>:<seq>  → the stored events after seq
import { DurableObject } from "cloudflare:workers";

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

export class SseReplay extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, event TEXT NOT NULL)");
  }

  async fetch(request) {
    const sql = this.ctx.storage.sql;
    if (request.method === "PUT") {
      sql.exec("DELETE FROM events");
      for (const block of (await request.text()).split("\n\n")) {
        const seq = /^id: [^:\n]+:(\d+)$/m.exec(block)?.[1];
        if (seq) sql.exec("INSERT INTO events (seq, event) VALUES (?, ?)", Number(seq), `${block}\n\n`);
      }
      return new Response(null, { status: 204 });
    }
    const after = Number(/:(\d+)$/.exec(request.headers.get("Last-Event-ID") ?? "")?.[1] ?? 0);
    let body = "";
    for (const row of sql.exec("SELECT event FROM events WHERE seq > ? ORDER BY seq", after)) body += row.event;
    return new Response(`${body}data: [DONE]\n\n`, { headers: SSE_HEADERS });
  }
}

export default {
  async fetch(request, env) {
    const name = /^\/replay\/([^/]+)$/.exec(new URL(request.url).pathname)?.[1];
    if (!name) return new Response("not found", { status: 404 });
    return env.REPLAY.get(env.REPLAY.idFromName(name)).fetch(request);
  },
};
