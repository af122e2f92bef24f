import { describe, expect, it } from "vitest";
import { call, expectProblem } from "./support/api";

describe("service basics", () => {
  it("answers health with ok and a request id and secure headers", async () => {
    const res = await call("GET", "/v1/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("Strict-Transport-Security")).toBeTruthy();
  });

  it("answers unknown routes with a 404 problem", async () => {
    const res = await call("GET", "/v1/nope");
    const body = await expectProblem(res, 404, "not_found");
    expect(body.title).toBe("Not Found");
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
  });

  it("serves the OpenAPI 3.1 document at version 1.0.0 with scopes per operation", async () => {
    const res = await call("GET", "/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      info: { version: string };
      paths: Record<string, Record<string, { security?: unknown }>>;
    };
    expect(doc.openapi).toMatch(/^3\.1/);
    expect(doc.info.version).toBe("1.0.0");
    expect(doc.paths["/v1/agents"]?.get?.security).toEqual([{ bearer: ["agents:read"] }]);
    expect(doc.paths["/v1/api/admin/tokens"]?.post?.security).toEqual([{ bearer: ["admin"] }]);
  });

  it("serves a rendered API reference", async () => {
    const res = await call("GET", "/v1/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toContain("text/html");
    const html = await res.text();
    expect(html).toContain("/v1/openapi.json");
    // The script comes from the Worker's own static assets, never a CDN, so the page renders offline.
    const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toEqual(["/v1/docs/scalar/standalone.js"]);
  });
});
