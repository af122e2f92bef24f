import { beforeAll, describe, expect, it } from "vitest";
import { callWith } from "./support/app";
import { sessionCookie, signIn } from "./support/oauth";
import { signupWorkspace } from "./support/seed";

/**
 * "CORS for browser apps: `CORS_ORIGINS` (comma list, empty by default = no CORS) on bearer-token
 * routes; preflight 204 allowing `Authorization, Content-Type, Idempotency-Key, Last-Event-ID`;
 * never on cookie-session routes." "CORS answers never carry `Access-Control-Allow-Credentials`."
 */

const APP = "https://chat.example.com";
const LOCAL = "http://localhost:5173";
const FOREIGN = "https://evil.example";
const CONFIGURED = { CORS_ORIGINS: `${APP}, ${LOCAL}/` };

let ws: Awaited<ReturnType<typeof signupWorkspace>>;
beforeAll(async () => {
  ws = await signupWorkspace();
});

const preflight = (path: string, origin: string, method = "POST", vars: Record<string, string> = CONFIGURED) =>
  callWith(vars, "OPTIONS", path, {
    headers: {
      Origin: origin,
      "Access-Control-Request-Method": method,
      "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
    },
  });

const allowedHeaders = (res: Response) =>
  (res.headers.get("Access-Control-Allow-Headers") ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
const listed = (res: Response, name: string) =>
  (res.headers.get(name) ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);

describe("CORS on bearer-token routes", () => {
  it("answers an allowed origin's preflight with 204 and the allowed methods, headers and max age", async () => {
    for (const [path, method, origin] of [
      ["/v1/api/conversations/0190f5e2-7c1a-7000-8000-000000000000/messages", "POST", APP],
      ["/v1/agents", "GET", LOCAL],
      ["/v1/admin/audit", "GET", APP],
    ] as const) {
      const res = await preflight(path, origin, method);
      expect(res.status, path).toBe(204);
      expect(res.headers.get("Access-Control-Allow-Origin")).toBe(origin);
      expect(listed(res, "Access-Control-Allow-Methods")).toEqual(expect.arrayContaining([method.toLowerCase()]));
      expect(allowedHeaders(res)).toEqual(
        expect.arrayContaining(["authorization", "content-type", "idempotency-key", "last-event-id"]),
      );
      expect(Number(res.headers.get("Access-Control-Max-Age"))).toBeGreaterThan(0);
      expect(listed(res, "Vary")).toContain("origin");
      expect(res.headers.get("Access-Control-Allow-Credentials")).toBeNull();
    }
  });

  it("lets the openai SDK call /v1/chat/completions from a page: its own headers and X-Conversation-Id are allowed", async () => {
    const res = await preflight("/v1/chat/completions", APP, "POST");
    expect(res.status).toBe(204);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe(APP);
    expect(allowedHeaders(res)).toEqual(
      expect.arrayContaining(["x-conversation-id", "x-stainless-os", "x-stainless-package-version"]),
    );
  });

  it("gives an actual bearer GET from an allowed origin Access-Control-Allow-Origin, the exposed headers and Vary: Origin", async () => {
    const res = await callWith(CONFIGURED, "GET", "/v1/agents", { token: ws.adminToken, headers: { Origin: APP } });
    expect(res.status).toBe(200);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe(APP);
    expect(listed(res, "Access-Control-Expose-Headers")).toEqual(
      expect.arrayContaining(["x-vercel-ai-ui-message-stream", "content-type", "www-authenticate", "retry-after"]),
    );
    expect(listed(res, "Vary")).toContain("origin");
    expect(res.headers.get("Access-Control-Allow-Credentials")).toBeNull();
  });

  it("lets a page send its D1 bookmark and read the new one (x-d1-bookmark allowed and exposed)", async () => {
    const pre = await callWith(CONFIGURED, "OPTIONS", "/v1/agents", {
      headers: {
        Origin: APP,
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "authorization,x-d1-bookmark",
      },
    });
    expect(pre.status).toBe(204);
    expect(allowedHeaders(pre)).toContain("x-d1-bookmark");
    const res = await callWith(CONFIGURED, "GET", "/v1/agents", { token: ws.adminToken, headers: { Origin: APP } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-d1-bookmark")).toBeTruthy();
    expect(listed(res, "Access-Control-Expose-Headers")).toContain("x-d1-bookmark");
  });

  it("lets an allowed origin read a refusal: a 401 carries Access-Control-Allow-Origin and its challenge is exposed", async () => {
    const res = await callWith(CONFIGURED, "GET", "/v1/agents", { headers: { Origin: APP } });
    expect(res.status).toBe(401);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe(APP);
    expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer /);
    expect(listed(res, "Access-Control-Expose-Headers")).toContain("www-authenticate");
  });

  it("gives a foreign origin no Access-Control-Allow-Origin, on the preflight or the request", async () => {
    const pre = await preflight("/v1/agents", FOREIGN, "GET");
    expect(pre.headers.get("Access-Control-Allow-Origin")).toBeNull();
    const res = await callWith(CONFIGURED, "GET", "/v1/agents", { token: ws.adminToken, headers: { Origin: FOREIGN } });
    expect(res.status).toBe(200);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect(listed(res, "Vary")).toContain("origin");
  });

  it("answers no CORS at all when CORS_ORIGINS is empty (the default): the preflight is an unknown route", async () => {
    const pre = await preflight("/v1/agents", APP, "GET", { CORS_ORIGINS: "" });
    expect(pre.status).toBe(404);
    expect(pre.headers.get("Access-Control-Allow-Origin")).toBeNull();
    const res = await callWith({ CORS_ORIGINS: "" }, "GET", "/v1/agents", {
      token: ws.adminToken,
      headers: { Origin: APP },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });
});

describe("no CORS where the browser's sign-in session is a credential", () => {
  // Routes that take the svc_session cookie (`session: true`), and the browser pages and forms.
  const COOKIE_ROUTES: [string, string][] = [
    ["GET", "/v1/api/me"],
    ["POST", "/v1/api/me/erase"],
    ["POST", "/v1/oauth/register"],
    ["GET", "/v1/oauth/authorize"],
    ["POST", "/v1/oauth/consent"],
    ["GET", "/v1/signin"],
    ["POST", "/v1/signin"],
    ["POST", "/v1/signout"],
    ["GET", "/v1/account"],
    ["POST", "/v1/account/tokens"],
  ];

  it("never answers a preflight from an allowed origin", async () => {
    for (const [method, path] of COOKIE_ROUTES) {
      const res = await preflight(path, APP, method);
      expect(res.headers.get("Access-Control-Allow-Origin"), `${method} ${path}`).toBeNull();
      expect(res.headers.get("Access-Control-Allow-Methods"), `${method} ${path}`).toBeNull();
      expect(res.status, `${method} ${path}`).not.toBe(204);
    }
  });

  it("never gives an allowed origin Access-Control-Allow-Origin, with a token or with the cookie", async () => {
    const session = await signIn(ws.email);
    for (const [method, path] of COOKIE_ROUTES.filter(([m]) => m === "GET")) {
      for (const headers of [{ Authorization: `Bearer ${ws.adminToken}` }, sessionCookie(session)]) {
        const res = await callWith(CONFIGURED, method, path, { headers: { ...headers, Origin: APP } });
        expect(res.headers.get("Access-Control-Allow-Origin"), `${method} ${path}`).toBeNull();
        expect(res.headers.get("Access-Control-Expose-Headers"), `${method} ${path}`).toBeNull();
      }
    }
  });
});
