import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { AgentListSchema } from "../src/agents/schemas";
import { db, RequestSession } from "../src/platform/db";
import { call, parse } from "./support/api";
import { fetchWithDb, watchedDb } from "./support/d1";
import { signupWorkspace } from "./support/seed";

/**
 * "Global reads": every request runs on a D1 session of its own (`withSession`), from the
 * client's `x-d1-bookmark` when it sends one, else `first-unconstrained`; the answer carries the
 * session's bookmark, so a client that sends it back reads its own writes.
 */

const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

let ws: Awaited<ReturnType<typeof signupWorkspace>>;
beforeAll(async () => {
  ws = await signupWorkspace();
});

describe("the request's D1 session", () => {
  it("answers a request that used D1 with the session's bookmark in x-d1-bookmark", async () => {
    const res = await call("GET", "/v1/agents", { token: ws.adminToken });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
  });

  it("answers no bookmark when the request never touched D1", async () => {
    const res = await call("GET", "/v1/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-d1-bookmark")).toBeNull();
  });

  it("a write followed by a read with its bookmark sees the write, and the read is no older than the bookmark", async () => {
    const created = await call("POST", "/v1/agents", {
      token: ws.adminToken,
      body: { slug: "replica-check", display_name: "Replica Check" },
    });
    expect(created.status).toBe(200);
    const afterWrite = created.headers.get("x-d1-bookmark");
    expect(afterWrite).toMatch(BOOKMARK);

    const read = await call("GET", "/v1/agents", { token: ws.adminToken, headers: { "x-d1-bookmark": afterWrite! } });
    expect(read.status).toBe(200);
    expect((await parse(read, AgentListSchema)).agents.map((a) => a.slug)).toContain("replica-check");
    // Bookmarks order as strings; the read's session started at the write's bookmark or later.
    expect(read.headers.get("x-d1-bookmark")! >= afterWrite!).toBe(true);
  });

  it("opens the session at the client's bookmark, else first-unconstrained, once per request", async () => {
    const watched = watchedDb();
    const first = (await fetchWithDb(watched, "GET", "/v1/agents", { token: ws.adminToken })).res;
    expect(first.status).toBe(200);
    const bookmark = first.headers.get("x-d1-bookmark")!;
    expect(watched.opened).toEqual(["first-unconstrained"]);

    const again = (
      await fetchWithDb(watched, "GET", "/v1/agents", { token: ws.adminToken, headers: { "x-d1-bookmark": bookmark } })
    ).res;
    expect(again.status).toBe(200);
    expect(watched.opened).toEqual(["first-unconstrained", bookmark]);
  });

  it("ignores a value that is not a bookmark: the request reads as one without, and gets a real bookmark", async () => {
    const watched = watchedDb();
    for (const bad of [
      "garbage",
      "first-primary",
      "00000000-00000001-00000000-0000000000000000000000000000000g",
      "00000000-00000001-00000000-0000000000000000000000000000000",
      "0".repeat(5000),
    ]) {
      const { res } = await fetchWithDb(watched, "GET", "/v1/agents", {
        token: ws.adminToken,
        headers: { "x-d1-bookmark": bad },
      });
      expect(res.status, bad).toBe(200);
      expect(res.headers.get("x-d1-bookmark"), bad).toMatch(BOOKMARK);
    }
    expect(new Set(watched.opened)).toEqual(new Set(["first-unconstrained"]));
  });

  it("ignores a malformed bookmark on the OAuth token endpoint too: its answer stays in the OAuth shape", async () => {
    const res = await call("POST", "/v1/oauth/token", {
      headers: { "Content-Type": "application/x-www-form-urlencoded", "x-d1-bookmark": "not-a-bookmark" },
      rawBody: "grant_type=refresh_token&client_id=svc_client_unknown&refresh_token=svc_rt_unknown",
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "invalid_client" });
    expect(res.headers.get("x-d1-bookmark")).toMatch(BOOKMARK);
  });

  it("runs statements prepared once per isolate on the session of the request that runs them", async () => {
    const session = new RequestSession(null);
    expect(session.bookmark()).toBeNull();
    await session.run(async () => {
      await db(env).run("SELECT 1");
    });
    const bookmark = session.bookmark();
    expect(bookmark).toMatch(BOOKMARK);
    // Outside any request (a Durable Object, a queue batch, a test) statements go to the primary.
    await db(env).run("SELECT 1");
    expect(session.bookmark()).toBe(bookmark);
  });
});
