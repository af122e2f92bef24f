import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { appsArea } from "../src/apps";
import { AppListSchema, AppSchema } from "../src/apps/schemas";
import { ACTIVITY_GRANULARITY_MS, publishApp } from "../src/apps/service";
import { appFileKey, appPrefix } from "../src/apps/store";
import { appTools } from "../src/apps/tools";

import { signIn } from "../src/identity/sessions";
import type { TurnScope } from "../src/platform/turn-tools";
import { call, expectProblem, parse } from "./support/api";
import { seedConversation, turnScopeFor } from "./support/artifacts";
import { auditEvents } from "./support/audit";
import { addUser, PASSWORD, signupWorkspace } from "./support/seed";

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;
const CSP = "sandbox allow-scripts allow-forms allow-popups";
const options = { toolCallId: "call-1", messages: [], context: {} };

const scopeFor = turnScopeFor;

type Published = { app_id: string; slug: string; url: string; visibility: string };

async function publish(scope: TurnScope, input: Record<string, unknown>): Promise<Published> {
  const { tools } = await appTools(scope);
  return tools.publish_app!.execute!(input as never, options) as Promise<Published>;
}

const BUNDLE = [
  { path: "index.html", content: "<!doctype html><title>Hi</title><script src='app.js'></script><p>Hello</p>" },
  { path: "app.js", content: "document.body.dataset.ran = 'yes';" },
  { path: "assets/logo.svg", content: "<svg xmlns='http://www.w3.org/2000/svg'/>" },
];

const pathOf = (url: string) => new URL(url).pathname;

async function appRow(id: string) {
  return env.DB.prepare("SELECT state, conversation_id, last_activity_at FROM apps WHERE id = ?1")
    .bind(id)
    .first<{ state: string; conversation_id: string | null; last_activity_at: string }>();
}

async function sessionCookie(email: string): Promise<string> {
  const outcome = await signIn(env, email, PASSWORD, (s) => ({
    workspaceId: s.workspaceId,
    kind: "session.signin",
    actor: { kind: "user", id: s.userId },
    target: `session:${s.sessionId}`,
  }));
  if (!outcome.ok) throw new Error("sign-in failed");
  return `svc_session=${outcome.sessionToken}`;
}

let ws: Ws;
let conv: string;
beforeAll(async () => {
  ws = await signupWorkspace();
  conv = await seedConversation(ws.workspace.id, ws.user.id);
});

