import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MeSchema, SignupResponseSchema } from "../src/account/schemas";
import { AgentListSchema } from "../src/agents/schemas";
import { DEFAULT_GRANT } from "../src/auth/scopes";
import { call, expectProblem, parse } from "./support/api";
import { PASSWORD, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

describe("POST /v1/api/signup", () => {
  it("creates the workspace, its admin, the default agent and an admin PAT shown once", async () => {
    const email = `founder-${unique()}@Example.com`;
    const res = await call("POST", "/v1/api/signup", {
      body: { workspace_name: "Ünïcode & Co.", email, password: PASSWORD, name: "Founder" },
    });
    expect(res.status).toBe(201);
    const body = await parse(res, SignupResponseSchema);
    expect(body.workspace.name).toBe("Ünïcode & Co.");
    expect(body.workspace.slug).toMatch(/^unicode-co(-[a-z0-9]{3})?$/);
    expect(body.user).toMatchObject({ email: email.toLowerCase(), name: "Founder", role: "admin" });
    expect(body.token).toMatch(/^svc_pat_[A-Za-z0-9_-]{43}$/);

    const me = await parse(await call("GET", "/v1/api/me", { token: body.token }), MeSchema);
    expect(me.auth).toBe("pat");
    expect(me.workspace).toEqual(body.workspace);
    expect(me.scopes).toEqual([...DEFAULT_GRANT].sort());
    expect(me.scopes).not.toContain("svc:computer");

    const agents = await parse(await call("GET", "/v1/agents", { token: body.token }), AgentListSchema);
    expect(agents.agents).toHaveLength(1);
    expect(agents.agents[0]).toMatchObject({
      slug: "assistant",
      status: "enabled",
      is_default: true,
      instructions_is_default: true,
    });
    expect(agents.agents[0]!.instructions).toBeTruthy();

    const ws = await env.DB.prepare("SELECT slug, email_slug FROM workspaces WHERE id = ?")
      .bind(body.workspace.id)
      .first<{ slug: string; email_slug: string }>();
    expect(ws?.email_slug).toBe(ws?.slug);
  });

  it("stores the password as salted PBKDF2 and the token only as its SHA-256", async () => {
    const { user, adminToken } = await signupWorkspace();
    const row = await env.DB.prepare("SELECT password_hash FROM users WHERE id = ?")
      .bind(user.id)
      .first<{ password_hash: string }>();
    expect(row?.password_hash).toMatch(/^pbkdf2-sha256\$100000\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    expect(row?.password_hash).not.toContain(PASSWORD);
    const tokens = await env.DB.prepare("SELECT token_hash FROM api_tokens WHERE user_id = ?")
      .bind(user.id)
      .all<{ token_hash: string }>();
    const digest = Array.from(
      new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(adminToken))),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("");
    expect(tokens.results.map((t) => t.token_hash)).toEqual([digest]);
    const dump = JSON.stringify((await env.DB.prepare("SELECT * FROM api_tokens").all()).results);
    expect(dump).not.toContain(adminToken.slice(8));
  });

  it("gives two workspaces with the same name distinct handles", async () => {
    const a = await signupWorkspace("Twin Peaks");
    const b = await signupWorkspace("Twin Peaks");
    expect(a.workspace.slug).not.toBe(b.workspace.slug);
  });

  it("refuses a duplicate email with 409 and changes nothing", async () => {
    const { email } = await signupWorkspace();
    const before = await env.DB.prepare("SELECT count(*) AS n FROM workspaces").first<{ n: number }>();
    const res = await call("POST", "/v1/api/signup", {
      body: { workspace_name: "Other", email: email.toUpperCase(), password: PASSWORD },
    });
    await expectProblem(res, 409, "email_taken");
    const after = await env.DB.prepare("SELECT count(*) AS n FROM workspaces").first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
  });

  it.each([
    ["short password", { workspace_name: "X", email: "a@example.com", password: "short" }, "password"],
    ["bad email", { workspace_name: "X", email: "not-an-email", password: PASSWORD }, "email"],
    ["missing name", { email: "a@example.com", password: PASSWORD }, "workspace_name"],
    ["wrong type", { workspace_name: 42, email: "a@example.com", password: PASSWORD }, "workspace_name"],
  ])("answers %s with a 400 validation problem naming the field", async (_label, body, field) => {
    const problem = await expectProblem(await call("POST", "/v1/api/signup", { body }), 400, "validation_failed");
    expect(problem.errors?.map((e) => e.path)).toContain(field);
  });

  it("accepts exactly the email addresses the document's pattern accepts (one definition for both)", async () => {
    const doc = (await (await call("GET", "/v1/openapi.json")).json()) as {
      components: { schemas: Record<string, { properties?: Record<string, { format?: string; pattern?: string }> }> };
    };
    const emailFields = Object.values(doc.components.schemas).flatMap((schema) =>
      Object.values(schema.properties ?? {}).filter((field) => field.format === "email"),
    );
    expect(emailFields.length).toBeGreaterThanOrEqual(2);
    const patterns = new Set(emailFields.map((field) => field.pattern));
    expect(patterns.size).toBe(1);
    const pattern = new RegExp([...patterns][0]!);
    const tag = unique();
    const samples = [
      `ada-${tag}@acme.test`,
      `o'brien+tag.${tag}@mail.example.co`,
      `0${tag}@com`,
      `a${tag}@b.c`,
      `x${tag}@localhost`,
      `x${tag}@-acme.test`,
      `x${tag}..y@acme.test`,
      ` ada${tag}@acme.test`,
      `ada${tag}@acme.test.`,
      `ada${tag}@[127.0.0.1]`,
    ];
    for (const email of samples) {
      const res = await call("POST", "/v1/api/signup", {
        body: { workspace_name: "Email Co", email, password: PASSWORD },
      });
      expect(res.status, email).toBe(pattern.test(email) ? 201 : 400);
    }
  });

  it("answers malformed JSON, a wrong content type and an oversized body with problems, not 500", async () => {
    await expectProblem(
      await call("POST", "/v1/api/signup", { rawBody: "{not json", headers: { "Content-Type": "application/json" } }),
      400,
      "malformed_request",
    );
    await expectProblem(
      await call("POST", "/v1/api/signup", { rawBody: "a=b", headers: { "Content-Type": "text/plain" } }),
      400,
      "unsupported_media_type",
    );
    const big = JSON.stringify({
      workspace_name: "x".repeat(1024 * 1024 + 10),
      email: "a@example.com",
      password: PASSWORD,
    });
    await expectProblem(
      await call("POST", "/v1/api/signup", { rawBody: big, headers: { "Content-Type": "application/json" } }),
      413,
      "payload_too_large",
    );
  });

  it("rate limits sign-up per client address with 429 and Retry-After", async () => {
    const ip = "203.0.113.77";
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 12; i++) {
      last = await call("POST", "/v1/api/signup", {
        headers: { "CF-Connecting-IP": ip },
        body: { workspace_name: "Flood", email: `flood-${i}-${unique()}@example.com`, password: PASSWORD },
      });
      statuses.push(last.status);
    }
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(10);
    expect(statuses).toContain(429);
    const limited = await call("POST", "/v1/api/signup", {
      headers: { "CF-Connecting-IP": ip },
      body: { workspace_name: "Flood", email: `flood-x-${unique()}@example.com`, password: PASSWORD },
    });
    await expectProblem(limited, 429, "rate_limited");
    expect(limited.headers.get("Retry-After")).toBe("60");
  });
});

describe("GET /v1/api/me", () => {
  it("is 401 with a Bearer challenge without credentials, with unknown and with malformed tokens", async () => {
    const none = await call("GET", "/v1/api/me");
    await expectProblem(none, 401, "unauthenticated");
    expect(none.headers.get("WWW-Authenticate")).toMatch(/^Bearer /);
    const unknown = await call("GET", "/v1/api/me", { token: "svc_pat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" });
    await expectProblem(unknown, 401, "invalid_token");
    expect(unknown.headers.get("WWW-Authenticate")).toContain('error="invalid_token"');
    await expectProblem(
      await call("GET", "/v1/api/me", { headers: { Authorization: "Basic abc" } }),
      401,
      "invalid_token",
    );
    await expectProblem(await call("GET", "/v1/api/me", { token: "other_prefix_token" }), 401, "invalid_token");
  });
});
