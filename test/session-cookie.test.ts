import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { MeSchema } from "../src/account/schemas";
import { ErasureSummarySchema } from "../src/admin/erase-schemas";
import { CreatedTokenSchema } from "../src/admin/schemas";
import { crossOriginWrite } from "../src/platform/pages";
import { createAgent } from "./support/agents";
import { call, expectProblem, ORIGIN, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import {
  authorizePath,
  expectOAuthError,
  newPkce,
  postConsent,
  REDIRECT,
  registerClient,
  sessionCookie,
  signIn,
} from "./support/oauth";
import { addUser, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

const EVIL = { Origin: "https://evil.example" };
// Any sibling subdomain is "same-site" for a SameSite=Lax cookie; it is still another origin.
const SIBLING = { Origin: "https://files.svc.test" };

const count = async (sql: string, ...params: unknown[]) =>
  (await env.DB.prepare(sql)
    .bind(...params)
    .first<{ n: number }>())!.n;

const tokenCount = (userId: string) => count("SELECT COUNT(*) AS n FROM api_tokens WHERE user_id = ?", userId);

/** The 401 of a request that carries no credential at all, for comparison. */
async function anonymous(method: string, path: string, body?: unknown) {
  const res = await call(method, path, { body });
  return {
    status: res.status,
    challenge: res.headers.get("WWW-Authenticate"),
    code: ((await res.json()) as { code: string }).code,
  };
}

describe("the sign-in session cookie is a credential only where a route opts in", () => {
  it("with the cookie alone and a foreign Origin, POST /v1/api/admin/tokens is 401 like no credential and creates nothing", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const before = await tokenCount(ws.user.id);
    const body = { name: "stolen", scopes: ["admin"] };
    const res = await call("POST", "/v1/api/admin/tokens", { body, headers: { ...sessionCookie(session), ...EVIL } });
    const problem = await expectProblem(res, 401, "unauthenticated");
    expect(problem.detail).toContain("bearer token");
    const none = await anonymous("POST", "/v1/api/admin/tokens", body);
    expect({ status: res.status, challenge: res.headers.get("WWW-Authenticate"), code: problem.code }).toEqual(none);
    expect(await tokenCount(ws.user.id)).toBe(before);
    // Even from our own origin: the admin API takes bearer tokens only.
    const own = await call("POST", "/v1/api/admin/tokens", {
      body,
      headers: { ...sessionCookie(session), Origin: ORIGIN },
    });
    await expectProblem(own, 401, "unauthenticated");
    expect(await tokenCount(ws.user.id)).toBe(before);
  });

  it("with the cookie alone, DELETE /v1/agents/{id} is 401 and the agent stays enabled", async () => {
    const ws = await signupWorkspace();
    const agent = await createAgent(ws.adminToken, { slug: `a-${unique()}`, display_name: "A" });
    const session = await signIn(ws.email);
    const res = await call("DELETE", `/v1/agents/${agent.id}`, { headers: { ...sessionCookie(session), ...EVIL } });
    await expectProblem(res, 401, "unauthenticated");
    const row = await env.DB.prepare("SELECT status FROM agents WHERE id = ?")
      .bind(agent.id)
      .first<{ status: string }>();
    expect(row?.status).toBe("enabled");
    expect(await auditEvents(ws.workspace.id, "agent.disable")).toHaveLength(0);
  });

  it("a read route that does not opt in is 401 with the cookie too", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    await expectProblem(await call("GET", "/v1/agents", { headers: sessionCookie(session) }), 401, "unauthenticated");
  });

  it('GET /v1/api/me answers the cookie ("GET /v1/api/me | any valid token or session")', async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const res = await call("GET", "/v1/api/me", { headers: { ...sessionCookie(session), ...EVIL } });
    expect(res.status).toBe(200);
    const me = await parse(res, MeSchema);
    expect(me).toMatchObject({ auth: "session", user: { id: ws.user.id, email: ws.email }, workspace: ws.workspace });
  });

  it("bearer-token requests are not subject to the origin check", async () => {
    const ws = await signupWorkspace();
    const res = await call("POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { name: "from a web app", scopes: ["agents:read"] },
      headers: EVIL,
    });
    expect(res.status).toBe(201);
    await parse(res, CreatedTokenSchema);
  });

  it("the OpenAPI document lists the session scheme on the routes that take it, and only there", async () => {
    const doc = (await (await call("GET", "/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { security?: unknown }>>;
      components: { securitySchemes: Record<string, unknown> };
    };
    expect(doc.components.securitySchemes.session).toMatchObject({ type: "apiKey", in: "cookie", name: "svc_session" });
    expect(doc.paths["/v1/api/me"]?.get?.security).toEqual([{ bearer: [] }, { session: [] }]);
    expect(doc.paths["/v1/api/me/erase"]?.post?.security).toEqual([{ bearer: [] }, { session: [] }]);
    expect(doc.paths["/v1/oauth/register"]?.post?.security).toEqual([{ bearer: [] }, { session: [] }]);
    const withSession = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => JSON.stringify(op.security ?? []).includes('"session"'))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(withSession.sort()).toEqual(["GET /v1/api/me", "POST /v1/api/me/erase", "POST /v1/oauth/register"]);
  });
});