describe("publish_app and the apps list", () => {
  it("publishes a bundle, lists it with the quota, and records app.publish", async () => {
    const scope = scopeFor(ws, conv);
    const out = await publish(scope, { title: "Sales Dashboard!", files: BUNDLE, visibility: "public" });
    expect(out.slug).toBe("sales-dashboard");
    expect(out.url).toBe(`https://svc.test/v1/apps/${ws.workspace.slug}/sales-dashboard/`);
    const list = await parse(await call("GET", "/v1/api/apps", { token: ws.adminToken }), AppListSchema);
    expect(list.quota).toBe(5);
    expect(list.used).toBeGreaterThanOrEqual(1);
    const app = list.apps.find((a) => a.id === out.app_id)!;
    expect(app).toMatchObject({
      slug: "sales-dashboard",
      state: "running",
      visibility: "public",
      run_mode: "static",
      port: null,
      conversation_id: conv,
      url: out.url,
    });
    for (let n = 0; n < BUNDLE.length; n++)
      expect(await env.FILES.head(appFileKey(ws.workspace.id, out.app_id, n))).not.toBeNull();
    const [event] = (await auditEvents(ws.workspace.id, "app.publish")).filter((e) => e.target === `app:${out.app_id}`);
    expect(event).toMatchObject({ intent: "publish_app", conversation_id: conv, actor_id: ws.user.id });
    expect(event!.details).toEqual({
      slug: "sales-dashboard",
      visibility: "public",
      files: 3,
      size: expect.any(Number),
    });
  });

  it("a second app of the same title gets another slug; any member sees the list, most recent activity first", async () => {
    const w = await signupWorkspace();
    const member = await addUser(w.adminToken, "member", ["conversations:read"]);
    const first = await publish(scopeFor(w, null), { title: "Report", files: BUNDLE.slice(0, 1) });
    const second = await publish(scopeFor(w, null), { title: "Report", files: BUNDLE.slice(0, 1) });
    expect(second.slug).not.toBe(first.slug);
    expect(second.slug).toMatch(/^report-[0-9a-f]{4}$/);
    await env.DB.prepare("UPDATE apps SET last_activity_at = ?1 WHERE id = ?2")
      .bind(new Date(Date.now() - 3_600_000).toISOString(), second.app_id)
      .run();
    const list = await parse(await call("GET", "/v1/api/apps", { token: member.token }), AppListSchema);
    expect(list.apps.map((a) => a.id)).toEqual([first.app_id, second.app_id]);
    expect(list.used).toBe(2);
    expect(first.visibility).toBe("private");
  });

  it("refuses bad bundles as tool errors: no index.html, unsafe paths, duplicates, over 5 MiB, bad base64", async () => {
    const scope = scopeFor(ws, conv);
    await expect(publish(scope, { title: "x", files: [{ path: "main.html", content: "a" }] })).rejects.toThrow(
      /index\.html/,
    );
    for (const path of ["../index.html", "/index.html", "a//b", ".env", "a/../index.html", "a\\b", "é.html"])
      await expect(
        publish(scope, { title: "x", files: [...BUNDLE.slice(0, 1), { path, content: "a" }] }),
      ).rejects.toThrow(/invalid path/);
    await expect(publish(scope, { title: "x", files: [BUNDLE[0], BUNDLE[0]] })).rejects.toThrow(/twice/);
    await expect(
      publish(scope, {
        title: "x",
        files: [BUNDLE[0], { path: "big.txt", content: "a".repeat(5 * 1024 * 1024) }],
      }),
    ).rejects.toThrow(/5 MiB/);
    await expect(
      publish(scope, { title: "x", files: [BUNDLE[0], { path: "a.png", content: "!!", encoding: "base64" }] }),
    ).rejects.toThrow(/base64/);
    await expect(
      publish(scope, { title: "x", files: [{ ...BUNDLE[0], content_type: "text/html\r\nX-Evil: 1" }] }),
    ).rejects.toThrow(/content_type/);
  });

  it("two publishes at the limit: exactly one passes, the other is a quota error and leaves no bytes", async () => {
    const w = await signupWorkspace();
    const quotaEnv = { ...env, APP_QUOTA: "1" } as Env;
    const results = await Promise.allSettled([
      publish(scopeFor(w, null, w.user.id, quotaEnv), { title: "One", files: BUNDLE }),
      publish(scopeFor(w, null, w.user.id, quotaEnv), { title: "Two", files: BUNDLE }),
    ]);
    const passed = results.filter((r) => r.status === "fulfilled");
    const failed = results.filter((r) => r.status === "rejected");
    expect(passed).toHaveLength(1);
    expect(failed).toHaveLength(1);
    expect(String((failed[0] as PromiseRejectedResult).reason)).toMatch(/quota of 1 apps/);
    const listed = await env.FILES.list({ prefix: `apps/${w.workspace.id}/` });
    const app = (passed[0] as PromiseFulfilledResult<Published>).value;
    expect(listed.objects.every((o) => o.key.startsWith(appPrefix(w.workspace.id, app.app_id)))).toBe(true);
    const count = await env.DB.prepare("SELECT count(*) AS n FROM apps WHERE workspace_id = ?1")
      .bind(w.workspace.id)
      .first<{ n: number }>();
    expect(count!.n).toBe(1);
  });
});

