import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CreatedTokenSchema } from "../src/admin/schemas";
import { CREDENTIAL_REUSE_MS, PAT_KIND, resolveBearer } from "../src/auth/resolve";
import { OAUTH_ACCESS_TOKEN } from "../src/oauth/access-token";
import { call, expectProblem, parse } from "./support/api";
import { countingD1 } from "./support/d1-count";
import { oauthPost, registerClient, signIn, tokensFor } from "./support/oauth";
import { addUser, signupWorkspace } from "./support/seed";

// A credential checked in an isolate is reused there for a few seconds (a conversation's turn,
// its resume and the next turn read it once); a revocation in the same isolate ends that at once.

const KINDS = [PAT_KIND, OAUTH_ACCESS_TOKEN];

describe("credential checks reused per isolate", () => {
  it("reads a token from D1 once within the reuse window, at most 5 s", async () => {
    const ws = await signupWorkspace();
    const d1 = countingD1();
    const first = await resolveBearer(d1.env, KINDS, ws.adminToken);
    expect(d1.take()).toBe(1);
    const again = await resolveBearer(d1.env, KINDS, ws.adminToken);
    expect(d1.take()).toBe(0);
    expect(again?.caller).toMatchObject({ userId: ws.user.id, workspace: { id: ws.workspace.id } });
    expect(again?.caller.scopes).toEqual(first?.caller.scopes);
    expect(CREDENTIAL_REUSE_MS).toBeLessThanOrEqual(5_000);
    // Past the window the credential is read again.
    await resolveBearer(d1.env, KINDS, ws.adminToken, Date.now() + CREDENTIAL_REUSE_MS + 1);
    expect(d1.take()).toBe(1);
  });

  it("never reuses a check past the token's own expiry", async () => {
    const ws = await signupWorkspace();
    const res = await call("POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { user_id: ws.user.id, name: "short", scopes: ["agents:read"] },
    });
    const created = await parse(res, CreatedTokenSchema);
    const now = Date.now();
    const expiresAt = new Date(now + 2_000).toISOString();
    await env.DB.prepare("UPDATE api_tokens SET expires_at = ?1 WHERE id = ?2").bind(expiresAt, created.id).run();
    expect(await resolveBearer(env, KINDS, created.token, now)).not.toBeNull();
    expect(await resolveBearer(env, KINDS, created.token, now + 2_001)).toBeNull();
  });

  it("a personal access token revoked through the API fails at once in the same isolate", async () => {
    const ws = await signupWorkspace();
    const res = await call("POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { user_id: ws.user.id, name: "soon revoked", scopes: ["agents:read"] },
    });
    const created = await parse(res, CreatedTokenSchema);
    expect((await call("GET", "/v1/api/me", { token: created.token })).status).toBe(200);
    expect((await call("DELETE", `/v1/api/admin/tokens/${created.id}`, { token: ws.adminToken })).status).toBe(204);
    await expectProblem(await call("GET", "/v1/api/me", { token: created.token }), 401, "invalid_token");
  });

  it("an OAuth access token revoked (RFC 7009) fails at once in the same isolate", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { grant_types: ["authorization_code", "refresh_token"] });
    const tokens = await tokensFor(await signIn(ws.email), client);
    expect((await call("GET", "/v1/api/me", { token: tokens.access_token })).status).toBe(200);
    const revoked = await oauthPost("/v1/oauth/revoke", {
      token: tokens.access_token,
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
    expect(revoked.status).toBe(200);
    await expectProblem(await call("GET", "/v1/api/me", { token: tokens.access_token }), 401, "invalid_token");
  });

  it("an erased user's token fails at once in the same isolate", async () => {
    const ws = await signupWorkspace();
    const victim = await addUser(ws.adminToken, "member", ["agents:read"]);
    expect((await call("GET", "/v1/api/me", { token: victim.token })).status).toBe(200);
    const erased = await call("POST", `/v1/admin/users/${victim.user.id}/erase`, {
      token: ws.adminToken,
      body: { confirm: true, reason: "asked" },
    });
    expect(erased.status).toBe(200);
    await expectProblem(await call("GET", "/v1/api/me", { token: victim.token }), 401, "invalid_token");
  });

  it("a deleted OAuth client's tokens fail at once in the same isolate", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { grant_types: ["authorization_code", "refresh_token"] });
    const tokens = await tokensFor(await signIn(ws.email), client);
    expect((await call("GET", "/v1/api/me", { token: tokens.access_token })).status).toBe(200);
    const deleted = await call("DELETE", `/v1/oauth/register/${client.client_id}`, {
      headers: { Authorization: `Bearer ${client.registration_access_token}` },
    });
    expect(deleted.status).toBe(204);
    await expectProblem(await call("GET", "/v1/api/me", { token: tokens.access_token }), 401, "invalid_token");
  });
});