describe("a state change made with the cookie must come from our own origin", () => {
  /** A member (the workspace's only admin may not erase itself) and a fresh session of theirs. */
  async function member() {
    const ws = await signupWorkspace();
    const m = await addUser(ws.adminToken, "member", ["agents:read"]);
    return { ws, user: m.user, session: await signIn(m.email) };
  }
  const erasedAt = (userId: string) =>
    env.DB.prepare("SELECT erased_at FROM users WHERE id = ?").bind(userId).first<{ erased_at: string | null }>();

  it.each([
    ["a foreign Origin", EVIL],
    ["a sibling subdomain's Origin", SIBLING],
    ["an opaque Origin", { Origin: "null" }],
    ["no Origin and Sec-Fetch-Site: cross-site", { "Sec-Fetch-Site": "cross-site" }],
    ["no Origin and Sec-Fetch-Site: same-site", { "Sec-Fetch-Site": "same-site" }],
  ])(
    "POST /v1/api/me/erase with the cookie and %s is 403 cross_origin_request and erases nothing",
    async (_, headers) => {
      const { ws, user, session } = await member();
      const res = await call("POST", "/v1/api/me/erase", {
        body: { confirm: true },
        headers: { ...sessionCookie(session), ...headers },
      });
      await expectProblem(res, 403, "cross_origin_request");
      expect((await erasedAt(user.id))?.erased_at).toBeNull();
      expect(await count("SELECT COUNT(*) AS n FROM sessions WHERE user_id = ? AND revoked_at IS NULL", user.id)).toBe(
        1,
      );
      const me = await call("GET", "/v1/api/me", { headers: sessionCookie(session) });
      expect(me.status).toBe(200);
      const [denied] = await auditEvents(ws.workspace.id, "access.denied");
      expect(denied).toMatchObject({
        outcome: "denied",
        actor_kind: "user",
        actor_id: user.id,
        target: "route:POST /v1/api/me/erase",
        intent: "same_origin",
      });
    },
  );

  it.each([
    ["our own Origin", { Origin: ORIGIN }],
    ["Sec-Fetch-Site: same-origin", { "Sec-Fetch-Site": "same-origin" }],
    ["Sec-Fetch-Site: none (a typed URL)", { "Sec-Fetch-Site": "none" }],
    ["neither header (not a browser)", {}],
  ])("POST /v1/api/me/erase with the cookie and %s erases the account", async (_, headers) => {
    const { user, session } = await member();
    const res = await call("POST", "/v1/api/me/erase", {
      body: { confirm: true },
      headers: { ...sessionCookie(session), ...headers },
    });
    expect(res.status).toBe(200);
    expect((await parse(res, ErasureSummarySchema)).user_id).toBe(user.id);
    expect((await erasedAt(user.id))?.erased_at).not.toBeNull();
  });

  it("POST /v1/oauth/register takes a session of the account from our origin, refuses it from another (OAuth shape)", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const body = { redirect_uris: [REDIRECT], scope: "agents:read" };
    const clients = () => count("SELECT COUNT(*) AS n FROM oauth_clients WHERE workspace_id = ?", ws.workspace.id);
    const foreign = await call("POST", "/v1/oauth/register", { body, headers: { ...sessionCookie(session), ...EVIL } });
    await expectOAuthError(foreign, 403, "cross_origin_request");
    expect(await clients()).toBe(0);
    const own = await call("POST", "/v1/oauth/register", {
      body,
      headers: { ...sessionCookie(session), Origin: ORIGIN },
    });
    expect(own.status).toBe(201);
    expect(await clients()).toBe(1);
  });

  it("the consent form posted from another origin is refused and records no consent", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "agents:read" });
    const session = await signIn(ws.email);
    const path = authorizePath({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: "code",
      code_challenge: newPkce().challenge,
      code_challenge_method: "S256",
      scope: "agents:read",
      state: "s",
    });
    const page = await call("GET", path, { headers: sessionCookie(session) });
    expect(page.status).toBe(200);
    const html = await page.text();
    const res = await postConsent(session, html, "approve", {}, SIBLING);
    await expectProblem(res, 403, "cross_origin_request");
    expect(res.headers.get("Location")).toBeNull();
    expect(await count("SELECT COUNT(*) AS n FROM oauth_consents WHERE user_id = ?", ws.user.id)).toBe(0);
    expect((await postConsent(session, html, "approve", {}, { Origin: ORIGIN })).status).toBe(303);
    expect(await count("SELECT COUNT(*) AS n FROM oauth_consents WHERE user_id = ?", ws.user.id)).toBe(1);
  });

  it("POST /v1/signout from another origin is refused and the session lives on", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const res = await call("POST", "/v1/signout", { headers: { ...sessionCookie(session), ...EVIL } });
    await expectProblem(res, 403, "cross_origin_request");
    expect(res.headers.getSetCookie().some((c) => c.startsWith("svc_session="))).toBe(false);
    expect((await call("GET", "/v1/api/me", { headers: sessionCookie(session) })).status).toBe(200);
  });
});