describe("visitor pages", () => {
  let pub: Published;
  let priv: Published;
  beforeAll(async () => {
    pub = await publish(scopeFor(ws, conv), { title: "Public Page", files: BUNDLE, visibility: "public" });
    priv = await publish(scopeFor(ws, conv), { title: "Private Page", files: BUNDLE, visibility: "private" });
  });

  it("serves each file with its content type and the sandbox header; the bare app path redirects to its root", async () => {
    const page = await call("GET", pathOf(pub.url));
    expect(page.status).toBe(200);
    expect(page.headers.get("Content-Type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("Content-Security-Policy")).toBe(CSP);
    expect(page.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(await page.text()).toBe(BUNDLE[0]!.content);
    const js = await call("GET", `${pathOf(pub.url)}app.js`);
    expect(js.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("Content-Security-Policy")).toBe(CSP);
    const svg = await call("GET", `${pathOf(pub.url)}assets/logo.svg`);
    expect(svg.headers.get("Content-Type")).toBe("image/svg+xml");
    expect(svg.headers.get("Content-Security-Policy")).toBe(CSP);
    const missing = await call("GET", `${pathOf(pub.url)}nope.js`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("Content-Security-Policy")).toBe(CSP);
    const bare = await call("GET", pathOf(pub.url).slice(0, -1));
    expect(bare.status).toBe(308);
    expect(bare.headers.get("Location")).toBe(pathOf(pub.url));
    expect(bare.headers.get("Content-Security-Policy")).toBe(CSP);
    for (const odd of ["..%2F..%2Fetc", "%E0%A4%A", "assets/../index.html"]) {
      const res = await call("GET", `${pathOf(pub.url)}${odd}`);
      expect([200, 404]).toContain(res.status);
      expect(res.headers.get("Content-Security-Policy")).toBe(CSP);
    }
  });

  it("a private app is 404 for an anonymous visitor and for another workspace's member, 200 for a signed-in member", async () => {
    const anonymous = await call("GET", pathOf(priv.url));
    expect(anonymous.status).toBe(404);
    expect(anonymous.headers.get("Content-Security-Policy")).toBe(CSP);
    expect(await anonymous.text()).not.toContain("Private");
    expect((await call("GET", pathOf(priv.url).slice(0, -1))).status).toBe(404);

    const other = await signupWorkspace();
    const outsider = await call("GET", pathOf(priv.url), { headers: { Cookie: await sessionCookie(other.email) } });
    expect(outsider.status).toBe(404);
    expect((await call("GET", pathOf(priv.url), { token: other.adminToken })).status).toBe(404);

    const member = await addUser(ws.adminToken, "member", ["conversations:read"]);
    const signedIn = await call("GET", pathOf(priv.url), { headers: { Cookie: await sessionCookie(member.email) } });
    expect(signedIn.status).toBe(200);
    expect(signedIn.headers.get("Content-Security-Policy")).toBe(CSP);
    expect(signedIn.headers.get("Cache-Control")).toBe("private, no-store");
    expect((await call("GET", pathOf(priv.url), { token: member.token })).status).toBe(200);
    expect((await call("GET", pathOf(priv.url), { headers: { Cookie: "svc_session=forged" } })).status).toBe(404);
  });

  it("unknown workspaces and apps are 404 with the sandbox header", async () => {
    for (const path of [`/v1/apps/nope-ws/${pub.slug}/`, `/v1/apps/${ws.workspace.slug}/nope/`, "/v1/apps/x/y/z"]) {
      const res = await call("GET", path);
      expect(res.status).toBe(404);
      expect(res.headers.get("Content-Security-Policy")).toBe(CSP);
    }
  });

  it("a visit moves last_activity_at at most once a minute and wakes a sleeping app", async () => {
    const old = new Date(Date.now() - 2 * ACTIVITY_GRANULARITY_MS).toISOString();
    await env.DB.prepare("UPDATE apps SET state = 'sleeping', last_activity_at = ?1 WHERE id = ?2")
      .bind(old, pub.app_id)
      .run();
    expect((await call("GET", pathOf(pub.url))).status).toBe(200);
    const woken = await appRow(pub.app_id);
    expect(woken!.state).toBe("running");
    expect(woken!.last_activity_at > old).toBe(true);

    const recent = new Date(Date.now() - 10_000).toISOString();
    await env.DB.prepare("UPDATE apps SET last_activity_at = ?1 WHERE id = ?2").bind(recent, pub.app_id).run();
    expect((await call("GET", pathOf(pub.url))).status).toBe(200);
    expect((await appRow(pub.app_id))!.last_activity_at).toBe(recent);
  });
});

describe("the sleep sweep", () => {
  it("runs once an hour and puts apps unvisited for 30 days to sleep", async () => {
    const w = await signupWorkspace();
    const idle = await publish(scopeFor(w, null), { title: "Idle", files: BUNDLE.slice(0, 1), visibility: "public" });
    const busy = await publish(scopeFor(w, null), { title: "Busy", files: BUNDLE.slice(0, 1), visibility: "public" });
    await env.DB.prepare("UPDATE apps SET last_activity_at = ?1 WHERE id = ?2")
      .bind(new Date(Date.now() - 31 * 86_400_000).toISOString(), idle.app_id)
      .run();
    const sweep = appsArea.crons![0]!;
    const at = (minute: number) => {
      const d = new Date();
      d.setUTCMinutes(minute, 0, 0);
      return { scheduledTime: d.getTime(), cron: "* * * * *", noRetry() {} } as ScheduledController;
    };
    await sweep(env, at(17));
    expect((await appRow(idle.app_id))!.state).toBe("running");
    await sweep(env, at(0));
    expect((await appRow(idle.app_id))!.state).toBe("sleeping");
    expect((await appRow(busy.app_id))!.state).toBe("running");
    const list = await parse(await call("GET", "/v1/api/apps", { token: w.adminToken }), AppListSchema);
    expect(list.apps.find((a) => a.id === idle.app_id)!.state).toBe("sleeping");
    expect((await auditEvents(w.workspace.id, "app.sleep")).map((e) => e.target)).toEqual([`app:${idle.app_id}`]);
    // A visit wakes it.
    expect((await call("GET", pathOf(idle.url))).status).toBe(200);
    expect((await appRow(idle.app_id))!.state).toBe("running");
  });
});

describe("DELETE /v1/api/apps/{id}", () => {
  it("only the creator or an admin destroys an app; its bytes go, its pages stop, the quota frees", async () => {
    const w = await signupWorkspace();
    const creator = await addUser(w.adminToken, "member", ["conversations:read", "conversations:write"]);
    const other = await addUser(w.adminToken, "member", ["conversations:read", "conversations:write"]);
    const app = await publish(scopeFor(w, null, creator.user.id), {
      title: "Gone",
      files: BUNDLE,
      visibility: "public",
    });

    await expectProblem(
      await call("DELETE", `/v1/api/apps/${app.app_id}`, { token: other.token }),
      403,
      "app_forbidden",
    );
    const denied = await auditEvents(w.workspace.id, "app.destroy");
    expect(denied.map((e) => [e.outcome, e.actor_id])).toEqual([["denied", other.user.id]]);

    const res = await call("DELETE", `/v1/api/apps/${app.app_id}`, { token: creator.token });
    const destroyed = await parse(res, AppSchema);
    expect(destroyed.state).toBe("destroyed");
    expect((await env.FILES.list({ prefix: appPrefix(w.workspace.id, app.app_id) })).objects).toEqual([]);
    expect((await call("GET", pathOf(app.url))).status).toBe(404);
    const list = await parse(await call("GET", "/v1/api/apps", { token: w.adminToken }), AppListSchema);
    expect(list).toMatchObject({ apps: [], used: 0 });
    await expectProblem(await call("DELETE", `/v1/api/apps/${app.app_id}`, { token: creator.token }), 404);
    const events = await auditEvents(w.workspace.id, "app.destroy");
    expect(events[0]).toMatchObject({ outcome: "success", target: `app:${app.app_id}`, actor_id: creator.user.id });

    // The slug is free again, and an admin may destroy anyone's app.
    const again = await publish(scopeFor(w, null, creator.user.id), { title: "Gone", files: BUNDLE });
    expect(again.slug).toBe("gone");
    expect((await call("DELETE", `/v1/api/apps/${again.app_id}`, { token: w.adminToken })).status).toBe(200);
  });

  it("another workspace's app, an unknown id and a malformed id are refused", async () => {
    const other = await signupWorkspace();
    const foreign = await publish(scopeFor(other, null), { title: "Theirs", files: BUNDLE });
    await expectProblem(await call("DELETE", `/v1/api/apps/${foreign.app_id}`, { token: ws.adminToken }), 404);
    await expectProblem(await call("DELETE", `/v1/api/apps/${crypto.randomUUID()}`, { token: ws.adminToken }), 404);
    await expectProblem(await call("DELETE", "/v1/api/apps/not-a-uuid", { token: ws.adminToken }), 400);
    const reader = await addUser(ws.adminToken, "member", ["conversations:read"]);
    await expectProblem(
      await call("DELETE", `/v1/api/apps/${foreign.app_id}`, { token: reader.token }),
      403,
      "insufficient_scope",
    );
  });
});

describe("apps outlive their conversation and their creator", () => {
  it("deleting the conversation keeps the app running with conversation_id null", async () => {
    const c = await seedConversation(ws.workspace.id, ws.user.id);
    const app = await publish(scopeFor(ws, c), { title: "Kept", files: BUNDLE, visibility: "public" });
    expect((await call("DELETE", `/v1/api/conversations/${c}`, { token: ws.adminToken })).status).toBe(200);
    expect(await appRow(app.app_id)).toMatchObject({ state: "running", conversation_id: null });
    expect((await call("GET", pathOf(app.url))).status).toBe(200);
  });

  it("erasing the creator keeps the app (workspace data)", async () => {
    const w = await signupWorkspace();
    const m = await addUser(w.adminToken, "member", ["conversations:read"]);
    const c = await seedConversation(w.workspace.id, m.user.id);
    const app = await publishApp(
      env,
      {
        workspaceId: w.workspace.id,
        title: "Survivor",
        visibility: "public",
        conversationId: c,
        creatorUserId: m.user.id,
        agentId: null,
        files: [{ path: "index.html", contentType: "text/html; charset=utf-8", bytes: new TextEncoder().encode("hi") }],
      },
      (a) => ({
        workspaceId: w.workspace.id,
        kind: "app.publish",
        actor: { kind: "system", id: null },
        target: `app:${a.id}`,
      }),
    );
    const res = await call("POST", `/v1/admin/users/${m.user.id}/erase`, {
      token: w.adminToken,
      body: { confirm: true },
    });
    expect(res.status).toBe(200);
    expect(await appRow(app.id)).toMatchObject({ state: "running", conversation_id: null });
    const list = await parse(await call("GET", "/v1/api/apps", { token: w.adminToken }), AppListSchema);
    expect(list.apps.map((a) => a.id)).toEqual([app.id]);
  });
});
