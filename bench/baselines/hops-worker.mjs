// For bench/suites/hops.mjs: what one hop costs in a local workerd, each path doing one thing.
//
//   GET /nothing   answers at once
//   GET /d1        one D1 call with one SELECT (by primary key)
//   GET /d1-batch  one D1 call with a batch of 8 such SELECTs
//   GET /object    one RPC to a SQLite-backed Durable Object that reads one row
//   GET /object-write  one RPC to that object that writes one row (its storage commits once)
import { DurableObject } from "cloudflare:workers";

const SELECT = "SELECT id, value FROM hops WHERE id = ?";

export class Hop extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS hops (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
    ctx.storage.sql.exec("INSERT OR IGNORE INTO hops (id, value) VALUES (1, 'one')");
  }

  read(id) {
    return this.ctx.storage.sql.exec(SELECT, id).toArray()[0] ?? null;
  }

  write(value) {
    this.ctx.storage.sql.exec("INSERT INTO hops (value) VALUES (?)", value);
  }
}

const paths = {
  "/nothing": async () => null,
  "/d1": (env) => env.DB.prepare(SELECT).bind(1).first(),
  "/d1-batch": (env) => env.DB.batch(Array.from({ length: 8 }, (_, i) => env.DB.prepare(SELECT).bind(i + 1))),
  "/object": (env) => env.HOP.getByName("hop").read(1),
  "/object-write": (env) => env.HOP.getByName("hop").write("x"),
};

export default {
  async fetch(request, env) {
    const path = paths[new URL(request.url).pathname];
    if (!path) return new Response("not found", { status: 404 });
    await path(env);
    return new Response("ok");
  },
};