describe("crossOriginWrite", () => {
  const app = new Hono<{ Bindings: Env }>().all("/", (c) =>
    c.body(null, 204, { "X-Cross-Origin": String(crossOriginWrite(c)) }),
  );
  const judge = async (method: string, headers: Record<string, string>, baseUrl?: string) =>
    (await app.request("https://worker.example/", { method, headers }, { ...env, BASE_URL: baseUrl })).headers.get(
      "X-Cross-Origin",
    ) === "true";

  it("accepts BASE_URL's origin and the request's own, and refuses others", async () => {
    expect(await judge("POST", { Origin: "https://api.example.com" }, "https://api.example.com/")).toBe(false);
    expect(await judge("POST", { Origin: "https://worker.example" }, "https://api.example.com")).toBe(false);
    expect(await judge("POST", { Origin: "https://evil.example" }, "https://api.example.com")).toBe(true);
    expect(await judge("POST", { Origin: "http://worker.example" })).toBe(true);
    // Origin decides when present, whatever Sec-Fetch-Site says.
    expect(await judge("POST", { Origin: "https://evil.example", "Sec-Fetch-Site": "same-origin" })).toBe(true);
  });

  it("never judges a safe method", async () => {
    for (const method of ["GET", "HEAD", "OPTIONS"]) expect(await judge(method, EVIL)).toBe(false);
  });

  it.each(["PUT", "PATCH", "DELETE"])("judges %s like POST", async (method) => {
    expect(await judge(method, EVIL)).toBe(true);
    expect(await judge(method, { "Sec-Fetch-Site": "cross-site" })).toBe(true);
    expect(await judge(method, { "Sec-Fetch-Site": "same-origin" })).toBe(false);
  });
});
