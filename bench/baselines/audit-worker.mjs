// Bench-only Worker that drives the AuditLog Durable Object of the bundled service (bound
// across scripts as AUDIT_LOG) and its baselines, over HTTP so autocannon can put 64
// concurrent writers on one object:
//
//   GET /append?log=audit|plain|noop&name=<object>&n=<k>   k sequential appends of one event
//   GET /fill?log=audit|plain&name=<object>&total=<t>&batch=<b>   t events in batches of b
//   GET /verify?name=<object>&limit=<l>                     AuditLog.verify(l)
//   GET /scan?name=<object>&limit=<l>                       BaselineLog.scan(l)
//
// BaselineLog stores the same rows in the same table shape and indexes with plain INSERTs,
// grouping appends that arrive together into one transaction exactly as AuditLog does, but
// with no chain, no hashing and no Drizzle: what an append costs without the chain. `noop` is
// a bare RPC round trip to an object (the ceiling of the runtime itself).
import { DurableObject } from "cloudflare:workers";

const COLUMNS = `seq, id, occurred_at, kind, outcome, actor_kind, actor_id, agent_id, conversation_id,
  target, intent, subject_user_id, details, salt, details_digest, prev_hash, hash`;

export class BaselineLog extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    sql.exec(`CREATE TABLE IF NOT EXISTS events (
      seq integer PRIMARY KEY, id text NOT NULL, occurred_at text NOT NULL, kind text NOT NULL,
      outcome text NOT NULL, actor_kind text NOT NULL, actor_id text, agent_id text,
      conversation_id text, target text NOT NULL, intent text NOT NULL, subject_user_id text,
      details text NOT NULL, salt text, details_digest text NOT NULL, prev_hash text NOT NULL,
      hash text NOT NULL)`);
    sql.exec("CREATE INDEX IF NOT EXISTS events_occurred_idx ON events (occurred_at)");
    sql.exec("CREATE INDEX IF NOT EXISTS events_kind_idx ON events (kind)");
    sql.exec("CREATE INDEX IF NOT EXISTS events_actor_idx ON events (actor_id)");
    sql.exec("CREATE INDEX IF NOT EXISTS events_subject_idx ON events (subject_user_id)");
    this.seq = sql.exec("SELECT coalesce(max(seq), 0) AS n FROM events").one().n;
  }

  /** Same grouping as AuditLog.append: one transaction per group of appends that arrive together. */
  append(batch) {
    return new Promise((resolve, reject) => {
      this.pending ??= [];
      this.pending.push({ batch, resolve, reject });
      if (this.pending.length === 1) setTimeout(() => this.flush(), 0);
    });
  }

  flush() {
    const group = this.pending;
    this.pending = [];
    const outcomes = [];
    this.ctx.storage.transactionSync(() => {
      for (const p of group) {
        try {
          outcomes.push({ ok: true, written: this.ctx.storage.transactionSync(() => this.write(p.batch)) });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      }
    });
    group.forEach((p, i) => {
      if (outcomes[i].ok) p.resolve(outcomes[i].written);
      else p.reject(outcomes[i].error);
    });
  }

  write(batch) {
    const written = [];
    for (const e of batch) {
      this.seq += 1;
      this.ctx.storage.sql.exec(
        `INSERT INTO events (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '', '', '')`,
        this.seq,
        crypto.randomUUID(),
        new Date().toISOString(),
        e.kind,
        e.outcome,
        e.actorKind,
        e.actorId,
        e.agentId,
        e.conversationId,
        e.target,
        e.intent,
        e.subjectUserId,
        JSON.stringify(e.details),
      );
      written.push({ seq: this.seq, hash: "" });
    }
    return written;
  }

  noop() {
    return [];
  }

  /** Reads the last `limit` rows exactly as AuditLog.verify does (chunks of raw rows), without hashing. */
  scan(limit) {
    const to = this.seq;
    let checked = 0;
    let expectedSeq = Math.max(1, to - limit + 1);
    for (let lo = expectedSeq; lo <= to; lo += 2000) {
      const rows = [...this.ctx.storage.sql.exec(SCAN_SQL, lo, Math.min(to, lo + 1999)).raw()];
      for (const r of rows) {
        if (r[0] !== expectedSeq) throw new Error(`gap at ${expectedSeq}`);
        expectedSeq += 1;
        checked += 1;
      }
    }
    return { checked };
  }
}

const SCAN_SQL = `SELECT seq, occurred_at, kind, outcome, actor_kind, actor_id, agent_id, conversation_id,
  target, intent, details, salt, details_digest, prev_hash, hash FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq`;

const ACTOR = "0196f3a0-0000-7000-8000-000000000001";
const AGENT = "0196f3a0-0000-7000-8000-000000000002";

/** A typical event of a state-changing request (agent.update with a small allow-listed details). */
const event = (i) => ({
  kind: "agent.update",
  outcome: "success",
  actorKind: "token",
  actorId: ACTOR,
  agentId: AGENT,
  conversationId: null,
  target: `agent:${AGENT}`,
  intent: "update",
  subjectUserId: null,
  details: { slug: "assistant", fields: ["display_name", "tone"], n: i },
});

const int = (params, key, fallback) => {
  const v = Number.parseInt(params.get(key) ?? "", 10);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};

function stub(env, log, name) {
  if (log === "audit") return env.AUDIT_LOG.getByName(name);
  if (log === "plain" || log === "noop") return env.BASELINE_LOG.getByName(name);
  throw new Error(`unknown log ${log}`);
}

const json = (body) => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const p = url.searchParams;
    const log = p.get("log") ?? "audit";
    const name = p.get("name") ?? "bench";
    switch (url.pathname) {
      case "/append": {
        const s = stub(env, log, name);
        const n = int(p, "n", 1);
        for (let i = 0; i < n; i++) {
          if (log === "noop") await s.noop();
          else await s.append([event(i)]);
        }
        return json({ appended: n });
      }
      case "/fill": {
        const s = stub(env, log, name);
        const total = int(p, "total", 1000);
        const size = int(p, "batch", 1000);
        for (let done = 0; done < total; done += size) {
          await s.append(Array.from({ length: Math.min(size, total - done) }, (_, i) => event(done + i)));
        }
        return json({ appended: total });
      }
      case "/verify":
        return json(await env.AUDIT_LOG.getByName(name).verify(int(p, "limit", 100_000)));
      case "/scan":
        return json(await env.BASELINE_LOG.getByName(name).scan(int(p, "limit", 100_000)));
      default:
        return new Response("not found", { status: 404 });
    }
  },
};
