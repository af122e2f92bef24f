import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MeSchema } from "../src/account/schemas";
import { CreatedTokenSchema, TokenListSchema, UserListSchema } from "../src/admin/schemas";
import { forgetCredentials } from "../src/auth/resolve";
import { UserSchema } from "../src/identity/schemas";
import { call, expectProblem, parse } from "./support/api";
import { callWith } from "./support/app";
import { addUser, issueToken, PASSWORD, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

const postUser = (token: string, body: Record<string, unknown>) => call("POST", "/v1/api/admin/users", { token, body });

describe("sign-up mode", () => {
  it("is 403 when SIGNUP_MODE=closed and creates nothing", async () => {
    const email = `closed-${unique()}@example.com`;
    const res = await callWith({ SIGNUP_MODE: "closed" }, "POST", "/v1/api/signup", {
      body: { workspace_name: "Closed", email, password: PASSWORD },
    });
    await expectProblem(res, 403, "signup_closed");
    expect(await env.DB.prepare("SELECT id FROM users WHERE email = ?").bind(email).first()).toBeNull();
  });
});

describe("users", () => {
  it("lets an admin add and list users; the new user can be given a token", async () => {
    const ws = await signupWorkspace();
    const email = `new-${unique()}@example.com`;
    const res = await postUser(ws.adminToken, { email, role: "member", name: "Mia" });
    expect(res.status).toBe(201);
    const user = await parse(res, UserSchema);
    expect(user).toMatchObject({ email, role: "member", name: "Mia" });
    const list = await parse(await call("GET", "/v1/api/admin/users", { token: ws.adminToken }), UserListSchema);
    expect(list.users.map((u) => u.id).sort()).toEqual([ws.user.id, user.id].sort());
  });

  it("refuses a duplicate email (409), bad input (400), a member (403) and no credentials (401)", async () => {
    const ws = await signupWorkspace();
    await expectProblem(await postUser(ws.adminToken, { email: ws.email, role: "member" }), 409, "email_taken");
    await expectProblem(
      await postUser(ws.adminToken, { email: "x@example.com", role: "owner" }),
      400,
      "validation_failed",
    );
    await expectProblem(
      await postUser(ws.adminToken, { email: "x@example.com", role: "member", password: "short" }),
      400,
      "validation_failed",
    );
    const member = await addUser(ws.adminToken, "member", ["agents:read", "conversations:read"]);
    await expectProblem(await call("GET", "/v1/api/admin/users", { token: member.token }), 403, "admin_required");
    await expectProblem(await postUser(member.token, { email: "y@example.com", role: "admin" }), 403, "admin_required");
    await expectProblem(await call("GET", "/v1/api/admin/users"), 401);
  });

  it("lists only the caller's workspace", async () => {
    const a = await signupWorkspace();
    const b = await signupWorkspace();
    const list = await parse(await call("GET", "/v1/api/admin/users", { token: a.adminToken }), UserListSchema);
    expect(list.users.map((u) => u.id)).not.toContain(b.user.id);
  });
});

describe("personal access tokens", () => {
  it("issues a token shown once, lists it without its secret, and revokes it", async () => {
    const ws = await signupWorkspace();
    const res = await call("POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { name: "ci", scopes: ["agents:read"], expires_in_days: 30 },
    });
    expect(res.status).toBe(201);
    const created = await parse(res, CreatedTokenSchema);
    expect(created).toMatchObject({ name: "ci", scopes: ["agents:read"], user_id: ws.user.id });
    expect(Date.parse(created.expires_at!)).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    expect(created.token).toMatch(/^svc_pat_/);

    const me = await parse(await call("GET", "/v1/api/me", { token: created.token }), MeSchema);
    expect(me.scopes).toEqual(["agents:read"]);

    const listRes = await call("GET", "/v1/api/admin/tokens", { token: ws.adminToken });
    const listText = await listRes.clone().text();
    expect(listText).not.toContain(created.token);
    const list = await parse(listRes, TokenListSchema);
    expect(list.tokens.map((t) => t.id)).toContain(created.id);

    const del = await call("DELETE", `/v1/api/admin/tokens/${created.id}`, { token: ws.adminToken });
    expect(del.status).toBe(204);
    await expectProblem(await call("GET", "/v1/api/me", { token: created.token }), 401, "invalid_token");
    const after = await parse(await call("GET", "/v1/api/admin/tokens", { token: ws.adminToken }), TokenListSchema);
    expect(after.tokens.find((t) => t.id === created.id)?.revoked_at).toBeTruthy();
  });

  it("caps a token at its user's role: a member cannot be given admin, and effective scopes shrink on demotion", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const res = await call("POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { user_id: member.user.id, name: "too much", scopes: ["admin", "agents:read"] },
    });
    const problem = await expectProblem(res, 400, "scope_exceeds_role");
    expect(problem.errors?.[0]?.path).toBe("scopes");

    const admin2 = await addUser(ws.adminToken, "admin", ["admin", "agents:read"]);
    expect((await parse(await call("GET", "/v1/api/me", { token: admin2.token }), MeSchema)).scopes).toEqual([
      "admin",
      "agents:read",
    ]);
    await env.DB.prepare("UPDATE users SET role = 'member' WHERE id = ?").bind(admin2.user.id).run();
    // A change made straight in D1 (no route demotes) reaches an isolate's reused credential checks within their few seconds.
    forgetCredentials();
    expect((await parse(await call("GET", "/v1/api/me", { token: admin2.token }), MeSchema)).scopes).toEqual([
      "agents:read",
    ]);
    await expectProblem(await call("GET", "/v1/api/admin/tokens", { token: admin2.token }), 403, "admin_required");
  });

  it("refuses unknown scopes, a foreign user, a foreign token id and malformed ids", async () => {
    const a = await signupWorkspace();
    const b = await signupWorkspace();
    await expectProblem(
      await call("POST", "/v1/api/admin/tokens", { token: a.adminToken, body: { name: "x", scopes: ["root"] } }),
      400,
      "validation_failed",
    );
    await expectProblem(
      await call("POST", "/v1/api/admin/tokens", { token: a.adminToken, body: { name: "x", scopes: [] } }),
      400,
      "validation_failed",
    );
    await expectProblem(
      await call("POST", "/v1/api/admin/tokens", {
        token: a.adminToken,
        body: { user_id: b.user.id, name: "x", scopes: ["agents:read"] },
      }),
      404,
      "not_found",
    );
    const bTokenId = (await parse(await call("GET", "/v1/api/admin/tokens", { token: b.adminToken }), TokenListSchema))
      .tokens[0]!.id;
    await expectProblem(
      await call("DELETE", `/v1/api/admin/tokens/${bTokenId}`, { token: a.adminToken }),
      404,
      "not_found",
    );
    await expectProblem(
      await call("DELETE", "/v1/api/admin/tokens/not-a-uuid", { token: a.adminToken }),
      400,
      "validation_failed",
    );
    // b's token still works
    expect((await call("GET", "/v1/api/me", { token: b.adminToken })).status).toBe(200);
  });

  it("refuses a misspelt field instead of defaulting it: no token for the caller, none without expiry", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const before = (await parse(await call("GET", "/v1/api/admin/tokens", { token: ws.adminToken }), TokenListSchema))
      .tokens.length;
    for (const body of [
      { userId: member.user.id, name: "for the member", scopes: ["agents:read"] },
      { user_id: member.user.id, name: "short-lived", scopes: ["agents:read"], expires_in_day: 1 },
    ]) {
      const p = await expectProblem(
        await call("POST", "/v1/api/admin/tokens", { token: ws.adminToken, body }),
        400,
        "validation_failed",
      );
      expect(p.errors?.length).toBeGreaterThan(0);
    }
    expect(
      (await parse(await call("GET", "/v1/api/admin/tokens", { token: ws.adminToken }), TokenListSchema)).tokens,
    ).toHaveLength(before);
  });

  it("refuses an expired token with 401", async () => {
    const ws = await signupWorkspace();
    const token = await issueToken(ws.adminToken, ws.user.id, ["agents:read"]);
    await env.DB.prepare("UPDATE api_tokens SET expires_at = ? WHERE name = 'test token' AND user_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), ws.user.id)
      .run();
    await expectProblem(await call("GET", "/v1/api/me", { token }), 401, "invalid_token");
  });

  it("updates last_used_at off the response path, at most once a minute", async () => {
    const ws = await signupWorkspace();
    const token = await issueToken(ws.adminToken, ws.user.id, ["agents:read"], "touch");
    const read = () =>
      env.DB.prepare("SELECT last_used_at FROM api_tokens WHERE name = 'touch' AND user_id = ?")
        .bind(ws.user.id)
        .first<{ last_used_at: string | null }>();
    expect((await read())?.last_used_at).toBeNull();
    await call("GET", "/v1/api/me", { token });
    await new Promise((r) => setTimeout(r, 50));
    const first = (await read())?.last_used_at;
    expect(first).toBeTruthy();
    await call("GET", "/v1/api/me", { token });
    await new Promise((r) => setTimeout(r, 50));
    expect((await read())?.last_used_at).toBe(first);
  });

  it("requires the scope a route names: 403 without agents:read", async () => {
    const ws = await signupWorkspace();
    const token = await issueToken(ws.adminToken, ws.user.id, ["conversations:read"]);
    const res = await call("GET", "/v1/agents", { token });
    await expectProblem(res, 403, "insufficient_scope");
    expect(res.headers.get("WWW-Authenticate")).toContain('scope="agents:read"');
    const ok = await call("GET", "/v1/agents", { token: await issueToken(ws.adminToken, ws.user.id, ["agents:read"]) });
    expect(ok.status).toBe(200);
  });
});
